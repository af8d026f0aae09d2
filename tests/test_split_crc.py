"""`store.split_crc`: the same CRC-32 as zlib, computed in two halves on two threads."""

from __future__ import annotations

import threading
import zlib

import numpy as np
import pytest

from store import split_crc


@pytest.mark.parametrize("first", [0, 1, 3, 64, 1000, 4097])
@pytest.mark.parametrize("second", [0, 1, 7, 512, 9999])
def test_combine_gives_the_crc_of_the_concatenation(first: int, second: int) -> None:
    rng = np.random.default_rng(first * 31 + second)
    a, b = rng.bytes(first), rng.bytes(second)
    combined = split_crc.crc32_combine(zlib.crc32(a), zlib.crc32(b), len(b))
    assert combined == zlib.crc32(a + b)


def test_a_large_buffer_is_split_and_gives_zlibs_crc(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(split_crc, "SPLIT_FROM", 1024)
    monkeypatch.setattr(split_crc, "_cores", lambda: 2)
    threads: list[str] = []
    real = zlib.crc32

    def spy(data: memoryview) -> int:
        threads.append(threading.current_thread().name)
        return real(data)

    monkeypatch.setattr(split_crc.zlib, "crc32", spy)
    data = np.random.default_rng(5).bytes(100_003)
    assert split_crc.crc32(memoryview(data)) == real(data)
    assert sorted(threads) == sorted(["crc32-half", threading.current_thread().name])
    damaged = bytearray(data)
    damaged[77_777] ^= 0x10
    assert split_crc.crc32(memoryview(bytes(damaged))) != real(data)


def test_a_small_buffer_is_one_call() -> None:
    data = b"straylight" * 100
    assert split_crc.crc32(memoryview(data)) == zlib.crc32(data)
