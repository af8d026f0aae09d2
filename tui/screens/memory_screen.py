"""The frame every full-screen memory view shares: a title line, its body, a status line and
the Footer; Esc closes it. Subclasses yield their widgets from `compose_body` and report
what they did with `say`."""

from __future__ import annotations

from typing import ClassVar, TypeVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.screen import Screen
from textual.widgets import Static

from tui.widgets.fitting_footer import FittingFooter

ResultT = TypeVar("ResultT")


class MemoryScreen(Screen[ResultT]):
    """A full-screen view over the memory; `dismiss()` (Esc) returns to the chat."""

    TITLE_TEXT: ClassVar[str] = "Memory"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "close", "Close", id="screen_close"),
    ]
    DEFAULT_CSS = """
    MemoryScreen {
        layout: vertical;
    }
    MemoryScreen #screen-title {
        height: 1;
        padding: 0 1;
        background: $panel;
        text-style: bold;
    }
    MemoryScreen #screen-missing {
        height: auto;
        padding: 0 1;
        color: $warning;
    }
    MemoryScreen #screen-status {
        height: auto;
        max-height: 3;
        padding: 0 1;
        color: $text-muted;
    }
    MemoryScreen #screen-status.-error {
        color: $error;
    }
    """

    def compose(self) -> ComposeResult:
        yield Static(Text(self.TITLE_TEXT), id="screen-title")
        yield Static(self._missing_text(), id="screen-missing")
        yield from self.compose_body()
        yield Static("", id="screen-status")
        yield FittingFooter()

    def _missing_text(self) -> Text:
        """A configured model Ollama does not have (the last check's), with its fix; F8 on
        the chat pulls it. Empty and hidden when every model is there."""
        missing = getattr(self.app, "missing_models", ())
        return Text("\n".join(f"⚠ {model.line()} (F8 in the chat pulls it)" for model in missing))

    def on_mount(self) -> None:
        self.show_missing_models()

    def show_missing_models(self) -> None:
        """The warning line as the last Ollama check left the list: called again after each
        check, so a model pulled (from the models screen too) takes its line away."""
        line = self.query_one("#screen-missing", Static)
        line.update(self._missing_text())
        line.display = bool(getattr(self.app, "missing_models", ()))

    def compose_body(self) -> ComposeResult:
        """The view's own widgets, between the title and the status line."""
        yield from ()

    def say(self, text: str, *, error: bool = False) -> None:
        """One line under the view: what the last action did, or why it could not."""
        status = self.query_one("#screen-status", Static)
        status.update(Text(text))
        status.set_class(error, "-error")

    def action_close(self) -> None:
        self.dismiss(None)
