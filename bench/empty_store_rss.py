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

Since issue 18's deferred database (memory/deferred_store.py) the app on a new data dir does
not create `straylight.duckdb` until the first write: a run counts as done when the database
exists or the log says it was deferred (`database_created` tells which). `--seed-point`
gives each run's data dir one point first (`remember`, Ollama away): the eager path, which
should not have changed. `--app-root DIR` runs another checkout's app (e.g. a worktree of
the commit before, for a before/after pair on one machine). `--first-open` times, in fresh
interpreters that have imported the app, what the first write on a new data dir now pays:
the memory's open (DuckDB's import, the schema) and the first save after it, against a
second save.
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

_FIRST_OPEN = """
import json, sys, tempfile, time
sys.path.insert(0, {root!r})
from pathlib import Path
import tui.app  # what the running app has imported when its first write comes
from agent.settings import load_settings

home = Path(tempfile.mkdtemp()) / "home"
settings = load_settings(flags={{"home": str(home), "ollama_host": "127.0.0.1:9"}}).settings
started = time.perf_counter()
from tui.memory_session import MemorySession
from agent.ollama_gateway import OllamaGateway

session = MemorySession(settings, OllamaGateway.from_config(settings.ollama), take_lock=False)
memory = session.open()
opened = time.perf_counter()
memory.store.save("user", "The first point of a new data dir.", vector=[0.5] * 768)
first = time.perf_counter()
memory.store.save("user", "The second point of a new data dir.", vector=[0.25] * 768)
second = time.perf_counter()
session.close()
print(json.dumps({{"open": opened - started, "first_save": first - opened,
                   "second_save": second - first}}))
"""

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


def _root_launcher(root: Path, launcher: str | None) -> str:
    """A `python -c` launcher that imports the app from `root` (the child runs in this
    checkout, whose directory would come first on `sys.path`)."""
    body = launcher if launcher is not None else _LAUNCH.format(patch="")
    return f"import sys\nsys.path.insert(0, {str(root)!r})\n{body}"


def seed_point(home: Path, env: dict[str, str], root: Path) -> None:
    """One point in `home` (no vector: Ollama is away), through `root`'s `remember`."""
    launcher = _root_launcher(root, None)
    subprocess.run(
        [sys.executable, "-c", launcher, "--home", str(home), "remember", "A seeded point."],
        cwd=REPO_ROOT,
        env=env,
        capture_output=True,
        check=True,
        timeout=120,
    )


def run_once(
    tmp: Path,
    settle: float,
    timeout: float = 60.0,
    *,
    launcher: str | None = None,
    extra_env: dict[str, str] | None = None,
    app_root: Path = REPO_ROOT,
    seed: bool = False,
) -> JsonDict:
    home = Path(tempfile.mkdtemp(prefix="home-", dir=tmp))
    host = f"127.0.0.1:{closed_port()}"
    if app_root != REPO_ROOT:
        launcher = _root_launcher(app_root, launcher)
    start = ["-m", "tui.cli"] if launcher is None else ["-c", launcher]
    argv = [sys.executable, *start, "--home", str(home), "--ollama-host", host]
    env = hermetic_env(
        tmp, TERM="xterm-256color", COLUMNS=str(COLUMNS), LINES=str(LINES), COLORTERM="truecolor"
    )
    env.update(extra_env or {})
    env["PYTHONPATH"] = str(app_root)  # that checkout, not the installed one
    if seed:
        seed_point(home, {**env, "OLLAMA_HOST": host}, app_root)
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
        created = (home / "straylight.duckdb").exists()
        log_text = (home / "straylight.log").read_text(encoding="utf-8", errors="replace")
        deferred = "no memory database yet" in log_text
        child.stop()
        return {
            "first_frame": at_frame,
            "after_open": after,
            "memory_opened": created or deferred,
            "database_created": created,
        }
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


def first_open(runs: int, root: Path) -> JsonDict:
    """Seconds the first write on a new data dir pays (medians over fresh interpreters)."""
    seen = []
    for _ in range(runs):
        done = subprocess.run(
            [sys.executable, "-c", _FIRST_OPEN.format(root=str(root))],
            cwd=REPO_ROOT,
            capture_output=True,
            text=True,
            timeout=120,
            check=True,
        )
        seen.append(json.loads(done.stdout.strip().splitlines()[-1]))
    return {key: statistics.median(run[key] for run in seen) for key in seen[0]} | {"runs": seen}


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
    parser.add_argument("--seed-point", action="store_true", help="one point in the data dir")
    parser.add_argument("--app-root", type=Path, default=REPO_ROOT, help="another checkout")
    parser.add_argument("--first-open", action="store_true", help="time the first write's open")
    parser.add_argument("--json", nargs="?", const="-", default=None, metavar="OUT")
    args = parser.parse_args(argv)
    info = machine_info()
    root = args.app_root.resolve()
    with tempfile.TemporaryDirectory(prefix="straylight-rss-") as raw:
        runs = [
            run_once(Path(raw), args.settle, app_root=root, seed=args.seed_point)
            for _ in range(args.runs)
        ]
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
    if args.first_open:
        report["first_open"] = first_open(args.runs, root)
    report["app_root"] = str(root)
    report["seed_point"] = args.seed_point
    if args.json == "-":
        print(json.dumps(report, indent=2))
        return 0
    print(format_machine(info))
    for moment, values in median.items():
        print(f"{moment}: " + ", ".join(f"{f} {mb(v)}" for f, v in values.items()))
    print(f"target after open <= {TARGET_MB:.0f} MB: {'met' if report['met'] else 'missed'}")
    if not all(r["memory_opened"] for r in runs):
        print("warning: the memory had not opened in some runs (raise --settle)")
    created = sum(1 for r in runs if r["database_created"])
    print(f"database created at start in {created} of {len(runs)} runs")
    if "first_open" in report:
        timed = report["first_open"]
        print(
            f"first write on a new data dir: open {timed['open'] * 1000:.0f} ms, first save "
            f"{timed['first_save'] * 1000:.1f} ms, second save {timed['second_save'] * 1000:.1f} ms"
        )
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
