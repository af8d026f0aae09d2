"""What the seventh round's learned re-rank would add to a recall on a big store: the rows
of its candidates and its features (`bench.locomo_round7_features`), next to the recall.

    python -m bench.locomo_round7_cost HOME [--queries 200]

HOME is a store `python -m bench.memory_scale --keep DIR` left (use a copy: the store is
opened read-write). Queries and vectors are `bench.memory_scale`'s (`Synthetic(seed=2)`, as
`bench.recall_paired`). For each query: `MemoryStore.recall` as it is, then the fused
candidates as `recall` makes them, and for the first 10 (what recall reads now), 30 and
all of them the rows (`point_reads.hit_rows`) and the features. Reported: p50 / p95 ms of
wall, thread CPU and process CPU (DuckDB's own threads too) of each.
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np

from bench.locomo_round7_features import Candidate, candidate_features, query_terms
from bench.memory_scale import WARM_RECALLS, Synthetic
from memory.memory_store import MemoryConfig, MemoryStore
from memory.recall import TUNING
from memory.recall_fusion import fuse
from memory.text.answers import answer_types, question_names
from memory.text.dates import date_spans
from store import point_reads
from store.clock import Clock

DEPTHS = (10, 30, 100)
CLOCKS: dict[str, Callable[[], float]] = {
    "wall": time.perf_counter,
    "thread": time.thread_time,
    "process": time.process_time,
}


def _timed(into: dict[str, list[float]], work: Callable[[], Any]) -> Any:
    start = {name: clock() for name, clock in CLOCKS.items()}
    result = work()
    for name, clock in CLOCKS.items():
        into.setdefault(name, []).append((clock() - start[name]) * 1e3)
    return result


def _features(
    store: MemoryStore,
    query: str,
    head: list[int],
    rows: dict[int, point_reads.HitRow],
    fused: dict[int, float],
    vector: list[tuple[int, float]],
    lexical: list[tuple[int, float]],
) -> None:
    """The features of `head` as recall would make them (the query parsed here too)."""
    kinds = answer_types(query)
    names = question_names(query) if "who" in kinds else frozenset()
    made = [Candidate(p, rows[p].created_at, rows[p].content) for p in head]
    terms = query_terms(store.lexical, store.lexical.analyzer.query_terms(query))
    spans = date_spans(query, store.db.clock.now())
    candidate_features(
        made, fused, vector, lexical, spans, (kinds, names), terms, TUNING.candidates
    )


def measure(home: Path, queries: int) -> dict[str, Any]:
    data = Synthetic(seed=2)
    topics = data.topics(queries + WARM_RECALLS)
    vectors = data.vectors(topics, noise=0.8)
    texts = data.queries(topics)
    store = MemoryStore.open(home, MemoryConfig(embed_model="nomic-embed-text"), clock=Clock())
    times: dict[str, dict[str, list[float]]] = {}
    try:
        store.wait_until_ready()
        for q, v in zip(texts[:WARM_RECALLS], vectors[:WARM_RECALLS], strict=True):
            store.recall(q, vector=v)
        for q, v in zip(texts[WARM_RECALLS:], vectors[WARM_RECALLS:], strict=True):
            _timed(times.setdefault("recall", {}), lambda q=q, v=v: store.recall(q, vector=v))
            vector = store.vectors.search(np.asarray(v, np.float32), TUNING.candidates)
            with store.db.cursor() as cur:
                lexical = store.lexical.search(cur, q, TUNING.candidates)
            fused = fuse(vector, lexical, TUNING)
            order = sorted(fused, key=lambda p: -fused[p])
            for depth in DEPTHS:
                head = order[:depth]
                rows = _timed(
                    times.setdefault(f"rows of {depth}", {}),
                    lambda head=head: point_reads.hit_rows(store.db, head),
                )

                _timed(
                    times.setdefault(f"features of {depth}", {}),
                    partial(_features, store, q, head, rows, fused, vector, lexical),
                )
    finally:
        store.close()
    return {
        what: {
            name: [round(float(np.percentile(ms, p)), 2) for p in (50, 95)]
            for name, ms in by_clock.items()
        }
        for what, by_clock in times.items()
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("home", type=Path)
    parser.add_argument("--queries", type=int, default=200)
    args = parser.parse_args(argv)
    print(json.dumps(measure(args.home, args.queries), indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
