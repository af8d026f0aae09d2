"""Run every benchmark, print a table against the issue's targets, save the results.

Benchmarks: start-up, streaming, memory at scale, the fact classifier's precision/recall, the
memory browser at scale (first paint, scrolling), secret masking of a 100 KB paste. Opt-in,
never in the default list: `--only scaling` (bench/scaling.py, 1k to 1M points with plots; the
1M size takes ~40 min).

    python -m bench.run_all [--startup-runs 7] [--streaming-runs 3]
                            [--memory-sizes 10000,100000] [--browser-points 100000]
                            [--scaling-sizes 1000,10000,100000,1000000]
                            [--only NAME ...]

Each benchmark runs in its own interpreter (`python -m bench.<name> --json ...`), so one
cannot warm or disturb the other. Results go to bench/results/latest.json.
Exit status: 0 when every benchmark ran, MISSes included (benchmarks report, they do not
gate); 1 when a benchmark could not run.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bench._common import REPO_ROOT, RESULTS_DIR, JsonDict, format_machine, machine_info, write_json

BENCHMARKS = (
    "startup",
    "streaming",
    "memory_scale",
    "fact_classifier",
    "memory_browser",
    "prompt_budget",
    "secret_masking",
)
OPT_IN = ("scaling",)  # run only when named in --only
BENCH_TIMEOUT_SECONDS = 1200
TIMEOUT_SECONDS = {"scaling": 4 * 3600}


@dataclass
class Row:
    metric: str
    value: str
    target: str
    verdict: str  # PASS, MISS or "" (information only)


def run_benchmark(name: str, extra: list[str], out: Path) -> JsonDict | None:
    """Run `python -m bench.<name>`; its report goes straight to our stdout."""
    print(f"\n$ python -m bench.{name} {' '.join(extra)}".rstrip(), flush=True)
    started = time.perf_counter()
    try:
        done = subprocess.run(
            [sys.executable, "-m", f"bench.{name}", "--json", str(out), *extra],
            cwd=REPO_ROOT,
            timeout=TIMEOUT_SECONDS.get(name, BENCH_TIMEOUT_SECONDS),
            check=False,
        )
    except subprocess.TimeoutExpired:
        timeout = TIMEOUT_SECONDS.get(name, BENCH_TIMEOUT_SECONDS)
        print(f"bench.{name}: timed out after {timeout} s", file=sys.stderr)
        return None
    print(f"(bench.{name} took {time.perf_counter() - started:.1f} s)", flush=True)
    if done.returncode != 0 or not out.is_file():
        print(f"bench.{name}: could not run (exit status {done.returncode})", file=sys.stderr)
        return None
    result: JsonDict = json.loads(out.read_text(encoding="utf-8"))
    return result


def _verdict(ok: bool) -> str:
    return "PASS" if ok else "MISS"


def startup_rows(result: JsonDict) -> list[Row]:
    target = float(result["target_ms"])
    rows: list[Row] = []
    labels = {"ollama_down": "Ollama down", "ollama_up": "Ollama up"}
    for key, label in labels.items():
        scenario = result["scenarios"][key]
        for measure, what in (("app_ms", "app log"), ("wall_ms", "harness wall")):
            stats = scenario[f"{measure}_stats"]
            primary = key == "ollama_down" and measure == "app_ms"
            rows.append(
                Row(
                    f"start-up to first frame, {label}, {what}"
                    + (" (headline)" if primary else ""),
                    f"median {stats['median']:.0f} ms, p90 {stats['p90']:.0f} ms",
                    f"<= {target:.0f} ms",
                    _verdict(stats["median"] <= target),
                )
            )
    imports = result["imports"]
    rows.append(
        Row(
            "import tui.app (-X importtime, cumulative)",
            f"{imports['tui_app_total_ms']:.0f} ms",
            "",
            "",
        )
    )
    heavy = imports["heavy_imported"]
    loaded = [name for name, yes in heavy.items() if yes]
    rows.append(
        Row(
            f"`import tui.app, tui.cli` loads none of {'/'.join(heavy)}",
            ", ".join(loaded) + " loaded" if loaded else "none loaded",
            "none",
            _verdict(not loaded),
        )
    )
    return rows


def streaming_rows(result: JsonDict) -> list[Row]:
    target = float(result["target_tokens_per_second"])
    tokens = result["reply"]["tokens"]
    ui = result["ui_tokens_per_second_median"]
    runs = result["ui_runs"]
    intact = sum(1 for run in runs if run["intact"])
    return [
        Row(
            f"streaming {tokens} tokens into the chat log (UI), median",
            f"{ui:.0f} tokens/s",
            f">= {target:.0f} tokens/s",
            _verdict(ui >= target),
        ),
        Row(
            "no dropped text (widget, Markdown source, daily log)",
            f"{intact}/{len(runs)} runs intact",
            "all",
            _verdict(intact == len(runs) and result["headless_intact"]),
        ),
        Row(
            "same reply, engine + gateway alone (no UI)",
            f"{result['engine_tokens_per_second_median']:.0f} tokens/s",
            "",
            "",
        ),
        Row(
            "same reply, gateway alone",
            f"{result['gateway_tokens_per_second_median']:.0f} tokens/s",
            "",
            "",
        ),
    ]


def memory_scale_rows(result: JsonDict) -> list[Row]:
    targets = result["targets"]
    rows: list[Row] = []
    for size in result["sizes"]:
        n = size["n"]
        targeted = n >= targets["at_points"]
        save, recall, ram, files = size["save"], size["recall"], size["ram"], size["files"]
        big = n >= 1_000_000
        recall_target = targets["recall_p95_ms_1m"] if big else targets["recall_p95_ms"]
        rows += [
            Row(
                f"memory {n:,} pts: save (filter + DB + index), p50 / p95",
                f"{save['p50_ms']:.1f} / {save['p95_ms']:.1f} ms",
                f"p95 <= {targets['save_p95_ms']:.0f} ms" if targeted else "",
                _verdict(save["p95_ms"] <= targets["save_p95_ms"]) if targeted else "",
            ),
            Row(
                f"memory {n:,} pts: recall (hybrid, no embedding), p50 / p95",
                f"{recall['p50_ms']:.1f} / {recall['p95_ms']:.1f} ms",
                f"p95 <= {recall_target:.0f} ms" if targeted else "",
                _verdict(recall["p95_ms"] <= recall_target) if targeted else "",
            ),
            Row(
                f"memory {n:,} pts: RSS growth a point",
                f"{ram['rss_growth_bytes'] / n:,.0f} B",
                f"<= {targets['ram_bytes_per_point']:,} B" if targeted else "",
                _verdict(ram["rss_growth_bytes"] / n <= targets["ram_bytes_per_point"])
                if targeted
                else "",
            ),
            Row(f"memory {n:,} pts: index rebuild", f"{size['index_rebuild_s']:.1f} s", "", ""),
            Row(
                f"memory {n:,} pts: straylight.duckdb / vectors.usearch",
                f"{files['duckdb_mb']:.0f} / {files['usearch_mb']:.0f} MB",
                "",
                "",
            ),
            Row(
                f"memory {n:,} pts: ram_estimate_bytes / RSS growth",
                f"{ram['ram_estimate_bytes'] / 2**20:.0f} / {ram['rss_growth_bytes'] / 2**20:.0f}"
                " MB",
                f"within {targets['ram_tolerance']:.0%}",
                _verdict(bool(ram["within_tolerance"])),
            ),
        ]
    return rows


def fact_classifier_rows(result: JsonDict) -> list[Row]:
    """The success-event/rule classifier on its labelled table (issue 4)."""
    return [
        Row(
            f"fact classifier on {result['sentences']} labelled sentences: precision / recall",
            f"{result['precision']:.3f} / {result['recall']:.3f}",
            "",
            "",
        ),
        Row(
            "fact classifier: tp / fp / fn / tn",
            f"{result['tp']} / {result['fp']} / {result['fn']} / {result['tn']}",
            "",
            "",
        ),
        Row(
            "fact classifier, last held-out batch (labelled before it was run)",
            f"{result['held_out']['precision']:.3f} / {result['held_out']['recall']:.3f}"
            f" on {result['held_out']['sentences']}",
            "",
            "",
        ),
        Row("fact classifier: per sentence, p95", f"{result['p95_us']:.0f} µs", "", ""),
        *fact_classifier_speed_rows(result),
    ]


def fact_classifier_speed_rows(result: JsonDict) -> list[Row]:
    """A typical turn and a long reply through `classify_turn`, against their targets."""
    targets = result.get("targets")
    if targets is None:  # a result from before the targets
        return []
    turn, long_reply = result["turn_p50_us"], result["long_reply_p50_us"]
    return [
        Row(
            "fact classifier: a typical turn, p50",
            f"{turn:.0f} µs",
            f"<= {targets['turn_p50_us']:.0f} µs",
            _verdict(turn <= targets["turn_p50_us"]),
        ),
        Row(
            "fact classifier: an 11 KB reply, p50",
            f"{long_reply / 1000:.1f} ms",
            f"<= {targets['long_reply_p50_us'] / 1000:.0f} ms",
            _verdict(long_reply <= targets["long_reply_p50_us"]),
        ),
    ]


def secret_masking_rows(result: JsonDict) -> list[Row]:
    """`mask_secrets` on 100 KB of chat with secrets."""
    best, target = result["best_ms"], result["target_best_ms"]
    return [
        Row(
            f"secret masking of {result['chars']:,} characters of chat, best / median",
            f"{best:.1f} / {result['median_ms']:.1f} ms",
            f"best <= {target:.0f} ms",
            _verdict(best <= target),
        )
    ]


def memory_browser_rows(result: JsonDict) -> list[Row]:
    """The memory browser over a large store (first paint, scrolling, search)."""
    from bench.memory_browser import rows_for

    targets = result["targets"]
    checks = {
        0: result["first_paint"]["paint"]["p50_ms"] <= targets["first_paint_ms"],
        2: result["scroll"]["p95_ms"] <= targets["step_p95_ms"],
    }
    return [
        Row(metric, value, target, _verdict(checks[index]) if index in checks else "")
        for index, (metric, value, target) in enumerate(rows_for(result))
    ]


def prompt_budget_rows(result: JsonDict) -> list[Row]:
    """Prompt assembly under the full budget, and the token estimator's error (issue 13)."""
    from bench.prompt_budget import rows_for

    return [
        Row(metric, value, target, "" if ok is None else _verdict(ok))
        for metric, value, target, ok in rows_for(result)
    ]


def scaling_rows(result: JsonDict) -> list[Row]:
    """bench/scaling.py: one row a metric, the sizes side by side."""
    from bench.scaling import table_rows

    sizes = " / ".join(f"{size['n']:,}" for size in result["sizes"])
    return [
        Row(f"scaling {metric} at {sizes}", " | ".join(cells), "", "")
        for metric, *cells in table_rows(result["sizes"])
    ]


def print_table(rows: list[Row]) -> None:
    headers = ("metric", "value", "target", "result")
    cells = [(r.metric, r.value, r.target or "-", r.verdict or "info") for r in rows]
    widths = [max(len(h), *(len(c[i]) for c in cells)) for i, h in enumerate(headers)]
    line = "  ".join(h.ljust(w) for h, w in zip(headers, widths, strict=True))
    print(line)
    print("  ".join("-" * w for w in widths))
    for cell in cells:
        print("  ".join(c.ljust(w) for c, w in zip(cell, widths, strict=True)).rstrip())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--startup-runs", type=int, default=7)
    parser.add_argument("--streaming-runs", type=int, default=3)
    parser.add_argument("--memory-sizes", default="10000,100000")
    parser.add_argument("--browser-points", type=int, default=100_000)
    parser.add_argument("--scaling-sizes", default="1000,10000,100000,1000000")
    parser.add_argument("--only", nargs="+", choices=BENCHMARKS + OPT_IN, default=list(BENCHMARKS))
    parser.add_argument(
        "--out", type=Path, default=RESULTS_DIR / "latest.json", help="results file"
    )
    args = parser.parse_args(argv)
    info_before = machine_info()
    print(format_machine(info_before))
    extras = {
        "startup": ["--runs", str(args.startup_runs)],
        "streaming": ["--runs", str(args.streaming_runs)],
        "memory_scale": ["--sizes", args.memory_sizes],
        "fact_classifier": [],
        "memory_browser": ["--points", str(args.browser_points)],
        "scaling": ["--sizes", args.scaling_sizes],
        "prompt_budget": [],
        "secret_masking": [],
    }
    results: dict[str, Any] = {}
    failed: list[str] = []
    with tempfile.TemporaryDirectory(prefix="straylight-bench-") as raw_tmp:
        for name in args.only:
            result = run_benchmark(name, extras[name], Path(raw_tmp) / f"{name}.json")
            if result is None:
                failed.append(name)
            else:
                results[name] = result
    rows: list[Row] = []
    if "startup" in results:
        rows += startup_rows(results["startup"])
    if "streaming" in results:
        rows += streaming_rows(results["streaming"])
    if "memory_scale" in results:
        rows += memory_scale_rows(results["memory_scale"])
    if "fact_classifier" in results:
        rows += fact_classifier_rows(results["fact_classifier"])
    if "memory_browser" in results:
        rows += memory_browser_rows(results["memory_browser"])
    if "prompt_budget" in results:
        rows += prompt_budget_rows(results["prompt_budget"])
    if "secret_masking" in results:
        rows += secret_masking_rows(results["secret_masking"])
    if "scaling" in results:
        rows += scaling_rows(results["scaling"])
    for name in failed:
        rows.append(Row(f"bench.{name}", "could not run", "", "ERROR"))
    info_after = machine_info()
    print("\n== summary ==")
    print(format_machine(info_after))
    print_table(rows)
    misses = [r.metric for r in rows if r.verdict == "MISS"]
    write_json(
        args.out,
        {
            "when": datetime.now(UTC).isoformat(timespec="seconds"),
            "machine": info_before,
            "loadavg_after": info_after["loadavg"],
            "summary": [r.__dict__ for r in rows],
            "misses": misses,
            "failed": failed,
            "results": results,
        },
    )
    out = args.out.resolve()
    print(f"results: {out.relative_to(REPO_ROOT) if out.is_relative_to(REPO_ROOT) else out}")
    if failed:
        print(f"could not run: {', '.join(failed)}", file=sys.stderr)
        return 1
    if misses:
        print(f"{len(misses)} target(s) missed (reported, not gating)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
