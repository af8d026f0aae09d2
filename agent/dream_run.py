"""The dream run (seed 003, concept 3): the one model call that may make a hypothesis card.

`run_dream` is one consolidation pass: it picks related memories (`memory.dream.pick_sources`
over the workspace's active facts and the newest pinned points,
`memory.hypotheses.Hypotheses.dream_sources`), asks the model once with structured output,
checks the reply (`memory.dream.check_card`) and creates at most one card
(`Hypotheses.create`: start confidence and due date). The memories shown are as many as fit
the model's window (`fitted_sources`): a prompt longer than `num_ctx` would lose its
instructions to Ollama's cut. Every outcome, card or not, has a
reason, logged on `straylight.dream`. With fewer than 2 related memories no request is sent.
A failed model call is an outcome too ("model call failed: …"): `run_dream` does not raise
for it (database errors do propagate). A card whose statement matches an existing card's
(any status: a refuted or deleted card is not proposed again) is not created.

The database calls of `run_dream` run in worker threads. What happens to a card afterwards
(validate, refute, delete) is `memory.hypotheses`'s: no model is called for it.
"""

from __future__ import annotations

import asyncio
import functools
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from agent.context_window import WindowChoice, structured_room
from agent.gateway_errors import GatewayError
from agent.token_estimate import PromptEstimate
from memory.dream import (
    check_card,
    dream_messages,
    dream_schema,
    duplicate_of,
)
from memory.dream_sources import DreamSource
from memory.fact_drawer import FactDrawer
from memory.hypotheses import Hypotheses
from store.database import Database
from store.hypothesis_store import Hypothesis

log = logging.getLogger("straylight.dream")


class StructuredChat(Protocol):
    """What the dream run needs of the gateway (`agent.ollama_gateway.OllamaGateway`)."""

    async def context_window(self, model: str) -> WindowChoice: ...

    async def chat_structured(
        self, model: str, messages: Sequence[dict[str, Any]], schema: dict[str, Any]
    ) -> str: ...


def fitted_sources(sources: Sequence[DreamSource], window: int) -> list[DreamSource]:
    """The first sources (the seed, then its closest memories) whose request fits `window`
    (the `num_ctx` the call sends) less the reply's reserve and the estimate's margin; empty
    when not even two fit. Ollama keeps a prompt's end and drops its front when it is longer
    than the window: sent whole, a small window lost the instructions (the card's
    constraints) without a word."""
    room = structured_room(window)
    for count in range(len(sources), 1, -1):
        messages = dream_messages(sources[:count])
        if PromptEstimate.of_messages(messages).uncalibrated <= room:
            return list(sources[:count])
    return []


@dataclass(frozen=True, slots=True)
class DreamOutcome:
    """The card created (or None) and why; `sources` are the memory ids shown to the model."""

    card: Hypothesis | None
    reason: str
    sources: tuple[str, ...] = ()
    model_failed: bool = False  # Ollama down, a timeout, an HTTP error: nothing was judged
    window_too_small: bool = False  # the model's window holds fewer than two: nothing was sent


def _finish(outcome: DreamOutcome) -> DreamOutcome:
    if outcome.card is not None:
        log.info("dream: %s", outcome.reason)
    else:
        log.info("dream: no card: %s", outcome.reason)
    return outcome


async def run_dream(
    db: Database, drawer: FactDrawer, gateway: StructuredChat, model: str, *, workspace: str
) -> DreamOutcome:
    """One dream run: at most one hypothesis card (see the module docstring, docs/dream.md)."""
    book = Hypotheses(db, drawer)
    sources, usable = await asyncio.to_thread(book.dream_sources, workspace)
    if len(sources) < 2:
        if usable < 2:
            held = (
                "1 active fact or pinned point"
                if usable == 1
                else f"{usable} active facts and pinned points"
            )
            reason = f"fewer than 2 usable memories ({held})"
        else:
            reason = f"no two related memories among {usable} active facts and pinned points"
        return _finish(DreamOutcome(None, reason))
    window = (await gateway.context_window(model)).window  # never raises: a default then
    fitted = fitted_sources(sources, window)
    if not fitted:
        reason = f"the model's {window:,}-token window is too small for two memories"
        ids = tuple(s.id for s in sources)
        return _finish(DreamOutcome(None, reason, ids, window_too_small=True))
    if len(fitted) < len(sources):
        log.info(
            "dream: %d of %d memories fit the %d-token window", len(fitted), len(sources), window
        )
    sources = fitted
    ids = tuple(source.id for source in sources)
    try:
        raw = await gateway.chat_structured(model, dream_messages(sources), dream_schema(ids))
    except GatewayError as error:
        return _finish(DreamOutcome(None, f"model call failed: {error}", ids, model_failed=True))
    checked = check_card(raw, set(ids))
    if isinstance(checked, str):
        return _finish(DreamOutcome(None, checked, ids))
    existing = await asyncio.to_thread(book.cards, None, all_workspaces=True)
    if (twin := duplicate_of(checked, existing)) is not None:
        return _finish(
            DreamOutcome(None, f"duplicate of hypothesis #{twin.id} ({twin.status})", ids)
        )
    create = functools.partial(
        book.create,
        checked,
        workspace=workspace,
        reason=f"dream run with {model} over {len(ids)} memories",
    )
    card = await asyncio.to_thread(create)
    reason = f"hypothesis #{card.id} from {', '.join(card.source_ids)}"
    return _finish(DreamOutcome(card, reason, ids))
