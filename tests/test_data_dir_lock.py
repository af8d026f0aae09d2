"""One process per data dir: the second gets one line naming the holder's PID."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from store.data_dir_lock import DataDirLock, DataDirLocked

ROOT = Path(__file__).resolve().parent.parent
HOLDER = """
import sys, time
from pathlib import Path
from store.data_dir_lock import DataDirLock
lock = DataDirLock(Path(sys.argv[1])).acquire()
print("locked", flush=True)
time.sleep(30)
"""


def test_a_second_process_is_refused_with_the_holders_pid(tmp_path: Path) -> None:
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(tmp_path)],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "locked"
        with pytest.raises(DataDirLocked) as caught:
            DataDirLock(tmp_path).acquire()
        assert caught.value.pid == holder.pid
        assert str(caught.value) == (
            f"{tmp_path} is in use by PID {holder.pid} (another Straylight?); "
            "close it or use --home"
        )
    finally:
        holder.kill()
        holder.wait()
    # The kernel released it with the process, even on kill -9.
    with DataDirLock(tmp_path) as lock:
        assert lock.held


def test_release_lets_the_next_owner_in(tmp_path: Path) -> None:
    first = DataDirLock(tmp_path).acquire()
    first.release()
    second = DataDirLock(tmp_path).acquire()
    assert second.held
    second.release()
