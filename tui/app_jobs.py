"""The app's background jobs: the scheduler started once the memory is open, each job's
result shown (toasts, the sidebar's headroom, hypotheses and alerts), a job run now
(`/dream`, a memory screen's key), and the bindings checked again when the facts change.
The jobs themselves are jobs/; they run in the scheduler's threads and report back with
`JobFinished`.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING

from textual import work
from textual.app import App
from textual.message import Message

if TYPE_CHECKING:
    from agent.ollama_gateway import OllamaGateway
    from agent.settings import Settings
    from agent.turn import TurnEngine
    from jobs.background_jobs import JobResult
    from jobs.runner import JobRunner
    from jobs.scheduler import JobScheduler
    from memory.turn_memory import TurnMemory
    from tui.screens.chat_screen import ChatScreen

log = logging.getLogger("straylight.tui")


@dataclass
class JobFinished(Message):
    """A background job ran (scheduled, caught up, or run by a command)."""

    name: str
    result: JobResult


@dataclass
class BindingAlerts(Message):
    """The procedures' broken bindings, checked again after the facts changed."""

    lines: tuple[str, ...]


class JobsApp(App[int]):
    """The jobs' side of `StraylightApp` (tui/app.py), which sets these attributes."""

    settings: Settings
    gateway: OllamaGateway
    engine: TurnEngine
    chat: ChatScreen
    scheduler: JobScheduler | None
    job_alerts: dict[str, tuple[str, ...]]  # job name → its current alert lines
    memory_problem: str  # why the memory is not available ("still opening" at first)

    def _start_jobs(self, memory: TurnMemory) -> None:
        from jobs.scheduler import JobScheduler

        self.scheduler = JobScheduler(self._job_runner(memory), self._post_job_finished)
        try:
            self.scheduler.start()
        except Exception:
            log.exception("the job scheduler did not start; jobs run only from the shell")
            self.scheduler = None
        else:
            self.engine.counts_memstatus_turns = True  # every N turns, memstatus runs too

    def _job_runner(self, memory: TurnMemory) -> JobRunner:
        """The jobs over `memory`, asking the chat's current model (the dream)."""
        from jobs.background_jobs import JobContext
        from jobs.runner import JobRunner

        return JobRunner(JobContext(self.settings, memory, self.gateway, self.chat.model))

    def _post_job_finished(self, name: str, result: JobResult) -> None:
        self.post_message(JobFinished(name, result))

    def on_job_finished(self, message: JobFinished) -> None:
        if not self.is_running or not self.screen_stack:
            return  # a job that ended while the app shut down: its run is recorded anyway
        result = message.result
        for notice in result.notices:
            severity = {"warning": "warning", "error": "error"}.get(notice.level, "information")
            self.notify(notice.text, severity=severity, timeout=10)  # type: ignore[arg-type]
        if message.name == "memstatus" and result.status == "ok":
            self.chat.publish_sidebar(headroom=str(result.data.get("headroom", "ok")))
        elif message.name == "overdue-hypotheses" and result.status == "ok":
            overdue = int(result.data.get("overdue", 0))
            self.overdue_counted(overdue)
            self.chat.publish_sidebar(
                hypotheses=(int(result.data.get("open", 0)), overdue),
            )
        elif message.name == "bindings" and result.status == "ok":
            self._set_alerts("bindings", tuple(result.data.get("alerts", ())))
        elif message.name in ("decay", "dream"):
            self.chat.refresh_fact_status()
        if message.name in ("backfill", "index-upkeep", "decay"):
            self.chat.refresh_memory_status()

    def overdue_counted(self, overdue: int) -> None:
        """The sidebar's overdue alert follows every count of the cards (the job's, and a
        re-read after a card was validated, refuted or deleted)."""
        self._set_alerts(
            "hypotheses", (f"{overdue} hypothesis card(s) overdue",) if overdue else ()
        )

    @work(thread=True, exclusive=True, group="bindings-recheck", exit_on_error=False)
    def recheck_bindings(self) -> None:
        """The facts changed while a broken binding is shown: check again now rather than at
        the next daily run, so a fact just written clears its alert (no notice: the job's run
        announced the binding)."""
        from memory.bindings import check_bindings

        facts = self.engine.facts
        if facts is None:
            return
        try:
            alerts = check_bindings(
                facts.list_facts(),
                self.settings.clock.now(),
                limit_days=self.settings.jobs.binding_limit_days,
            )
        except Exception:
            log.exception("checking the bindings again failed")
            return
        self.post_message(BindingAlerts(tuple(alert.detail for alert in alerts)))

    def on_binding_alerts(self, message: BindingAlerts) -> None:
        self._set_alerts("bindings", message.lines)

    def _set_alerts(self, source: str, lines: tuple[str, ...]) -> None:
        self.job_alerts[source] = lines
        merged = tuple(line for group in self.job_alerts.values() for line in group)
        self.chat.publish_sidebar(alerts=merged)

    @work(exclusive=False, group="jobs-now", exit_on_error=False)
    async def run_job_now(self, name: str, announce: bool = False) -> None:
        if self.scheduler is None:
            memory = self.engine.memory
            if memory is None:
                await self.chat.notice(f"Memory is not available: {self.memory_problem}")
                return
            from memory.deferred_store import opened_memory

            memory = await opened_memory(memory)  # a job by hand creates the database
            # jobs are off: run this one by hand anyway
            result = await self._job_runner(memory).run(name)
            self.post_message(JobFinished(name, result))
        else:
            result = await self.scheduler.run_now(name)  # the scheduler posts JobFinished
        if announce and not result.notices:  # a notice is shown as a toast already
            await self.chat.notice(f"{name}: {result.summary}")
