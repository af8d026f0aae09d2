"""The facts of layer 4 in a table: filter by type, status and workspace; edit, retire, revive.

Keys: e edit the body (Enter saves as the user's own write, Ctrl+T changes the type, Esc
cancels) · r retire (asks y/n) · v revive a retired or stale fact · t / s / w cycle the type,
status and workspace filters · Esc closes. The pane under the table shows the highlighted
fact in full: body, proof, requires, dates and how many versions its history holds.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import PurePath
from typing import TYPE_CHECKING, ClassVar

from rich.text import Text
from textual.binding import Binding, BindingType

from memory.fact_types import FACT_TYPES
from tui.display_text import counted
from tui.screens.confirm_screen import ConfirmScreen
from tui.screens.fact_rows import Column, RecordScreen, clip, day

if TYPE_CHECKING:
    from memory.fact_drawer import FactDrawer
    from store.clock import Clock
    from store.fact_records import Fact, FactVersion

TYPE_FILTERS: tuple[str, ...] = ("all", *FACT_TYPES)
STATUS_FILTERS: tuple[str, ...] = ("active", "stale", "retired", "all")
SCOPE_FILTERS: tuple[str, ...] = ("here", "global", "every")  # + global / global only / all
STATUS_STYLES = {"active": "green", "stale": "yellow", "retired": "dim"}


def _next(values: tuple[str, ...], current: str) -> str:
    return values[(values.index(current) + 1) % len(values)]


def workspace_name(workspace: str) -> str:
    """A workspace as a column shows it: the last part of its path (`/home/me/blyck` → blyck)."""
    return PurePath(workspace).name or workspace


@dataclass(frozen=True, slots=True)
class FactFilters:
    """Which facts the table shows: a type or "all"; a status or "all"; and the workspaces —
    "here" (this one and the global facts), "global" (global only) or "every"."""

    type: str = "all"
    status: str = "active"
    scope: str = "here"

    def next_type(self) -> FactFilters:
        return replace(self, type=_next(TYPE_FILTERS, self.type))

    def next_status(self) -> FactFilters:
        return replace(self, status=_next(STATUS_FILTERS, self.status))

    def next_scope(self) -> FactFilters:
        return replace(self, scope=_next(SCOPE_FILTERS, self.scope))

    def scope_label(self, workspace: str) -> str:
        return {
            "here": f"{workspace_name(workspace)} + global",
            "global": "global only",
            "every": "every workspace",
        }[self.scope]


def read_facts(drawer: FactDrawer, filters: FactFilters) -> list[Fact]:
    """The facts these filters let through (blocks: call it in a thread)."""
    facts = drawer.list_facts(
        type=None if filters.type == "all" else filters.type,
        status=None if filters.status == "all" else filters.status,
        all_workspaces=filters.scope == "every",
    )
    if filters.scope == "global":
        facts = [f for f in facts if f.scope == "global"]
    return facts


def fact_where(fact: Fact) -> str:
    """ "global", or the short name of the fact's workspace."""
    return "global" if fact.scope == "global" else workspace_name(fact.workspace)


def fact_label(fact: Fact) -> str:
    """`rule prod:db` (plus "(global)" for a global fact)."""
    return f"{fact.type} {fact.key}" + (" (global)" if fact.scope == "global" else "")


class FactsScreen(RecordScreen["Fact"]):
    """Every fact this workspace can see, filtered; edit, retire and revive them here."""

    TITLE_TEXT: ClassVar[str] = "Facts"
    COLUMNS: ClassVar[tuple[Column, ...]] = (
        Column("key", 14),
        Column("type", 10),
        Column("status", 7),
        Column("conf", 4),
        Column("where", 7),
        Column("seen", 10),
        Column("body"),
    )
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("e", "edit", "Edit", id="facts_edit"),
        Binding("r", "retire", "Retire", id="facts_retire"),
        Binding("v", "revive", "Revive", id="facts_revive"),
        # the filter line over the table shows these three with their keys
        Binding("t", "cycle('type')", "Type", id="facts_type", show=False),
        Binding("s", "cycle('status')", "Status", id="facts_status", show=False),
        Binding("w", "cycle('scope')", "Workspace", id="facts_workspace", show=False),
        Binding("ctrl+t", "edit_type", "Change type", id="facts_change_type"),
    ]

    def __init__(self, drawer: FactDrawer, clock: Clock | None = None) -> None:
        """`clock` given, nothing here touches the database: a deferred memory (a new data
        dir) is then opened by the first read, in its thread, not on the event loop."""
        super().__init__()
        self.drawer = drawer
        self.clock = clock or drawer.db.clock
        self.filters = FactFilters()
        self._edit_type = ""
        self._histories: dict[tuple[int, str], list[FactVersion]] = {}

    # ---- the table -----------------------------------------------------------------------
    def read_records(self) -> list[Fact]:
        return read_facts(self.drawer, self.filters)

    def record_id(self, record: Fact) -> int:
        return record.id

    def cells(self, record: Fact, flex: int) -> Sequence[str | Text]:
        seen = record.last_verified or record.last_seen
        return (
            clip(record.key, 14),
            record.type,
            Text(record.status, style=STATUS_STYLES.get(record.status, "")),
            f"{record.confidence:.2f}",
            clip(fact_where(record), 7),
            day(seen),
            clip(record.body, flex),
        )

    def filters_text(self) -> Text:
        f = self.filters
        line = Text()
        for key, name, value in (
            ("t", "type", f.type),
            ("s", "status", f.status),
            ("w", "workspace", f.scope_label(self.drawer.workspace)),
        ):
            line.append(f"{name} ", style="dim")
            line.append(value, style="bold")
            line.append(f" ({key})  ", style="dim")
        if self.loaded:
            count = len(self.records)
            line.append(f"· {counted(count, 'fact')}", style="dim")
        return line

    def empty_text(self) -> str:
        if self.filters == FactFilters():
            return (
                f"No active facts for {workspace_name(self.drawer.workspace)} yet. "
                "`/fact set KEY TYPE BODY` writes one; approved candidates land here too."
            )
        return "No fact matches these filters: t, s and w change them."

    def detail(self, record: Fact) -> Text:
        text = Text()
        text.append(f"{record.type} ", style="bold")
        text.append(record.key, style="bold cyan")
        where = "global" if record.scope == "global" else f"workspace {record.workspace}"
        text.append(f"  {where} · ", style="dim")
        text.append(record.status, style=STATUS_STYLES.get(record.status, ""))
        text.append(f" · confidence {record.confidence:.2f}\n", "dim")
        text.append(record.body + "\n")
        text.append("proof: ", style="dim")
        text.append((record.proof or "—") + "\n")
        text.append("requires: ", style="dim")
        text.append((", ".join(record.requires) or "—") + "\n")
        text.append(
            f"source {record.source} · created {day(record.created_at)} · "
            f"updated {day(record.updated_at)} · seen {day(record.last_seen)} · "
            f"verified {day(record.last_verified)}\n",
            style="dim",
        )
        text.append_text(self._history_line(record))
        return text

    def _history_line(self, record: Fact) -> Text:
        versions = self._histories.get((record.id, record.updated_at.isoformat()))
        if versions is None:
            return Text("history: …", style="dim")
        last = versions[-1] if versions else None
        line = f"history: {counted(len(versions), 'version')}"
        if last is not None:
            line += f" · last {last.event} {day(last.at)}: {last.reason or '—'}"
        return Text(line, style="dim")

    def show_detail(self) -> None:
        super().show_detail()
        record = self.current()
        if record is None or (record.id, record.updated_at.isoformat()) in self._histories:
            return
        drawer = self._drawer_for(record)

        def loaded(versions: list[FactVersion]) -> None:
            self._histories[(record.id, record.updated_at.isoformat())] = versions
            if self.current() == record:
                RecordScreen.show_detail(self)

        self.in_thread(
            lambda: drawer.history_of(record), loaded, group="fact-history", exclusive=True
        )

    def _drawer_for(self, fact: Fact) -> FactDrawer:
        """The drawer of the fact's own workspace (a fact of another one is written there)."""
        if fact.scope == "global" or fact.workspace == self.drawer.workspace:
            return self.drawer
        return self.drawer.in_workspace(fact.workspace)

    # ---- filters -------------------------------------------------------------------------
    def action_cycle(self, which: str) -> None:
        """Cycle one filter ("type", "status" or "scope") and read the facts again."""
        step = {
            "type": FactFilters.next_type,
            "status": FactFilters.next_status,
            "scope": FactFilters.next_scope,
        }[which]
        self.filters = step(self.filters)
        self.refresh_filters()
        self.reload()

    # ---- actions -------------------------------------------------------------------------
    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "edit_type":
            return self.editing is not None
        return True

    def action_edit(self) -> None:
        fact = self.current()
        if fact is None:
            self.say("No fact to edit.", error=True)
            return
        self._edit_type = fact.type
        self.open_editor(fact, self._editor_label(fact), fact.body)
        self.say("Enter saves as your own write · Ctrl+T changes the type · Esc cancels.")

    def _editor_label(self, fact: Fact) -> str:
        return f"{self._edit_type} {fact.key}:"

    def action_edit_type(self) -> None:
        """While editing: the next fact type."""
        fact = self.editing
        if fact is None:
            return
        self._edit_type = _next(FACT_TYPES, self._edit_type)
        self.set_editor_label(self._editor_label(fact))

    def edit_submitted(self, record: Fact, text: str) -> None:
        drawer = self._drawer_for(record)
        kind = self._edit_type or record.type

        def write() -> Fact:
            return drawer.set(
                record.key,
                kind,
                text,
                scope=record.scope,
                proof=record.proof,
                requires=record.requires,
                reason="edited by the user",
            )

        def written(fact: Fact) -> None:
            self.close_editor()
            self.say(f"Saved {fact_label(fact)}: {clip(fact.body, 60)}")
            self.reload()

        self.in_thread(write, written)

    def action_retire(self) -> None:
        fact = self.current()
        if fact is None:
            self.say("No fact to retire.", error=True)
            return
        if fact.status == "retired":
            self.say(f"{fact_label(fact)} is already retired; v revives it.")
            return

        def answered(yes: bool | None) -> None:
            if yes:
                self._retire(fact)
            else:
                self.say(f"Kept {fact_label(fact)}.")

        question = f"Retire {fact_label(fact)}? It is no longer injected; v revives it."
        self.app.push_screen(ConfirmScreen(question), answered)

    def _retire(self, fact: Fact) -> None:
        drawer = self._drawer_for(fact)

        def retired(facts: list[Fact]) -> None:
            if facts:
                self.say(f"Retired {fact_label(facts[0])}.")
            else:
                self.say(f"{fact_label(fact)} was already retired.")
            self.reload()

        self.in_thread(lambda: drawer.retire(fact.key, scope=fact.scope), retired)

    def action_revive(self) -> None:
        fact = self.current()
        if fact is None:
            self.say("No fact to revive.", error=True)
            return
        if fact.status == "active":
            self.say(f"{fact_label(fact)} is already active.")
            return
        drawer = self._drawer_for(fact)

        def revived(facts: list[Fact]) -> None:
            if facts:
                self.say(f"Revived {fact_label(facts[0])}: active again.")
            else:
                self.say(f"{fact_label(fact)} was already active.")
            self.reload()

        self.in_thread(lambda: drawer.revive(fact.key, scope=fact.scope), revived)
