"""APScheduler 3.x inside the TUI's event loop.

One `AsyncIOScheduler` on the running loop; every job coalesced, `max_instances=1`, with a
generous misfire grace (a laptop that slept still runs the job once). Jobs missed while the
app was closed run right after start (`JobRunner.due`). Results go to `on_result`, which the
app turns into a Textual message; nothing here touches a widget. `stop()` cancels running jobs
itself and waits for them before shutting the scheduler down, so no "job was cancelled" error
is logged and no task is left dangling.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from jobs.background_jobs import JOBS, JobResult
from jobs.runner import JobRunner

log = logging.getLogger("straylight.jobs")
MISFIRE_GRACE_SECONDS = 3600
STOP_TIMEOUT_SECONDS = 5.0

ResultCallback = Callable[[str, JobResult], object]  # what it returns is ignored


class JobScheduler:
    def __init__(self, runner: JobRunner, on_result: ResultCallback) -> None:
        self.runner = runner
        self.on_result = on_result
        self._scheduler: Any = None
        self._running: set[asyncio.Task[Any]] = set()
        self._stopping = False

    @property
    def started(self) -> bool:
        return self._scheduler is not None

    def start(self) -> None:
        """Call from inside the running event loop."""
        from apscheduler.schedulers.asyncio import AsyncIOScheduler
        from apscheduler.triggers.cron import CronTrigger
        from apscheduler.triggers.interval import IntervalTrigger

        scheduler = AsyncIOScheduler(event_loop=asyncio.get_running_loop(), timezone=UTC)
        hour = self.runner.ctx.settings.jobs.dream_hour
        for name, spec in JOBS.items():
            trigger: Any = (
                CronTrigger(hour=hour, timezone=datetime.now().astimezone().tzinfo)
                if spec.at_hour
                else IntervalTrigger(seconds=spec.every.total_seconds(), timezone=UTC)
            )
            scheduler.add_job(
                self._run,
                trigger,
                args=[name],
                id=name,
                name=name,
                coalesce=True,
                max_instances=1,
                misfire_grace_time=MISFIRE_GRACE_SECONDS,
                replace_existing=True,
            )
        scheduler.start()
        self._scheduler = scheduler
        catch_up = asyncio.get_running_loop().create_task(self._catch_up(), name="jobs-catch-up")
        self._running.add(catch_up)  # kept, and cancelled by `stop`
        catch_up.add_done_callback(self._running.discard)

    async def _catch_up(self) -> None:
        """Run the jobs missed while the app was closed now; the regular schedule goes on
        from there. The last runs are read in a thread (DuckDB, not on the event loop)."""
        try:
            due = await asyncio.to_thread(self.runner.due)
        except Exception:  # the regular schedule still runs them
            log.exception("the jobs' catch-up could not read their last runs")
            return
        if self._scheduler is None or self._stopping:
            return
        for name in due:
            self._scheduler.modify_job(name, next_run_time=datetime.now(UTC))
        if due:
            log.info("catching up: %s", ", ".join(due))

    def next_run(self, name: str) -> datetime | None:
        if self._scheduler is None:
            return None
        job = self._scheduler.get_job(name)
        return job.next_run_time if job is not None else None

    async def run_now(self, name: str) -> JobResult:
        """Run a job at once (a slash command, every N turns), outside the schedule."""
        return await self._run(name)

    async def _run(self, name: str) -> JobResult:
        if self._stopping:
            return JobResult("skipped", "stopping")
        task = asyncio.current_task()
        if task is not None:
            self._running.add(task)
        try:
            result = await self.runner.run(name)
        except asyncio.CancelledError:
            if not self._stopping:
                raise
            return JobResult("skipped", "stopped at quit")  # a clean end, not an error
        finally:
            if task is not None:
                self._running.discard(task)
        try:
            self.on_result(name, result)
        except Exception:
            log.exception("delivering the result of job %s failed", name)
        return result

    async def stop(self) -> None:
        """Cancel running jobs, wait for them, then shut the scheduler down."""
        self._stopping = True
        scheduler, self._scheduler = self._scheduler, None
        if scheduler is not None:
            scheduler.pause()
        running = [t for t in self._running if t is not asyncio.current_task()]
        for task in running:
            task.cancel()
        if running:
            await asyncio.wait(running, timeout=STOP_TIMEOUT_SECONDS)
        if scheduler is not None:
            scheduler.shutdown(wait=False)
            await asyncio.sleep(0)  # let the executor settle its futures
