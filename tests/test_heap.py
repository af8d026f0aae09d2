"""The word index's load maps its big arrays on their own (`store.heap`): what they free goes
back to the OS instead of staying in glibc's heap for the session (~25 MiB at 100k points).
Checked in a fresh interpreter, where an array is either inside the main heap (`[heap]` in
/proc/self/maps) or its own mapping."""

from __future__ import annotations

import platform
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from memory.memory_store import MemoryConfig, MemoryStore
from store.clock import Clock
from store.lexical_file import LEXICAL_FILENAME

pytestmark = pytest.mark.skipif(platform.libc_ver()[0] != "glibc", reason="glibc's malloc")

HEAP = textwrap.dedent(
    """
    import numpy as np

    def heap_range():
        for line in open("/proc/self/maps"):
            if line.rstrip().endswith("[heap]"):
                start, end = line.split()[0].split("-")
                return int(start, 16), int(end, 16)
        return 0, 0

    def in_heap(size):
        block = np.ones(size, dtype=np.uint8)
        start, end = heap_range()
        return start <= block.ctypes.data < end
    """
)

PROBE = HEAP + textwrap.dedent(
    """
    from store.heap import large_blocks_mapped

    np.ones(10 * 2**20, dtype=np.uint8)  # freed at once: glibc raises its threshold past it
    print("after a big free", in_heap(4 * 2**20))
    with large_blocks_mapped(lambda: 512 * 1024):
        print("inside", in_heap(6 * 2**20))
    print("after", in_heap(256 * 1024), in_heap(8 * 2**20))
    """
)


def run(code: str, *args: str) -> str:
    done = subprocess.run(
        [sys.executable, "-c", code, *args], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_inside_a_load_big_arrays_are_their_own_mappings_and_after_it_reuse_the_heap() -> None:
    stdout = run(PROBE)
    assert stdout.split("\n")[:3] == [
        "after a big free True",  # glibc's own rule: 4 MiB now come from the heap
        "inside False",  # mapped on its own: freed, it goes back to the OS
        "after True False",  # below what a search makes: the heap again; above: mapped
    ], stdout


REOPEN = HEAP + textwrap.dedent(
    """
    import sys
    from pathlib import Path
    from memory.memory_store import MemoryConfig, MemoryStore
    from store.clock import Clock

    store = MemoryStore.open(Path(sys.argv[1]), MemoryConfig(min_score=0.0), clock=Clock())
    store.wait_until_ready(timeout=30)
    print("words from", store.lexical.loaded_from)
    np.ones(10 * 2**20, dtype=np.uint8)  # freed at once: glibc raises its threshold past it
    print("after a big free", in_heap(4 * 2**20))
    store.close()
    """
)


def test_a_usual_open_leaves_glibcs_heap_as_it_is(tmp_path: Path) -> None:
    """With `lexical.idx` mapped nothing is loaded from the tables: glibc keeps adapting its
    threshold, so a search's temporaries keep coming from the heap (a fixed 128 KiB would
    map and fault in every one of them: ~1,600 page faults a word search at 1M points)."""
    home = tmp_path / "home"
    store = MemoryStore.open(home, MemoryConfig(min_score=0.0), clock=Clock())
    store.wait_until_ready(timeout=30)
    for i in range(20):
        store.save("user", f"note {i} about the garden", vector=[1.0, float(i)], use_filter=False)
    store.close()
    assert (home / LEXICAL_FILENAME).is_file()
    assert run(REOPEN, str(home)).split("\n")[:2] == ["words from file", "after a big free True"]
