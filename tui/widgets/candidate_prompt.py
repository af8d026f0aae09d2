"""Inline in the chat log: the model called `memory_write`; the user approves, edits, rejects
or leaves the candidate for later. The turn waits for the answer, then goes on."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.widgets import Button, Input, Static

from agent.turn_events import Approval
from tui.widgets.edit_input import EditInput

if TYPE_CHECKING:
    from store.fact_records import Candidate


class CandidatePrompt(Vertical, can_focus=True):
    """Keys: a approve · e edit · r reject · l later (also buttons)."""

    DEFAULT_CLASSES = "candidate-prompt"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("a", "decide('approve')", "Approve", id="candidate_approve"),
        Binding("e", "edit", "Edit", id="candidate_edit"),
        Binding("r", "decide('reject')", "Reject", id="candidate_reject"),
        Binding("l", "decide('later')", "Later", id="candidate_later"),
    ]

    def __init__(self, candidate: Candidate, *, replaces: str | None = None) -> None:
        super().__init__()
        self.candidate = candidate
        self.replaces = replaces  # the body of the fact of that key an approval overwrites
        self.result: asyncio.Future[Approval] = asyncio.get_running_loop().create_future()

    def compose(self) -> ComposeResult:
        c = self.candidate
        title = Text("The model wants to remember a fact", style="bold")
        yield Static(title, classes="candidate-title")
        yield Static(self._summary(c.body), classes="candidate-body")
        yield EditInput(c.body, id="candidate-edit", classes="-hidden", select_on_focus=False)
        with Horizontal(classes="candidate-buttons"):
            yield Button("Approve (a)", id="approve", variant="success", compact=True)
            yield Button("Edit (e)", id="edit", compact=True)
            yield Button("Reject (r)", id="reject", variant="error", compact=True)
            yield Button("Later (l)", id="later", compact=True)

    def _summary(self, body: str, *, edited: bool = False) -> Text:
        """Type, key, scope and the body: the model's, or the one approved after `e`."""
        c = self.candidate
        summary = Text()
        summary.append(f"{c.type} ", style="bold")
        summary.append(c.key, style="bold cyan")
        summary.append(f" ({c.scope})\n")
        summary.append(body)
        if edited:
            summary.append(" (edited)", style="italic")
        if self.replaces is not None:
            summary.append("\nreplaces: ", style="bold yellow")
            summary.append(self.replaces)
        return summary

    def on_button_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        if event.button.id == "edit":
            self.action_edit()
        elif event.button.id in ("approve", "reject", "later"):
            self.action_decide(event.button.id)

    def action_edit(self) -> None:
        editor = self.query_one("#candidate-edit", Input)
        editor.remove_class("-hidden")
        editor.focus()
        editor.cursor_position = len(editor.value)

    def on_edit_input_cancelled(self, event: EditInput.Cancelled) -> None:
        """Esc in the editor leaves the edit (it cancelled the whole streaming reply): the
        body goes back to the model's, the card keeps its keys."""
        event.stop()
        editor = self.query_one("#candidate-edit", EditInput)
        editor.value = self.candidate.body
        editor.add_class("-hidden")
        self.focus()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        body = event.value.strip()
        if body:
            self._resolve(Approval("approve", body=body))

    def action_decide(self, verdict: str) -> None:
        if verdict == "approve":
            editor = self.query_one("#candidate-edit", Input)
            edited = editor.value.strip() if not editor.has_class("-hidden") else None
            self._resolve(Approval("approve", body=edited or None))
        elif verdict == "reject":
            self._resolve(Approval("reject"))
        else:
            self._resolve(Approval("later"))

    def leave_for_later(self) -> None:
        """The turn went away (Esc): show the candidate as pending, take no more keys."""
        if self.is_attached:  # not while the app shuts down
            self._show(Approval("later"))

    def _resolve(self, approval: Approval) -> None:
        if self.result.done():
            return
        self.result.set_result(approval)
        self._show(approval)

    def _show(self, approval: Approval) -> None:
        words = {"approve": "approved", "reject": "rejected", "later": "left for later"}
        self.query_one(".candidate-title", Static).update(
            Text(f"Fact {self.candidate.key}: {words[approval.verdict]}", style="bold")
        )
        if approval.body is not None and approval.body != self.candidate.body:
            # what was approved, not the model's words the editor changed
            body = self.query_one(".candidate-body", Static)
            body.update(self._summary(approval.body, edited=True))
        self.query_one(".candidate-buttons").display = False
        self.query_one("#candidate-edit", Input).display = False
        self.can_focus = False
