"""Hit rows and vectors by id, through both query shapes (store/point_reads.py)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from store import point_reads
from store.clock import Clock
from store.database import database_path, open_database
from store.point_store import NewPoint, PointStore


def test_rows_by_id_are_the_same_listed_or_joined(tmp_path: Path) -> None:
    vectors = np.arange(600 * 4, dtype=np.float32).reshape(600, 4)
    with open_database(database_path(tmp_path), clock=Clock()) as db:
        ids = PointStore(db).add_many(
            [
                NewPoint("user", f"text {i}", "s", embedding=v, embed_model="m")
                for i, v in enumerate(vectors)
            ]
        )
        few = [*ids[::7][:40], 10**9]  # an unknown id is left out
        many = [*ids[::2], 10**9]
        assert len(few) <= point_reads.LISTED_IDS_UP_TO < len(many)
        for wanted in (few, many):
            rows = point_reads.hit_rows(db, wanted)
            assert sorted(rows) == sorted(wanted[:-1])
            assert all(rows[pid].content == f"text {ids.index(pid)}" for pid in rows)
        assert point_reads.hit_rows(db, []) == {}
        for wanted in (few[:-1], many[:-1]):
            matrix = point_reads.vector_matrix(db, np.asarray(wanted), 4)
            assert np.array_equal(matrix, vectors[[ids.index(pid) for pid in wanted]])
        pins = point_reads.vectors_of(db, [ids[3], ids[5], 10**9], "m")
        assert sorted(pins) == [ids[3], ids[5]]
        assert np.array_equal(pins[ids[5]], vectors[5])
        assert point_reads.vectors_of(db, [ids[3]], "other model") == {}
        chunked = point_reads.vectors_of(db, many, "m")  # more than one list of ids
        assert len(many) - 1 > point_reads.LISTED_IDS_UP_TO and sorted(chunked) == sorted(many[:-1])
        assert all(np.array_equal(chunked[pid], vectors[ids.index(pid)]) for pid in many[:-1])
