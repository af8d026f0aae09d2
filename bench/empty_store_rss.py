"""RSS of the real app on a new data dir, after its first frame and once the memory opened.

    python -m bench.empty_store_rss [--runs 3] [--settle 6] [--json [OUT]]

Each run starts `python -m tui.cli --home <new dir>` from this checkout on a pseudo-terminal
(as `bench.startup` does; Ollama away), waits for the app's "first frame" log line, and reads
VmRSS / RssAnon / RssFile of the process from /proc at the first frame and `--settle` seconds
later (the memory opens after the first frame, then the jobs catch up; the bench checks that
`straylight.duckdb` was created by then). Issue 18's goal: ≤ 100 MB after the first frame and
the memory's open (147 MB when the issue was filed).

`--breakdown` adds what each step of the app's path costs, in a fresh interpreter: RSS after
importing the app, the memory's modules, the Ollama client, and after opening an empty store.
RssFile is the part of the RSS that is shared library code mapped from files (DuckDB's
library alone is ~40 MB of it), RssAnon the process's own memory.

`--variants` adds the same runs of the app with parts left out, to price them: `no-jobs` (the
setting `jobs_enabled = false`: no scheduler, no catch-up runs), `no-memory` (the memory's
open skipped: what a database opened only when something reads it would give an empty store),
`no-memory-no-check` (and no Ollama status check: the app alone). The last two patch the app
in the bench's own launcher; they are measurements, not modes of the product.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench._common import (
    REPO_ROOT,
    JsonDict,
    closed_port,
    format_machine,
    hermetic_env,
    machine_info,
    write_json,
)
from bench.startup import COLUMNS, LINES, POLL_SECONDS, StartupError, _Child

TARGET_MB = 100.0
FIELDS = ("VmRSS", "RssAnon", "RssFile")

# `python -c` launchers of the app with a part left out (argv after it as for `tui.cli`)
_LAUNCH = "import sys\nfrom tui.cli import main\n{patch}sys.exit(main(sys.argv[1:]))\n"
_SKIP_MEMORY = "from tui.app import StraylightApp\nStraylightApp.open_memory = lambda self: None\n"
_SKIP_CHECK = (
    "from tui.screens.chat_screen import ChatScreen\nChatScreen.check_status = lambda self: None\n"
)
VARIANTS: dict[str, tuple[str | None, dict[str, str]]] = {
    "no-jobs": (None, {"STRAYLIGHT_JOBS_ENABLED": "false"}),
    "no-memory": (_LAUNCH.format(patch=_SKIP_MEMORY), {}),
    "no-memory-no-check": (_LAUNCH.format(patch=_SKIP_MEMORY + _SKIP_CHECK), {}),
}

_BREAKDOWN = """
import json, sys, tempfile
from pathlib import Path

def status():
    out = {}
    for line in open("/proc/self/status"):
        key, _, value = line.partition(":")
        if key in ("VmRSS", "RssAnon", "RssFile"):
            out[key] = int(value.split()[0]) * 1024
    return out

steps = [("interpreter", status())]
import tui.app, tui.cli
steps.append(("import tui.app (Textual)", status()))
import memory.memory_store, tui.memory_session, jobs.scheduler
steps.append(("import the memory (DuckDB, numpy) and jobs", status()))
import ollama
steps.append(("import ollama (httpx, pydantic, anyio)", status()))
from memory.memory_store import MemoryConfig, MemoryStore
from store.clock import Clock
store = MemoryStore.open(Path(tempfile.mkdtemp()) / "home", MemoryConfig(), clock=Clock())
store.wait_until_ready()
store.status()
steps.append(("open an empty store (schema, meta) and status()", status()))
store.close()
print(json.dumps(steps))
"""


def proc_status(pid: int) -> dict[str, int]:
    out: dict[str, int] = {}
    with open(f"/proc/{pid}/status", encoding="ascii") as handle:
        for line in handle:
            key, _, value = line.partition(":")
            if key in FIELDS:
                out[key] = int(value.split()[0]) * 1024
    return out


def run_once(
    tmp: Path,
    settle: float,
    timeout: float = 60.0,
    *,
    launcher: str | None = None,
    extra_env: dict[str, str] | None = None,
) -> JsonDict:
    home = Path(tempfile.mkdtemp(prefix="home-", dir=tmp))
    host = f"127.0.0.1:{closed_port()}"
    start = ["-m", "tui.cli"] if launcher is None else ["-c", launcher]
    argv = [sys.executable, *start, "--home", str(home), "--ollama-host", host]
    env = hermetic_env(
        tmp, TERM="xterm-256color", COLUMNS=str(COLUMNS), LINES=str(LINES), COLORTERM="truecolor"
    )
    env.update(extra_env or {})
    env["PYTHONPATH"] = str(REPO_ROOT)  # this checkout, not the installed one
    child = _Child(argv, env, home / "straylight.log")
    try:
        deadline = child.forked_at + timeout
        while child.first_frame_ms() is None:
            child.drain(POLL_SECONDS)
            if child.exited() or time.perf_counter() > deadline:
                raise StartupError(f"no first frame; screen tail: {child.screen_tail()[-300:]!r}")
        at_frame = proc_status(child.pid)
        until = time.perf_counter() + settle
        while time.perf_counter() < until:
            child.drain(0.05)
        after = proc_status(child.pid)
        opened = (home / "straylight.duckdb").exists()
        child.stop()
        return {"first_frame": at_frame, "after_open": after, "memory_opened": opened}
    finally:
        child.close()


def breakdown() -> list[JsonDict]:
    done = subprocess.run(
        [sys.executable, "-c", _BREAKDOWN],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    steps = json.loads(done.stdout.strip().splitlines()[-1])
    out: list[JsonDict] = []
    previous = 0
    for name, values in steps:
        out.append({"step": name, **values, "added": values["VmRSS"] - previous})
        previous = values["VmRSS"]
    return out


def _median(runs: list[JsonDict]) -> JsonDict:
    return {
        moment: {f: int(statistics.median(r[moment][f] for r in runs)) for f in FIELDS}
        for moment in ("first_frame", "after_open")
    }


def mb(value: float) -> str:
    return f"{value / 2**20:.1f} MB"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--settle", type=float, default=6.0, help="seconds after the frame")
    parser.add_argument("--breakdown", action="store_true")
    parser.add_argument("--variants", action="store_true", help="also without jobs / memory")
    parser.add_argument("--json", nargs="?", const="-", default=None, metavar="OUT")
    args = parser.parse_args(argv)
    info = machine_info()
    with tempfile.TemporaryDirectory(prefix="straylight-rss-") as raw:
        runs = [run_once(Path(raw), args.settle) for _ in range(args.runs)]
        variants = {
            name: _median(
                [
                    run_once(Path(raw), args.settle, launcher=launcher, extra_env=extra)
                    for _ in range(args.runs)
                ]
            )
            for name, (launcher, extra) in (VARIANTS.items() if args.variants else ())
        }
    median = _median(runs)
    report: JsonDict = {
        "machine": info,
        "runs": runs,
        "median": median,
        "target_bytes": int(TARGET_MB * 2**20),
        "met": median["after_open"]["VmRSS"] <= TARGET_MB * 2**20,
    }
    if variants:
        report["variants"] = variants
    if args.breakdown:
        report["breakdown"] = breakdown()
    if args.json == "-":
        print(json.dumps(report, indent=2))
        return 0
    print(format_machine(info))
    for moment, values in median.items():
        print(f"{moment}: " + ", ".join(f"{f} {mb(v)}" for f, v in values.items()))
    print(f"target after open <= {TARGET_MB:.0f} MB: {'met' if report['met'] else 'missed'}")
    if not all(r["memory_opened"] for r in runs):
        print("warning: the memory had not opened in some runs (raise --settle)")
    for name, values in variants.items():
        after = values["after_open"]
        print(
            f"{name}: after {args.settle:.0f} s " + ", ".join(f"{f} {mb(after[f])}" for f in FIELDS)
        )
    for step in report.get("breakdown", []):
        print(
            f"  {step['step']:<55} RSS {mb(step['VmRSS'])} (+{mb(step['added'])}), "
            f"anon {mb(step['RssAnon'])}, file {mb(step['RssFile'])}"
        )
    if args.json:
        write_json(Path(args.json), report)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
