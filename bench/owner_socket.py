"""`status --json` and `recall` with the data dir owned by another process, and without.

    nice -n 10 python -m bench.owner_socket [--points 10000] [--runs 7] [--json [OUT]]
                                            [--home DIR] [--tmpdir DIR]

1. build: N synthetic points (bench.memory_browser.build_store: chat texts, word-indexed, no
   vectors — the comparison is about who opens the store, not about the HNSW search).
2. no owner: each command as a process of its own, `--runs` times: the process opens the
   memory itself (lock, DuckDB, word cache) and closes it.
3. owner: a process holds the data dir with its memory open and serves it
   (`--serve`: the same `MemorySession` + `OwnerServer` as the TUI and `straylight mcp`);
   the same commands, as processes, are forwarded to it. Also the socket round trip alone
   (a request frame to the exit frame, from this process: no interpreter start-up).
The Ollama stand-in runs as a child process (`status` asks it; `recall` embeds the query).
Times are wall-clock per command, in ms (median, p95, max).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench._common import JsonDict, StandInProcess, format_machine, machine_info
from bench._common import write_json as write_json_file

COMMANDS = {"status --json": ["status", "--json"], "recall": ["recall", "meeting project plan"]}


def summarize(times: list[float]) -> JsonDict:
    """median, p95 (nearest rank) and max, in ms."""
    ordered = sorted(times)
    p95 = ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]
    return {
        "n": len(ordered),
        "median": round(statistics.median(ordered), 1),
        "p95": round(p95, 1),
        "max": round(ordered[-1], 1),
    }


def env_for(home: Path, host: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("STRAYLIGHT_", "MEMORY_"))}
    env.update(
        STRAYLIGHT_HOME=str(home),
        OLLAMA_HOST=host,
        STRAYLIGHT_WORKSPACE="bench",
        PYTHONPATH=str(Path(__file__).resolve().parent.parent),
    )
    return env


def time_processes(env: dict[str, str], argv: list[str], runs: int) -> JsonDict:
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        done = subprocess.run(
            [sys.executable, "-m", "tui.cli", *argv], env=env, capture_output=True, check=False
        )
        times.append((time.perf_counter() - started) * 1000)
        if done.returncode != 0:
            raise RuntimeError(f"{argv} failed: {done.stderr.decode()}")
    return summarize(times)


def time_round_trips(home: Path, env: dict[str, str], argv: list[str], runs: int) -> JsonDict:
    """Request frame → exit frame over the socket, from this process."""
    import io

    from tui.owner_client import forward
    from tui.owner_request import CommandRequest, settings_environment

    request = CommandRequest(
        argv=argv, home=str(home), env=settings_environment(env), cwd=os.getcwd()
    )
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        code = forward(home, request, io.StringIO(), io.StringIO())
        times.append((time.perf_counter() - started) * 1000)
        assert code == 0, code
    return summarize(times)


def serve(home: Path) -> int:
    """`--serve`: own the data dir, memory open, serving, until stdin closes."""
    from agent.settings import load_settings
    from store.data_dir_lock import DataDirLock
    from tui.memory_session import MemorySession
    from tui.owner_server import OwnerServer

    settings = load_settings(flags={"home": str(home)}).settings
    with DataDirLock(home):
        from agent.ollama_gateway import OllamaGateway

        with MemorySession(settings, OllamaGateway.from_config(settings.ollama)) as memory:
            memory.store.wait_until_ready(timeout=600)
            server = OwnerServer(home).start()
            print("READY", flush=True)
            sys.stdin.read()
            server.stop()
    return 0


def run(points: int, runs: int, home: Path | None, tmp: Path) -> JsonDict:
    from bench.memory_browser import build_store, stored_points

    home = home or tmp / f"home-{points}"
    build = {"reused": True}
    if stored_points(home) != points:
        build = build_store(home, points)
    result: JsonDict = {"points": points, "runs": runs, "build": build, "machine": machine_info()}
    with StandInProcess(spec_dir=tmp) as standin:
        env = env_for(home, standin.host)
        result["no_owner"] = {
            name: time_processes(env, argv, runs) for name, argv in COMMANDS.items()
        }
        owner = subprocess.Popen(
            [sys.executable, "-m", "bench.owner_socket", "--serve", str(home)],
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        try:
            assert owner.stdout is not None and owner.stdout.readline().strip() == "READY"
            result["owner"] = {
                name: time_processes(env, argv, runs) for name, argv in COMMANDS.items()
            }
            result["socket_round_trip"] = {
                name: time_round_trips(home, env, argv, runs * 3) for name, argv in COMMANDS.items()
            }
        finally:
            assert owner.stdin is not None
            owner.stdin.close()
            owner.wait(timeout=120)
    return result


def print_table(result: JsonDict) -> None:
    print(f"# owner socket, {result['points']:,} points ({format_machine(result['machine'])})")
    print(f"{'command':<16}{'mode':<22}{'median':>10}{'p95':>10}{'max':>10}")
    for mode in ("no_owner", "owner", "socket_round_trip"):
        for name, stats in result[mode].items():
            row: Any = stats
            print(
                f"{name:<16}{mode:<22}{row['median']:>10.1f}{row['p95']:>10.1f}{row['max']:>10.1f}"
            )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="bench.owner_socket")
    parser.add_argument("--points", type=int, default=10_000)
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--json", nargs="?", const="-", metavar="OUT")
    parser.add_argument("--home", type=Path)
    parser.add_argument("--tmpdir", type=Path)
    parser.add_argument("--serve", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.serve is not None:
        return serve(args.serve)
    with tempfile.TemporaryDirectory(dir=args.tmpdir) as scratch:
        result = run(args.points, args.runs, args.home, Path(scratch))
    if args.json == "-":
        print(json.dumps(result, indent=2))
    else:
        print_table(result)
        if args.json:
            write_json_file(Path(args.json), result)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
