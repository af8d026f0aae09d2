"""The right-hand status sidebar: Ollama host, state and model; the conversation and the last
prompt against the context window; longterm.md."""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.reactive import reactive
from textual.widgets import Static

from tui.display_text import counted, printable
from tui.widgets.recalled_hits import RecalledHits, RecalledLine


@dataclass(frozen=True, slots=True)
class SidebarState:
    """Everything the sidebar shows; replaced whole, never mutated."""

    host: str
    model: str
    ollama: str = "checking"  # checking | online | offline | error (answered, but failed)
    ollama_detail: str | None = None
    model_pulled: bool | None = None
    conversation_started: datetime | None = None
    longterm_bytes: int = 0
    longterm_budget: int = 8192
    longterm_warning: str | None = None
    last_reply: str | None = None
    memory_line: str = "opening…"
    workspace: str = ""
    facts_line: str = "opening…"
    injected_facts: int | None = None
    headroom: str = "ok"  # the last memstatus level: ok | warn | critical
    hypotheses: tuple[int, int] | None = None  # (open, overdue)
    alerts: tuple[str, ...] = ()  # overdue hypotheses, broken bindings
    recalled: tuple[RecalledLine, ...] | None = None  # the last turn's recalled hits
    injected: tuple[str, ...] = ()  # the last turn's injected fact keys
    context: str | None = None  # the last prompt against the window: "context 3.1k / 8k"
    context_headroom: str = "ok"  # ok | warn | critical
    context_notes: tuple[str, ...] = ()  # what the budget left out, one line a section
    embed_model: str = ""
    embed_pulled: bool | None = None  # None: not known (Ollama offline or not checked yet)

    def with_changes(self, **changes: object) -> SidebarState:
        return replace(self, **changes)  # type: ignore[arg-type]


DOWN = ("offline", "error")  # Ollama not usable: the reason and the fix are shown, in red
_OLLAMA_COLOURS = {"online": "green", "offline": "red", "error": "red"}  # else yellow
_HEADROOM_STYLES = {"warn": "bold yellow", "critical": "bold red"}


def _section(title: str, lines: list[tuple[str, str]]) -> Text:
    text = Text(title.upper() + "\n", style="bold")
    for index, (line, style) in enumerate(lines):
        text.append(printable(line), style=style)  # Ollama's error text, a damaged file's
        if index + 1 < len(lines):
            text.append("\n")
    return text


def _short_workspace(workspace: str, limit: int = 22) -> str:
    """A path workspace by its last parts: `…/projects/blyck`."""
    if len(workspace) <= limit:
        return workspace
    return "…" + workspace[-(limit - 1) :]


class StatusSidebar(VerticalScroll):
    """Re-renders its blocks whenever `state` changes."""

    state: reactive[SidebarState | None] = reactive(None, init=False)

    def compose(self) -> ComposeResult:
        yield Static(id="sidebar-ollama", classes="sidebar-block")
        yield Static(id="sidebar-conversation", classes="sidebar-block")
        yield Static(id="sidebar-memory", classes="sidebar-block")
        yield Static(id="sidebar-facts", classes="sidebar-block")
        yield Static(id="sidebar-why")
        yield RecalledHits(id="sidebar-hits")
        yield Static(id="sidebar-why-facts", classes="sidebar-block")
        yield Static(id="sidebar-longterm", classes="sidebar-block")

    def watch_state(self, state: SidebarState | None) -> None:
        if state is None or not self.is_mounted:
            return
        self.query_one("#sidebar-ollama", Static).update(self._ollama_block(state))
        self.query_one("#sidebar-conversation", Static).update(self._conversation_block(state))
        memory_style = _HEADROOM_STYLES.get(state.headroom, "")
        self.query_one("#sidebar-memory", Static).update(
            _section("Memory", [(state.memory_line, memory_style)])
        )
        memory_block = self.query_one("#sidebar-memory", Static)
        memory_block.remove_class("-warn", "-critical")
        if state.headroom in ("warn", "critical"):
            memory_block.add_class(f"-{state.headroom}")
        self.query_one("#sidebar-facts", Static).update(self._facts_block(state))
        self._show_why(state)
        self.query_one("#sidebar-longterm", Static).update(self._longterm_block(state))
        self.set_class(state.ollama in DOWN, "-offline")

    def on_mount(self) -> None:
        self.watch_state(self.state)

    @staticmethod
    def _ollama_block(state: SidebarState) -> Text:
        colour = _OLLAMA_COLOURS.get(state.ollama, "yellow")
        lines = [(state.host, ""), (f"● {state.ollama}", f"bold {colour}")]
        if state.ollama_detail:
            lines.append((state.ollama_detail, "red" if state.ollama in DOWN else "dim"))
        model_line = f"model {state.model}"
        style = ""
        if state.model_pulled:
            model_line += " ✓ pulled"
        elif state.model_pulled is False:
            model_line += f"\nnot pulled: run\n`ollama pull {state.model}`"
            model_line += f"\nor `straylight pull {state.model}`\n(F8 pulls it here)"
            style = "yellow"
        lines.append((model_line, style))
        lines += StatusSidebar._missing_embed_lines(state)
        return _section("Ollama", lines)

    @staticmethod
    def _missing_embed_lines(state: SidebarState) -> list[tuple[str, str]]:
        """The embedding model, only when Ollama does not have it: its name and the fix."""
        if state.embed_pulled is not False:
            return []
        name = state.embed_model
        return [
            (
                f"embeddings {name}\nnot pulled: no vectors,\nrecall by words only; run\n"
                f"`ollama pull {name}`\nor `straylight pull {name}`\n(F8 pulls it here)",
                "yellow",
            )
        ]

    @staticmethod
    def _conversation_block(state: SidebarState) -> Text:
        started = state.conversation_started
        lines = [(f"started {started.astimezone():%Y-%m-%d %H:%M}" if started else "new", "")]
        if state.last_reply:
            lines.append((state.last_reply, "dim"))
        if state.context:
            style = _HEADROOM_STYLES.get(state.context_headroom, "")
            lines.append((f"{state.context} · {state.context_headroom}", style))
            lines += [(note, "yellow" if style else "dim") for note in state.context_notes]
        return _section("Conversation", lines)

    @staticmethod
    def _facts_block(state: SidebarState) -> Text:
        lines = [(f"workspace {_short_workspace(state.workspace)}", ""), (state.facts_line, "")]
        if state.injected_facts is not None:
            lines.append((f"{state.injected_facts} in the last prompt", "dim"))
        if state.hypotheses is not None:
            open_cards, overdue = state.hypotheses
            style = "bold yellow" if overdue else ""
            lines.append((f"hypotheses {open_cards} open, {overdue} overdue", style))
        for alert in state.alerts:
            lines.append((f"⚠ {alert}", "yellow"))
        return _section("Facts", lines)

    def _show_why(self, state: SidebarState) -> None:
        """Why the model said what it said: the hits and facts the last prompt carried."""
        shown = state.recalled is not None or bool(state.injected)
        title = Text("LAST PROMPT", style="bold")
        if state.recalled is not None and not state.recalled:
            title.append("\nnothing recalled", style="dim")
        why = self.query_one("#sidebar-why", Static)
        why.display = shown
        why.update(title)
        hits = self.query_one(RecalledHits)
        if hits.state_lines != (state.recalled or ()):
            hits.state_lines = state.recalled or ()
            hits.show_lines(hits.state_lines)
        hits.display = shown and bool(state.recalled)
        facts = self.query_one("#sidebar-why-facts", Static)
        facts.display = shown
        injected = ", ".join(state.injected)
        facts.update(Text(f"facts: {injected}", style="dim") if injected else "")

    @staticmethod
    def _longterm_block(state: SidebarState) -> Text:
        over = state.longterm_bytes > state.longterm_budget
        size = f"{state.longterm_bytes:,} / {state.longterm_budget:,} bytes"
        lines = [(size, "bold yellow" if over else "")]
        if over:
            lines.append(("over budget: every turn pays for it", "yellow"))
        if state.longterm_warning:
            lines.append((state.longterm_warning, "red"))
        return _section("longterm.md", lines)


def summary_text(state: SidebarState) -> Text:
    """The sidebar in one line, for terminals too narrow for it (about 80 columns; cut at
    the edge, never wrapped over the chat). Offline, the line is the reason and the fix
    instead (it may wrap: "offline" alone said nothing)."""
    colour = _OLLAMA_COLOURS.get(state.ollama, "yellow")
    text = Text()
    text.append(f"● {state.ollama}", style=f"bold {colour}")
    if state.ollama in DOWN and state.ollama_detail:
        text.append(f": {printable(state.ollama_detail)}", style="red")
        text.append(" · ^B sidebar", style="dim")
        return text
    text.append(f" · {state.model}")
    if state.model_pulled is False:  # the full sidebar's fix is folded away with it
        text.append(" not pulled (F8)", style="bold yellow")
    if state.memory_line.startswith("unavailable"):  # the reason is in the chat and sidebar
        text.append(" · memory unavailable", style="red")
    else:
        points = state.memory_line.split(",")[0].split("\n")[0]
        text.append(f" · {points}")
        headroom_style = _HEADROOM_STYLES.get(state.headroom, "")
        text.append(f" · RAM {state.headroom}", style=headroom_style)
    if state.context and state.context_headroom in _HEADROOM_STYLES:
        text.append(f" · {state.context}", style=_HEADROOM_STYLES[state.context_headroom])
    _append_longterm(text, state)
    counts, _, pending = state.facts_line.partition("·")
    active = counts.split(",")[0].replace("active", "").strip()
    text.append(f" · {counted(int(active), 'fact')}" if active.isdigit() else " · facts …")
    waiting = pending.replace("pending", "").strip()
    if waiting.isdigit() and int(waiting):
        text.append(f", {waiting} pending", style="yellow")
    if state.alerts:
        text.append(f" · ⚠ {len(state.alerts)}", style="yellow")
    text.append(" · ^B sidebar", style="dim")
    return text


def _append_longterm(text: Text, state: SidebarState) -> None:
    """longterm.md when it is left out of the prompt (red) or over its budget (yellow): the
    full sidebar's block that says so is folded away with it."""
    if state.longterm_warning:
        text.append(" · ⚠ longterm.md left out", style="red")
    elif state.longterm_bytes > state.longterm_budget:
        text.append(" · longterm.md over budget", style="yellow")


class SidebarSummary(Static):
    """One line above the chat when the sidebar is folded away on a narrow terminal."""

    state: reactive[SidebarState | None] = reactive(None, init=False)

    def watch_state(self, state: SidebarState | None) -> None:
        if state is not None:  # one line, cut at the edge; offline, the fix may wrap
            self.set_class(state.ollama in DOWN, "-offline")
            self.update(summary_text(state))


def memory_status_line(status: dict[str, Any]) -> str:
    """The sidebar's memory block: points (total, pinned, without a vector), the index, the
    RAM estimate and its headroom level (coloured by the sidebar)."""
    points, index = status["points"], status["index"]
    total = points["total"]
    lines = f"{counted(total, 'point')}, {points['pinned']:,} pinned"
    if points["without_vector"]:
        lines += f"\n{points['without_vector']:,} without a vector"
    ram = status["ram_estimate_bytes"] / 2**20
    return f"{lines}\nindex {index['state']}\nRAM ~{ram:.1f} MiB · {status['headroom']}"
