"""Run one job, record it in `job_runs`, and work out which jobs are due (catch-up).

A job's error is logged (with its traceback, in the log file) and recorded as the run's
`error` status; it never reaches the screen. Due: an interval job is due when it never ran or
its interval has passed since the last run; the dream is due when its hour (local time) came
after the last run (it never runs on the first start-up, before it has ever been scheduled).
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from jobs.background_jobs import JOBS, JobContext, JobResult, JobSpec
from store.clock import format_instant
from store.job_runs import JobRun

log = logging.getLogger("straylight.jobs")


def next_at_hour(after: datetime, hour: int) -> datetime:
    """The first local `hour`:00 strictly after `after` (aware), as an aware datetime."""
    local = after.astimezone()
    candidate = local.replace(hour=hour, minute=0, second=0, microsecond=0)
    if candidate <= local:
        candidate += timedelta(days=1)
    return candidate


def next_run_of(spec: JobSpec, last: JobRun | None, now: datetime, dream_hour: int) -> datetime:
    """When a job runs next (UTC): never run → now (the dream: its next hour)."""
    if spec.at_hour:
        return next_at_hour(last.last_run if last else now, dream_hour).astimezone(UTC)
    return last.last_run + spec.every if last else now


@dataclass(frozen=True, slots=True)
class JobInfo:
    """What `straylight jobs list` shows for one job."""

    name: str
    last_run: datetime | None
    next_run: datetime
    last_result: str | None
    last_status: str | None

    def as_json(self) -> dict[str, str | None]:
        return {
            "name": self.name,
            "last_run": format_instant(self.last_run) if self.last_run else None,
            "next_run": format_instant(self.next_run),
            "last_result": self.last_result,
            "last_status": self.last_status,
        }


class JobRunner:
    def __init__(self, ctx: JobContext) -> None:
        self.ctx = ctx
        self.runs = ctx.memory.job_runs
        self._locks = {name: asyncio.Lock() for name in JOBS}

    def next_run(self, spec: JobSpec, last: JobRun | None, now: datetime) -> datetime:
        return next_run_of(spec, last, now, self.ctx.settings.jobs.dream_hour)

    def infos(self) -> list[JobInfo]:
        now = self.ctx.settings.clock.now()
        runs = self.runs.all()
        return [
            JobInfo(
                name,
                runs[name].last_run if name in runs else None,
                self.next_run(spec, runs.get(name), now),
                runs[name].result if name in runs else None,
                runs[name].status if name in runs else None,
            )
            for name, spec in JOBS.items()
        ]

    def due(self) -> list[str]:
        """Jobs to run now at start-up: missed while closed, or run at every start-up."""
        now = self.ctx.settings.clock.now()
        runs = self.runs.all()
        return [
            name
            for name, spec in JOBS.items()
            if spec.at_startup or self.next_run(spec, runs.get(name), now) <= now
        ]

    async def run(self, name: str) -> JobResult:
        """Run one job now (never two of the same at once); record and return its result."""
        spec = JOBS[name]
        async with self._locks[name]:
            started = self.ctx.settings.clock.now()
            try:
                result = await spec.run(self.ctx)
            except Exception as error:  # logged in full, one line recorded
                log.exception("job %s failed", name)
                result = JobResult("error", f"{type(error).__name__}: {error}")
            try:
                await asyncio.to_thread(
                    self.runs.record, name, started, result.status, result.summary
                )
            except Exception:  # the database went away (quitting): nothing to record in
                log.exception("could not record the run of job %s", name)
            log.info("job %s: %s (%s)", name, result.status, result.summary)
            return result
