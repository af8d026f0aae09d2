"""The approval gate as a screen: the pending fact candidates, one key each.

Keys: a approve · e edit the body (Enter approves the edited version, Esc cancels the edit)
· r reject (the same key and body are not proposed again) · Esc closes. A decided candidate
leaves the list. The binding ids are those of the inline prompt in the chat
(`candidate_approve`, `candidate_edit`, `candidate_reject`), so one keymap serves both.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, ClassVar

from rich.text import Text
from textual.binding import Binding, BindingType

from tui.screens.fact_rows import Column, RecordScreen, clip

if TYPE_CHECKING:
    from memory.fact_drawer import FactDrawer
    from store.fact_records import Candidate, Fact


ORIGIN_WIDTH = 16
"""Room for `mcp:claude-code`; a longer proposer is cut with an ellipsis (the pane has it whole)."""


def candidate_label(candidate: Candidate) -> str:
    """`#3 rule prod:db`."""
    return f"#{candidate.id} {candidate.type} {candidate.key}"


class CandidatesScreen(RecordScreen["Candidate"]):
    """Facts waiting for approval (this workspace's and the global ones), oldest first."""

    TITLE_TEXT: ClassVar[str] = "Fact candidates"
    COLUMNS: ClassVar[tuple[Column, ...]] = (
        Column("id", 4),
        Column("type", 10),
        Column("key", 18),
        Column("origin", ORIGIN_WIDTH),
        Column("body"),
    )
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("a", "approve", "Approve", id="candidate_approve"),
        Binding("e", "edit", "Edit", id="candidate_edit"),
        Binding("r", "reject", "Reject", id="candidate_reject"),
    ]

    def __init__(self, drawer: FactDrawer) -> None:
        super().__init__()
        self.drawer = drawer
        self.replaced: dict[int, str] = {}  # candidate id → the body its approval overwrites

    # ---- the table -----------------------------------------------------------------------
    def read_records(self) -> list[Candidate]:
        pending = self.drawer.pending()
        replaced = {c.id: self.drawer.replaces(c) for c in pending}
        self.replaced = {cid: fact.body for cid, fact in replaced.items() if fact is not None}
        return pending

    def record_id(self, record: Candidate) -> int:
        return record.id

    def cells(self, record: Candidate, flex: int) -> Sequence[str | Text]:
        return (
            f"#{record.id}",
            record.type,
            clip(record.key, 18),
            clip(record.origin, ORIGIN_WIDTH),
            clip(record.body, flex),
        )

    def filters_text(self) -> Text:
        line = Text("a approve · e edit, Enter approves it · r reject", style="dim")
        if self.loaded:
            count = len(self.records)
            line.append(f"  · {count} pending", style="dim")
        return line

    def empty_text(self) -> str:
        return (
            "No candidates wait for approval. What the model, the reflection pass or a "
            "validated hypothesis proposes shows up here."
        )

    def detail(self, record: Candidate) -> Text:
        text = Text()
        text.append(f"#{record.id} {record.type} ", style="bold")
        text.append(record.key, style="bold cyan")
        where = "global" if record.scope == "global" else f"workspace {record.workspace}"
        text.append(f"  {where} · confidence {record.confidence:.2f}\n", style="dim")
        text.append(record.body + "\n")
        text.append("proof: ", style="dim")
        text.append((record.proof or "—") + "\n")
        if record.requires:
            text.append("requires: ", style="dim")
            text.append(", ".join(record.requires) + "\n")
        if (old := self.replaced.get(record.id)) is not None:
            text.append("replaces: ", style="bold yellow")
            text.append(f"{old} (/fact undo {record.key} restores it)\n")
        text.append(
            f"proposed {record.created_at:%Y-%m-%d} from {record.origin} · source {record.source}",
            style="dim",
        )
        return text

    # ---- actions -------------------------------------------------------------------------
    def action_approve(self) -> None:
        candidate = self.current()
        if candidate is None:
            self.say("No candidate to approve.", error=True)
            return
        self._approve(candidate, None)

    def _approve(self, candidate: Candidate, body: str | None) -> None:
        def approved(fact: Fact) -> None:
            if self.editing is not None:
                self.close_editor()
            edited = " (edited)" if body is not None and body != candidate.body else ""
            self.say(f"Approved {candidate_label(candidate)}{edited}: {clip(fact.body, 60)}")
            self.reload()

        self.in_thread(lambda: self.drawer.approve(candidate.id, body=body), approved)

    def action_edit(self) -> None:
        candidate = self.current()
        if candidate is None:
            self.say("No candidate to edit.", error=True)
            return
        self.open_editor(candidate, f"#{candidate.id} {candidate.key}:", candidate.body)
        self.say("Enter approves the edited fact · Esc cancels the edit.")

    def edit_submitted(self, record: Candidate, text: str) -> None:
        self._approve(record, text)

    def action_reject(self) -> None:
        candidate = self.current()
        if candidate is None:
            self.say("No candidate to reject.", error=True)
            return

        def rejected(_: Candidate) -> None:
            self.say(f"Rejected {candidate_label(candidate)}; it will not be proposed again.")
            self.reload()

        self.in_thread(lambda: self.drawer.reject(candidate.id), rejected)
