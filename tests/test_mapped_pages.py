"""Handing back the pages a read-only mapping's check read (store/mapped_pages.py): the
word index's `lexical.idx` is not left resident after its open, and reads the same after."""

from __future__ import annotations

import mmap
import os
import sys
from pathlib import Path

import duckdb
import numpy as np
import pytest

from store import lexical_index as li
from store import lexical_persist, meta
from store.lexical_file import LEXICAL_FILENAME
from store.mapped_pages import mapping_of, release_pages
from tests.test_lexical_index import add, migrate
from tests.test_lexical_postings import same

pytestmark = pytest.mark.skipif(
    not sys.platform.startswith("linux"), reason="reads /proc/self/smaps; madvise is Linux's"
)


def resident_kib(path: Path) -> int:
    """This process's resident KiB of the mappings of `path` (/proc/self/smaps)."""
    total, inside = 0, False
    with open("/proc/self/smaps", encoding="utf-8") as handle:
        for line in handle:
            fields = line.split()
            if "-" in fields[0] and len(fields) >= 5 and ":" in fields[3]:  # a mapping's line
                inside = len(fields) >= 6 and fields[5] == str(path)
            elif inside and fields[0] == "Rss:":
                total += int(fields[1])
    return total


def test_released_pages_leave_the_rss_and_read_back_the_same(tmp_path: Path):
    path = tmp_path / "data.bin"
    data = np.random.default_rng(3).integers(0, 255, 2**20, dtype=np.uint8)
    path.write_bytes(data.tobytes())
    fd = os.open(path, os.O_RDONLY)
    try:
        mapped = mmap.mmap(fd, 0, prot=mmap.PROT_READ)
    finally:
        os.close(fd)
    view = np.frombuffer(mapped, dtype=np.uint8)
    assert int(view.sum(dtype=np.int64)) == int(data.sum(dtype=np.int64))  # every page read
    assert resident_kib(path) >= 1000
    assert mapping_of(view[10:]) is mapped  # found behind a slice of a view
    assert release_pages(mapped)
    assert resident_kib(path) == 0
    assert np.array_equal(view, data)  # read back from the file or the page cache
    del view
    mapped.close()
    assert not release_pages(mapped)  # closed: nothing asked
    assert mapping_of(np.zeros(3)) is None and not release_pages(None)


def test_a_mapped_word_index_keeps_none_of_the_file_resident_after_its_check(tmp_path: Path):
    con = duckdb.connect(str(tmp_path / "straylight.duckdb"))
    migrate(con)
    meta.put(con, lexical_persist.DATABASE_ID_KEY, "database-one")
    add(
        con,
        {i: f"alpha beta{i % 7} word{i} other{i * 7} topic{i % 13} shared" for i in range(1, 3001)},
    )
    path = tmp_path / LEXICAL_FILENAME
    first = li.LexicalCache(file=path)
    first.load(con)
    assert first.save_file()  # written, then mapped back in place of the loaded arrays
    assert path.stat().st_size > 256 * 1024
    assert resident_kib(path) == 0
    cache = li.LexicalCache(file=path)
    cache.load(con)
    assert cache.loaded_from == "file"
    assert resident_kib(path) == 0  # the check read all of it; none of it stayed
    for query in ("alpha", "beta3 topic5", "word17 other119", "shared nothing"):
        same(con, cache, query)
    assert 0 < resident_kib(path) * 1024 < path.stat().st_size  # what the searches read
    first.close()
    cache.close()
    con.close()
