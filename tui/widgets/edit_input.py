"""A one-line editor whose Esc leaves the edit, not what it sits in (a record screen, the
chat's fact card, whose Esc would cancel the streaming reply)."""

from __future__ import annotations

from typing import ClassVar

from textual.binding import Binding, BindingType
from textual.message import Message
from textual.widgets import Input


class EditInput(Input):
    """Enter submits (`Input.Submitted`), Esc cancels the edit (`EditInput.Cancelled`)."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "cancel", "Cancel edit", id="edit_cancel"),
    ]

    class Cancelled(Message):
        """The user left the editor without saving."""

    def action_cancel(self) -> None:
        self.post_message(self.Cancelled())
