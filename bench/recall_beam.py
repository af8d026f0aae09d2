"""usearch's beam (`expansion_search`) on a kept store: what a recall saves, and what it loses.

    python -m bench.recall_beam HOME [--beams 128,96,64] [--recalls 200] [--json OUT]

HOME is a store `python -m bench.memory_scale --keep DIR` left. Opens it as the bench's
measure worker does, then runs `--recalls` of `bench.memory_scale`'s queries; for each query
every beam in turn (the order flips every query, so the machine's load falls on all alike):
the vector search alone (k 50, as recall asks) and the whole recall. Reported per beam: the
vector search's and the recall's p50 / p95, the overlap@10 of the vector search with the exact
top 10 over every stored vector (`bench.memory_scale.vector_overlap`, 50 queries), and how many
recalls returned other hits (ids) than the first beam listed. The store's beam is put back at
the end (it is not saved: the file keeps its own).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from bench.memory_scale import (
    OVERLAP_QUERIES,
    WARM_RECALLS,
    Synthetic,
    _clock,
    _config,
    ms_stats,
    vector_overlap,
)

CANDIDATES = 50  # what recall asks of the vector search (memory.recall.CANDIDATES)


def measure(home: Path, beams: list[int], recalls: int) -> dict[str, Any]:
    from memory.memory_store import MemoryStore
    from store.vector_index import VectorIndex

    data = Synthetic(seed=2)
    topics = data.topics(recalls + WARM_RECALLS)
    vectors = np.asarray(data.vectors(topics, noise=0.8), dtype=np.float32)
    texts = data.queries(topics)
    store = MemoryStore.open(home, _config(), clock=_clock())
    try:
        store.wait_until_ready()
        index = store.vectors.index  # the live index: its beam is set for this process only
        if not isinstance(index, VectorIndex):
            raise SystemExit(f"{home}: no vector index")
        was = index.expansion_search
        for text, vector in zip(texts[:WARM_RECALLS], vectors[:WARM_RECALLS], strict=True):
            store.recall(text, vector=vector)
        search: dict[int, list[float]] = {beam: [] for beam in beams}
        whole: dict[int, list[float]] = {beam: [] for beam in beams}
        hits: dict[int, list[list[int]]] = {beam: [] for beam in beams}
        pairs = zip(texts[WARM_RECALLS:], vectors[WARM_RECALLS:], strict=True)
        try:
            for i, (text, vector) in enumerate(pairs):
                for beam in beams if i % 2 == 0 else beams[::-1]:
                    index.set_expansion_search(beam)
                    started = time.perf_counter()
                    index.search(vector, CANDIDATES)
                    search[beam].append((time.perf_counter() - started) * 1000)
                    started = time.perf_counter()
                    result = store.recall(text, vector=vector)
                    whole[beam].append((time.perf_counter() - started) * 1000)
                    hits[beam].append([hit.id for hit in result.hits])
            rows = []
            queries = vectors[WARM_RECALLS : WARM_RECALLS + OVERLAP_QUERIES]
            for beam in beams:
                index.set_expansion_search(beam)
                differ = sum(a != b for a, b in zip(hits[beam], hits[beams[0]], strict=True))
                rows.append(
                    {
                        "expansion_search": beam,
                        "search": ms_stats(search[beam]),
                        "recall": ms_stats(whole[beam]),
                        "vector_overlap": vector_overlap(store, queries),
                        "recalls_with_other_hits": differ,
                    }
                )
        finally:
            index.set_expansion_search(was)
    finally:
        store.close()
    return {"home": str(home), "points": len(index), "recalls": recalls, "beams": rows}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("home", type=Path)
    parser.add_argument("--beams", default="128,96,64")
    parser.add_argument("--recalls", type=int, default=200)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    beams = [int(beam) for beam in args.beams.split(",")]
    result = measure(args.home, beams, args.recalls)
    print(f"{result['points']:,} points, {result['recalls']} recalls a beam")
    for row in result["beams"]:
        search, whole = row["search"], row["recall"]
        print(
            f"ef {row['expansion_search']:4}  search p50 {search['p50_ms']:.2f} "
            f"p95 {search['p95_ms']:.2f}  recall p50 {whole['p50_ms']:.2f} "
            f"p95 {whole['p95_ms']:.2f} ms  overlap@10 "
            f"{row['vector_overlap']['overlap_at_10']:.3f}  other hits "
            f"{row['recalls_with_other_hits']} of {result['recalls']}"
        )
    if args.json:
        args.json.write_text(json.dumps(result, indent=1), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
