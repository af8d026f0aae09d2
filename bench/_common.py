"""Helpers shared by the benchmarks: statistics, machine info, a stand-in Ollama process."""

from __future__ import annotations

import json
import os
import platform
import socket
import statistics
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from types import TracebackType
from typing import Any, Self

REPO_ROOT = Path(__file__).resolve().parent.parent
RESULTS_DIR = REPO_ROOT / "bench" / "results"

JsonDict = dict[str, Any]


def summarize(values: Sequence[float]) -> JsonDict:
    """min / median / p90 / max of a sample (p90 interpolated, inclusive method)."""
    if not values:
        return {"n": 0, "min": None, "median": None, "p90": None, "max": None}
    ordered = sorted(values)
    p90 = ordered[0]
    if len(ordered) > 1:
        p90 = statistics.quantiles(ordered, n=10, method="inclusive")[-1]
    return {
        "n": len(ordered),
        "min": ordered[0],
        "median": statistics.median(ordered),
        "p90": p90,
        "max": ordered[-1],
    }


def closed_port() -> int:
    """A localhost TCP port nothing listens on (bound and released right away)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def hermetic_env(tmp: Path, **extra: str) -> dict[str, str]:
    """The caller's environment without Straylight/Ollama/Textual overrides or user config."""
    env = {
        name: value
        for name, value in os.environ.items()
        if not name.startswith(("STRAYLIGHT_", "MEMORY_", "TEXTUAL"))
        and name not in ("OLLAMA_HOST", "PYTHONPROFILEIMPORTTIME")
    }
    env["XDG_CONFIG_HOME"] = str(tmp / "xdg-config")
    env["XDG_DATA_HOME"] = str(tmp / "xdg-data")
    env.update(extra)
    return env


def machine_info() -> JsonDict:
    """What the numbers were measured on."""
    cpu_model = None
    try:
        for line in Path("/proc/cpuinfo").read_text(encoding="utf-8").splitlines():
            if line.startswith("model name"):
                cpu_model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    try:
        usable = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        usable = os.cpu_count()
    try:
        load = [round(x, 2) for x in os.getloadavg()]
    except OSError:
        load = None
    return {
        "cpu_count": os.cpu_count(),
        "cpus_usable": usable,
        "cpu_model": cpu_model,
        "loadavg": load,
        "python": platform.python_version(),
        "implementation": platform.python_implementation(),
        "executable": sys.executable,
        "platform": platform.platform(),
        "git": _git_describe(),
        "pythondontwritebytecode": bool(os.environ.get("PYTHONDONTWRITEBYTECODE")),
    }


def _git_describe() -> str | None:
    try:
        head = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"],
            cwd=REPO_ROOT,
            capture_output=True,
            text=True,
            timeout=5,
            check=True,
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no"],
            cwd=REPO_ROOT,
            capture_output=True,
            text=True,
            timeout=5,
            check=True,
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return None
    return f"{head}{'+dirty' if dirty else ''}"


def format_machine(info: Mapping[str, Any]) -> str:
    load = info.get("loadavg")
    load_text = "/".join(str(x) for x in load) if load else "?"
    return (
        f"machine: {info['cpu_count']} CPUs ({info['cpus_usable']} usable)"
        f" {info.get('cpu_model') or ''} | Python {info['python']} ({info['implementation']})"
        f" | {info['platform']} | load {load_text} | git {info.get('git') or '?'}"
    )


def write_json(path: Path, data: Mapping[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")


class StandInProcess:
    """`OllamaStandIn` served from a child process, as the real Ollama would be.

    Keeping the server out of the measured process means its threads do not compete
    with the app for the GIL. `replies` are `(text, tokens)` pairs, queued in order.
    """

    def __init__(
        self,
        replies: Sequence[tuple[str, Sequence[str]]] = (),
        *,
        token_delay: float = 0.0,
        spec_dir: Path,
    ) -> None:
        self._replies = [{"text": text, "tokens": list(tokens)} for text, tokens in replies]
        self._token_delay = token_delay
        self._spec_dir = spec_dir
        self._process: subprocess.Popen[str] | None = None
        self.host = ""

    def __enter__(self) -> Self:
        self._spec_dir.mkdir(parents=True, exist_ok=True)
        spec = self._spec_dir / f"standin-{os.getpid()}-{id(self)}.json"
        write_json(spec, {"token_delay": self._token_delay, "replies": self._replies})
        self._process = subprocess.Popen(
            [sys.executable, "-m", "bench.standin_proc", str(spec)],
            cwd=REPO_ROOT,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert self._process.stdout is not None
        line = self._process.stdout.readline().strip()
        if not line.startswith("READY "):
            self.__exit__(None, None, None)
            raise RuntimeError(f"the Ollama stand-in did not start (said {line!r})")
        self.host = line.split(" ", 1)[1]
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        process, self._process = self._process, None
        if process is None:
            return
        if process.stdin is not None:
            process.stdin.close()  # EOF on stdin: the stand-in stops
        try:
            process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        if process.stdout is not None:
            process.stdout.close()
