"""Recall latency, this checkout against a git ref, paired in one process.

    python -m bench.recall_paired HOME --ref REF [--queries 400] [--profile] [--json OUT]
    python -m bench.recall_paired HOME --ref-tree DIR …   # a checkout's folder instead of a ref
    python -m bench.recall_paired HOME --ref REF --ref-threads 2   # the ref side's DuckDB threads
    python -m bench.recall_paired HOME --ref REF --side off   # this side without its side thread

HOME is a store `python -m bench.memory_scale --keep DIR` left (`DIR/home-N`). The ref's
`memory/` and `store/` packages are imported first from a `git archive` of REF and kept
under their module objects, then this checkout's; each side opens the same data dir with
its own `MemoryStore` (DuckDB shares the one database instance in a process) and the two
run the same `recall(query, vector=...)` calls alternately, query by query, in an order that
flips every query — the machine's load falls on both alike. Queries and vectors are
`bench.memory_scale`'s (`Synthetic(seed=2)`, as its measure worker). Reported: wall,
thread-CPU and process-CPU (DuckDB's own threads too) p50 / p95 / mean per side, and how
many recalls returned other hits (ids, scores and texts compared: 0 expected). `--profile`
adds a cProfile listing of each side's recalls.
`--side` says where this side's recalls rank the words: "on" as it ships (the store's side
thread while a core is spare, `store.side_thread`), "always" (the side thread however busy
the machine), "off" (their own thread); how the side thread's jobs ran is printed.
`--ref-threads N` sets DuckDB's `threads` to N before each of the ref side's recalls and back
to this checkout's value before each of its own (the one database is shared, and `threads`
is a setting of the whole database).
"""

from __future__ import annotations

import argparse
import cProfile
import io
import json
import pstats
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from types import ModuleType
from typing import Any

from bench._common import REPO_ROOT
from bench.memory_scale import WARM_RECALLS, Synthetic, ms_stats

PACKAGES = ("memory", "store")


def _import_tree(root: Path) -> ModuleType:
    """`memory.memory_store` as imported from `root`, and every `memory`/`store` module it
    pulled in removed from `sys.modules` again (they keep referring to each other)."""
    sys.path.insert(0, str(root))
    try:
        import memory.memory_store as module

        __import__("memory.recall")
    finally:
        sys.path.remove(str(root))
    for name in [n for n in sys.modules if n.split(".")[0] in PACKAGES]:
        del sys.modules[name]
    return module


def _extract(ref: str, into: Path) -> None:
    archive = subprocess.run(
        ["git", "archive", ref, *PACKAGES], cwd=REPO_ROOT, check=True, capture_output=True
    ).stdout
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive, check=True)


def _hits(result: Any) -> list[tuple[int, float, str]]:
    return [(hit.id, round(hit.score, 9), hit.content) for hit in result.hits]


def _listing(profiler: cProfile.Profile) -> str:
    out = io.StringIO()
    pstats.Stats(profiler, stream=out).sort_stats("cumulative").print_stats(30)
    return out.getvalue()


def import_sides(ref: str, tree: Path | None = None) -> tuple[ModuleType, ModuleType]:
    """`memory.memory_store` of the ref side (`tree`'s folder, or a `git archive` of `ref`)
    and of this checkout, each with its own `memory`/`store` modules."""
    if tree is not None:
        old = _import_tree(tree)
    else:
        with tempfile.TemporaryDirectory() as folder:
            _extract(ref, Path(folder))
            old = _import_tree(Path(folder))
    return old, _import_tree(REPO_ROOT)


def compare(
    home: Path,
    ref: str,
    queries: int,
    profile: bool,
    tree: Path | None = None,
    ref_threads: int | None = None,
    side: str = "on",
) -> dict[str, Any]:
    old, new = import_sides(ref, tree)
    from store.clock import Clock

    data = Synthetic(seed=2)
    topics = data.topics(queries + WARM_RECALLS)
    vectors = data.vectors(topics, noise=0.8)
    texts = data.queries(topics)
    sides = {"ref": old, "this": new}
    config = new.MemoryConfig(embed_model="nomic-embed-text")
    # one Database for both (DuckDB refuses a second open of the file in a process)
    this = new.MemoryStore.open(home, config, clock=Clock())
    ref = old.MemoryStore(home, config, this.db)
    ref._start()
    if side == "off":
        this.side.enabled = False
    elif side == "always":  # however busy the machine is
        this.side.cores = type(this.side.cores)(margin=float("-inf"))
    stores = {"ref": ref, "this": this}
    threads = {"ref": ref_threads, "this": _threads(this)} if ref_threads else {}
    wall: dict[str, list[float]] = {name: [] for name in sides}
    cpu: dict[str, list[float]] = {name: [] for name in sides}
    proc: dict[str, list[float]] = {name: [] for name in sides}
    profilers = {name: cProfile.Profile() for name in sides}
    differ = 0
    try:
        for store in stores.values():
            store.wait_until_ready()
            for q, v in zip(texts[:WARM_RECALLS], vectors[:WARM_RECALLS], strict=True):
                store.recall(q, vector=v)
        pairs = zip(texts[WARM_RECALLS:], vectors[WARM_RECALLS:], strict=True)
        for i, (q, v) in enumerate(pairs):
            got = {}
            for name in ("ref", "this") if i % 2 == 0 else ("this", "ref"):
                store = stores[name]
                if threads:
                    _set_threads(store, threads[name])
                if profile:
                    profilers[name].enable()
                started, used = time.perf_counter(), time.thread_time()
                process = time.process_time()
                got[name] = store.recall(q, vector=v)
                wall[name].append((time.perf_counter() - started) * 1000)
                cpu[name].append((time.thread_time() - used) * 1000)
                proc[name].append((time.process_time() - process) * 1000)
                if profile:
                    profilers[name].disable()
            differ += _hits(got["ref"]) != _hits(got["this"])
    finally:
        ref.close()  # closes the shared Database; `this.close()` finds it closed
        this.close()
    result: dict[str, Any] = {"ref": ref, "queries": queries, "differ": differ}
    for name, store in stores.items():  # how the side thread's jobs ran (a tree with one)
        if hasattr(store, "side"):
            result[f"{name}_side_thread"] = dict(store.side.stats)
    if threads:
        result["threads"] = threads
    for name in sides:
        result[name] = ms_stats(wall[name])
        result[f"{name}_cpu"] = ms_stats(cpu[name])
        result[f"{name}_proc"] = ms_stats(proc[name])
        if profile:
            result[f"{name}_profile"] = _listing(profilers[name])
    return result


def _threads(store: Any) -> int:
    with store.db.cursor() as cur:
        return int(cur.execute("SELECT current_setting('threads')").fetchall()[0][0])


def _set_threads(store: Any, threads: int) -> None:
    with store.db.cursor() as cur:
        cur.execute(f"SET threads = {int(threads)}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("home", type=Path)
    parser.add_argument("--ref", default="main")
    parser.add_argument("--ref-tree", type=Path, help="the ref side from this folder")
    parser.add_argument("--queries", type=int, default=400)
    parser.add_argument("--profile", action="store_true")
    parser.add_argument("--ref-threads", type=int, help="DuckDB threads for the ref side")
    parser.add_argument(
        "--side", choices=("on", "always", "off"), default="on", help="the side thread"
    )
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    ref = str(args.ref_tree) if args.ref_tree else args.ref
    result = compare(
        args.home, ref, args.queries, args.profile, args.ref_tree, args.ref_threads, args.side
    )
    for key in ("ref", "this"):
        if f"{key}_profile" in result:
            print(f"--- {key} profile\n{result[f'{key}_profile']}")
    for key in ("ref", "this", "ref_cpu", "this_cpu", "ref_proc", "this_proc"):
        stats = result[key]
        print(f"{key:9} p50 {stats['p50_ms']:.2f}  p95 {stats['p95_ms']:.2f} ms")
    print(f"recalls with other hits: {result['differ']} of {result['queries']}")
    for key in ("ref_side_thread", "this_side_thread"):
        if key in result:
            print(f"{key}: {result[key]}")
    if args.json:
        args.json.write_text(json.dumps(result, indent=2), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
