"""`memory_search` over MCP: the round trip an agent sees, at N points.

    python -m bench.mcp_search [--points 10000] [--calls 30] [--json [OUT]] [--tmpdir DIR]

1. build: a store of N synthetic 768-d points (`bench.memory_scale.worker_build`: bulk load,
   word index, HNSW index file), 50 of them pinned docs.
2. measure: `straylight mcp --home …` under the SDK's own client (`stdio_client` +
   `ClientSession`), with the Ollama stand-in in its own process as the embedder (its hashed
   vectors cost well under a millisecond, so the embedding is out of the numbers); `--calls`
   `memory_search` calls with different queries, each timed from `call_tool` to its result.
   Also timed: the same search as a plain `straylight recall --json` process, which is what
   each tool call runs today (`tui/command_runner.py`: a child process per command), to show
   where the time goes.

Results print as a table; `--json` alone prints JSON instead; `--json OUT` writes it to OUT
as well. ~1 minute at 10k points on 2 cores.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench._common import (
    REPO_ROOT,
    JsonDict,
    StandInProcess,
    hermetic_env,
    machine_info,
    summarize,
    write_json,
)

QUERIES = (
    "meeting tomorrow project plan",
    "deploy the build",
    "what did we decide about the budget",
    "remember the dentist appointment",
    "python error timeout",
    "weekend trip train tickets",
)


def p95(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]


async def measure_mcp(env: dict[str, str], home: Path, calls: int) -> JsonDict:
    from mcp import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    params = StdioServerParameters(
        command=sys.executable, args=["-m", "tui", "mcp", "--home", str(home)], env=env
    )
    times: list[float] = []
    hits: list[int] = []
    started = time.perf_counter()
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        ready = time.perf_counter() - started
        for i in range(calls):
            query = QUERIES[i % len(QUERIES)]
            begin = time.perf_counter()
            result = await session.call_tool("memory_search", {"query": query})
            times.append((time.perf_counter() - begin) * 1000)
            if result.is_error:
                raise RuntimeError(f"memory_search failed: {result.content}")
            hits.append(len((result.structured_content or {}).get("hits", [])))
    return {
        "initialize_ms": round(ready * 1000, 1),
        "round_trip_ms": {k: _round(v) for k, v in summarize(times).items()},
        "round_trip_p95_ms": round(p95(times), 1),
        "hits_per_call_mean": round(sum(hits) / len(hits), 1),
    }


def measure_cli(env: dict[str, str], home: Path, runs: int) -> JsonDict:
    """`straylight recall QUERY --json` as a process: what one tool call runs today."""
    times: list[float] = []
    for i in range(runs):
        begin = time.perf_counter()
        subprocess.run(
            [sys.executable, "-m", "tui", "recall", QUERIES[i % len(QUERIES)], "--json"],
            env={**env, "STRAYLIGHT_HOME": str(home)},
            cwd=REPO_ROOT,
            check=True,
            capture_output=True,
        )
        times.append((time.perf_counter() - begin) * 1000)
    return {"process_ms": {k: _round(v) for k, v in summarize(times).items()}}


def _round(value: Any) -> Any:
    return round(value, 1) if isinstance(value, float) else value


def run(points: int, calls: int, tmp: Path) -> JsonDict:
    from bench.memory_scale import worker_build

    home = tmp / "home"
    home.mkdir(mode=0o700)
    build = worker_build(home, points, 50)
    with StandInProcess(spec_dir=tmp / "spec") as standin:
        env = hermetic_env(tmp, OLLAMA_HOST=standin.host, PYTHONPATH=str(REPO_ROOT))
        mcp = asyncio.run(measure_mcp(env, home, calls))
        cli = measure_cli(env, home, max(5, calls // 3))
    return {
        "points": points,
        "calls": calls,
        "build": {k: build[k] for k in ("add_many_s", "lexical_reindex_s") if k in build},
        "mcp": mcp,
        "recall_process": cli,
        "machine": machine_info(),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.mcp_search")
    parser.add_argument("--points", type=int, default=10_000)
    parser.add_argument("--calls", type=int, default=30)
    parser.add_argument("--json", nargs="?", const="-", metavar="OUT")
    parser.add_argument("--tmpdir", type=Path)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(dir=args.tmpdir) as tmp:
        result = run(args.points, args.calls, Path(tmp))
    if args.json and args.json != "-":
        write_json(Path(args.json), result)
    if args.json == "-":
        print(json.dumps(result, indent=2))
        return 0
    mcp, cli = result["mcp"], result["recall_process"]
    print(f"memory_search over MCP at {result['points']:,} points ({result['calls']} calls)")
    print(f"  initialize          {mcp['initialize_ms']:>8} ms")
    print(f"  round trip p50      {mcp['round_trip_ms']['median']:>8} ms")
    print(f"  round trip p95      {mcp['round_trip_p95_ms']:>8} ms")
    print(f"  round trip max      {mcp['round_trip_ms']['max']:>8} ms")
    print(f"  recall process p50  {cli['process_ms']['median']:>8} ms  (what one call runs today)")
    print(f"  hits per call       {mcp['hits_per_call_mean']:>8}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
