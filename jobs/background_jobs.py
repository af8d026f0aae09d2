"""The seven background jobs. Each is idempotent, uses the injectable clock, takes a
`JobContext` and returns a `JobResult` (a one-line summary and the notices for the user).

| job                | schedule                       | what it does                              |
|--------------------|--------------------------------|-------------------------------------------|
| memstatus          | every 10 min and every N turns | headroom notice, only on escalation       |
| decay              | daily                          | fact status and confidence                |
| dream              | nightly at `jobs_dream_hour`   | at most one falsifiable hypothesis card   |
| overdue-hypotheses | hourly and at start-up         | overdue cards: once per card per day      |
| bindings           | daily                          | procedures whose required facts broke     |
| backfill           | every minute                   | embeds points stored without a vector     |
| index-upkeep       | every 10 min and on quit       | reconciles and saves `vectors.usearch`;   |
|                    |                                | checkpoints DuckDB's write-ahead log      |
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import timedelta
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    from agent.ollama_gateway import OllamaGateway
    from agent.settings import Settings
    from memory.turn_memory import TurnMemory

NoticeKind = Literal["memstatus", "hypothesis", "binding", "dream", "info"]


@dataclass(frozen=True, slots=True)
class JobNotice:
    """Something the user should see: a toast in the TUI, a stderr line after `ask`."""

    kind: NoticeKind
    text: str
    level: str = "info"  # info | warning | error (the TUI's severity)


@dataclass(frozen=True, slots=True)
class JobResult:
    status: Literal["ok", "skipped", "error"]
    summary: str
    notices: list[JobNotice] = field(default_factory=list)
    data: dict[str, Any] = field(default_factory=dict)


@dataclass
class JobContext:
    settings: Settings
    memory: TurnMemory
    gateway: OllamaGateway
    model: str


JobFn = Callable[[JobContext], Awaitable[JobResult]]


@dataclass(frozen=True, slots=True)
class JobSpec:
    name: str
    run: JobFn
    every: timedelta  # the interval (the dream's is a day, at `jobs_dream_hour`)
    at_hour: bool = False  # scheduled at the configured hour instead of every interval
    at_startup: bool = False  # run at start-up even when not due


async def memstatus(ctx: JobContext) -> JobResult:
    from memory.memstatus_notice import announce, reset_turns

    store = ctx.memory.store
    status = await asyncio.to_thread(store.status)
    level = status["headroom"]
    text = await asyncio.to_thread(
        announce,
        store.db,
        level,
        status,
        warn_bytes=ctx.settings.memory.ram_warn_bytes,
        crit_bytes=ctx.settings.memory.ram_crit_bytes,
    )
    await asyncio.to_thread(reset_turns, store.db)
    mib = status["ram_estimate_bytes"] / 2**20
    notices = []
    if text is not None:
        severity = "error" if level == "critical" else "warning"
        notices.append(JobNotice("memstatus", text, severity))
    summary = f"headroom {level} (~{mib:.1f} MiB)" + (", announced" if text else "")
    return JobResult("ok", summary, notices, {"headroom": level})


async def decay(ctx: JobContext) -> JobResult:
    from memory.confidence import decay_confidence

    drawer = ctx.memory.facts
    if drawer is None:
        return JobResult("skipped", "no fact drawer")
    # Confidence first: a retired fact decays no further, so the run that retires one
    # charges its unverified days up to now before (it shows the value it was retired at).
    now = ctx.settings.clock.now()
    confidence = await asyncio.to_thread(decay_confidence, ctx.memory.store.db, now)
    statuses = await asyncio.to_thread(drawer.decay)
    summary = (
        f"{len(statuses.stale)} stale, {len(statuses.retired)} retired; "
        f"confidence: {confidence.summary()}"
    )
    return JobResult("ok", summary, [], {"stale": statuses.stale, "retired": statuses.retired})


async def dream(ctx: JobContext) -> JobResult:
    from agent.dream_run import run_dream
    from memory.hypotheses import DUE_AFTER, START_CONFIDENCE

    drawer = ctx.memory.facts
    if drawer is None:
        return JobResult("skipped", "no fact drawer")
    outcome = await run_dream(
        ctx.memory.store.db, drawer, ctx.gateway, ctx.model, workspace=drawer.workspace
    )
    if outcome.card is None:  # a failed model call is `skipped`, as backfill's without Ollama,
        # and so is a model whose window cannot hold two memories (the dream cannot run until
        # the setting or the model changes); nothing to dream about is `ok`
        if outcome.model_failed or outcome.window_too_small:
            return JobResult("skipped", f"no card: {outcome.reason}")
        return JobResult("ok", f"no card: {outcome.reason}")
    card = outcome.card
    text = (
        f"New hypothesis #{card.id} (confidence {START_CONFIDENCE:.2f}, "
        f"due in {DUE_AFTER.days} days): {card.statement}"
    )
    return JobResult("ok", f"card #{card.id}", [JobNotice("dream", text)], {"card": card.id})


async def overdue_hypotheses(ctx: JobContext) -> JobResult:
    book = ctx.memory.hypotheses
    now = ctx.settings.clock.now()
    due = await asyncio.to_thread(book.due_alerts, now)
    counts = await asyncio.to_thread(book.counts, now)
    notices = [
        JobNotice(
            "hypothesis",
            f"Hypothesis #{card.id} is overdue: validate, refute or delete it "
            f"(/hypotheses, straylight hypotheses). {card.statement}",
            "warning",
        )
        for card in due
    ]
    summary = f"{counts['open']} open, {counts['overdue']} overdue"
    return JobResult("ok", summary, notices, dict(counts))


async def bindings(ctx: JobContext) -> JobResult:
    from memory.bindings import check_bindings

    drawer = ctx.memory.facts
    if drawer is None:
        return JobResult("skipped", "no fact drawer")
    facts = await asyncio.to_thread(drawer.list_facts)
    alerts = check_bindings(
        facts, ctx.settings.clock.now(), limit_days=ctx.settings.jobs.binding_limit_days
    )
    notices = [JobNotice("binding", alert.detail, "warning") for alert in alerts]
    summary = f"{len(alerts)} broken binding{'' if len(alerts) == 1 else 's'}"
    return JobResult("ok", summary, notices, {"alerts": [a.detail for a in alerts]})


async def backfill(ctx: JobContext) -> JobResult:
    store = ctx.memory.store
    waiting = len(await asyncio.to_thread(store.ids_to_embed))
    if not waiting:
        return JobResult("skipped", "every point has a vector")
    status = await ctx.gateway.check()
    if not status.reachable:
        why = status.error or "Ollama is not reachable"  # refused, or timed out: named
        return JobResult("skipped", f"{waiting} waiting; {why}")
    dim_before = store.embed_dim
    done = await ctx.memory.backfill()
    if dim_before is not None and store.embed_dim != dim_before:  # a model re-pulled
        left = len(await asyncio.to_thread(store.ids_to_embed))
        summary = (
            f"{store.config.embed_model} now gives vectors of {store.embed_dim} numbers "
            f"(was {dim_before}): re-embedded {done} of {done + left}"
        )
        data = {"embedded": done, "dim": store.embed_dim, "dim_before": dim_before}
        return JobResult("ok", summary, [], data)
    summary = f"embedded {done} of {waiting}"
    if done < waiting and ctx.memory.embed_problem:  # e.g. the embedding model not pulled
        summary += f" ({ctx.memory.embed_problem})"
    return JobResult("ok", summary, [], {"embedded": done})


async def index_upkeep(ctx: JobContext) -> JobResult:
    report = await asyncio.to_thread(ctx.memory.store.upkeep_index)
    if report["state"] == "none":
        return JobResult("ok", "no vector index yet: no point has a vector", [], report)
    summary = f"index {report['state']}: +{report['added']} −{report['removed']}" + (
        ", saved" if report["saved"] else ""
    )
    if report.get("rebuilt"):  # from the database, at the open (a missing or foreign file)
        summary += f" ({report['rebuilt']} from the database)"
    if report.get("checkpointed"):  # DuckDB's log folded in here, not inside a save
        summary += ", database checkpointed"
    return JobResult("ok", summary, [], report)


JOBS: dict[str, JobSpec] = {
    spec.name: spec
    for spec in (
        JobSpec("memstatus", memstatus, timedelta(minutes=10)),
        JobSpec("decay", decay, timedelta(days=1)),
        JobSpec("dream", dream, timedelta(days=1), at_hour=True),
        JobSpec("overdue-hypotheses", overdue_hypotheses, timedelta(hours=1), at_startup=True),
        JobSpec("bindings", bindings, timedelta(days=1)),
        JobSpec("backfill", backfill, timedelta(minutes=1)),
        JobSpec("index-upkeep", index_upkeep, timedelta(minutes=10)),
    )
}
