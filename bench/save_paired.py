"""Save latency, this checkout against a git ref, paired in one process.

    python -m bench.save_paired HOME --ref REF [--saves 10000] [--profile] [--json OUT]
    python -m bench.save_paired HOME --ref-tree DIR …   # a checkout's folder instead of a ref

HOME is a store `python -m bench.memory_scale --keep DIR` left (`DIR/home-N`); it is copied
twice (into `--work`, default a temporary folder beside HOME) and never opened itself. The
ref's `memory/` and `store/` are imported as `bench.recall_paired` does; each side opens its
own copy and the two run the same `save(role, text, vector=..., context=...)` calls
alternately, in an order that flips every save, so the machine's load falls on both alike.
Texts, vectors and the indexed neighbours are `bench.memory_scale`'s measure saves
(`Synthetic(seed=2)`), continued past its 200. Reported per side: wall and thread-CPU
p50 / p95 / p99 / max, saves over 50 ms, and the saves during which the write-ahead log shrank
(DuckDB checkpointed inside them) with their wall and CPU ms. Long enough runs (a 16 MiB log
holds ~3,000 saves at 100k points) show the automatic checkpoint; docs/save-latency.md.
`--upkeep-every N` runs each side's index-upkeep job (`MemoryStore.upkeep_index`, every
10 min in the app, in its own thread) after every N saves, untimed: 0 never.
"""

from __future__ import annotations

import argparse
import cProfile
import json
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.memory_scale import (
    EMBED_MODEL,
    WARM_RECALLS,
    Synthetic,
    _neighbours,
    ms_stats,
)
from bench.recall_paired import _listing, import_sides

SLOW_MS = 50.0
FIRST = 200


def _wal_size(home: Path) -> int:
    try:
        return (home / "straylight.duckdb.wal").stat().st_size
    except FileNotFoundError:
        return 0


def compare(
    home: Path,
    ref: str,
    saves: int,
    profile: bool,
    work: Path,
    tree: Path | None = None,
    upkeep_every: int = 0,
) -> dict[str, Any]:
    old, new = import_sides(ref, tree)
    from store.clock import Clock

    data = Synthetic(seed=2)
    topics = data.topics(saves)
    vectors = data.vectors(topics)
    texts = data.texts(topics)
    warm_topics = data.topics(WARM_RECALLS)
    warm_vectors = data.vectors(warm_topics, noise=0.8)
    warm_texts = data.queries(warm_topics)
    homes = {name: work / name for name in ("ref", "this")}
    for copy in homes.values():
        shutil.copytree(home, copy)
    modules = {"ref": old, "this": new}
    stores = {
        name: modules[name].MemoryStore.open(
            homes[name], modules[name].MemoryConfig(embed_model=EMBED_MODEL), clock=Clock()
        )
        for name in homes
    }
    wall: dict[str, list[float]] = {name: [] for name in homes}
    cpu: dict[str, list[float]] = {name: [] for name in homes}
    shrank: dict[str, list[list[float]]] = {name: [] for name in homes}
    profilers = {name: cProfile.Profile() for name in homes}
    try:
        for store in stores.values():
            store.wait_until_ready()
            for q, v in zip(warm_texts, warm_vectors, strict=True):
                store.recall(q, vector=v)
        for i, (text, vec) in enumerate(zip(texts, vectors, strict=True)):
            role = ("user", "assistant")[i % 2]
            conversation = f"paired-{i // 8}"
            context = _neighbours(texts, i)
            for name in ("ref", "this") if i % 2 == 0 else ("this", "ref"):
                store = stores[name]
                wal = _wal_size(homes[name])
                if profile:
                    profilers[name].enable()
                started, used = time.perf_counter(), time.thread_time()
                store.save(role, text, conversation_id=conversation, vector=vec, context=context)
                wall[name].append((time.perf_counter() - started) * 1000)
                cpu[name].append((time.thread_time() - used) * 1000)
                if profile:
                    profilers[name].disable()
                if _wal_size(homes[name]) < wal:  # DuckDB checkpointed in this save
                    shrank[name].append([i, round(wall[name][-1], 1), round(cpu[name][-1], 1)])
            if upkeep_every and (i + 1) % upkeep_every == 0:
                for store in stores.values():
                    store.upkeep_index()
    finally:
        for store in stores.values():
            store.close()
        for copy in homes.values():
            shutil.rmtree(copy, ignore_errors=True)
    result: dict[str, Any] = {"ref": ref, "saves": saves, "upkeep_every": upkeep_every}
    for name in homes:
        result[name] = ms_stats(wall[name])
        result[name]["over_50ms"] = sum(1 for ms in wall[name] if ms > SLOW_MS)
        # the first 200 alone: as many as `bench.memory_scale`'s measure run makes
        result[f"{name}_first_200"] = ms_stats(wall[name][:FIRST])
        result[name]["wal_shrank_at"] = shrank[name]
        result[f"{name}_cpu"] = ms_stats(cpu[name])
        if profile:
            result[f"{name}_profile"] = _listing(profilers[name])
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("home", type=Path)
    parser.add_argument("--ref", default="main")
    parser.add_argument("--ref-tree", type=Path, help="the ref side from this folder")
    parser.add_argument("--saves", type=int, default=10_000)
    parser.add_argument("--upkeep-every", type=int, default=0, help="saves between upkeeps")
    parser.add_argument("--work", type=Path, help="where the two copies go (removed after)")
    parser.add_argument("--profile", action="store_true")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    ref = str(args.ref_tree) if args.ref_tree else args.ref
    with tempfile.TemporaryDirectory(dir=args.work or args.home.parent) as folder:
        result = compare(
            args.home,
            ref,
            args.saves,
            args.profile,
            Path(folder),
            args.ref_tree,
            args.upkeep_every,
        )
    for key in ("ref", "this"):
        if f"{key}_profile" in result:
            print(f"--- {key} profile\n{result[f'{key}_profile']}")
    for key in ("ref", "this", "ref_cpu", "this_cpu", "ref_first_200", "this_first_200"):
        s = result[key]
        print(
            f"{key:14} p50 {s['p50_ms']:.2f}  p95 {s['p95_ms']:.2f}  p99 {s['p99_ms']:.2f}"
            f"  max {s['max_ms']:.1f} ms  over 50 ms: {s.get('over_50ms', '-')}"
        )
    for key in ("ref", "this"):
        seen = result[key]["wal_shrank_at"]
        print(f"{key}: checkpoints inside a save [save, wall ms, CPU ms]: {seen}")
    if args.json:
        args.json.write_text(json.dumps(result, indent=2), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
