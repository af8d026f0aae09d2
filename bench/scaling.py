"""Scaling of the memory from 1k to 1M points, with plots (issue 7).

    python -m bench.scaling [--sizes 1000,10000,100000,1000000] [--json OUT] [--plots DIR]
                            [--tmpdir DIR] [--saves 200] [--recalls 200] [--startup-runs 3]
                            [--keep DIR]

For each size N (synthetic 768-d points, the data of bench/memory_scale.py), in this order:

1. build, attrib and measure: bench/memory_scale.py's three phases, each in its own
   interpreter (its functions, not a copy) — bulk load, index rebuild (fetch the vectors +
   HNSW build + save), RSS by component, RSS growth of `MemoryStore.open` + ready vs
   `status()["ram_estimate_bytes"]`, then `--recalls` recalls and `--saves` saves with
   precomputed vectors (embedding excluded), p50/p95.
2. start-up: the real `straylight` TUI on a pty with `--home` on that store, Ollama down (a
   closed port), as bench/startup.py runs it: the app's "first frame after N ms" log line
   and the harness's wall time to it; then, on the same screen, when the memory is open
   (the sidebar's FACTS block leaves "opening…": set right after `MemoryStore.open`
   returns, in `on_memory_opened`) and when the MEMORY block shows the point count. The
   app refreshes that block only after a turn or after the backfill / index-upkeep / decay
   jobs finish, and those run at start only when they are due, so the count shows in the
   first start on the store (the warm-up run, every job due) and not in the later ones.
3. files: `straylight.duckdb` (+ WAL) and `vectors.usearch` after the build (checkpointed),
   bytes per point each and together.

The headroom thresholds are the defaults of `memory_ram_warn_bytes` / `memory_ram_crit_bytes`
(memory/settings_models.py); each size reports the level `status()` gives (from the estimate) and
the level the measured RSS growth would give. Results: bench/results/scaling.json (written
after each size, so a long run keeps what it measured) and PNG plots in bench/results/
(bench/scaling_plots.py; `--plots ''` skips them). The stores are deleted after each size
unless `--keep DIR`. At 1M the build phase is the long one (HNSW build of 1M vectors).
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import os
import re
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench import memory_scale
from bench._common import (
    RESULTS_DIR,
    JsonDict,
    closed_port,
    format_machine,
    hermetic_env,
    machine_info,
    write_json,
)
from bench.startup import COLUMNS, LINES, StartupError, _Child, straylight_command

DEFAULT_SIZES = "1000,10000,100000,1000000"
FACTS_OPEN_RE = re.compile(rb"\d+ active, \d+ stale")
POINTS_RE = re.compile(rb"([\d,]+) points?, ([\d,]+) pinned")
USABLE_RE = re.compile(rb"memory usable after (\d+) ms")
POLL_SECONDS = 0.005


def default_thresholds() -> dict[str, int]:
    from memory.settings_models import MemoryConfig

    defaults = MemoryConfig()
    return {"warn_bytes": defaults.ram_warn_bytes, "crit_bytes": defaults.ram_crit_bytes}


def level(ram: int, thresholds: dict[str, int]) -> str:
    from memory.memory_store import headroom

    return headroom(ram, thresholds["warn_bytes"], thresholds["crit_bytes"])


# --------------------------------------------------------------------------- start-up


class _ScreenChild(_Child):
    """bench.startup's pty child, keeping every byte the app wrote (the sidebar is searched)."""

    def __init__(self, argv: list[str], env: dict[str, str], log_file: Path) -> None:
        self.screen = bytearray()
        super().__init__(argv, env, log_file)

    def drain(self, timeout: float) -> bool:
        before = self.output_total
        still_open = super().drain(timeout)
        fresh = self.output_total - before
        if fresh:
            self.screen += self.output[-fresh:]
        return still_open

    def find(self, pattern: re.Pattern[bytes], start: int) -> re.Match[bytes] | None:
        return pattern.search(self.screen, max(0, start - 200))

    def logged_ms(self, pattern: re.Pattern[bytes]) -> int | None:
        """The ms a log line matching `pattern` names (the app's own clock), once it is there."""
        with contextlib.suppress(OSError):
            match = pattern.search(self.log_file.read_bytes())
            return int(match.group(1)) if match else None
        return None


def _proc_rss(pid: int) -> int | None:
    with contextlib.suppress(OSError):
        for line in Path(f"/proc/{pid}/status").read_text(encoding="ascii").splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    return None


def app_start(home: Path, host: str, tmp: Path, *, timeout: float, points_wait: float) -> JsonDict:
    """One start of `straylight --home <home>`: first frame, memory open, point count, quit."""
    log_file = home / "straylight.log"
    log_file.unlink(missing_ok=True)  # the first-frame line must be this run's
    argv = [*straylight_command(), "--home", str(home), "--ollama-host", host]
    env = hermetic_env(
        tmp, TERM="xterm-256color", COLUMNS=str(COLUMNS), LINES=str(LINES), COLORTERM="truecolor"
    )
    child = _ScreenChild(argv, env, log_file)
    marks: dict[str, float | None] = {"open_wall_ms": None, "points_wall_ms": None}
    usable_ms: int | None = None  # the app's "memory usable after N ms" (words in too)
    shown: str | None = None
    try:
        deadline = child.forked_at + timeout
        app_ms: int | None = None
        wall_ms = 0.0
        scanned = 0
        points_deadline: float | None = None
        pty_open = True
        while True:
            if pty_open:
                pty_open = child.drain(POLL_SECONDS)
            else:
                time.sleep(POLL_SECONDS)
            now = time.perf_counter()
            if app_ms is None:
                app_ms = child.first_frame_ms()
                if app_ms is not None:
                    wall_ms = (now - child.forked_at) * 1000
            if marks["open_wall_ms"] is None and child.find(FACTS_OPEN_RE, scanned):
                marks["open_wall_ms"] = (now - child.forked_at) * 1000
                points_deadline = now + points_wait
            match = child.find(POINTS_RE, scanned) if marks["points_wall_ms"] is None else None
            if match:
                marks["points_wall_ms"] = (now - child.forked_at) * 1000
                shown = match.group(0).decode()
            scanned = len(child.screen)
            if usable_ms is None and marks["open_wall_ms"] is not None:
                usable_ms = child.logged_ms(USABLE_RE)
            if app_ms is not None and marks["open_wall_ms"] is not None:
                if marks["points_wall_ms"] is not None and usable_ms is not None:
                    break
                if points_deadline is not None and now > points_deadline:
                    break
            if child.exited():
                raise StartupError(
                    f"straylight exited with status {child.status};"
                    f" screen tail: {child.screen_tail()[-400:]!r}"
                )
            if now > deadline:
                raise StartupError(
                    f"no first frame / memory open after {timeout:.0f} s (first frame: {app_ms});"
                    f" screen tail: {child.screen_tail()[-400:]!r}"
                )
        app_rss = _proc_rss(child.pid)
        child.drain(0.05)
        how, quit_ms = child.stop()
        return {
            "app_ms": float(app_ms),
            "wall_ms": round(wall_ms, 1),
            "memory_open_wall_ms": round(marks["open_wall_ms"] or 0.0, 1),
            "points_shown_wall_ms": (
                round(marks["points_wall_ms"], 1) if marks["points_wall_ms"] else None
            ),
            "points_shown": shown,
            "usable_after_frame_ms": usable_ms - app_ms if usable_ms is not None else None,
            "app_rss_bytes": app_rss,
            "quit_via": how,
            "quit_ms": round(quit_ms, 1),
            "exit_status": child.status,
        }
    finally:
        child.close()


def measure_startup(home: Path, n: int, runs: int, tmp: Path) -> JsonDict:
    """A warm-up start (the first on this store: every job due) and `runs` measured starts."""
    host = f"127.0.0.1:{closed_port()}"
    timeout = 60.0 + n * 0.0003
    first = app_start(home, host, tmp, timeout=timeout, points_wait=30.0 + n * 0.0001)
    measured = [app_start(home, host, tmp, timeout=timeout, points_wait=0.5) for _ in range(runs)]

    def median(key: str) -> float | None:
        values = [r[key] for r in measured if r[key] is not None]
        return round(statistics.median(values), 1) if values else None

    return {
        "ollama": "down (closed port)",
        "first_start": first,
        "runs": measured,
        "first_frame_app_ms_median": median("app_ms"),
        "first_frame_wall_ms_median": median("wall_ms"),
        "memory_open_wall_ms_median": median("memory_open_wall_ms"),
        "points_shown_first_start_wall_ms": first["points_shown_wall_ms"],
    }


# --------------------------------------------------------------------------- one size


def scale_args(args: argparse.Namespace) -> argparse.Namespace:
    """What bench.memory_scale.run_worker reads from its own arguments."""
    return argparse.Namespace(
        saves=args.saves,
        recalls=args.recalls,
        pinned=args.pinned,
        profile=False,
        stdout_json=False,
    )


def run_size(n: int, args: argparse.Namespace, tmp: Path, thresholds: dict[str, int]) -> JsonDict:
    home = tmp / f"home-{n}"
    worker_args = scale_args(args)
    timeout = memory_scale.worker_timeout(n)
    started = time.perf_counter()
    load_before = machine_info()["loadavg"]  # other work on the machine skews the big sizes
    print(f"[{n:,} points] build …", flush=True)
    build = memory_scale.run_worker("build", home, n, worker_args, timeout)
    print(
        f"[{n:,} points] built in {build['wall_s']} s (generate {build['generate_s']} s, "
        f"add_many {build['add_many_s']} s, lexical {build['lexical_reindex_s']} s, "
        f"index rebuild {build['rebuild']['total_s']} s); attrib …",
        flush=True,
    )
    attrib = memory_scale.run_worker("attrib", home, n, worker_args, timeout)
    print(f"[{n:,} points] measure ({args.recalls} recalls, {args.saves} saves) …", flush=True)
    git = machine_info()["git"]  # what the measure worker imports (the tree may have moved)
    measure = memory_scale.run_worker("measure", home, n, worker_args, timeout)
    base = memory_scale.summarise(n, build, attrib, measure)
    startup: JsonDict | None = None
    if args.startup_runs > 0:
        print(f"[{n:,} points] start-up of the TUI on this store …", flush=True)
        startup = measure_startup(home, n, args.startup_runs, tmp)
    result = summarise(n, base, build, attrib, measure, startup, thresholds)
    result["git"] = git
    result["wall_s"] = round(time.perf_counter() - started, 1)
    result["loadavg"] = {"before": load_before, "after": machine_info()["loadavg"]}
    print(f"[{n:,} points] done in {result['wall_s']} s", flush=True)
    if not args.keep:
        shutil.rmtree(home, ignore_errors=True)
    return result


def summarise(
    n: int,
    base: JsonDict,
    build: JsonDict,
    attrib: JsonDict,
    measure: JsonDict,
    startup: JsonDict | None,
    thresholds: dict[str, int],
) -> JsonDict:
    files = build["files"]
    db_bytes = files.get("straylight.duckdb", 0) + files.get("straylight.duckdb.wal", 0)
    index_bytes = files.get("vectors.usearch", 0)
    ram = base["ram"]
    growth = int(ram["rss_growth_bytes"])
    estimate = int(ram["ram_estimate_bytes"])
    rebuild = build["rebuild"]
    return {
        "n": n,
        "recall": base["recall"],
        "save": base["save"],
        "vector_overlap": measure.get("vector_overlap"),  # the synthetic recall check
        "rebuild": {
            "total_s": rebuild["total_s"],
            "fetch_s": rebuild["fetch_s"],
            "build_and_save_s": rebuild["build_and_save_s"],
            "save_s": rebuild["save_s"],
        },
        "bulk_load": {
            "generate_s": build["generate_s"],
            "add_many_s": build["add_many_s"],
            "lexical_reindex_s": build["lexical_reindex_s"],
            "postings": build["postings"],
            "pinned": build["pinned"],
            "text_chars_mean": build["text_chars_mean"],
            "build_wall_s": build["wall_s"],
        },
        "disk": {
            "duckdb_bytes": db_bytes,
            "usearch_bytes": index_bytes,
            "total_bytes": db_bytes + index_bytes,
            "duckdb_bytes_per_point": round(db_bytes / n),
            "usearch_bytes_per_point": round(index_bytes / n),
            "total_bytes_per_point": round((db_bytes + index_bytes) / n),
            "files_after_measure": measure["files_after"],
        },
        "ram": {
            "rss_growth_bytes": growth,
            "ram_estimate_bytes": estimate,
            "estimate_over_growth": ram["estimate_over_growth"],
            "estimate_within_20pct": ram["within_tolerance"],
            "rss_growth_in_use_bytes": measure["rss_growth_in_use_bytes"],
            "estimate_over_growth_in_use": measure["estimate_over_growth_in_use"],
            "estimate_parts": ram["estimate_parts"],
            "rss_before_open_bytes": measure["rss"]["before_open"],
            "rss_after_saves_bytes": measure["rss"]["after_saves"],
            "peak_rss_bytes": measure["vm"]["VmHWM"],
            "rss_steps": measure["rss"],
            "components": attrib["delta"],
            "lexical_postings_bytes": attrib["lexical_postings_bytes"],
            "lexical_terms": attrib["lexical_terms"],
            "duckdb_memory_after_measure": measure["duckdb_memory"],
            "headroom_from_estimate": measure["status"]["headroom"],
            "headroom_from_rss_growth": level(growth, thresholds),
            "growth_over_warn": round(growth / thresholds["warn_bytes"], 2),
            "growth_over_crit": round(growth / thresholds["crit_bytes"], 2),
        },
        "open": {
            "open_s": measure["open_s"],
            "ready_s": measure["ready_s"],
            "status_ms": measure["status_ms"],
            "close_s": measure["close_s"],
        },
        "startup": startup,
        "phase_wall_s": {"build": build["wall_s"], "attrib": attrib["wall_s"]}
        | {"measure": measure["wall_s"]},
    }


# --------------------------------------------------------------------------- report


def mib(value: float) -> str:
    return f"{value / 2**20:,.0f}"


def table_rows(results: list[JsonDict]) -> list[tuple[str, ...]]:
    """One row a metric, one column a size (the README's table)."""

    def row(label: str, fn: Any) -> tuple[str, ...]:
        cells = []
        for r in results:
            try:
                cells.append(fn(r))
            except (KeyError, TypeError):
                cells.append("-")
        return (label, *cells)

    def ms(value: float | None) -> str:
        return "-" if value is None else f"{value:,.0f}"

    return [
        row(
            "recall p50 / p95 (ms, embedding excluded)",
            lambda r: f"{r['recall']['p50_ms']:.1f} / {r['recall']['p95_ms']:.1f}",
        ),
        row(
            "save p50 / p95 (ms)",
            lambda r: f"{r['save']['p50_ms']:.1f} / {r['save']['p95_ms']:.1f}",
        ),
        row(
            "index rebuild: fetch + HNSW build/save (s)",
            lambda r: f"{r['rebuild']['fetch_s']:.1f} + {r['rebuild']['build_and_save_s']:.1f}",
        ),
        row(
            "disk B/point: duckdb + usearch = total",
            lambda r: (
                f"{r['disk']['duckdb_bytes_per_point']:,} + "
                f"{r['disk']['usearch_bytes_per_point']:,} = {r['disk']['total_bytes_per_point']:,}"
            ),
        ),
        row(
            "disk total (MiB)",
            lambda r: f"{mib(r['disk']['duckdb_bytes'])} + {mib(r['disk']['usearch_bytes'])}",
        ),
        row(
            "RSS growth vs ram_estimate (MiB)",
            lambda r: (
                f"{mib(r['ram']['rss_growth_bytes'])} vs {mib(r['ram']['ram_estimate_bytes'])}"
                f" (x{r['ram']['estimate_over_growth']})"
            ),
        ),
        row(
            "RSS growth in use (+ the recalls) vs estimate (MiB)",
            lambda r: (
                f"{mib(r['ram']['rss_growth_in_use_bytes'])} vs "
                f"{mib(r['ram']['ram_estimate_bytes'])} "
                f"(x{r['ram']['estimate_over_growth_in_use']})"
            ),
        ),
        row(
            "headroom: estimate / RSS growth",
            lambda r: (
                f"{r['ram']['headroom_from_estimate']} / {r['ram']['headroom_from_rss_growth']}"
            ),
        ),
        row("peak RSS of the measure process (MiB)", lambda r: mib(r["ram"]["peak_rss_bytes"])),
        row(
            "open / ready (s)", lambda r: f"{r['open']['open_s']:.2f} / {r['open']['ready_s']:.2f}"
        ),
        row(
            "TUI first frame, app log / wall (ms, median)",
            lambda r: (
                f"{ms(r['startup']['first_frame_app_ms_median'])} / "
                f"{ms(r['startup']['first_frame_wall_ms_median'])}"
            ),
        ),
        row(
            "TUI memory open, wall (ms, median)",
            lambda r: ms(r["startup"]["memory_open_wall_ms_median"]),
        ),
        row(
            "TUI point count shown, first start (ms)",
            lambda r: ms(r["startup"]["points_shown_first_start_wall_ms"]),
        ),
    ]


def print_table(results: list[JsonDict]) -> None:
    headers = ("metric", *(f"{r['n']:,}" for r in results))
    rows = table_rows(results)
    widths = [max(len(h), *(len(row[i]) for row in rows)) for i, h in enumerate(headers)]
    print("  ".join(h.ljust(w) for h, w in zip(headers, widths, strict=True)))
    print("  ".join("-" * w for w in widths))
    for row in rows:
        print("  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip())


def markdown_table(results: list[JsonDict]) -> str:
    headers = ("metric", *(f"{r['n']:,} points" for r in results))
    lines = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    lines += ["| " + " | ".join(row) + " |" for row in table_rows(results)]
    return "\n".join(lines)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default=DEFAULT_SIZES, help="comma-separated point counts")
    parser.add_argument(
        "--json", type=Path, default=RESULTS_DIR / "scaling.json", help="results file"
    )
    parser.add_argument(
        "--plots", default=str(RESULTS_DIR), help="directory for the PNG plots ('' for none)"
    )
    parser.add_argument("--tmpdir", type=Path, help="where the temporary stores go")
    parser.add_argument("--keep", type=Path, help="build the stores here and keep them")
    parser.add_argument("--saves", type=int, default=200, help="measured saves per size")
    parser.add_argument("--recalls", type=int, default=200, help="measured recalls per size")
    parser.add_argument("--pinned", type=int, default=50, help="pinned doc points among N")
    parser.add_argument(
        "--startup-runs", type=int, default=3, help="measured TUI starts per size (0: none)"
    )
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    sizes = [int(s.replace("_", "")) for s in args.sizes.split(",") if s.strip()]
    if args.plots and importlib.util.find_spec("matplotlib") is None:
        # Said before the run, not after its 40 minutes: the numbers are still written.
        print(
            "matplotlib is missing (pip install -e '.[bench]'): the run goes on without plots",
            file=sys.stderr,
        )
        args.plots = ""
    info = machine_info()
    print(format_machine(info), flush=True)
    thresholds = default_thresholds()
    report: JsonDict = {
        "benchmark": "scaling",
        "machine": info,
        "memory_total_bytes": os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"),
        "command": " ".join(["python -m bench.scaling", *(argv or sys.argv[1:])]),
        "dim": memory_scale.DIM,
        "saves": args.saves,
        "recalls": args.recalls,
        "thresholds": thresholds,
        "sizes": [],
    }
    started = time.perf_counter()
    try:
        with tempfile.TemporaryDirectory(prefix="straylight-scaling-", dir=args.tmpdir) as raw:
            tmp = args.keep or Path(raw)
            tmp.mkdir(parents=True, exist_ok=True)
            for n in sizes:
                report["sizes"].append(run_size(n, args, tmp, thresholds))
                report["total_s"] = round(time.perf_counter() - started, 1)
                write_json(args.json, report)
    except (RuntimeError, StartupError, OSError) as error:
        print(f"scaling benchmark stopped: {error}", file=sys.stderr)
        if not report["sizes"]:
            return 1
    report["loadavg_after"] = machine_info()["loadavg"]
    report["total_s"] = round(time.perf_counter() - started, 1)
    write_json(args.json, report)
    print()
    print_table(report["sizes"])
    print(f"total {report['total_s']} s, load after {report['loadavg_after']}")
    if args.plots:
        from bench.scaling_plots import write_plots

        for path in write_plots(report, Path(args.plots)):
            print(f"plot: {path}")
    print(f"results: {args.json}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
