"""A chat notice for a configured model Ollama does not have, with its fix and a button
that opens the models screen with the model in its pull box."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.message import Message
from textual.widgets import Button, Static

if TYPE_CHECKING:
    from agent.model_catalog import MissingModel


class MissingModelNotice(Vertical):
    """`⚠ The embedding model … is not pulled (…): run …` and a `Pull …` button."""

    DEFAULT_CSS = """
    MissingModelNotice {
        height: auto;
        margin: 1 0 0 0;
        padding: 0 1;
        border-left: thick $warning;
    }
    MissingModelNotice Static {
        color: $warning;
    }
    """

    @dataclass
    class PullRequested(Message):
        """The button was pressed: open the models screen ready to pull `name`."""

        name: str

    def __init__(self, missing: MissingModel) -> None:
        super().__init__(classes="missing-model")
        self.missing = missing

    def compose(self) -> ComposeResult:
        yield Static(Text(f"⚠ {self.missing.line()}"))
        yield Button(f"Pull {self.missing.name} (F8)", compact=True, variant="warning")

    def on_button_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        self.post_message(self.PullRequested(self.missing.name))
