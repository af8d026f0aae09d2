"""Fit the prompt into the model's window, on boundaries, and say what was left out.

The prompt has the sections `agent.prompt` joins (persona, long-term memory, known facts, recalled
context) plus the conversation's history and the new message. The budget is the window minus a
reply reserve; estimates come from `agent.token_estimate` (calibrated per model).

Never cut: the persona (or the conversation's system prompt), the active rules and the new user
message. The rest is kept in this order, the first kept first (issue 13's priorities):

1. ``longterm.md``, whole paragraphs from its start (the last one kept may keep its leading
   lines): the notes the user curates by hand, the memory this product exists for;
2. known facts, best-ranked first;
3. recalled context, best-ranked hit first;
4. the history, newest message first: it is in the log, and recall can bring it back.

Each section takes what room the ones before it left, so a long paragraph or hit that does
not fit leaves its room to the next section.

Every cut is on a boundary (a message, a hit, a fact, a paragraph or line) and keeps each section
contiguous: history keeps its newest messages, facts and recall their best-ranked items,
``longterm.md`` its beginning. Inputs and outputs are plain data, so the turn, the sidebar and
``status --json`` can all read the result.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Final, Literal

from agent.prompt_parts import HistoryMessage, PromptParts
from agent.token_estimate import (
    MESSAGE_OVERHEAD,
    PROMPT_OVERHEAD,
    PromptEstimate,
    estimate_text_tokens,
)

__all__ = [
    "CRITICAL_SHARE",
    "MIN_REPLY_TOKENS",
    "WARN_SHARE",
    "BudgetedPrompt",
    "Headroom",
    "HistoryMessage",
    "PromptParts",
    "budget_prompt",
    "format_tokens",
]

Headroom = Literal["ok", "warn", "critical"]
WARN_SHARE: Final = 0.80
CRITICAL_SHARE: Final = 0.95
MIN_REPLY_TOKENS: Final = 256
"""A prompt that leaves less than this for the reply is not sent."""

SECTIONS: Final = ("system", "rules", "longterm", "facts", "recall", "history", "user", "tools")
_HEADINGS: Final = {
    "longterm": "## Long-term memory",
    "facts": "## Known facts",
    "recall": "## Recalled context",
}
_LABELS: Final = {
    "longterm": "long-term memory",
    "facts": "known facts",
    "recall": "recalled context",
    "history": "history",
}


@dataclass(frozen=True, slots=True)
class BudgetedPrompt:
    """What fits, what it costs and what was left out."""

    kept: PromptParts
    window: int
    reply_reserve: int
    tokens: dict[str, int]
    """Calibrated tokens per section (`SECTIONS`) plus "template"."""
    total: int
    """The whole prompt's calibrated estimate: what `prompt_eval_count` should come close to."""
    estimate: PromptEstimate
    """The same in raw units, for `TokenEstimator.observe` after the reply."""
    cut: dict[str, int] = field(default_factory=dict)
    """Items left out per section (messages, facts, hits, paragraphs)."""
    notes: tuple[str, ...] = ()
    """One human line per cut section, e.g. "history: 6 oldest messages left out"."""
    headroom: Headroom = "ok"
    fits: bool = True
    """False when the never-cut parts alone leave no room for a reply: do not send."""
    fixed_total: int = 0
    """The never-cut parts with the chat template: what `fits` compared with the window."""

    @property
    def usable(self) -> int:
        return max(0, self.window - self.reply_reserve)

    def summary(self) -> str:
        """The sidebar's line: "context 3.1k / 8k"."""
        return f"context {format_tokens(self.total)} / {format_tokens(self.window)}"

    def refusal(self, *, own_system: bool = False, model_max: int | None = None) -> str:
        """The one-line message when `fits` is False. `own_system`: `system` is the
        conversation's own system prompt (`/system`, `ask --system`), not the persona; when
        it is most of what does not fit, the line names it, as the user can shorten it.
        `model_max`: the most the model holds; a window already there is not "raised"."""
        raise_it = "raise num_ctx"
        if model_max is not None and model_max <= self.window:
            raise_it = f"use a model with a larger window (this one holds {model_max:,})"
        # the count `fits` judged (the chat template included), so the window minus it is
        # what is left for the reply
        needed = self.fixed_total
        fixed = needed - self.tokens["user"]
        if fixed > self.window - MIN_REPLY_TOKENS:  # no message would fit: the window is too small
            if own_system and 2 * self.tokens["system"] > fixed:
                return (
                    f"Not sent: this conversation's system prompt alone takes about "
                    f"{self.tokens['system']:,} of the model's {self.window:,}-token window, "
                    f"leaving under {MIN_REPLY_TOKENS} for the reply. Shorten or clear it, or "
                    f"{raise_it}."
                )
            tools = self.tokens.get("tools", 0)
            without = f" (or set memory_tools = false: the tools take about {tools:,})"
            return (
                f"Not sent: the persona, rules and tool definitions alone take about "
                f"{fixed:,} of the model's {self.window:,}-token window, leaving under "
                f"{MIN_REPLY_TOKENS} for the reply. {raise_it.capitalize()}"
                f"{without if tools else ''}."
            )
        top = "system prompt" if own_system else "persona"
        return (
            f"Not sent: the message needs about {self.tokens['user']:,} tokens and, with the "
            f"{top} and rules, {needed:,} of the model's {self.window:,}-token window, "
            f"leaving under {MIN_REPLY_TOKENS} for the reply. Shorten it or {raise_it}."
        )


def format_tokens(count: int) -> str:
    """3100 -> "3.1k", 8192 -> "8k", 950 -> "950"."""
    if count < 1000:
        return str(count)
    if count % 1024 == 0:
        return f"{count // 1024}k"
    return f"{count / 1000:.1f}k".replace(".0k", "k")


@dataclass(slots=True)
class _Room:
    """Raw content units still free (the factor is applied once, at the start)."""

    left: float

    def take(self, cost: float) -> bool:
        if cost > self.left:
            return False
        self.left -= cost
        return True


def _cost(text: str) -> float:
    return estimate_text_tokens(text)


def _heading_cost(name: str) -> float:
    return _cost(_HEADINGS[name]) + 1.0  # the blank lines around it


def _fill_list(items: Sequence[str], room: _Room, first_extra: float, per_item: float = 1.0) -> int:
    """Keep items from the front while they fit; ``first_extra`` is paid with the first."""
    kept = 0
    for item in items:
        cost = _cost(item) + per_item + (first_extra if kept == 0 else 0.0)
        if not room.take(cost):
            break
        kept += 1
    return kept


def _paragraphs(text: str) -> list[str]:
    return [p for p in text.strip().split("\n\n") if p.strip()]


@dataclass(frozen=True, slots=True)
class _LongtermFit:
    """What `_fill_longterm` kept: the text, the paragraphs cut (one kept in part counts),
    the paragraphs in all, and (lines kept, lines) of a paragraph kept in part."""

    text: str
    cut: int
    total: int
    partial: tuple[int, int] | None = None


def _fill_longterm(text: str, room: _Room) -> _LongtermFit:
    """Leading paragraphs that fit (the last one by whole lines)."""
    paragraphs = _paragraphs(text)
    kept: list[str] = []
    for index, paragraph in enumerate(paragraphs):
        extra = _heading_cost("longterm") if not kept else 1.0
        if room.take(_cost(paragraph) + extra):
            kept.append(paragraph)
            continue
        lines: list[str] = []
        all_lines = paragraph.splitlines()
        for line in all_lines:
            line_extra = 1.0 + (extra if not lines else 0.0)
            if not line.strip() or not room.take(_cost(line) + line_extra):
                break
            lines.append(line)
        if lines:
            kept.append("\n".join(lines))
        partial = (len(lines), len(all_lines)) if lines else None
        return _LongtermFit("\n\n".join(kept), len(paragraphs) - index, len(paragraphs), partial)
    return _LongtermFit("\n\n".join(kept), 0, len(paragraphs))


def _fill_history(messages: Sequence[HistoryMessage], room: _Room, per_message: float) -> int:
    """Newest messages that fit, contiguously: how many of the newest are kept."""
    kept = 0
    for message in reversed(messages):
        if not room.take(_cost(message.content) + per_message):
            break
        kept += 1
    return kept


def _notes(cut: dict[str, int], longterm: _LongtermFit) -> tuple[str, ...]:
    lines: list[str] = []
    if cut.get("history"):
        n = cut["history"]
        lines.append(f"history: {n} oldest message{'s' if n != 1 else ''} left out")
    if cut.get("recall"):
        n = cut["recall"]
        lines.append(f"recalled context: {n} lowest-ranked hit{'s' if n != 1 else ''} left out")
    if cut.get("facts"):
        n = cut["facts"]
        lines.append(f"known facts: {n} lowest-ranked fact{'s' if n != 1 else ''} left out")
    if cut.get("longterm"):
        lines.append(_longterm_note(cut["longterm"], longterm))
    return tuple(lines)


def _longterm_note(n: int, fit: _LongtermFit) -> str:
    """The paragraphs left out; one kept in part is named as cut short with its lines (a
    longterm.md without blank lines is one paragraph, and most of it may well be sent)."""
    total = fit.total
    if fit.partial is None:
        plural = "s" if total != 1 else ""
        return f"long-term memory: last {n} of {total} paragraph{plural} left out"
    kept_lines, all_lines = fit.partial
    where = "" if total == 1 else f" in paragraph {total - n + 1} of {total}"
    after = f" and the {n - 1} after it left out" if n > 1 else ""
    return f"long-term memory: cut short{where}, {kept_lines:,} of {all_lines:,} lines kept{after}"


def _headroom(total: int, window: int, usable: int, cut: dict[str, int], fits: bool) -> Headroom:
    """critical: not sendable, memory cut, or the prompt takes >= 95 % of the window (the
    reply reserve is being eaten); warn: old history cut, or >= 80 % of the usable window."""
    memory_cut = any(cut.get(name) for name in ("longterm", "facts", "recall"))
    if not fits or memory_cut or total >= CRITICAL_SHARE * window:
        return "critical"
    if cut.get("history") or total >= WARN_SHARE * usable:
        return "warn"
    return "ok"


def budget_prompt(
    parts: PromptParts,
    *,
    window: int,
    reply_reserve: int,
    factor: float = 1.0,
    margin: float = 0.0,
) -> BudgetedPrompt:
    """Fit ``parts`` into ``window - reply_reserve`` tokens. ``factor`` is the model's
    calibration (`TokenEstimator.factor`), ``margin`` the share of the room held back for the
    estimate's error (`TokenEstimator.margin`). The module docstring gives the order of cuts."""
    factor = factor if factor > 0 else 1.0
    usable = max(0, window - reply_reserve)
    fixed = _cost(parts.system) + _cost(parts.user) + _cost(parts.tools)
    if parts.rules:
        fixed += _heading_cost("facts") + sum(_cost(rule) + 1.0 for rule in parts.rules)
    template = PROMPT_OVERHEAD + 2 * MESSAGE_OVERHEAD
    fixed_tokens = template + math.ceil(fixed * factor)
    room = _Room((usable - template) / (factor * (1.0 + max(0.0, margin))) - fixed)
    per_message = MESSAGE_OVERHEAD / factor

    history = parts.history
    # Issue 13's priorities: longterm.md, then facts, then recall, then the history (newest
    # first); each section takes the room the ones before it left.
    fit = _fill_longterm(parts.longterm, room)
    facts_extra = 0.0 if parts.rules else _heading_cost("facts")
    kept_facts = _fill_list(parts.facts, room, facts_extra)
    recall_extra = _heading_cost("recall") + (_cost(parts.recall_head) + 1.0)
    kept_recall = _fill_list(parts.recall, room, recall_extra)
    kept_history = _fill_history(history, room, per_message)

    kept = replace(
        parts,
        longterm=fit.text,
        facts=parts.facts[:kept_facts],
        recall=parts.recall[:kept_recall],
        history=history[len(history) - kept_history :] if kept_history else (),
    )
    cut = {
        name: count
        for name, count in (
            ("longterm", fit.cut),
            ("facts", len(parts.facts) - kept_facts),
            ("recall", len(parts.recall) - kept_recall),
            ("history", len(history) - kept_history),
        )
        if count
    }
    return _result(kept, cut, fit, window, reply_reserve, factor, fixed_tokens)


def _section_units(kept: PromptParts) -> dict[str, float]:
    facts_heading = _heading_cost("facts") if kept.rules or kept.facts else 0.0
    return {
        "system": _cost(kept.system),
        "rules": sum(_cost(r) + 1.0 for r in kept.rules) + (facts_heading if kept.rules else 0),
        # Per paragraph and per hit: those estimates are cached from the fitting above.
        "longterm": sum(_cost(p) + 1.0 for p in _paragraphs(kept.longterm))
        + _heading_cost("longterm")
        if kept.longterm
        else 0.0,
        "facts": sum(_cost(f) + 1.0 for f in kept.facts)
        + (facts_heading if kept.facts and not kept.rules else 0.0),
        "recall": sum(_cost(hit) + 1.0 for hit in kept.recall)
        + _cost(kept.recall_head)
        + _heading_cost("recall")
        if kept.recall
        else 0.0,
        "history": sum(_cost(m.content) for m in kept.history),
        "user": _cost(kept.user),
        "tools": _cost(kept.tools),
    }


def _result(
    kept: PromptParts,
    cut: dict[str, int],
    longterm: _LongtermFit,
    window: int,
    reply_reserve: int,
    factor: float,
    fixed_tokens: int,
) -> BudgetedPrompt:
    fits = fixed_tokens <= window - MIN_REPLY_TOKENS
    units = _section_units(kept)
    estimate = PromptEstimate(sum(units.values()), 2 + len(kept.history))
    tokens = {name: math.ceil(value * factor) for name, value in units.items()}
    tokens["template"] = estimate.overhead
    total = estimate.tokens(factor)
    usable = max(0, window - reply_reserve)
    return BudgetedPrompt(
        kept=kept,
        window=window,
        reply_reserve=reply_reserve,
        tokens=tokens,
        total=total,
        estimate=estimate,
        cut=cut,
        notes=_notes(cut, longterm),
        headroom=_headroom(total, window, usable, cut, fits),
        fits=fits,
        fixed_total=fixed_tokens,
    )
