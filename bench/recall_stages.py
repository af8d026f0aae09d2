"""Where a recall's time goes, stage by stage, on a kept store.

    python -m bench.recall_stages HOME [--recalls 200] [--side on|always|off] [--json OUT]

HOME is a store `python -m bench.memory_scale --keep DIR` left. Opens it as the bench's
measure worker does (open, wait until ready, 5 warm-up recalls), then runs `--recalls`
recalls of `bench.memory_scale`'s queries and vectors and times, per recall, the stages
`memory.recall` calls — the vector search, the wait for the words the store's side thread
ranked meanwhile (`words_wait`, which runs them itself when the side thread had not started
them; `--side` as in `bench.recall_paired`), the word search (and in it `prepare`, then
`top_and_within`: the MaxScore `walk` with the look-ups that narrow its candidates, and one
exact scoring of them and the pins), the pinned ranking, the hit rows — by wrapping those
functions for this process only: wall time, this thread's CPU time, the process's CPU time
(DuckDB's own threads), minor and major page faults (`lexical.idx`'s pages come back by
faults after the open handed them back) and the time the garbage collector ran. Prints p50 /
p95 / max per stage and the slowest recalls; the JSON holds every recall's row. Measurement
only: nothing here changes what a recall does.
"""

from __future__ import annotations

import argparse
import functools
import gc
import json
import resource
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from bench.memory_scale import WARM_RECALLS, Synthetic, _clock, _config

STAGES = (
    "vector",
    "words_wait",
    "lexical",
    "prepare",
    "top_and_within",
    "walk",
    "pinned",
    "hit_rows",
)


class _Stages:
    """The current recall's per-stage sums: wall ms, thread CPU ms, process CPU ms, faults."""

    def __init__(self) -> None:
        self.now: dict[str, list[float]] = {}

    def wrap(self, owner: Any, name: str, label: str) -> None:
        original: Callable[..., Any] = getattr(owner, name)

        @functools.wraps(original)
        def timed(*args: Any, **kwargs: Any) -> Any:
            faults = _faults()
            wall, cpu, proc = time.perf_counter(), time.thread_time(), time.process_time()
            try:
                return original(*args, **kwargs)
            finally:
                after = _faults()
                sums = self.now.setdefault(label, [0.0, 0.0, 0.0, 0.0, 0.0])
                sums[0] += (time.perf_counter() - wall) * 1000
                sums[1] += (time.thread_time() - cpu) * 1000
                sums[2] += (time.process_time() - proc) * 1000
                sums[3] += after[0] - faults[0]
                sums[4] += after[1] - faults[1]

        setattr(owner, name, timed)


def _faults() -> tuple[int, int]:
    usage = resource.getrusage(resource.RUSAGE_THREAD)
    return usage.ru_minflt, usage.ru_majflt


def measure(home: Path, recalls: int, side: str = "on") -> dict[str, Any]:
    import memory.recall as recall_module
    from memory.memory_store import MemoryStore
    from store import lexical_query, lexical_topk, point_reads
    from store.side_thread import Handed
    from store.vector_upkeep import VectorKeeper

    stages = _Stages()
    stages.wrap(VectorKeeper, "search", "vector")
    stages.wrap(Handed, "result", "words_wait")  # the side thread's words, waited for
    stages.wrap(recall_module, "_lexical_candidates", "lexical")
    stages.wrap(lexical_query, "prepare", "prepare")
    stages.wrap(lexical_topk, "top_and_within", "top_and_within")
    stages.wrap(lexical_topk, "_hopeful", "walk")
    stages.wrap(recall_module, "_pinned_ranking", "pinned")
    stages.wrap(point_reads, "hit_rows", "hit_rows")
    collections: list[list[float]] = []

    def on_gc(phase: str, _info: dict[str, Any]) -> None:
        if phase == "start":
            collections.append([time.perf_counter()])
        elif collections:
            collections[-1].append(time.perf_counter())

    data = Synthetic(seed=2)
    topics = data.topics(recalls + WARM_RECALLS)
    vectors = data.vectors(topics, noise=0.8)
    texts = data.queries(topics)
    started = time.perf_counter()
    store = MemoryStore.open(home, _config(), clock=_clock())
    store.side.enabled = side != "off"
    if side == "always":  # however busy the machine is
        store.side.cores = type(store.side.cores)(margin=float("-inf"))
    opened = time.perf_counter()
    store.wait_until_ready()
    ready = time.perf_counter()
    for text, vector in zip(texts[:WARM_RECALLS], vectors[:WARM_RECALLS], strict=True):
        store.recall(text, vector=vector)
    gc.callbacks.append(on_gc)
    rows: list[dict[str, float]] = []
    try:
        for text, vector in zip(texts[WARM_RECALLS:], vectors[WARM_RECALLS:], strict=True):
            stages.now = {}
            seen = len(collections)
            faults = _faults()
            wall, cpu = time.perf_counter(), time.thread_time()
            store.recall(text, vector=vector)
            row = {
                "total": (time.perf_counter() - wall) * 1000,
                "cpu": (time.thread_time() - cpu) * 1000,
                "minflt": float(_faults()[0] - faults[0]),
                "gc": sum((c[1] - c[0]) * 1000 for c in collections[seen:] if len(c) == 2),
                "words": float(len(text.split())),
            }
            for label, (s_wall, s_cpu, s_proc, minflt, majflt) in stages.now.items():
                row |= {
                    label: s_wall,
                    f"{label}_cpu": s_cpu,
                    f"{label}_proc": s_proc,
                    f"{label}_minflt": minflt,
                    f"{label}_majflt": majflt,
                }
            rows.append(row)
    finally:
        gc.callbacks.remove(on_gc)
        side_thread = dict(store.side.stats)
        store.close()
    return {
        "home": str(home),
        "open_s": round(opened - started, 3),
        "ready_s": round(ready - started, 3),
        "side_thread": side_thread,  # the warm recalls' too
        "recalls": rows,
    }


def summary(rows: list[dict[str, float]]) -> list[str]:
    keys = ["total", "cpu", "gc", "minflt"]
    for stage in STAGES:
        keys += [stage, f"{stage}_cpu"]
    keys += ["hit_rows_proc", "walk_minflt", "vector_minflt"]
    lines = []
    for key in keys:
        values = [row.get(key, 0.0) for row in rows]
        p50, p95 = np.percentile(values, [50, 95])
        lines.append(f"{key:14} p50 {p50:8.2f}  p95 {p95:8.2f}  max {max(values):8.2f}")
    lines.append("slowest recalls (ms):")
    for row in sorted(rows, key=lambda r: -r["total"])[:8]:
        parts = " ".join(f"{s}={row.get(s, 0.0):.2f}" for s in ("total", "cpu", *STAGES))
        lines.append(f"  {parts} minflt={row['minflt']:.0f} gc={row['gc']:.2f}")
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("home", type=Path)
    parser.add_argument("--recalls", type=int, default=200)
    parser.add_argument("--side", choices=("on", "always", "off"), default="on")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    result = measure(args.home, args.recalls, args.side)
    opened = f"open {result['open_s']} s, ready {result['ready_s']} s"
    print(f"{opened}, side thread {result['side_thread']}")
    print("\n".join(summary(result["recalls"])))
    if args.json:
        args.json.write_text(json.dumps(result, indent=1), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
