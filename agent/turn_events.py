"""What a turn reports: the events the TUI and `straylight ask` both consume.

`TurnEngine.run` yields `TurnEvent`s while the turn runs (an `ApprovalRequested` waits for
the consumer's answer). The background save ends after the
turn's iterator does; what it finds out (`PointsSaved`, `MemstatusDue`) is an
`AfterTurnEvent`, handed to the engine's `after_turn` listener.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

from agent.context_budget import Headroom, format_tokens
from agent.gateway_errors import GatewayError
from agent.gateway_values import ChatDone

if TYPE_CHECKING:  # the memory pulls in duckdb, numpy and usearch: not before the first frame
    from memory.fact_drawer import InjectedFacts
    from memory.memory_store import RecallResult
    from store.fact_records import Candidate, Fact


@dataclass(frozen=True, slots=True)
class LongtermWarning:
    """longterm.md could not be used (`over_budget` False), or it is over its budget and
    goes into the prompt anyway, every turn (True)."""

    text: str
    over_budget: bool = False


@dataclass(frozen=True, slots=True)
class MessageMasked:
    """The user's message held a secret: `text` is what the log and the points hold (masked).
    Sent once the message is logged, only when it differs from what was typed; the TUI shows
    it in place of the typed text."""

    text: str


@dataclass(frozen=True, slots=True)
class ReplyDelta:
    text: str


@dataclass(frozen=True, slots=True)
class ThinkingDelta:
    """A piece of the model's thinking, before (or between) the reply's text. Shown while it
    arrives and then dropped: never logged, saved, sent back or checked."""

    text: str


@dataclass(frozen=True, slots=True)
class ReplyFinished:
    """The reply is complete and logged; `turn` numbers this engine's turns (its
    `PointsSaved` carries the same number)."""

    text: str
    stats: ChatDone
    turn: int = 0


@dataclass(frozen=True, slots=True)
class ReplyFailed:
    """The model call failed; `partial` (possibly empty) was logged, marked cut off or failed."""

    error: GatewayError
    partial: str


@dataclass(frozen=True, slots=True)
class Recalled:
    """What layer 3 put under `## Recalled context` this turn."""

    result: RecallResult


@dataclass(frozen=True, slots=True)
class FactsInjected:
    """What layer 4 put under `## Known facts` this turn."""

    injected: InjectedFacts


@dataclass(frozen=True, slots=True)
class ContextBudgeted:
    """The prompt was fitted into the model's window (before the reply streams): its
    estimated tokens, the reply reserve, what was left out and the headroom."""

    model: str
    window: int
    model_max: int | None
    tokens: int
    reply_reserve: int
    cut: dict[str, int] = field(default_factory=dict)
    """Items left out per section ("history", "recall", "facts", "longterm")."""
    notes: tuple[str, ...] = ()
    """One line per cut section: "history: 6 oldest messages left out"."""
    headroom: Headroom = "ok"

    def summary(self) -> str:
        """The sidebar's "context 3.1k / 8k"."""
        return f"context {format_tokens(self.tokens)} / {format_tokens(self.window)}"

    def to_json(self) -> dict[str, object]:
        """`status --json`'s `context` (what is persisted adds `notes`)."""
        return {
            "model": self.model,
            "window": self.window,
            "model_max": self.model_max,
            "last_prompt_tokens": self.tokens,
            "reply_reserve": self.reply_reserve,
            "cut": dict(self.cut),
            "headroom": self.headroom,
        }


@dataclass(frozen=True, slots=True)
class ContextNotice:
    """Ollama cut the prompt anyway (its `prompt_eval_count` fell far short): the line names
    it and the fix."""

    text: str


@dataclass(frozen=True, slots=True)
class LimitNotice:
    """A limit of the turn stopped something that goes on without it (tool calls over their
    cap were not run; the query's embedding ran out of time and recall used words only):
    one line naming the limit and its setting."""

    text: str


@dataclass(frozen=True, slots=True)
class ToolUsed:
    """The model called a memory tool; `summary` is one line for the chat."""

    name: str
    summary: str


@dataclass(frozen=True, slots=True)
class CandidatesProposed:
    """New candidates at the gate (from a success event, a memory_write left pending, or the
    reflection pass)."""

    candidates: list[Candidate]


@dataclass(frozen=True, slots=True)
class CapabilityReminder:
    """The reply said it cannot do something that an active capability fact says it can."""

    facts: list[Fact]


@dataclass(frozen=True, slots=True)
class PointsSaved:
    """The background save of a finished turn is done: the point ids of the user's message
    and of the reply (None where the save filter skipped it)."""

    turn: int
    conversation_id: str
    user_point_id: int | None
    reply_point_id: int | None


@dataclass(frozen=True, slots=True)
class MemstatusDue:
    """`memory_status_every_n` turns were counted since the memstatus job last ran: the
    consumer runs it (the job lives in `jobs/`, above the engine)."""

    turns: int


@dataclass(frozen=True, slots=True)
class Approval:
    """The user's answer to a `memory_write` candidate: approve (maybe edited), reject, or
    decide later (it stays pending)."""

    verdict: Literal["approve", "reject", "later"]
    body: str | None = None
    key: str | None = None


@dataclass(frozen=True, slots=True)
class ApprovalRequested:
    """The model wants to remember a fact (`memory_write`). The turn waits for the consumer:
    what it `answer`s before asking for the next event decides; no answer leaves the
    candidate pending (`ask` never answers)."""

    candidate: Candidate
    _answers: list[Approval] = field(default_factory=list, compare=False, repr=False)

    def answer(self, approval: Approval) -> None:
        self._answers.append(approval)

    @property
    def approval(self) -> Approval:
        return self._answers[-1] if self._answers else Approval("later")


TurnEvent = (
    LongtermWarning
    | MessageMasked
    | ContextBudgeted
    | ContextNotice
    | LimitNotice
    | Recalled
    | FactsInjected
    | ToolUsed
    | ReplyDelta
    | ThinkingDelta
    | ReplyFinished
    | ReplyFailed
    | ApprovalRequested
    | CandidatesProposed
    | CapabilityReminder
)
AfterTurnEvent = PointsSaved | MemstatusDue
AfterTurnListener = Callable[[AfterTurnEvent], None]
