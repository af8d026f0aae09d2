"""F1 / `/help`: keys and slash commands."""

from __future__ import annotations

from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Markdown

HELP_TEXT = """\
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
  **f** forgets its memory point (asks first), **c** copies it; **Esc** back to typing

## Slash commands
- `/help` — this help
- `/new` — start a new conversation (the log keeps the old one)
- `/model NAME` — chat with another model for this session; `/model` alone lists the pulled ones
- `/remember TEXT` · `/forget ID` · `/recall QUERY` · `/memstatus` · `/import PATH` — memories
- `/fact set KEY TYPE BODY [--scope global] [--proof TEXT]` — write a fact now
- `/fact get|retire|undo KEY` · `/facts` — read, retire, undo; list this workspace's facts
- `/candidates` — facts waiting for approval; `/candidates approve ID [BODY]` or `reject ID`
- `/dream` — run the dream now: at most one hypothesis card
- `/hypotheses` — the cards, overdue first; `/hypotheses validate|refute|delete ID`

## When the model wants to remember a fact
A box appears in the chat: **a** approve · **e** edit (Enter saves) · **r** reject ·
**l** later (it stays a candidate). The reply goes on after your answer.

## Remapping keys
In config.toml, `[keymap]` with `binding_id = "keys"` lines (several keys comma-separated):
`send`, `newline`, `cancel_reply`, `new_conversation`, `toggle_sidebar`, `help`, `quit`,
`select_message`, `message_previous`, `message_next`, `message_pin`, `message_forget`,
`message_copy`, `message_done`, `confirm_yes`, `confirm_no`, `close_help`,
`candidate_approve`, `candidate_edit`, `candidate_reject`, `candidate_later`.

## Where things are
Every message is appended to `conversation/YYYY-MM-DD.md` in the data dir the moment it is
sent; `longterm.md` there goes into every prompt, whole. `straylight status` and
`straylight config` show the paths and every setting.
"""


class HelpScreen(ModalScreen[None]):
    """A scrollable help page over the chat."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "dismiss_help", "Close", id="close_help"),
        Binding("f1", "dismiss_help", "Close", show=False),
        Binding("q", "dismiss_help", "Close", show=False),
    ]

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="help-body"):
            yield Markdown(HELP_TEXT)

    def action_dismiss_help(self) -> None:
        self.dismiss(None)
