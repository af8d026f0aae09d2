"""Ctrl+C while `straylight` is still starting (its modules loading) is one line and exit
130, never a traceback: the console script's entry (`tui.entry`) catches it."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.support.cli import REPO_ROOT, cli_env


@pytest.mark.parametrize("delay", [0.1, 0.2, 0.3, 0.5])
def test_ctrl_c_during_start_up_is_one_line(tmp_path: Path, delay: float) -> None:
    env = cli_env(tmp_path / "home", tmp_path, OLLAMA_HOST="http://127.0.0.1:9")
    process = subprocess.Popen(
        [sys.executable, "-m", "tui", "status"],
        cwd=REPO_ROOT,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    time.sleep(delay)
    process.send_signal(signal.SIGINT)
    _out, err = process.communicate(timeout=30)
    if "Fatal Python error: init_import_site" in err:
        return  # the signal came while Python itself started (its `site` import), before
        # any of Straylight's code: not ours to catch
    assert "Traceback" not in err, err
    if process.returncode == 130:
        assert err.strip().splitlines()[-1].startswith("straylight: interrupted"), err
    else:  # the signal came before Python's handler (killed) or after the command finished
        assert process.returncode in (0, -signal.SIGINT), (process.returncode, err)
