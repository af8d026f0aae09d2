"""What a turn leaves to run after its reply, for the engine (agent/turn.py): both points
saved through the filter (and the context report) in a background task nobody waits for,
then `PointsSaved` to the `after_turn` listener, and `MemstatusDue` every
`memory_status_every_n` turns. `drain` awaits the saves (at exit, and in `ask`) and hands
back the ones that failed: the turn itself is in the daily log either way.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING

from agent.settings import Settings
from agent.turn_context import TurnContext
from agent.turn_events import (
    AfterTurnEvent,
    AfterTurnListener,
    ContextBudgeted,
    MemstatusDue,
    PointsSaved,
)

if TYPE_CHECKING:  # the memory pulls in duckdb, numpy and usearch: not before the first frame
    from memory.turn_memory import TurnMemory, TurnRecall

log = logging.getLogger("straylight.turn")

HELD_TURNS = 20
"""Turns kept for their save while no memory is open (`BackgroundSaves.hold`); older go."""


class BackgroundSaves:
    """The background saves of one engine's turns."""

    def __init__(self, settings: Callable[[], Settings], context: TurnContext) -> None:
        self._settings = settings  # the engine's, read when used (it may be replaced)
        self.context = context
        self.after_turn: AfterTurnListener | None = None  # hears what the save found
        self.counts_memstatus_turns = True  # the TUI counts turns only while its jobs run
        self._tasks: set[asyncio.Task[object]] = set()
        self._failures: list[BaseException] = []  # background saves that failed
        self._held: list[Callable[[TurnMemory], None]] = []  # turns waiting for a memory

    def start(
        self,
        memory: TurnMemory,
        turn: int,
        user_text: str,
        recall: TurnRecall | None,
        reply: str,
        conversation_id: str,
        answered: str,
        context: ContextBudgeted | None = None,
        earlier: str = "",
    ) -> None:
        """Save both points (and the context report) without making anyone wait."""
        result = recall.result if recall else None
        recalled = [hit.content for hit in result.in_block()] if result else []
        task = asyncio.get_running_loop().create_task(
            self._save_and_report(
                memory,
                turn,
                user_text=user_text,
                user_vector=recall.query_vector if recall else None,
                reply_text=reply,
                conversation_id=conversation_id,
                recalled_texts=recalled,
                context=answered,
                earlier=earlier,
                report=context,
            ),
            name="memory-save",
        )
        self._tasks.add(task)
        task.add_done_callback(self._done)

    def hold(self, save: Callable[[TurnMemory], None]) -> None:
        """A turn that ended while no memory was open — the TUI's first seconds, while an
        existing store opens (an old one's upgrade, a big index): its `save` (a `start`
        without the memory) runs in `start_held` once one is. Without it the points were
        never saved. At most `HELD_TURNS` (a memory that never opens: disabled, or its open
        failed)."""
        self._held.append(save)
        del self._held[:-HELD_TURNS]

    def start_held(self, memory: TurnMemory) -> int:
        """Start the saves of the turns `hold` kept; how many."""
        held, self._held = self._held, []
        for save in held:
            save(memory)
        return len(held)

    async def _save_and_report(
        self,
        memory: TurnMemory,
        turn: int,
        *,
        user_text: str,
        user_vector: list[float] | None,
        reply_text: str,
        conversation_id: str,
        recalled_texts: list[str],
        context: str,
        earlier: str = "",
        report: ContextBudgeted | None = None,
    ) -> None:
        """The background save (the points, then the calibration and the context report);
        then `PointsSaved`, and `MemstatusDue` when this turn is the N-th since the memstatus
        job last ran."""
        user, reply = await memory.save_turn(
            user_text=user_text,
            user_vector=user_vector,
            reply_text=reply_text,
            conversation_id=conversation_id,
            recalled_texts=recalled_texts,
            context=context,
            earlier=earlier,
        )
        await self.context.save(report)
        self._tell(PointsSaved(turn, conversation_id, user.point_id, reply.point_id))
        if not self.counts_memstatus_turns:
            return
        try:
            turns = await memory.count_turn()
        except Exception:  # never in the way of the turn
            log.exception("counting the turn for memstatus failed")
            return
        if turns >= self._settings().memory.status_every_n:
            self._tell(MemstatusDue(turns))

    def _tell(self, event: AfterTurnEvent) -> None:
        if self.after_turn is not None:
            try:
                self.after_turn(event)
            except Exception:
                log.exception("the after-turn listener failed on %s", type(event).__name__)

    def _done(self, task: asyncio.Task[object]) -> None:
        self._tasks.discard(task)
        if not task.cancelled() and (error := task.exception()) is not None:
            log.error("background save failed", exc_info=error)
            self._failures.append(error)

    async def drain(self, timeout: float = 30.0) -> list[BaseException]:
        """Wait for the saves; the errors of those that failed since the last drain, and a
        `TimeoutError` when one is still running after `timeout` (the process that ends
        now would lose it: said, not left silent)."""
        late: list[BaseException] = []
        if self._tasks:
            _, pending = await asyncio.wait(set(self._tasks), timeout=timeout)
            if pending:
                late.append(TimeoutError(f"still saving after {timeout:g} s"))
        failures, self._failures = self._failures, []
        return failures + late
