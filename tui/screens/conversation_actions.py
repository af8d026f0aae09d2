"""What the conversations screen does to a conversation: rename (a one-line prompt), delete
(after a y/n: the same as `straylight conversations delete`), export (Markdown into the data
dir's `exports/` folder). The work runs in a thread; these are its pieces, free of widgets
except the title prompt."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Input, Static

from store.daily_log import DailyLog
from tui.conversation_index import clean_title, conversation_info, days_from_start

if TYPE_CHECKING:
    from memory.conversation_notes import ConversationNotes

EXPORT_FOLDER = "exports"


class TitlePrompt(ModalScreen[str | None]):
    """One line to type a conversation's title: Enter keeps it, Esc cancels."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "cancel", "Cancel", show=False),
    ]
    DEFAULT_CSS = """
    TitlePrompt {
        align: center middle;
    }
    TitlePrompt #title-box {
        width: 70;
        max-width: 100%;
        height: auto;
        border: round $accent;
        padding: 0 1;
        background: $surface;
    }
    """

    def __init__(self, current: str) -> None:
        super().__init__()
        self.current = current

    def compose(self) -> ComposeResult:
        with Vertical(id="title-box"):
            yield Static("Title of this conversation (Enter keeps it, Esc cancels):")
            yield Input(self.current, id="title-input")

    def on_mount(self) -> None:
        self.query_one(Input).focus()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self.dismiss(clean_title(event.value) or None)

    def action_cancel(self) -> None:
        self.dismiss(None)


@dataclass(frozen=True, slots=True)
class Deleted:
    conversation_id: str
    messages: int
    points: int


def delete_conversation(
    daily_log: DailyLog, notes: ConversationNotes | None, conversation_id: str
) -> Deleted:
    """In a thread: what `conversations delete ID --yes` does (the database first, then the
    logs, each file rewritten atomically)."""
    from store.daily_log_rewrite import drop_conversation

    info = conversation_info(daily_log, conversation_id)
    days = [day.isoformat() for day in info.days] if info else []
    count = info.messages if info else 0
    points = 0
    if notes is not None:
        points = len(notes.remove(conversation_id, messages=count, days=days).forgotten)
    candidates = days_from_start(daily_log, conversation_id)
    dropped, _days = drop_conversation(daily_log, conversation_id, candidates)
    return Deleted(conversation_id, dropped, points)


def export_conversation(
    daily_log: DailyLog, notes: ConversationNotes | None, conversation_id: str
) -> Path:
    """In a thread: the conversation as Markdown in `<data dir>/exports/ID.md` (0600)."""
    from store.private_files import ensure_private_dir, write_private_text
    from tui.conversation_export import export_markdown
    from tui.conversation_index import load_conversation

    info = conversation_info(daily_log, conversation_id)
    if info is None:
        raise ValueError(f"no conversation {conversation_id!r}")
    record = notes.get(conversation_id) if notes is not None else None
    title = (record.title if record else None) or info.title
    system = record.system_prompt if record else None
    messages = load_conversation(daily_log, conversation_id, info.days)
    folder = daily_log.root.parent / EXPORT_FOLDER
    ensure_private_dir(folder, tighten_existing=True)  # Straylight's own folder: never a link
    path = folder / export_file_name(conversation_id)
    write_private_text(path, export_markdown(info, title, system, messages))
    return path


_UNSAFE_IN_A_NAME = re.compile(r"[^A-Za-z0-9._-]+")


def export_file_name(conversation_id: str) -> str:
    """`ID.md` inside `exports/`, whatever the id: one a copied-in day file names (`/home/you/
    notes`, `../../x`) was joined as a path, and the export replaced a file outside the data
    dir. Anything but letters, digits, `.`, `_` and `-` becomes `_`; no leading dot."""
    name = _UNSAFE_IN_A_NAME.sub("_", conversation_id).lstrip(".") or "unnamed"
    return f"{name[:200]}.md"
