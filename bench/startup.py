"""Start-up to first frame of the real `straylight` TUI, started the way a user starts it.

Each run forks `straylight --home <tmp> --ollama-host <host>` on a pseudo-terminal
(TERM=xterm-256color, 120x40), drains the terminal so the app never blocks on output, and
polls `<home>/straylight.log` for the app's own "first frame after N ms" line. Per run it
records both the app's number (process start -> first frame, from /proc, 10 ms ticks) and
the harness's wall time (fork -> log line seen). Then it quits the app with Ctrl+Q (SIGTERM
and SIGKILL as fallbacks) and reaps it.

Two scenarios: Ollama down (a closed port: the realistic cold start) and Ollama up (the
stand-in in another process). Plus `python -X importtime` of the modules start-up imports.

    python -m bench.startup [--runs 7] [--json PATH]
"""

from __future__ import annotations

import argparse
import contextlib
import errno
import fcntl
import json
import os
import pty
import re
import select
import shutil
import signal
import statistics
import struct
import subprocess
import sys
import tempfile
import termios
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from bench._common import (
    REPO_ROOT,
    JsonDict,
    StandInProcess,
    closed_port,
    format_machine,
    hermetic_env,
    machine_info,
    summarize,
    write_json,
)

TARGET_MS = 600.0
COLUMNS, LINES = 120, 40
FIRST_FRAME_RE = re.compile(rb"first frame after (\d+) ms")
CTRL_Q = b"\x11"
HEAVY_MODULES = ("ollama", "duckdb", "usearch", "httpx")
WATCHED_MODULES = (*HEAVY_MODULES, "httpcore", "markdown_it", "pydantic", "pydantic_settings")
POLL_SECONDS = 0.002
_LOADED_PROBE = (
    "import json, sys, tui.app, tui.cli\n"
    "top = {name.split('.')[0] for name in sys.modules}\n"
    "print(json.dumps([name for name in sys.argv[1:] if name in top]))"
)


class StartupError(RuntimeError):
    """A run could not measure a first frame."""


@dataclass
class RunResult:
    app_ms: float
    wall_ms: float
    quit_via: str
    exit_status: int | None
    quit_ms: float
    output_bytes: int


@dataclass
class Scenario:
    name: str
    ollama: str
    runs: list[RunResult] = field(default_factory=list)
    warmup: RunResult | None = None

    def to_json(self) -> JsonDict:
        app = [r.app_ms for r in self.runs]
        wall = [r.wall_ms for r in self.runs]
        return {
            "name": self.name,
            "ollama": self.ollama,
            "app_ms": app,
            "wall_ms": wall,
            "app_ms_stats": summarize(app),
            "wall_ms_stats": summarize(wall),
            "quit_via": [r.quit_via for r in self.runs],
            "exit_status": [r.exit_status for r in self.runs],
            "quit_ms": [round(r.quit_ms, 1) for r in self.runs],
            "warmup": asdict(self.warmup) if self.warmup else None,
        }


def straylight_command() -> list[str]:
    """The installed `straylight` console script (next to this interpreter, else on PATH)."""
    beside = Path(sys.executable).parent / "straylight"
    if beside.is_file() and os.access(beside, os.X_OK):
        return [str(beside)]
    found = shutil.which("straylight")
    if found:
        return [found]
    raise StartupError("`straylight` is not installed (pip install -e . in the venv)")


def _set_winsize(fd: int) -> None:
    fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", LINES, COLUMNS, 0, 0))


class _Child:
    """A process on a pty: drains its output, reads its log, reaps it."""

    def __init__(self, argv: list[str], env: dict[str, str], log_file: Path) -> None:
        self.log_file = log_file
        self._log_offset = 0
        self._log_tail = b""
        self.output = bytearray()
        self.output_total = 0
        self.status: int | None = None
        self.forked_at = time.perf_counter()
        pid, master = pty.fork()
        if pid == 0:  # the child: pty slave on 0/1/2, session leader, controlling tty
            try:
                _set_winsize(0)
                os.chdir(REPO_ROOT)
                os.execve(argv[0], argv, env)
            finally:
                os._exit(127)
        self.pid = pid
        self.master = master

    # ---- output and log
    def drain(self, timeout: float) -> bool:
        """Read what the app wrote, waiting at most `timeout`; False once the pty closed."""
        try:
            ready, _, _ = select.select([self.master], [], [], timeout)
        except InterruptedError:
            return True
        if not ready:
            return True
        try:
            data = os.read(self.master, 65536)
        except OSError as error:
            if error.errno == errno.EIO:  # the slave side closed: the app is gone
                return False
            raise
        if not data:
            return False
        self.output_total += len(data)
        self.output += data
        if len(self.output) > 65536:
            del self.output[:-32768]
        return True

    def first_frame_ms(self) -> int | None:
        try:
            size = os.stat(self.log_file).st_size
        except FileNotFoundError:
            return None
        if size <= self._log_offset:
            return None
        with open(self.log_file, "rb") as handle:
            handle.seek(self._log_offset)
            chunk = handle.read(size - self._log_offset)
        self._log_offset = size
        text = self._log_tail + chunk
        match = FIRST_FRAME_RE.search(text)
        self._log_tail = text[-200:]
        return int(match.group(1)) if match else None

    def exited(self) -> bool:
        if self.status is not None:
            return True
        pid, status = os.waitpid(self.pid, os.WNOHANG)
        if pid == 0:
            return False
        self.status = os.waitstatus_to_exitcode(status)
        return True

    def wait_exit(self, seconds: float) -> bool:
        deadline = time.perf_counter() + seconds
        open_pty = True
        while time.perf_counter() < deadline:
            if self.exited():
                return True
            if open_pty:
                open_pty = self.drain(0.01)
            else:
                time.sleep(0.01)
        return self.exited()

    def send(self, data: bytes) -> None:
        with contextlib.suppress(OSError):
            os.write(self.master, data)

    def stop(self) -> tuple[str, float]:
        """Quit with Ctrl+Q; fall back to SIGTERM, then SIGKILL. Returns (how, ms)."""
        started = time.perf_counter()
        how = "ctrl+q"
        self.send(CTRL_Q)
        if not self.wait_exit(5.0):
            how = "SIGTERM"
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.pid, signal.SIGTERM)
            if not self.wait_exit(3.0):
                how = "SIGKILL"
                with contextlib.suppress(ProcessLookupError):
                    os.kill(self.pid, signal.SIGKILL)
                _pid, status = os.waitpid(self.pid, 0)
                self.status = os.waitstatus_to_exitcode(status)
        return how, (time.perf_counter() - started) * 1000

    def close(self) -> None:
        if self.status is None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.pid, signal.SIGKILL)
            with contextlib.suppress(ChildProcessError):
                os.waitpid(self.pid, 0)
        with contextlib.suppress(OSError):
            os.close(self.master)

    def screen_tail(self) -> str:
        text = self.output[-2000:].decode("utf-8", errors="replace")
        return re.sub(r"\x1b\[[0-9;?<>=$]*[A-Za-z]|\x1b[()][A-Z0-9]|\x1b[=>]", "", text)


def run_once(
    host: str,
    tmp: Path,
    *,
    timeout: float,
    command: list[str] | None = None,
    extra_env: dict[str, str] | None = None,
) -> RunResult:
    home = Path(tempfile.mkdtemp(prefix="home-", dir=tmp))
    argv = [*(command or straylight_command()), "--home", str(home), "--ollama-host", host]
    env = _with_bytecode(
        hermetic_env(
            tmp,
            TERM="xterm-256color",
            COLUMNS=str(COLUMNS),
            LINES=str(LINES),
            COLORTERM="truecolor",
        )
    )
    env.update(extra_env or {})
    child = _Child(argv, env, home / "straylight.log")
    try:
        deadline = child.forked_at + timeout
        app_ms: int | None = None
        pty_open = True
        while app_ms is None:
            if pty_open:
                pty_open = child.drain(POLL_SECONDS)
            else:
                time.sleep(POLL_SECONDS)
            app_ms = child.first_frame_ms()
            if app_ms is not None:
                break
            if child.exited():
                raise StartupError(
                    f"straylight exited with status {child.status} before its first frame;"
                    f" screen tail: {child.screen_tail()[-400:]!r}"
                )
            if time.perf_counter() > deadline:
                raise StartupError(
                    f"no 'first frame' line in {child.log_file} after {timeout:.0f} s;"
                    f" screen tail: {child.screen_tail()[-400:]!r}"
                )
        wall_ms = (time.perf_counter() - child.forked_at) * 1000
        # Let the frame reach the terminal before quitting, as a user would see it.
        child.drain(0.05)
        how, quit_ms = child.stop()
        return RunResult(
            app_ms=float(app_ms),
            wall_ms=wall_ms,
            quit_via=how,
            exit_status=child.status,
            quit_ms=quit_ms,
            output_bytes=child.output_total,
        )
    finally:
        child.close()


def run_scenario(name: str, host: str, runs: int, tmp: Path, *, timeout: float) -> Scenario:
    scenario = Scenario(name=name, ollama=host)
    scenario.warmup = run_once(host, tmp, timeout=timeout)
    for _ in range(runs):
        scenario.runs.append(run_once(host, tmp, timeout=timeout))
    return scenario


def measure_phases(host: str, tmp: Path, runs: int, *, timeout: float) -> JsonDict:
    """Median time of each start-up phase, from the instrumented copy of the start path."""
    samples: list[dict[str, float]] = []
    for index in range(runs + 1):
        out = tmp / f"phases-{index}.json"
        run_once(
            host,
            tmp,
            timeout=timeout,
            command=[sys.executable, "-m", "bench.startup_phases"],
            extra_env={"STRAYLIGHT_BENCH_PHASES": str(out)},
        )
        marks: dict[str, float] = json.loads(out.read_text(encoding="utf-8"))
        if index:  # the first run warms the caches
            samples.append(marks)
    spans: dict[str, list[float]] = {}
    ends: dict[str, list[float]] = {}
    for marks in samples:  # each run's own order: a phase lasts from the mark before it
        previous = 0.0
        for name, at in sorted(marks.items(), key=lambda item: item[1]):
            spans.setdefault(name, []).append(at - previous)
            ends.setdefault(name, []).append(at)
            previous = at
    phases = [
        {
            "phase": name,
            "ms": statistics.median(spans[name]) * 1000,
            "ends_at_ms": statistics.median(ends[name]) * 1000,
        }
        for name in spans
    ]
    phases.sort(key=lambda phase: phase["ends_at_ms"])
    return {"runs": runs, "phases": phases}


# ---------------------------------------------------------------- import time


@dataclass
class ImportRow:
    module: str
    depth: int
    self_us: int
    cumulative_us: int


def parse_importtime(stderr: str) -> list[ImportRow]:
    rows: list[ImportRow] = []
    for line in stderr.splitlines():
        if not line.startswith("import time:") or "self [us]" in line:
            continue
        parts = line[len("import time:") :].split("|")
        if len(parts) != 3:
            continue
        raw = parts[2].rstrip()
        indent = len(raw) - len(raw.lstrip(" ")) - 1
        rows.append(ImportRow(raw.strip(), indent // 2, int(parts[0]), int(parts[1])))
    return rows


def _importtime(statement: str, env: dict[str, str]) -> list[ImportRow]:
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", statement],
        cwd=REPO_ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    if done.returncode != 0:
        raise StartupError(f"`{statement}` failed: {done.stderr.strip().splitlines()[-1:]}")
    return parse_importtime(done.stderr)


def _total_ms(rows: list[ImportRow], module: str) -> float:
    for row in rows:
        if row.module == module and row.depth == 0:
            return row.cumulative_us / 1000
    return 0.0


def descendants(rows: list[ImportRow], roots: tuple[str, ...]) -> list[ImportRow]:
    """Rows imported (transitively) by the depth-0 `roots`; -X importtime lists children
    before their parent."""
    found: list[ImportRow] = []
    pending: list[ImportRow] = []
    for row in rows:
        if row.depth > 0:
            pending.append(row)
            continue
        if row.module in roots:
            found.extend(pending)
        pending = []
    return found


def _median_run(runs: list[list[ImportRow]], module: str) -> list[ImportRow]:
    ordered = sorted(runs, key=lambda rows: _total_ms(rows, module))
    return ordered[len(ordered) // 2]


def _wall_ms(argv: list[str], env: dict[str, str], repeat: int) -> float:
    times: list[float] = []
    for _ in range(repeat):
        started = time.perf_counter()
        subprocess.run(argv, cwd=REPO_ROOT, env=env, check=True, capture_output=True)
        times.append((time.perf_counter() - started) * 1000)
    return statistics.median(times)


def measure_imports(tmp: Path, repeat: int = 5) -> JsonDict:
    env = _with_bytecode(hermetic_env(tmp))
    _importtime("import tui.cli, tui.app", env)  # warm the bytecode and page caches
    app_runs = [_importtime("import tui.app", env) for _ in range(repeat)]
    entry_runs = [_importtime("import tui.cli, tui.app", env) for _ in range(repeat)]
    app_rows = _median_run(app_runs, "tui.app")
    entry_rows = _median_run(entry_runs, "tui.cli")
    entry_total = _total_ms(entry_rows, "tui.cli") + _total_ms(entry_rows, "tui.app")
    ours = descendants(entry_rows, ("tui.cli", "tui.app"))
    # Where the entry's import time goes: modules imported for tui.cli + tui.app at depth
    # 1-2, largest cumulative first (nested rows overlap their parents) ...
    top = sorted((r for r in ours if r.depth <= 2), key=lambda r: r.cumulative_us, reverse=True)[
        :12
    ]
    # ... and the self time of every module they pull in, summed by top-level package.
    by_package: dict[str, int] = {}
    for row in ours:
        package = row.module.split(".")[0]
        by_package[package] = by_package.get(package, 0) + row.self_us
    packages = sorted(by_package.items(), key=lambda item: item[1], reverse=True)[:10]
    probe = subprocess.run(
        [sys.executable, "-c", _LOADED_PROBE, *WATCHED_MODULES],
        cwd=REPO_ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    loaded = set(json.loads(probe.stdout))
    python_ms = _wall_ms([sys.executable, "-c", "pass"], env, repeat)
    entry_wall_ms = _wall_ms([sys.executable, "-c", "import tui.cli, tui.app"], env, repeat)
    return {
        "tui_app_total_ms": _total_ms(app_rows, "tui.app"),
        "entry_total_ms": entry_total,
        "entry_statement": "import tui.cli, tui.app",
        "top_cumulative": [
            {"module": r.module, "depth": r.depth, "cumulative_ms": r.cumulative_us / 1000}
            for r in top
        ],
        "self_by_package": [{"package": p, "self_ms": us / 1000} for p, us in packages],
        "heavy_imported": {name: name in loaded for name in HEAVY_MODULES},
        "watched_imported": {name: name in loaded for name in WATCHED_MODULES},
        "python_bare_wall_ms": python_ms,
        "entry_import_wall_ms": entry_wall_ms,
    }


BYTECODE_OFF = bool(os.environ.get("PYTHONDONTWRITEBYTECODE"))
"""This environment tells Python not to write bytecode (some CI images and containers do):
then every start compiles Straylight's ~150 modules from source, ~140 ms more on the
2-core machine (610 against 470 ms median, 2026-12-06)."""


def _with_bytecode(env: dict[str, str]) -> dict[str, str]:
    """`env` as a user's Python has it: bytecode is written and read (`__pycache__`), so the
    runs after the discarded warm-up measure a start, not a compile."""
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    return env


# ---------------------------------------------------------------- report


def _fmt_stats(stats: JsonDict) -> str:
    return f"min {stats['min']:6.0f}  median {stats['median']:6.0f}  p90 {stats['p90']:6.0f} ms"


def print_report(result: JsonDict) -> None:
    print(f"== start-up to first frame (target <= {TARGET_MS:.0f} ms) ==")
    if BYTECODE_OFF:
        print(
            "  note: PYTHONDONTWRITEBYTECODE is set here; the runs write and read bytecode "
            "as Python does by default (without it every start compiles ~150 modules: "
            "~140 ms more)"
        )
    for scenario in result["scenarios"].values():
        print(f"-- {scenario['name']}: --ollama-host {scenario['ollama']}")
        print("  run   app ms   wall ms   quit")
        warm = scenario["warmup"]
        if warm:
            print(
                f"  warm {warm['app_ms']:7.0f}  {warm['wall_ms']:8.0f}   {warm['quit_via']}"
                "  (discarded)"
            )
        for index, (app, wall, how, status) in enumerate(
            zip(
                scenario["app_ms"],
                scenario["wall_ms"],
                scenario["quit_via"],
                scenario["exit_status"],
                strict=True,
            ),
            1,
        ):
            print(f"  {index:>4} {app:7.0f}  {wall:8.0f}   {how} (exit {status})")
        print(f"  app  (process start -> first frame): {_fmt_stats(scenario['app_ms_stats'])}")
        print(f"  wall (fork -> log line seen):        {_fmt_stats(scenario['wall_ms_stats'])}")
    phases = result["phases"]
    title = "instrumented copy of the start path, Ollama down"
    print(f"-- where start-up goes ({title}, median of {phases['runs']}) --")
    for phase in phases["phases"]:
        print(f"  {phase['phase']:<62} {phase['ms']:5.0f} ms  (at {phase['ends_at_ms']:4.0f} ms)")
    imports = result["imports"]
    print("-- imports (python -X importtime, median of runs) --")
    print(f"  import tui.app: {imports['tui_app_total_ms']:.0f} ms cumulative")
    print(
        f"  import tui.cli, tui.app (what `straylight` imports before run_app): "
        f"{imports['entry_total_ms']:.0f} ms; wall {imports['entry_import_wall_ms']:.0f} ms"
        f" vs bare `python -c pass` {imports['python_bare_wall_ms']:.0f} ms"
    )
    print("  largest cumulative (depth <= 2, rows nest):")
    for row in imports["top_cumulative"]:
        print(f"    {'  ' * row['depth']}{row['module']:<40} {row['cumulative_ms']:7.1f} ms")
    print("  self time by package (all modules imported for tui.cli + tui.app):")
    print(
        "    "
        + ", ".join(f"{row['package']} {row['self_ms']:.0f}" for row in imports["self_by_package"])
        + " (ms)"
    )
    heavy = imports["heavy_imported"]
    bad = [name for name, loaded in heavy.items() if loaded]
    verdict = "none imported" if not bad else f"IMPORTED: {', '.join(bad)}"
    print(f"  heavy modules after `import tui.app, tui.cli` ({', '.join(heavy)}): {verdict}")
    watched = imports["watched_imported"]
    print(
        "  also loaded at start-up: "
        + (", ".join(n for n, v in watched.items() if v and n not in heavy) or "-")
    )


def run(runs: int, timeout: float) -> JsonDict:
    with tempfile.TemporaryDirectory(prefix="straylight-bench-startup-") as raw_tmp:
        tmp = Path(raw_tmp)
        scenarios: dict[str, Any] = {}
        down = f"127.0.0.1:{closed_port()}"
        scenarios["ollama_down"] = run_scenario(
            "Ollama down", down, runs, tmp, timeout=timeout
        ).to_json()
        with StandInProcess(spec_dir=tmp) as standin:
            scenarios["ollama_up"] = run_scenario(
                "Ollama up (stand-in)", standin.host, runs, tmp, timeout=timeout
            ).to_json()
        phases = measure_phases(down, tmp, 3, timeout=timeout)
        imports = measure_imports(tmp)
    return {
        "benchmark": "startup",
        "target_ms": TARGET_MS,
        "runs": runs,
        "terminal": {"TERM": "xterm-256color", "columns": COLUMNS, "lines": LINES},
        "command": "straylight --home <tmp> --ollama-host <host>",
        "scenarios": scenarios,
        "phases": phases,
        "imports": imports,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=7, help="measured runs per scenario")
    parser.add_argument("--timeout", type=float, default=20.0, help="seconds to wait per run")
    parser.add_argument("--json", type=Path, help="also write the results here")
    args = parser.parse_args(argv)
    info = machine_info()
    print(format_machine(info))
    try:
        result = run(args.runs, args.timeout)
    except (StartupError, OSError, subprocess.SubprocessError, RuntimeError) as error:
        print(f"startup benchmark could not run: {error}", file=sys.stderr)
        return 1
    result["machine"] = info
    print_report(result)
    if args.json:
        write_json(args.json, result)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
