"""The dream's hypothesis cards of this workspace: overdue first, then the open ones by due
date, then the validated and refuted ones.

Keys: v validate (confidence up, and a fact candidate waits on the Candidates screen) ·
x refute (confidence 0) · d delete (asks y/n; the audit keeps the card) · Esc closes. The
pane under the table shows the whole card: claim, prediction, measurement and the memories
it cites. The same effects as `/hypotheses validate|refute|delete ID`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime
from functools import cached_property
from typing import TYPE_CHECKING, ClassVar, TypeVar

from rich.text import Text
from textual.binding import Binding, BindingType

from tui.display_text import counted, printable
from tui.screens.confirm_screen import ConfirmScreen
from tui.screens.fact_rows import Column, RecordScreen, clip, day

if TYPE_CHECKING:
    from memory.fact_drawer import FactDrawer
    from memory.hypotheses import Hypotheses
    from store.clock import Clock
    from store.fact_records import Candidate
    from store.hypothesis_store import Hypothesis

CardT = TypeVar("CardT")  # what a card action returns
STATUS_STYLES = {"overdue": "bold red", "open": "", "validated": "green", "refuted": "dim"}
CITED_CHARS = 70


def card_state(card: Hypothesis, now: datetime) -> str:
    """The card's status, with "overdue" for an open card past its due date."""
    return "overdue" if card.is_overdue(now) else card.status


def card_order(cards: Sequence[Hypothesis], now: datetime) -> list[Hypothesis]:
    """Overdue first, then open by due date, then validated and refuted (by due date)."""

    def rank(card: Hypothesis) -> tuple[int, datetime, int]:
        group = 0 if card.is_overdue(now) else 1 if card.status == "open" else 2
        return group, card.due_at, card.id

    return sorted(cards, key=rank)


def cited_lines(book: Hypotheses, source_ids: Sequence[str]) -> list[str]:
    """One line per memory a card cites (`fact:12 rule prod:db — …`, `point:3 — …`); blocks."""
    from store.fact_records import Fact

    lines = []
    for source, memory in book.cited(source_ids):
        text = "(not found)"
        if isinstance(memory, Fact):
            text = f"{memory.type} {memory.key} — {memory.body}"
        elif memory is not None:
            text = memory.content
        lines.append(f"{source} {clip(printable(text), CITED_CHARS)}")
    return lines


class HypothesesScreen(RecordScreen["Hypothesis"]):
    """The hypothesis cards of this workspace; validate, refute or delete them here."""

    TITLE_TEXT: ClassVar[str] = "Hypotheses"
    COLUMNS: ClassVar[tuple[Column, ...]] = (
        Column("id", 4),
        Column("status", 9),
        Column("due", 10),
        Column("conf", 4),
        Column("claim"),
    )
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("v", "validate", "Validate", id="hypothesis_validate"),
        Binding("x", "refute", "Refute", id="hypothesis_refute"),
        Binding("d", "delete", "Delete", id="hypothesis_delete"),
    ]

    def __init__(self, drawer: FactDrawer, clock: Clock | None = None) -> None:
        """`clock` given, nothing here touches the database: a deferred memory (a new data
        dir) is then opened by the first read, in its thread, not on the event loop."""
        super().__init__()
        self.drawer = drawer
        self.clock = clock or drawer.db.clock
        self._cited: dict[int, list[str]] = {}

    @cached_property
    def book(self) -> Hypotheses:
        """The cards next to the drawer (made at the first read, in the reading thread)."""
        from memory.hypotheses import Hypotheses

        return Hypotheses.of(self.drawer)

    # ---- the table -----------------------------------------------------------------------
    def read_records(self) -> list[Hypothesis]:
        now = self.clock.now()
        return card_order(self.book.cards(now=now), now)

    def record_id(self, record: Hypothesis) -> int:
        return record.id

    def cells(self, record: Hypothesis, flex: int) -> Sequence[str | Text]:
        state = card_state(record, self.clock.now())
        style = STATUS_STYLES.get(state, "")
        return (
            f"#{record.id}",
            Text(state, style=style),
            Text(day(record.due_at), style=style if state == "overdue" else ""),
            f"{record.confidence:.2f}",
            clip(record.statement, flex),
        )

    def filters_text(self) -> Text:
        line = Text("v validate · x refute · d delete", style="dim")
        if self.loaded:
            now = self.clock.now()
            overdue = sum(card.is_overdue(now) for card in self.records)
            count = len(self.records)
            line.append(f"  · {counted(count, 'card')}", style="dim")
            if overdue:
                line.append(f", {overdue} overdue", style="bold red")
        return line

    def empty_text(self) -> str:
        return "No hypothesis cards. /dream may make one from related memories."

    def detail(self, record: Hypothesis) -> Text:
        state = card_state(record, self.clock.now())
        text = Text()
        text.append(f"#{record.id} ", style="bold")
        text.append(state, style=STATUS_STYLES.get(state, "") or "bold")
        text.append(
            f" · confidence {record.confidence:.2f} · created {day(record.created_at)} · "
            f"due {day(record.due_at)}"
            + (f" · decided {day(record.decided_at)}" if record.decided_at else "")
            + "\n",
            style="dim",
        )
        text.append(record.statement + "\n", style="bold")
        for label, value in (("prediction", record.prediction), ("measure", record.measurement)):
            text.append(f"{label}: ", style="dim")
            text.append(value + "\n")
        for number, line in enumerate(self._cited.get(record.id, list(record.source_ids))):
            text.append("cites: " if number == 0 else "       ", style="dim")
            text.append(f"{line}\n")
        text.rstrip()
        return text

    def show_detail(self) -> None:
        super().show_detail()
        card = self.current()
        if card is None or card.id in self._cited:
            return
        book = self.book

        def loaded(lines: list[str]) -> None:
            self._cited[card.id] = lines
            if self.current() == card:
                RecordScreen.show_detail(self)

        self.in_thread(
            lambda: cited_lines(book, card.source_ids), loaded, group="cited", exclusive=True
        )

    # ---- actions -------------------------------------------------------------------------
    def _card_to(self, verb: str) -> Hypothesis | None:
        """The card under the cursor, or None (and say so) when the table is empty."""
        card = self.current()
        if card is None:
            self.say(f"No card to {verb}.", error=True)
        return card

    def _act(self, job: Callable[[], CardT], said: Callable[[CardT], str]) -> None:
        """Run a card action in a thread, then say what it did and read the cards again."""

        def done(result: CardT) -> None:
            self.say(said(result))
            self.reload()

        self.in_thread(job, done)

    def action_validate(self) -> None:
        card = self._card_to("validate")
        if card is None:
            return

        def said(result: tuple[Hypothesis, Candidate | None]) -> str:
            done, candidate = result
            extra = f"; fact candidate #{candidate.id} waits for approval" if candidate else ""
            return f"Validated #{done.id} (confidence {done.confidence:.2f}){extra}."

        self._act(lambda: self.book.validate(card.id), said)

    def action_refute(self) -> None:
        card = self._card_to("refute")
        if card is not None:
            self._act(
                lambda: self.book.refute(card.id),
                lambda done: f"Refuted #{done.id} (confidence {done.confidence:.2f}).",
            )

    def action_delete(self) -> None:
        card = self._card_to("delete")
        if card is None:
            return

        def answered(yes: bool | None) -> None:
            if yes:
                self._act(lambda: self.book.delete(card.id), lambda done: f"Deleted #{done.id}.")
            else:
                self.say(f"Kept #{card.id}.")

        question = f"Delete hypothesis #{card.id}? {clip(card.statement, 120)}"
        self.app.push_screen(ConfirmScreen(question), answered)
