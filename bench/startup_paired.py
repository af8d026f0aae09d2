"""The TUI's start on a kept store, this checkout against a git ref, alternating (issue 18).

    python -m bench.startup_paired HOME --ref REF [--runs 4] [--json OUT]
    python -m bench.startup_paired HOME --ref-tree DIR …   # a checkout's folder instead of a ref

HOME is a store `bench.memory_scale --keep DIR` (or `just scaling --keep`) left. Each run is
`bench.scaling.app_start`: the real `straylight` on a pty, Ollama down, a fresh process; the
two sides differ only in `PYTHONPATH` (the ref's tree, from a `git archive`, or this
checkout), which comes before the editable install. After one untimed start a side (the page
cache), the runs alternate, the order flipping every round, so the machine's load falls on
both alike. Reported per side: the first frame (the app's own log line), and after it the
memory's two sidebar lines — FACTS leaving "opening…" (`memory_open_wall_ms`: the memory is
open) and MEMORY's point count (the status read) — and the app's log line "memory usable
after N ms" (the word index loaded too; the app's own clock, as its first-frame line; a
tree that does not log it gives None), with their medians.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from bench._common import REPO_ROOT, closed_port, format_machine, machine_info, write_json
from bench.scaling import app_start

POINTS_WAIT_SECONDS = 4.0  # after the memory opened: the point count, the words loaded


def extract(ref: str, into: Path) -> None:
    """The whole tree of `ref` (every package the app imports) into `into`."""
    archive = subprocess.run(
        ["git", "archive", ref], cwd=REPO_ROOT, check=True, capture_output=True
    ).stdout
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive, check=True)


def one_start(home: Path, tree: Path, host: str, tmp: Path) -> dict[str, Any]:
    """`app_start` with `tree`'s packages first on the child's path; ms after the first frame."""
    before = os.environ.get("PYTHONPATH")
    os.environ["PYTHONPATH"] = str(tree)
    try:
        run = app_start(home, host, tmp, timeout=120.0, points_wait=POINTS_WAIT_SECONDS)
    finally:
        if before is None:
            os.environ.pop("PYTHONPATH", None)
        else:
            os.environ["PYTHONPATH"] = before
    frame = run["wall_ms"]
    points = run["points_shown_wall_ms"]
    return {
        "first_frame_ms": frame,
        "open_after_frame_ms": round(run["memory_open_wall_ms"] - frame, 1),
        "points_after_frame_ms": round(points - frame, 1) if points else None,
        "usable_after_frame_ms": run["usable_after_frame_ms"],
        "points_shown": run["points_shown"],
    }


def _median(runs: list[dict[str, Any]], key: str) -> float | None:
    values = [r[key] for r in runs if r[key] is not None]
    return round(statistics.median(values), 1) if values else None


def compare(home: Path, trees: dict[str, Path], runs: int) -> dict[str, Any]:
    host = f"127.0.0.1:{closed_port()}"
    measured: dict[str, list[dict[str, Any]]] = {name: [] for name in trees}
    with tempfile.TemporaryDirectory() as folder:
        tmp = Path(folder)
        for tree in trees.values():  # untimed: the page cache, the jobs' catch-up
            one_start(home, tree, host, tmp)
        names = list(trees)
        for i in range(runs):
            for name in names if i % 2 == 0 else names[::-1]:
                run = one_start(home, trees[name], host, tmp)
                measured[name].append(run)
                print(f"round {i + 1} {name}: {run}", flush=True)
    keys = (
        "first_frame_ms",
        "open_after_frame_ms",
        "points_after_frame_ms",
        "usable_after_frame_ms",
    )
    return {
        "home": str(home),
        "machine": machine_info(),
        "sides": {
            name: {"runs": side, **{f"{key}_median": _median(side, key) for key in keys}}
            for name, side in measured.items()
        },
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("home", type=Path)
    parser.add_argument("--ref", default="main")
    parser.add_argument("--ref-tree", type=Path, help="the ref side from this folder")
    parser.add_argument("--runs", type=int, default=4)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    print(format_machine(machine_info()), flush=True)
    with tempfile.TemporaryDirectory() as folder:
        ref_tree = args.ref_tree
        if ref_tree is None:
            ref_tree = Path(folder)
            extract(args.ref, ref_tree)
        result = compare(args.home, {"ref": ref_tree, "this": REPO_ROOT}, args.runs)
    for name, side in result["sides"].items():
        print(
            f"{name}: first frame {side['first_frame_ms_median']} ms; after it, memory open "
            f"{side['open_after_frame_ms_median']} ms, point count "
            f"{side['points_after_frame_ms_median']} ms, words and vectors usable "
            f"{side['usable_after_frame_ms_median']} ms (medians of {args.runs})"
        )
    if args.json:
        write_json(args.json, result)
    return 0


if __name__ == "__main__":
    sys.exit(main())
