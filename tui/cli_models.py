"""`straylight models [--json]` and `straylight pull NAME`: the pulled models from the shell.

`models --json` prints one object per pulled model, `{"name", "size", "family",
"parameter_size", "quantization", "capabilities", "context_length", "loaded", "embedding"}`
(null where Ollama could not say); without `--json`, a table. `pull NAME` draws a progress
bar (bytes, percent, rate) on a terminal and prints one line per status into a pipe.
Exit codes: 0 ok; 1 the pull failed (Ollama's message); 3 Ollama unreachable; 130 Ctrl+C.
"""

from __future__ import annotations

import asyncio
import shutil
import sys
import time
from collections import deque
from typing import TYPE_CHECKING, Any, TextIO

from agent.gateway_errors import EXIT_OK, EXIT_USAGE
from tui.cli_output import PROG, fail, for_terminal, print_json

if TYPE_CHECKING:
    from agent.model_catalog import ModelRecord
    from agent.model_changes import PullProgress
    from agent.settings import Settings

EXIT_INTERRUPTED = 130
RATE_WINDOW_SECONDS = 5.0
REDRAW_SECONDS = 0.1
_BAR_CELLS = 24
_MIN_BAR_CELLS = 5


def register(commands: Any, common: Any, parser_class: type) -> None:
    """Add `models` and `pull` to the top-level subcommands."""
    models = commands.add_parser(
        "models", allow_abbrev=False, help="the pulled models: capabilities, window, loaded"
    )
    common(models, top=False)
    models.add_argument("--json", action="store_true", help="print JSON")
    pull = commands.add_parser("pull", allow_abbrev=False, help="pull a model into Ollama")
    common(pull, top=False)
    pull.add_argument("name", metavar="NAME", help="the model, e.g. qwen3:8b")


def dispatch(args: Any, settings: Settings) -> int:
    if args.command == "models":
        return asyncio.run(_models(settings, as_json=args.json))
    return asyncio.run(_pull(settings, args.name))


# ------------------------------------------------------------------------------------ models


async def _models(settings: Settings, *, as_json: bool) -> int:
    from agent.gateway_errors import GatewayError
    from agent.model_catalog import list_models
    from agent.ollama_gateway import OllamaGateway

    gateway = OllamaGateway.from_config(settings.ollama)
    try:
        records = await list_models(gateway.client(), timeout=gateway.connect_timeout)
    except GatewayError as error:
        return fail(str(error), error.exit_code)
    finally:
        await gateway.aclose()
    if as_json:
        print_json([record.to_json() for record in records])
    else:
        print_table(records)
    return EXIT_OK


def _unknown(value: object) -> str:
    return "-" if value is None else str(value)


def model_row(record: ModelRecord) -> list[str]:
    """One table row: name, size in GB, params, quant, capabilities, context, loaded."""
    size = "-" if record.size is None else f"{record.size / 1e9:.1f} GB"
    capabilities = "-" if record.capabilities is None else ",".join(record.capabilities)
    loaded = {True: "yes", False: "no", None: "-"}[record.loaded]
    return [
        record.name,
        size,
        _unknown(record.parameter_size),
        _unknown(record.quantization),
        capabilities or "-",
        _unknown(record.context_length),
        loaded,
    ]


def print_table(records: list[ModelRecord]) -> None:
    if not records:
        print(f"no models pulled yet (try `{PROG} pull llama3.2`)", file=sys.stderr)
        return
    header = ["NAME", "SIZE", "PARAMS", "QUANT", "CAPABILITIES", "CONTEXT", "LOADED"]
    rows = [header] + [model_row(record) for record in records]
    widths = [max(len(row[column]) for row in rows) for column in range(len(header))]
    right = {1, 5}  # numbers line up on the right
    for row in rows:
        cells = [
            cell.rjust(width) if column in right else cell.ljust(width)
            for column, (cell, width) in enumerate(zip(row, widths, strict=True))
        ]
        print(for_terminal("  ".join(cells).rstrip()))


# -------------------------------------------------------------------------------------- pull


def human_bytes(count: float) -> str:
    """Decimal units as Ollama prints them (`ollama list`, a pull's progress): 96 B,
    1.4 kB, 274 MB, 2.0 GB, 12 GB — one decimal below 10 of a unit, none from 10 on."""
    value = float(count)
    for unit in ("B", "kB", "MB", "GB", "TB"):
        if abs(value) < 1000 or unit == "TB":
            break
        value /= 1000
    if unit == "B" or abs(value) >= 10 or value == int(value):
        return f"{int(value)} {unit}"
    return f"{value:.1f} {unit}"


class PipeProgress:
    """Into a pipe or file: one line per status (a layer's line names its size)."""

    def __init__(self, out: TextIO) -> None:
        self._out = out
        self._last: str | None = None

    def update(self, progress: PullProgress) -> None:
        if progress.status == self._last:
            return
        self._last = progress.status
        size = f" ({human_bytes(progress.total)})" if progress.total else ""
        self._out.write(f"{progress.status}{size}\n")
        self._out.flush()

    def close(self) -> None:
        """Nothing to finish: every line is complete."""


class TerminalProgress:
    """On a terminal: a bar redrawn in place (`\\r`) per layer, a plain line per status."""

    def __init__(self, out: TextIO, clock: Any = time.monotonic) -> None:
        self._out = out
        self._clock = clock
        self._open = False  # a bar line without its newline yet
        self._status: str | None = None
        self._samples: deque[tuple[float, int]] = deque()
        self._drawn_at = 0.0

    def update(self, progress: PullProgress) -> None:
        status = for_terminal(progress.status)
        if progress.status != self._status:
            self.close()
            self._status = progress.status
            self._samples.clear()
            self._drawn_at = 0.0
            if not progress.total:
                self._out.write(status + "\n")
                self._out.flush()
                return
        if not progress.total:
            return
        now = self._clock()
        done = progress.completed or 0
        self._samples.append((now, done))
        while self._samples and now - self._samples[0][0] > RATE_WINDOW_SECONDS:
            self._samples.popleft()
        finished = done >= progress.total
        if not finished and self._open and now - self._drawn_at < REDRAW_SECONDS:
            return
        self._drawn_at = now
        self._draw(status, progress)

    def _rate(self) -> float | None:
        if len(self._samples) < 2:
            return None
        (t0, c0), (t1, c1) = self._samples[0], self._samples[-1]
        return (c1 - c0) / (t1 - t0) if t1 - t0 >= 0.2 else None

    def _draw(self, status: str, progress: PullProgress) -> None:
        fraction = progress.fraction or 0.0
        done = human_bytes(progress.completed or 0)
        rate = self._rate()
        speed = f"  {human_bytes(rate)}/s" if rate else ""
        numbers = f" {fraction:4.0%}  {done} / {human_bytes(progress.total or 0)}{speed}"
        width = max(20, shutil.get_terminal_size().columns - 1)
        # The bar gives way on a narrow terminal (80 columns), not the numbers.
        cells = min(_BAR_CELLS, width - len(status) - 2 - len(numbers))
        filled = int(fraction * cells)
        bar = "  " + "█" * filled + "░" * (cells - filled) if cells >= _MIN_BAR_CELLS else ""
        line = f"{status}{bar}{numbers}"
        self._out.write("\r" + line[:width].ljust(width))
        self._out.flush()
        self._open = True

    def close(self) -> None:
        """End an open bar line (before the next status, an error or Ctrl+C)."""
        if self._open:
            self._out.write("\n")
            self._out.flush()
            self._open = False


async def _pull(settings: Settings, name: str) -> int:
    from agent.gateway_errors import GatewayError
    from agent.model_changes import pull_model
    from agent.ollama_gateway import OllamaGateway

    if not name.strip():
        return fail("pull needs a model NAME", EXIT_USAGE)
    printer = TerminalProgress(sys.stdout) if sys.stdout.isatty() else PipeProgress(sys.stdout)
    gateway = OllamaGateway.from_config(settings.ollama)
    try:
        async for progress in pull_model(gateway.client(), name):
            printer.update(progress)
    except GatewayError as error:
        printer.close()
        return fail(str(error), error.exit_code)
    except asyncio.CancelledError:  # Ctrl+C: asyncio.run cancels us; finish cleanly
        printer.close()
        return fail(f"pull of {name} interrupted", EXIT_INTERRUPTED)
    finally:
        await gateway.aclose()
    printer.close()
    return EXIT_OK
