"""A read never fails while another thread drops DuckDB's cached blocks (issue 18).

`Database.drop_cached_blocks` lowers DuckDB's `memory_limit` to what is in use plus a margin
for a moment; a read running on another cursor at that moment could need more and failed
with DuckDB's OutOfMemoryException (a CI run of test_reindex_neighbours, margin 4 MiB).
"""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

from store import buffer_pool, lexical_index
from store.clock import Clock
from store.database import database_path, open_database
from store.point_store import NewPoint, PointStore

WORDS = [f"word{i}" for i in range(2000)]
ROUNDS = 20
QUERY = " ".join(WORDS[:40])  # common words: the SQL word search aggregates many postings


def test_reads_on_other_threads_never_meet_the_lowered_limit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    texts = [" ".join(WORDS[(i * 7 + j * 13) % len(WORDS)] for j in range(60)) for i in range(2000)]
    with open_database(database_path(tmp_path), clock=Clock()) as db:
        ids = PointStore(db).add_many([NewPoint("user", text, "s") for text in texts])
        with db.transaction() as cur:
            lexical_index.reindex_all(cur, list(zip(ids, texts, strict=True)))
    monkeypatch.setattr(buffer_pool, "EVICT_MARGIN_BYTES", 64 * 1024)  # a tiny margin
    failures: list[BaseException] = []
    reads = drops = 0
    stop = threading.Event()
    with open_database(database_path(tmp_path), clock=Clock()) as db:

        def read() -> None:
            nonlocal reads
            while not stop.is_set():
                try:
                    with db.cursor() as cur:  # a word search by SQL, as before the mirror loads
                        assert lexical_index.search(cur, QUERY, 10)
                        cur.execute(  # a hash aggregate over every posting: ~2 MiB
                            "SELECT point_id, count(*) FROM lexical_postings "
                            "GROUP BY point_id ORDER BY 2 DESC, 1 LIMIT 5"
                        )
                        assert len(cur.fetchall()) == 5
                    reads += 1
                except BaseException as error:  # noqa: BLE001 - every failure is the finding
                    failures.append(error)
                    return

        def drop() -> None:
            nonlocal drops
            while not stop.is_set():
                db.drop_cached_blocks()
                drops += 1

        threads = [threading.Thread(target=f) for f in (read, read, drop)]
        for thread in threads:
            thread.start()
        started = time.monotonic()  # 1.5 s and both ROUNDS times at least, or a failure
        while not failures and time.monotonic() - started < 30.0:
            if time.monotonic() - started > 1.5 and min(reads, drops) >= ROUNDS:
                break
            time.sleep(0.02)
        stop.set()
        for thread in threads:
            thread.join(30)
    assert not failures, f"a read failed during a drop: {failures[0]!r}"
    assert min(reads, drops) >= ROUNDS, (reads, drops)
