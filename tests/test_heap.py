"""The word index's load maps its big arrays on their own (`store.heap`): what they free goes
back to the OS instead of staying in glibc's heap for the session (~25 MiB at 100k points).
Checked in a fresh interpreter, where an array is either inside the main heap (`[heap]` in
/proc/self/maps) or its own mapping."""

from __future__ import annotations

import platform
import subprocess
import sys
import textwrap

import pytest

pytestmark = pytest.mark.skipif(platform.libc_ver()[0] != "glibc", reason="glibc's malloc")

PROBE = textwrap.dedent(
    """
    import numpy as np
    from store.heap import large_blocks_mapped

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

    np.ones(10 * 2**20, dtype=np.uint8)  # freed at once: glibc raises its threshold past it
    print("after a big free", in_heap(4 * 2**20))
    with large_blocks_mapped(lambda: 512 * 1024):
        print("inside", in_heap(6 * 2**20))
    print("after", in_heap(256 * 1024), in_heap(8 * 2**20))
    """
)


def test_inside_a_load_big_arrays_are_their_own_mappings_and_after_it_reuse_the_heap() -> None:
    done = subprocess.run(
        [sys.executable, "-c", PROBE], capture_output=True, text=True, check=True, timeout=60
    )
    assert done.stdout.split("\n")[:3] == [
        "after a big free True",  # glibc's own rule: 4 MiB now come from the heap
        "inside False",  # mapped on its own: freed, it goes back to the OS
        "after True False",  # below what a search makes: the heap again; above: mapped
    ], done.stdout
