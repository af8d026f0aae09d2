"""F1 / `/help`: keys and slash commands (the commands' lines come from tui/commands.py)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from functools import lru_cache
from typing import ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.screen import Screen
from textual.widgets import Static

from tui.commands import slash_help
from tui.keymap import BINDING_IDS
from tui.widgets.fitting_footer import FittingFooter

HELP_TEMPLATE = """\
# Straylight — help

## Keys
- **Enter** — send the message
- **Ctrl+J** (or Shift+Enter where the terminal reports it) — new line in the message
- **Esc** — cancel the streaming reply; what arrived is kept, marked cancelled
- **Ctrl+N** — new conversation
- **Ctrl+B** — show or hide the sidebar
- **Ctrl+P** — command palette (every action is there)
- **F1** — this help · **Ctrl+Q** — quit
- **Ctrl+Up** — select the last message; **Up/Down** move; on a message **p** pins it,
  **f** forgets its memory point (asks first), **c** copies it, **t** opens its thinking;
  **r** on the last reply regenerates it, **e** on your last message edits it (so does **Up**
  in an empty box); **Esc** back to typing
- **Ctrl+R** — the last prompt's recalled hits in the sidebar: **Enter** opens one in the
  memory browser, **f** forgets it (asks first), **Esc** back to typing
- **F2** memory browser · **F3** facts · **F4** candidates · **F5** hypotheses ·
  **Ctrl+O** conversations · **F8** models — full screens; **Esc** closes them
- **Ctrl+G** — edit longterm.md in `$VISUAL` / `$EDITOR`; it is re-read when you save

## Slash commands
{slash_commands}

## On the memory screens (Esc closes them)
- **Memory browser** (F2): **/** search (hybrid recall) · **r** role filter · **o** pinned only ·
  **d** date range (Enter applies) · **p** pin/unpin · **f** forget (asks first)
- **Facts** (F3): **t** type · **s** status · **w** workspace filters · **e** edit (Enter saves,
  **Ctrl+T** changes the type) · **r** retire (asks first) · **v** revive
- **Candidates** (F4): **a** approve · **e** edit, then Enter approves · **r** reject
- **Hypotheses** (F5): **v** validate · **x** refute · **d** delete (asks first)
- **Conversations** (Ctrl+O): **Enter** read one full-width · **c** continue it in the chat ·
  **r** rename · **d** delete (asks first) · **e** export to `exports/ID.md` in the data dir
- **Models** (F8): **p** pull (type a name, Enter; it goes on while you chat) · **d** delete
  (asks first) · **c** use for chat · **e** use for embeddings (asks first) · **r** refresh

## When the model wants to remember a fact
A box appears in the chat: **a** approve · **e** edit (Enter saves) · **r** reject ·
**l** later (it stays a candidate). The reply goes on after your answer.

## Remapping keys
In config.toml, `[keymap]` with `binding_id = "keys"` lines (several keys comma-separated):
{binding_ids}.

## Where things are
Every message is appended to `conversation/YYYY-MM-DD.md` in the data dir the moment it is
sent; `longterm.md` there goes into every prompt, whole. `straylight status` and
`straylight config` show the paths and every setting.
"""
HELP_TEXT = HELP_TEMPLATE.replace("{slash_commands}", slash_help()).replace(
    "{binding_ids}", ", ".join(f"`{binding}`" for binding in BINDING_IDS)
)


class HelpScreen(Screen[None]):
    """The help page, full screen and scrollable.

    Opening it costs the same whatever the session length (issue 16: 2.6 s late in a long
    session): it is an opaque screen, not a modal over the chat (a modal made the chat's
    whole log lay out again under it), and its text is one `Static` of styled text made once
    (Textual's `Markdown` widget mounted ~120 widgets each time). bench/screen_open.py
    measures it."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "dismiss_help", "Close", id="close_help"),
        Binding("f1", "dismiss_help", "Close", show=False),
        Binding("q", "dismiss_help", "Close", show=False),
    ]
    DEFAULT_CSS = """
    HelpScreen #help-body {
        padding: 0 1;
    }
    """

    def __init__(self, remapped: Mapping[str, str] | None = None) -> None:
        super().__init__()
        self.remapped = dict(remapped or {})
        """config.toml's `[keymap]` entries in force (binding id → keys): the Keys section
        below is prose with the default keys, so the remapped ones are named above it."""

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="help-body"):
            if self.remapped:
                yield Static(remap_note(self.remapped), id="help-remaps")
            yield Static(help_text(), id="help-text")
        yield FittingFooter()

    def action_dismiss_help(self) -> None:
        self.dismiss(None)


def remap_note(remapped: Mapping[str, str]) -> Text:
    """One line per binding your config.toml's `[keymap]` moved, before the default keys."""
    text = Text(
        "Your config.toml [keymap] changes these keys; the list below shows the defaults:\n"
    )
    text.stylize("bold")
    for binding, keys in sorted(remapped.items()):
        text.append(f"• {binding} — ")
        text.append(keys.replace(",", ", "), style="bold")
        text.append("\n")
    return text


_INLINE_RE = re.compile(r"(\*\*[^*]+\*\*|`[^`]+`)")


@lru_cache(maxsize=1)
def help_text() -> Text:
    """The help as styled text, made once per process: headings, bullets, **bold** and
    `code` of the Markdown source, list items and paragraphs joined into one line each so
    they wrap at any width. (Rich's Markdown re-renders on every layout: ~0.4 s here.)"""
    blocks: list[tuple[str, str]] = []  # (kind, text): heading1, heading2, item, paragraph
    for line in HELP_TEXT.splitlines():
        stripped = line.strip()
        if not stripped:
            blocks.append(("blank", ""))
        elif line.startswith("## "):
            blocks.append(("heading2", line[3:].strip()))
        elif line.startswith("# "):
            blocks.append(("heading1", line[2:].strip()))
        elif line.startswith("- "):
            blocks.append(("item", line[2:].strip()))
        elif blocks and blocks[-1][0] in ("item", "paragraph"):
            kind, joined = blocks[-1]
            blocks[-1] = (kind, f"{joined} {stripped}")
        else:
            blocks.append(("paragraph", stripped))
    text = Text()
    for kind, body in blocks:
        if kind == "blank":
            continue
        if kind in ("heading1", "heading2"):
            if text:
                text.append("\n")
            style = "bold reverse" if kind == "heading1" else "bold underline"
            text.append(f" {body} " if kind == "heading1" else body, style=style)
            text.append("\n")
            continue
        if kind == "item":
            text.append("• ")
        for piece in _INLINE_RE.split(body):
            if piece.startswith("**") and piece.endswith("**") and len(piece) > 4:
                text.append(piece[2:-2], style="bold")
            elif piece.startswith("`") and piece.endswith("`") and len(piece) > 2:
                text.append(piece[1:-1], style="italic")
            else:
                text.append(piece)
        text.append("\n")
    text.rstrip()
    return text
