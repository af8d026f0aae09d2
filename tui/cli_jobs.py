"""`straylight jobs list|run NAME`: the background jobs from the shell (cron, tests, support).

`list` prints `[{"name", "last_run", "next_run", "last_result", "last_status"}]` (`next_run`
from the last run and the schedule; a job that never ran is due now). `run NAME` runs one job
once, records it like the scheduler does, prints its summary (stdout) and its notices (one
line each on stderr); `--json` prints `{"name", "status", "result", "notices", "data"}`.
Exit codes: 0 ok or skipped, 1 the job failed (details in the log file).
"""

from __future__ import annotations

import asyncio
import sys
from argparse import SUPPRESS
from typing import Any

from agent.settings import Settings
from jobs.background_jobs import JOBS
from tui.cli_output import for_terminal, one_line, print_json

EXIT_OK = 0
EXIT_JOB_FAILED = 1


def register(commands: Any, common: Any, parser_class: type) -> None:
    jobs = commands.add_parser("jobs", allow_abbrev=False, help="the background jobs")
    common(jobs, top=False)
    jobs.add_argument("--json", action="store_true", help="print JSON")
    actions = jobs.add_subparsers(
        dest="action", metavar="ACTION", parser_class=parser_class, required=True
    )
    listing = actions.add_parser("list", allow_abbrev=False, help="every job, last and next run")
    common(listing, top=False)
    # SUPPRESS: `jobs --json list` keeps the group's --json
    listing.add_argument("--json", action="store_true", default=SUPPRESS, help="print JSON")
    run = actions.add_parser("run", allow_abbrev=False, help="run one job now")
    common(run, top=False)
    run.add_argument("name", metavar="NAME", choices=list(JOBS), help=", ".join(JOBS))
    run.add_argument("--json", action="store_true", default=SUPPRESS, help="print JSON")


def dispatch(args: Any, settings: Settings) -> int:
    return asyncio.run(_main(args, settings))


def job_line(name: str, status: str, summary: str) -> str:
    """`memstatus ran: headroom critical` — the job's own status is a verb, so that `ok`
    is never read as the memory's headroom level."""
    verb = {"ok": "ran", "skipped": "skipped", "error": "failed"}.get(status, status)
    return f"{name} {verb}: {summary}"


def _print_infos(infos: list[Any], *, as_json: bool) -> None:
    """JSON in UTC; the table in local time."""
    if as_json:
        print_json([i.as_json() for i in infos])
        return
    for info in infos:
        last = f"{info.last_run.astimezone():%Y-%m-%d %H:%M}" if info.last_run else "never"
        upcoming = f"{info.next_run.astimezone():%Y-%m-%d %H:%M}"
        line = f"{info.name:<19} last {last:<16} next {upcoming}  {info.last_result or ''}"
        print(for_terminal(line.rstrip()))  # a job that never ran: no trailing spaces


async def _main(args: Any, settings: Settings) -> int:
    from agent.ollama_gateway import OllamaGateway
    from jobs.background_jobs import JobContext
    from jobs.runner import JobInfo, JobRunner, next_run_of
    from store.database import database_path
    from tui.memory_session import MemorySession

    if args.action == "list" and not database_path(settings.home).exists():
        now = settings.clock.now()  # nothing ran yet; do not create the data dir to say so
        infos = [
            JobInfo(name, None, next_run_of(spec, None, now, settings.jobs.dream_hour), None, None)
            for name, spec in JOBS.items()
        ]
        _print_infos(infos, as_json=args.json)
        return EXIT_OK
    gateway = OllamaGateway.from_config(settings.ollama)
    session = MemorySession(settings, gateway, read_only=args.action == "list")
    try:
        memory = session.open()
        runner = JobRunner(JobContext(settings, memory, gateway, settings.ollama.model))
        if args.action == "list":
            infos = await asyncio.to_thread(runner.infos)
            _print_infos(infos, as_json=args.json)
            return EXIT_OK
        if args.name == "backfill" or args.name == "index-upkeep":
            memory.store.wait_until_ready(timeout=60)
        result = await runner.run(args.name)
    finally:
        session.close()
        await gateway.aclose()
    if args.json:
        data = {
            "name": args.name,
            "status": result.status,
            "result": result.summary,
            "notices": [{"kind": n.kind, "text": n.text, "level": n.level} for n in result.notices],
            "data": result.data,
        }
        print_json(data)
    else:
        print(for_terminal(job_line(args.name, result.status, result.summary)))
        for notice in result.notices:
            print(f"straylight: {one_line(notice.text)}", file=sys.stderr)
    return EXIT_JOB_FAILED if result.status == "error" else EXIT_OK
