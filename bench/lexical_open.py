"""The word index alone at scale: open time from `lexical.idx` vs from the tables, its RSS
(anonymous vs file-backed), and the word search's latency, old scorer vs new, paired.

    python -m bench.lexical_open build N DIR     # the tables of N synthetic points
    python -m bench.lexical_open open DIR        # load, write lexical.idx, reopen (own process)
    python -m bench.lexical_open latency DIR [--queries 300] [--k 40]
    python -m bench.lexical_open compare DIR REF [--queries 300] [--k 40] [--lazy-impacts]

`build` writes what `bench.memory_scale` would index for N points (the same `Synthetic`
texts, neighbours and dates, through `lexical_index.reindex_all`) into a fresh database,
without vectors: a 1M-point word index in ~3 min instead of the 40 min of a full run.
`open` runs two interpreters one after the other: the first loads from the tables and writes
`lexical.idx`, the second maps it; each reports the time until a search answers and
RssAnon / RssFile (from /proc/self/status) before and after. `latency` times
`LexicalCache.search_and_subset` (what recall calls: top `k` and the pinned subset)
alternating the exact dense scorer (`store.lexical_dense`) and the pruned one per
query, and checks that both give the same ids and the same scores (bit for bit). `compare`
alternates this checkout's pruned search with `store/lexical_topk.py` as it is at the git
commit REF (two caches on the same mapped file; `--lazy-impacts`: the REF side computes the
terms' impact bounds on first sight instead of reading them from the file, as before format 2).
"""

from __future__ import annotations

import argparse
import gc
import importlib.util
import json
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from bench.memory_scale import Synthetic, _neighbours, ms_stats, vm_status

CHUNK = 50_000


def build(n: int, home: Path) -> dict[str, Any]:
    from memory.recall import lexical_text
    from store import lexical_index, meta
    from store.clock import Clock
    from store.database import database_path, open_database

    home.mkdir(parents=True, exist_ok=True)
    db = open_database(database_path(home), clock=Clock())
    data = Synthetic(seed=1)
    now = datetime.now(UTC)
    started = time.perf_counter()
    rows: list[tuple[int, str]] = []
    for start in range(0, n, CHUNK):
        count = min(CHUNK, n - start)
        texts = data.texts(data.topics(count))
        ages = data.rng.uniform(0, 365 * 86_400, count)
        for i, text in enumerate(texts):
            when = now - timedelta(seconds=float(ages[i]))
            rows.append(
                (start + i + 1, lexical_text(text, context=_neighbours(texts, i), when=when))
            )
    generated = time.perf_counter() - started
    with db.transaction() as cur:
        lexical_index.reindex_all(cur, rows)
        meta.put(cur, "database.id", "bench-lexical-open")
    with db.cursor() as cur:
        cur.execute("CHECKPOINT")
        postings = int(cur.execute("SELECT count(*) FROM lexical_postings").fetchall()[0][0])
    db.close()
    return {
        "n": n,
        "postings": postings,
        "generate_s": round(generated, 1),
        "total_s": round(time.perf_counter() - started, 1),
    }


def open_once(home: Path) -> dict[str, Any]:
    """One interpreter: open the cache as the store does (file if usable), time to a search."""
    from store.clock import Clock
    from store.database import database_path, open_database
    from store.lexical_file import LEXICAL_FILENAME
    from store.lexical_index import LexicalCache

    db = open_database(database_path(home), clock=Clock())
    gc.collect()
    before = vm_status()
    started = time.perf_counter()
    cache = LexicalCache(file=home / LEXICAL_FILENAME)
    with db.cursor() as cur:
        cache.load(cur)
        loaded = time.perf_counter()
        cache.search(cur, "great question about the project tomorrow", 40)
    answered = time.perf_counter()
    gc.collect()
    after = vm_status()
    result: dict[str, Any] = {
        "loaded_from": cache.loaded_from,
        "load_s": round(loaded - started, 3),
        "first_search_ms": round((answered - loaded) * 1000, 1),
        "rss_anon_mib": round((after["RssAnon"] - before["RssAnon"]) / 2**20, 1),
        "rss_file_mib": round((after["RssFile"] - before["RssFile"]) / 2**20, 1),
        "docs": cache.doc_count,
        "terms": cache.term_count,
    }
    write_started = time.perf_counter()
    result["wrote"] = cache.save_file()
    result["write_s"] = round(time.perf_counter() - write_started, 2)
    gc.collect()
    final = vm_status()
    result["after_write_rss_anon_mib"] = round((final["RssAnon"] - before["RssAnon"]) / 2**20, 1)
    result["after_write_rss_file_mib"] = round((final["RssFile"] - before["RssFile"]) / 2**20, 1)
    path = home / LEXICAL_FILENAME
    result["file_mib"] = round(path.stat().st_size / 2**20, 1) if path.exists() else None
    db.close()
    return result


def latency(home: Path, queries: int, k: int) -> dict[str, Any]:
    from store import lexical_topk
    from store.clock import Clock
    from store.database import database_path, open_database
    from store.lexical_file import LEXICAL_FILENAME
    from store.lexical_index import LexicalCache

    db = open_database(database_path(home), clock=Clock())
    cache = LexicalCache(file=home / LEXICAL_FILENAME)
    data = Synthetic(seed=2)
    texts = data.queries(data.topics(queries + 5))
    pinned = list(range(1000, cache_size(db) + 1, max(1, cache_size(db) // 50)))[:50]
    old: list[float] = []
    new: list[float] = []
    old_cpu: list[float] = []  # this thread's CPU time: what a loaded machine inflates less
    new_cpu: list[float] = []
    differ = 0
    with db.cursor() as cur:
        cache.load(cur)
        for text in texts[:5]:  # warm up both
            cache.search_and_subset(cur, text, k, pinned)
        index = cache._index
        for i, text in enumerate(texts[5:]):
            runs: dict[str, tuple[Any, float, float]] = {}
            for name in ("dense", "pruned") if i % 2 == 0 else ("pruned", "dense"):
                lexical_topk.PRUNING = name == "pruned"
                started, cpu = time.perf_counter(), time.thread_time()
                got = cache.search_and_subset(cur, text, k, pinned)
                wall = (time.perf_counter() - started) * 1000
                runs[name] = (got, wall, (time.thread_time() - cpu) * 1000)
            old.append(runs["dense"][1])
            new.append(runs["pruned"][1])
            old_cpu.append(runs["dense"][2])
            new_cpu.append(runs["pruned"][2])
            if runs["dense"][0] != runs["pruned"][0]:
                differ += 1
        lexical_topk.PRUNING = True
        assert index is cache._index
    db.close()
    return {
        "dense": ms_stats(old),
        "pruned": ms_stats(new),
        "dense_cpu": ms_stats(old_cpu),
        "pruned_cpu": ms_stats(new_cpu),
        "differ": differ,
        "queries": queries,
        "k": k,
        "pinned": len(pinned),
    }


def compare(home: Path, ref: str, queries: int, k: int, lazy_impacts: bool) -> dict[str, Any]:
    """This checkout's pruned search against REF's `lexical_topk`, alternating query by query."""
    import store.lexical_ranking as lexical_ranking
    from store import lexical_topk
    from store.clock import Clock
    from store.database import database_path, open_database
    from store.lexical_file import LEXICAL_FILENAME
    from store.lexical_index import LexicalCache

    source = subprocess.run(
        ["git", "show", f"{ref}:store/lexical_topk.py"], check=True, capture_output=True, text=True
    ).stdout
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "lexical_topk_ref.py"
        path.write_text(source)
        spec = importlib.util.spec_from_file_location("lexical_topk_ref", path)
        assert spec is not None and spec.loader is not None
        old = importlib.util.module_from_spec(spec)
        sys.modules["lexical_topk_ref"] = old  # dataclasses look their module up
        spec.loader.exec_module(old)
    modules = {"ref": old, "this": lexical_topk}
    db = open_database(database_path(home), clock=Clock())
    caches = {name: LexicalCache(file=home / LEXICAL_FILENAME) for name in modules}
    data = Synthetic(seed=2)
    texts = data.queries(data.topics(queries + 5))
    wall: dict[str, list[float]] = {name: [] for name in modules}
    cpu: dict[str, list[float]] = {name: [] for name in modules}
    differ = 0
    try:
        with db.cursor() as cur:
            for cache in caches.values():
                cache.load(cur)
            if lazy_impacts:
                index = caches["ref"]._index
                index._file_impacts = index._file_impacts[:0]
            size = caches["this"].doc_count
            pinned = list(range(1000, size + 1, max(1, size // 50)))[:50]
            for name, cache in caches.items():  # warm up both
                lexical_ranking.lexical_topk = modules[name]
                for text in texts[:5]:
                    cache.search_and_subset(cur, text, k, pinned)
            for i, text in enumerate(texts[5:]):
                got = {}
                for name in ("ref", "this") if i % 2 == 0 else ("this", "ref"):
                    lexical_ranking.lexical_topk = modules[name]
                    started, used = time.perf_counter(), time.thread_time()
                    got[name] = caches[name].search_and_subset(cur, text, k, pinned)
                    wall[name].append((time.perf_counter() - started) * 1000)
                    cpu[name].append((time.thread_time() - used) * 1000)
                differ += got["ref"] != got["this"]
    finally:
        lexical_ranking.lexical_topk = lexical_topk
        db.close()
    result: dict[str, Any] = {"ref": ref, "lazy_impacts": lazy_impacts}
    for name in modules:
        result[name] = ms_stats(wall[name])
        result[f"{name}_cpu"] = ms_stats(cpu[name])
    result.update(differ=differ, queries=queries, k=k, pinned=len(pinned))
    return result


def cache_size(db: Any) -> int:
    with db.cursor() as cur:
        return int(cur.execute("SELECT count(*) FROM lexical_docs").fetchall()[0][0])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="cmd", required=True)
    b = sub.add_parser("build")
    b.add_argument("n", type=int)
    b.add_argument("home", type=Path)
    o = sub.add_parser("open")
    o.add_argument("home", type=Path)
    o.add_argument("--once", action="store_true", help=argparse.SUPPRESS)
    lat = sub.add_parser("latency")
    lat.add_argument("home", type=Path)
    lat.add_argument("--queries", type=int, default=300)
    lat.add_argument("--k", type=int, default=40)
    cmp = sub.add_parser("compare")
    cmp.add_argument("home", type=Path)
    cmp.add_argument("ref")
    cmp.add_argument("--queries", type=int, default=300)
    cmp.add_argument("--k", type=int, default=40)
    cmp.add_argument("--lazy-impacts", action="store_true")
    args = parser.parse_args(argv)
    if args.cmd == "build":
        out: Any = build(args.n, args.home)
    elif args.cmd == "open" and args.once:
        out = open_once(args.home)
    elif args.cmd == "open":
        out = []
        for _ in range(2):
            run = subprocess.run(
                [sys.executable, "-m", "bench.lexical_open", "open", str(args.home), "--once"],
                check=True,
                capture_output=True,
                text=True,
            )
            out.append(json.loads(run.stdout))
    elif args.cmd == "compare":
        out = compare(args.home, args.ref, args.queries, args.k, args.lazy_impacts)
    else:
        out = latency(args.home, args.queries, args.k)
    print(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
