"""One message in the chat log: a title line and a Markdown body that can stream; above a
thinking model's reply, a dimmed "Thinking" block that streams too and folds when the answer
starts (t on the selected message, or a click on its title, opens it again)."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.widgets import Static

from tui.display_text import printable
from tui.widgets.chat_input import key_hints

if TYPE_CHECKING:
    from textual.timer import Timer
    from textual.widgets import Collapsible, Markdown
    from textual.widgets.markdown import MarkdownStream

FLUSH_HZ = 30  # screen updates per second while a reply streams

STATUS_LABELS = {
    "complete": "",
    "waiting": " · waiting for the model…",
    "thinking": " · thinking…",
    "streaming": " · …",
    "cut_off": " · ⚠ cut off",
    "truncated": " · ⚠ truncated",
    "cancelled": " · cancelled",
    "failed": " · ⚠ failed",
}


class ChatMessage(Vertical, can_focus=True):
    """A message: the user's as typed, the assistant's as Markdown streamed through
    `MarkdownStream` and rendered in full once it is complete.

    Selectable (Ctrl+Up from the message box, or a click): Up/Down move between messages,
    p pins it, f forgets its memory point (after a confirmation), c copies it, t opens or
    folds its thinking, r on the last reply regenerates it, e on the last user message puts
    it back in the box to edit and resend, Esc goes back to the message box.

    Thinking is shown only: it is mounted with its first piece (a reply without thinking is
    laid out exactly as before) and lives as long as the widget (the log never has it)."""

    DEFAULT_CLASSES = "chat-message"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("up", "screen.select_message(-1)", "Previous", id="message_previous", show=False),
        Binding("down", "screen.select_message(1)", "Next", id="message_next", show=False),
        Binding("p", "screen.pin_message", "Pin", id="message_pin"),
        Binding("f", "screen.forget_message", "Forget", id="message_forget"),
        Binding("c", "screen.copy_message", "Copy", id="message_copy"),
        Binding("t", "toggle_thinking", "Thinking", id="message_thinking", show=False),
        Binding("r", "screen.retry_message", "Retry", id="message_retry"),
        Binding("e", "screen.edit_message", "Edit", id="message_edit"),
        Binding("escape", "screen.focus_input", "Back to typing", id="message_done"),
    ]

    def __init__(
        self,
        role: str,
        text: str = "",
        *,
        time: datetime | None = None,
        model: str | None = None,
        status: str = "complete",
    ) -> None:
        super().__init__(classes=f"chat-message -{role}")
        self.role = role
        self.text = text
        self.time = time
        self.model = model
        self.status = status
        self.point_id: int | None = None  # its memory point, once the engine reports the save
        self.reason: str | None = None  # why a logged reply failed or was cut (conversations)
        self._stream: MarkdownStream | None = None
        self._pending: list[str] = []
        self._flush_timer: Timer | None = None
        self.thinking = ""  # what the model thought before this reply: shown, never kept
        self._thinking_block: Collapsible | None = None
        self._thinking_dirty = False

    def compose(self) -> ComposeResult:
        yield Static(self._title_text(), classes="message-title")
        if self.role == "user":
            # What the user typed, exactly: line breaks and all, no Markdown reflow.
            yield Static(Text(printable(self.text)), classes="message-body")
        else:
            from textual.widgets import Markdown

            yield Markdown(printable(self.text), classes="message-body")

    async def show_text(self, text: str) -> None:
        """Show `text` instead (a user's message as it was stored: masked)."""
        self.text = text
        if self.role == "user":
            self.query_one(".message-body", Static).update(Text(printable(text)))
        else:
            await self.body.update(printable(text))

    def _title_text(self) -> Text:
        who = "you" if self.role == "user" else (self.model or "assistant")
        when = f" · {self.time.astimezone():%H:%M}" if self.time else ""
        why = f": {self.reason}" if self.reason and self.status != "complete" else ""
        # the reason can repeat Ollama's error text; the model's name comes from Ollama too
        return Text(printable(f"{who}{when}{STATUS_LABELS.get(self.status, '')}{why}"))

    @property
    def body(self) -> Markdown:
        from textual.widgets import Markdown

        return self.query_one(".message-body", Markdown)

    def _set_status(self, status: str) -> None:
        self.status = status
        self.set_class(status in ("cut_off", "failed"), "-problem")
        self.query_one(".message-title", Static).update(self._title_text())

    @property
    def thinking_block(self) -> Collapsible | None:
        """The "Thinking" block, once the model sent thinking."""
        return self._thinking_block

    async def append_thinking(self, fragment: str) -> None:
        """Queue a piece of the model's thinking; the block opens with the first piece and
        is written at the same flush rate as the reply."""
        if not fragment:
            return
        if self._thinking_block is None:
            from textual.widgets import Collapsible
            from textual.widgets._collapsible import CollapsibleTitle

            block = Collapsible(
                Static("", classes="thinking-text"),
                title="Thinking",
                collapsed=False,
                classes="message-thinking",
            )
            await self.mount(block, before=self.body)
            block.query_one(CollapsibleTitle).can_focus = False  # t toggles; Tab skips it
            self._thinking_block = block
            if self._stream is None:
                self._set_status("thinking")
        self.thinking += fragment
        self._thinking_dirty = True
        if self._flush_timer is None:
            self._flush_timer = self.set_timer(1 / FLUSH_HZ, self._flush_pending)

    def fold_thinking(self) -> None:
        """Fold the "Thinking" block (the answer started)."""
        if self._thinking_block is not None:
            self._thinking_block.collapsed = True

    def action_toggle_thinking(self) -> None:
        """Open or fold the "Thinking" block (key t on the selected message); on a message
        without one, say so rather than do nothing."""
        if self._thinking_block is not None:
            self._thinking_block.collapsed = not self._thinking_block.collapsed
        else:
            self.app.notify("This message has no thinking to show.", timeout=3)

    async def append(self, fragment: str) -> None:
        """Queue a fragment of reply text; it reaches the screen with the next flush.

        Tokens arrive far faster than a growing Markdown document can re-render, so they
        are gathered and written to the `MarkdownStream` at most `FLUSH_HZ` times a second.
        """
        if not fragment:
            return
        if self._stream is None:
            from textual.widgets import Markdown

            self._set_status("streaming")
            self.fold_thinking()
            self._stream = Markdown.get_stream(self.body)
        self.text += fragment
        self._pending.append(fragment)
        if self._flush_timer is None:
            self._flush_timer = self.set_timer(1 / FLUSH_HZ, self._flush_pending)

    async def _flush_pending(self) -> None:
        self._flush_timer = None
        if self._thinking_dirty and self._thinking_block is not None:
            self._thinking_dirty = False
            text = self._thinking_block.query_one(".thinking-text", Static)
            text.update(Text(printable(self.thinking)))
        if self._pending and self._stream is not None:
            chunk = "".join(self._pending)
            self._pending.clear()
            await self._stream.write(printable(chunk))

    async def stop_stream(self) -> None:
        """Write what is still queued and stop the stream."""
        if self._flush_timer is not None:
            self._flush_timer.stop()
        await self._flush_pending()
        if self._stream is not None:
            stream, self._stream = self._stream, None
            await stream.stop()

    async def finish(self, text: str | None = None, status: str = "complete") -> None:
        """Stop streaming and render the whole text once, properly."""
        await self.stop_stream()
        if text is not None:
            self.text = text
        self.fold_thinking()
        await self.body.update(printable(self.text))
        self._set_status(status)


class ChatNotice(Static):
    """A one-line notice in the chat log: an error, a cut-off, a command's answer."""

    def __init__(self, text: str, *, kind: str = "info") -> None:
        # a notice can repeat Ollama's error text or a path: control characters as symbols
        super().__init__(Text(printable(text)), classes=f"chat-notice -{kind}")


class EmptyChatHint(Static):
    """What an empty chat says: where the memory lives (the data dir, by its path), whether
    the embedding model is pulled (with the command when it is not), and how to start."""

    def __init__(self) -> None:
        super().__init__(classes="empty-hint")

    def on_mount(self) -> None:
        self.show_setup()

    def show_setup(self) -> None:
        """Re-read the data dir and the last Ollama check (the chat screen calls this when a
        check comes back)."""
        self.update(self._text())

    def _text(self) -> Text:
        settings = getattr(self.app, "settings", None) if self.is_attached else None
        if settings is None:
            return Text(
                "A new conversation. Every message is kept in today's log in the data dir, "
                "and longterm.md goes into every prompt.\n"
                "Type below and press Enter · Ctrl+J new line · F1 help · Ctrl+P commands"
            )
        send, newline, help_key = key_hints(self.app)
        home, embed = settings.home, settings.memory.embed_model
        text = Text("A new conversation. Every message is kept in today's log in ")
        text.append(_shown_path(home / "conversation"), style="bold")
        text.append(", and ")
        text.append(_shown_path(home / "longterm.md"), style="bold")
        text.append(" goes into every prompt.\n")
        status = getattr(self.screen, "ollama_status", None)
        if status is None:
            text.append(f"Embedding model {embed}: checking Ollama…", style="dim")
        elif not status.reachable:
            text.append(
                f"Embedding model {embed}: unknown, Ollama is offline — start it (`ollama "
                "serve`); recall works by words until then.",
                style="yellow",
            )
        elif status.has_model(embed):
            text.append(f"Embedding model {embed}: ✓ pulled.", style="dim")
        else:
            text.append(
                f"Embedding model {embed}: not pulled — run `straylight pull {embed}` "
                "(recall works by words until then).",
                style="yellow",
            )
        text.append(
            f"\nType below and press {send} · {newline} new line · {help_key} help · "
            "Ctrl+P commands"
        )
        return text


def _shown_path(path: Path) -> str:
    """A path as the user would type it: `~/…` under their home directory."""
    try:
        return printable("~/" + str(path.relative_to(Path.home())))
    except (ValueError, RuntimeError):  # not under it, or no home directory
        return printable(str(path))
