"""Live in the chat: what the TUI shows when another client changed the memory it owns.

The TUI serves its data dir (tui/owner_server.py); after each command it ran for another
process (a CLI command, `straylight mcp`), the server says so here, in its thread. A command
that may have written (`remember`, `forget`, `import-doc`, `ask`, facts and candidates
changes, a conversation renamed or deleted, …) makes the app refresh the sidebar's counts,
reload an open facts or candidates screen, and name the fact candidates that are new since
it last looked, with the keys to approve them. The memory browser reads the database
whenever it loads (opened again, a search, a filter), so it shows new points then.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from textual.message import Message

from tui.display_text import counted

if TYPE_CHECKING:
    from store.fact_records import Candidate

WRITING_COMMANDS = frozenset(
    {
        "ask",
        "remember",
        "forget",
        "import-doc",
        "facts",
        "candidates",
        "reflect",
        "hypotheses",
        "jobs",
        "conversations",
    }
)
READ_ACTIONS = frozenset({"list", "get", "history", "export"})


def may_have_written(argv: Sequence[str], exit_code: int) -> bool:
    """Whether a forwarded command may have changed the memory (a read action did not;
    `facts get` revives a stale fact, but the count change is shown on the next refresh)."""
    from tui.owner_request import command_words

    words = command_words(argv)
    if not words or words[0] not in WRITING_COMMANDS:
        return False
    if words[0] in ("facts", "candidates", "hypotheses", "jobs", "conversations"):
        return len(words) > 1 and words[1] not in READ_ACTIONS
    return exit_code != 2  # a usage error wrote nothing


@dataclass
class MemoryChangedElsewhere(Message):
    """Another client's command ran in this process and may have written to the memory."""

    argv: tuple[str, ...]
    exit_code: int


@dataclass
class NewCandidates(Message):
    """Fact candidates pending that the chat has not shown yet."""

    candidates: list[Candidate]


class CandidateWatch:
    """Which pending candidates the chat knows of (thread-safe enough: one worker group)."""

    def __init__(self) -> None:
        self.seen: set[int] = set()

    def mark_seen(self, candidates: Iterable[Candidate]) -> None:
        self.seen.update(c.id for c in candidates)

    def new(self, pending: Iterable[Candidate]) -> list[Candidate]:
        fresh = [c for c in pending if c.id not in self.seen]
        self.mark_seen(fresh)
        return fresh


def candidates_notice(candidates: Sequence[Candidate]) -> str:
    """The chat's notice for candidates another client proposed."""
    count = len(candidates)
    lines = [f"#{c.id} {c.type} `{c.key}`: {c.body} (from {c.origin})" for c in candidates]
    return (
        f"🗂 {counted(count, 'new fact candidate')} from another client "
        "(/candidates approve ID or reject ID):\n" + "\n".join(lines)
    )
