"""The models screen's rows: what each cell says, and column widths that fit the screen.

The capabilities column is the one that gives way: a row such as `completion,vision,tools,
thinking` beside a long name pushes `loaded` past an 80-column terminal, where a DataTable
would cut it without a mark. When the natural widths do not fit, `completion` (which every
chat model has) is left out of the column, and when that is not enough the column is
narrowed and its cells end in `…`; then the names are (`hf.co/…` ones are long), down to
`NAME_MIN`; the window, size and loaded memory stay whole.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

from rich.cells import cell_len
from rich.text import Text

from tui.display_text import printable

if TYPE_CHECKING:
    from agent.model_catalog import ModelRecord

COLUMNS: Final = ("model", "capabilities", "context", "size", "loaded")
CAPABILITIES: Final = COLUMNS.index("capabilities")
CELL_PADDING: Final = 2  # a DataTable cell's padding, one cell each side


def size_text(size: int | None) -> str:
    """Bytes as `2.0 GB` (decimal, like `ollama list`); `-` when unknown."""
    from tui.cli_models import human_bytes

    return "-" if size is None else human_bytes(size)


def loaded_text(record: ModelRecord) -> str:
    """A loaded model's memory from /api/ps and where it sits, as `ollama ps` says it:
    `3.9 GB GPU`, `3.9 GB CPU`, `3.9 GB 62% GPU` (the rest on the CPU); `no`, or `-` when
    Ollama did not say."""
    if record.loaded is None:
        return "-"
    running = record.running
    if not record.loaded or running is None:
        return "no"
    text = size_text(running.size)
    if not running.size:
        return text
    vram = running.size_vram or 0
    if vram >= running.size:
        return f"{text} GPU"
    if vram <= 0:
        return f"{text} CPU"
    return f"{text} {max(1, min(99, round(100 * vram / running.size)))}% GPU"


def capabilities_text(capabilities: tuple[str, ...] | None, *, short: bool = False) -> str:
    """Ollama's capabilities, comma-joined; `short` leaves out `completion` beside others
    (`tools,thinking` for `completion,tools,thinking`); `-` when Ollama listed none."""
    if not capabilities:
        return "-"
    shown = [c for c in capabilities if c != "completion"] if short else list(capabilities)
    return ",".join(shown or capabilities)


def model_cells(
    record: ModelRecord, *, chat: str, embed: str, short: bool = False
) -> tuple[Text, ...]:
    """One row: name (marked when it is the chat or embedding model in use), capabilities
    (`short`: see `capabilities_text`), context window, size on disk, loaded and its
    memory."""
    from memory.model_names import normalise_name

    name = Text(printable(record.name), no_wrap=True, overflow="ellipsis")
    key = normalise_name(record.name)
    if key == normalise_name(chat):
        name.append(" ◆chat", style="bold green")
    if key == normalise_name(embed):
        name.append(" ◆embed", style="bold cyan")
    capabilities = capabilities_text(record.capabilities, short=short)
    window = "-" if record.context_length is None else f"{record.context_length:,}"
    return (
        name,
        Text(capabilities, no_wrap=True, overflow="ellipsis"),
        Text(window, justify="right"),
        Text(size_text(record.size), justify="right"),
        Text(loaded_text(record), style="green" if record.loaded else ""),
    )


NAME: Final = COLUMNS.index("model")
NAME_MIN: Final = 16  # `hf.co/bartowski…`: enough to tell the models apart


def capabilities_width(rows: list[tuple[Text, ...]], available: int) -> int | None:
    """The capabilities column's width so that the row fits `available` cells, or None
    when every column fits as it is (the column then sizes itself). Never narrower than
    its heading."""
    over = _over(rows, available)
    if over <= 0:
        return None
    widths = _natural_widths(rows)
    return max(cell_len(COLUMNS[CAPABILITIES]), widths[CAPABILITIES] - over)


def name_width(
    rows: list[tuple[Text, ...]], available: int, capabilities: int | None
) -> int | None:
    """The name column's width when the row still does not fit with the capabilities at
    `capabilities` (a long `hf.co/…` name at 80 columns cut the size and hid `loaded`): the
    names end in `…`, never narrower than `NAME_MIN`; None when they fit whole."""
    widths = _natural_widths(rows)
    if capabilities is not None:
        widths[CAPABILITIES] = capabilities
    over = sum(widths) + CELL_PADDING * len(COLUMNS) - available
    if over <= 0:
        return None
    return max(min(NAME_MIN, widths[NAME]), widths[NAME] - over)


def _natural_widths(rows: list[tuple[Text, ...]]) -> list[int]:
    widths = [cell_len(heading) for heading in COLUMNS]
    for row in rows:
        widths = [max(width, cell.cell_len) for width, cell in zip(widths, row, strict=True)]
    return widths


def _over(rows: list[tuple[Text, ...]], available: int) -> int:
    return sum(_natural_widths(rows)) + CELL_PADDING * len(COLUMNS) - available
