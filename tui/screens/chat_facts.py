"""The chat screen's facts (layer 4): the inline approval a turn waits for, the candidates
a reflection proposed, the "this was done from here before" reminder, and the reflection at
a session's end (/new, another conversation, idle for `reflection_idle_minutes`).
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING

from textual import work

from agent.turn_events import Approval, CapabilityReminder
from tui.display_text import counted
from tui.screens.chat_editing import ChatEditing
from tui.widgets.chat_input import ChatInput

if TYPE_CHECKING:
    from agent.settings import Settings
    from store.fact_records import Candidate

log = logging.getLogger("straylight.tui")


class ChatFacts(ChatEditing):
    """Approval, candidates and reflection in the chat."""

    settings: Settings  # set by ChatScreen
    conversation_id: str  # the conversation the next message goes on
    unreflected_turns: int  # finished turns of this conversation since its reflection

    async def _approval_or_later(self, candidate: Candidate) -> Approval:
        try:
            return await self.ask_approval(candidate)
        except Exception:
            log.exception("asking for approval failed; the candidate stays pending")
            return Approval("later")

    async def ask_approval(self, candidate: Candidate) -> Approval:
        """An inline prompt in the chat log; the turn waits for the answer."""
        from tui.widgets.candidate_prompt import CandidatePrompt

        drawer = self.engine.facts
        old = await asyncio.to_thread(drawer.replaces, candidate) if drawer else None
        prompt = CandidatePrompt(candidate, replaces=old.body if old else None)
        await self.chat_log.add(prompt)
        prompt.focus()
        self.refresh_fact_status()  # one more pending, at once
        try:
            return await prompt.result
        except asyncio.CancelledError:
            prompt.leave_for_later()  # the reply was cancelled: the candidate stays pending
            raise
        finally:
            for box in self.query(ChatInput):  # none while the app shuts down
                box.focus()

    async def announce_candidates(self, candidates: list[Candidate]) -> None:
        candidates = [c for c in candidates if c.origin != "tool"]  # its line is shown
        if not candidates:
            self.refresh_fact_status()
            return
        lines = [f"#{c.id} {c.type} `{c.key}`: {c.body}" for c in candidates]
        count = len(candidates)
        await self.notice(
            f"🗂 {counted(count, 'fact candidate')} "
            "(/candidates approve ID or reject ID):\n" + "\n".join(lines)
        )
        self.refresh_fact_status()

    async def _remind_capabilities(self, event: CapabilityReminder) -> None:
        lines = [f"{f.type} `{f.key}`: {f.body}" for f in event.facts]
        await self.notice(
            "↳ Known fact — this was done from here before; the next turn carries it:\n"
            + "\n".join(lines),
            kind="warning",
        )

    # ---- reflection at the end of a session ---------------------------------------------
    def _restart_idle_timer(self) -> None:
        timer = getattr(self, "_idle_timer", None)
        if timer is not None:
            timer.stop()
        minutes = self.settings.facts.reflection_idle_minutes
        self._idle_timer = self.set_timer(minutes * 60, self.reflect_in_background)

    def reflect_in_background(self) -> None:
        """Session end (/new, idle): reflect on the conversation without blocking anyone."""
        if self.unreflected_turns and self.engine.facts is not None:
            self.unreflected_turns = 0
            self.run_reflection(self.conversation_id)

    @work(exclusive=False, group="reflection", exit_on_error=False)
    async def run_reflection(self, conversation_id: str) -> None:
        try:
            proposed = await self.engine.reflect(conversation_id, self.model)
        except Exception as error:  # noqa: BLE001 - logged, never on the way
            log.warning("reflection on %s failed: %s", conversation_id, error)
            return
        if proposed and not self.straylight.quitting:
            await self.announce_candidates(proposed)
