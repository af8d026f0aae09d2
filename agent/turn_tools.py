"""Layer 4 and the model's capabilities inside one turn, for the engine (agent/turn.py): the
known facts a prompt carries, whether a model gets the memory tools and `think`, one tool
round (caps, the user's approval of a `memory_write`), and what follows a complete reply
(candidates from success events, the capability facts the next prompt must carry).
agent/turn_facts.py does the fact work; this keeps the per-engine state around it.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import AsyncGenerator, AsyncIterator, Callable
from typing import TYPE_CHECKING, Any

from agent import turn_facts
from agent.fact_tools import TOOL_SPECS
from agent.gateway_values import ToolCall
from agent.ollama_gateway import OllamaGateway
from agent.settings import Settings
from agent.turn_events import (
    ApprovalRequested,
    CandidatesProposed,
    CapabilityReminder,
    LimitNotice,
    ToolUsed,
    TurnEvent,
)
from agent.turn_facts import ToolOutcome
from agent.turn_limits import TurnLimits
from memory.secret_masking import mask_secrets

if TYPE_CHECKING:  # the memory pulls in duckdb, numpy and usearch: not before the first frame
    from memory.fact_drawer import FactDrawer, InjectedFacts
    from store.fact_records import Candidate, Fact

log = logging.getLogger("straylight.turn")


class TurnTools:
    """The fact drawer's part of a turn: facts in, tools offered and run, checks after."""

    def __init__(
        self,
        settings: Callable[[], Settings],
        gateway: OllamaGateway,
        drawer: Callable[[], FactDrawer | None],
    ) -> None:
        self._settings = settings  # the engine's, read when used (it may be replaced)
        self.gateway = gateway
        self._drawer_now = drawer  # the memory opens after the first frame
        self.support: dict[str, bool] = {}  # model → offered tools (asked once per model)
        self.no_levels: set[str] = set()  # models that refused a thinking level: sent true

    async def inject_facts(
        self, text: str, query_vector: list[float] | None, conversation_id: str
    ) -> InjectedFacts | None:
        """`## Known facts` for this turn, with the capability facts the conversation's last
        reply forgot (kept in the database by `after_reply`, so a later `ask` carries them)."""
        drawer = self._drawer_now()
        if drawer is None:
            return None

        def injected() -> InjectedFacts:
            carry = drawer.take_carry(conversation_id)
            return drawer.for_prompt(text, query_vector, carry=carry)

        try:
            return await asyncio.to_thread(injected)
        except Exception:
            log.exception("fact injection failed; the turn goes on without known facts")
            return None

    async def tools_for(self, model: str) -> list[dict[str, Any]] | None:
        """The memory tools, if enabled, the drawer is open and the model supports tools
        (asked once per model through /api/show; a refusal is remembered too)."""
        if not self._settings().facts.tools or self._drawer_now() is None:
            return None
        supported = self.support.get(model)
        if supported is None:
            capabilities = await self.gateway.capabilities(model)
            supported = capabilities is None or "tools" in capabilities
            self.support[model] = supported
        return TOOL_SPECS if supported else None

    async def think_for(
        self, model: str, think: bool | str | None
    ) -> tuple[bool | str | None, str | None]:
        """The `think` field for `model`, and a line when a set `think` is not sent because
        nobody knows whether the model can think (/api/show did not answer). The setting is
        sent only when the model's capabilities contain `thinking` (Ollama refuses it
        otherwise); a model known not to think drops it quietly, as the README says."""
        if think is None:
            return None, None
        capabilities = await self.gateway.capabilities(model)
        if capabilities is None and model in self.gateway.not_pulled:
            return None, None  # the chat request names the missing model
        if capabilities is None:
            shown = str(think).lower() if isinstance(think, bool) else think
            return None, (
                f"think = {shown} not sent: Ollama did not say whether {model} can think "
                "(no capabilities from /api/show)"
            )
        if "thinking" not in capabilities:
            return None, None
        return (True if isinstance(think, str) and model in self.no_levels else think), None

    async def tool_round(
        self,
        calls: list[ToolCall],
        text: str,
        messages: list[dict[str, Any]],
        limits: TurnLimits,
        query_vector: list[float] | None,
        conversation_id: str,
    ) -> AsyncGenerator[TurnEvent, None]:
        """Run the calls of one tool round that the caps admit (the others are named, and
        the model is told once) and add the round to `messages`."""
        admitted, capped = limits.admit(calls)
        if capped:
            yield LimitNotice(capped)
        messages.append(  # the next round's prompt: masked like every other message in it
            {
                "role": "assistant",
                "content": mask_secrets(text),
                "tool_calls": [
                    {"function": {"name": c.name, "arguments": _masked(c.arguments)}}
                    for c in admitted
                ],
            }
        )
        for call in admitted:
            step = await self._run_tool(call, query_vector, conversation_id)
            if not isinstance(step, ToolOutcome):  # a candidate: the user decides
                request = ApprovalRequested(step)
                yield request  # the consumer answers before it asks for more
                step = await turn_facts.decide(self._drawer(), step, request.approval)
            yield step.used
            if step.proposed:
                yield CandidatesProposed(step.proposed)
            result = mask_secrets(step.result)  # a fact stored before its pattern existed
            messages.append({"role": "tool", "content": result, "tool_name": call.name})
        if capped:  # told once, in the place of the calls that did not run
            name = calls[len(admitted)].name
            messages.append(
                {"role": "tool", "content": json.dumps({"error": capped}), "tool_name": name}
            )

    async def _run_tool(
        self, call: ToolCall, query_vector: list[float] | None, conversation_id: str
    ) -> ToolOutcome | Candidate:
        drawer = self._drawer_now()
        if drawer is None:  # tools are only offered with a drawer; be safe anyway
            return ToolOutcome(
                '{"error": "the fact drawer is not available"}', ToolUsed(call.name, ""), []
            )
        return await turn_facts.run_tool(drawer, call, query_vector, conversation_id)

    def _drawer(self) -> FactDrawer:
        drawer = self._drawer_now()
        assert drawer is not None  # a candidate came from it
        return drawer

    async def after_reply(
        self,
        user_text: str,
        reply: str,
        conversation_id: str,
        used: tuple[list[Fact], list[tuple[int, str]]],
    ) -> AsyncIterator[TurnEvent]:
        """Candidates from success events, and the capability facts the reply forgot (the
        next prompt carries them)."""
        drawer = self._drawer_now()
        if drawer is None:
            return
        proposed, reminder = await turn_facts.check_reply(
            drawer, user_text, reply, conversation_id, used
        )
        if proposed:
            yield CandidatesProposed(proposed)
        if reminder:
            try:
                await asyncio.to_thread(drawer.keep_carry, conversation_id, reminder)
            except Exception:
                log.exception("keeping the capability facts for the next prompt failed")
            yield CapabilityReminder(reminder)


def _masked(value: Any) -> Any:
    """A tool call's arguments with every string in them masked (keys too), for the prompt."""
    if isinstance(value, str):
        return str(mask_secrets(value))
    if isinstance(value, dict):
        return {_masked(k): _masked(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_masked(v) for v in value]
    return value
