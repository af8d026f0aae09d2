"""CRC-32 of a large buffer on two cores: the same value as `zlib.crc32`, in about half the time.

Opening `vectors.usearch` checks the CRC-32 of the whole file before usearch reads a byte of
it (usearch crashes on a damaged graph: tests/test_vector_index.py), ~0.5 s for the 1.6 GB of
a million points. `zlib.crc32` releases the GIL, so the second half is checksummed in a thread
while the calling thread does the first, and the two are joined with `crc32_combine` (zlib's
algorithm: the first CRC shifted by the second part's length, in GF(2), plus the second CRC).
Below `SPLIT_FROM` bytes, or with one usable core, it is one `zlib.crc32` call.
"""

from __future__ import annotations

import os
import threading
import zlib
from typing import Final

SPLIT_FROM: Final = 32 << 20  # smaller buffers: a thread costs more than it saves
_POLY: Final = 0xEDB88320  # CRC-32, reflected


def _multmodp(a: int, b: int) -> int:
    """a · b modulo the CRC polynomial (reflected bit order)."""
    m = 1 << 31
    product = 0
    while True:
        if a & m:
            product ^= b
            if not a & (m - 1):
                return product
        m >>= 1
        b = (b >> 1) ^ _POLY if b & 1 else b >> 1


def _powers() -> tuple[int, ...]:
    """x^(2^k) modulo the polynomial, k = 0 … 31."""
    power, table = 1 << 30, []  # x^1
    for _ in range(32):
        table.append(power)
        power = _multmodp(power, power)
    return tuple(table)


_X2N: Final = _powers()


def _x8nmodp(length: int) -> int:
    """x^(8 · length) modulo the polynomial: what shifting a CRC by `length` bytes multiplies."""
    product, k = 1 << 31, 3  # x^0; bytes are 2^3 bits
    while length:
        if length & 1:
            product = _multmodp(_X2N[k & 31], product)
        length >>= 1
        k += 1
    return product


def crc32_combine(crc1: int, crc2: int, length2: int) -> int:
    """The CRC-32 of A + B from CRC(A), CRC(B) and len(B)."""
    return _multmodp(_x8nmodp(length2), crc1) ^ crc2


def _cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def crc32(data: memoryview) -> int:
    """`zlib.crc32(data)`, the second half computed in a thread beside the first."""
    size = data.nbytes
    if size < SPLIT_FROM or _cores() < 2:
        return zlib.crc32(data)
    middle = size // 2
    second: list[int] = []
    with data.cast("B") as flat, flat[:middle] as head, flat[middle:] as tail:
        helper = threading.Thread(
            target=lambda: second.append(zlib.crc32(tail)), name="crc32-half", daemon=True
        )
        helper.start()
        try:
            first = zlib.crc32(head)
        finally:
            helper.join()  # it reads the buffer: never released under it
    if not second:
        raise RuntimeError("the checksum thread failed")
    return crc32_combine(first, second[0], size - middle)
