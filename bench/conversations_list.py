"""Time `straylight conversations`' list (and the conversations screen's day index) on a
generated year of daily logs.

A year of `--per-day` conversations a day (default 20), each `--messages` messages long
(default 8: four exchanges of a few sentences), is written straight into a temp data dir's
`conversation/` folder in the daily-log format. Then, in this process:

- cold: the first list (no summary file yet: every day file is read);
- warm: the list again, nothing changed (median of `--runs`);
- after an append: one message appended to the newest day file, then the list;
- screen: the conversations screen's day index (`iter_day_summaries`), warm;
- the CLI: `straylight conversations --json` as a process of its own, warm.

Wall and CPU milliseconds (the process's own; the machine may be shared).

    nice -n 10 python -m bench.conversations_list [--days 365] [--per-day 20] [--runs 5]
"""

from __future__ import annotations

import argparse
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import UTC, date, datetime, timedelta
from pathlib import Path

from bench._common import JsonDict, format_machine, hermetic_env, machine_info, write_json
from store.daily_log import DailyLog, LogMessage, format_message

FIRST_DAY = date(2025, 12, 1)
USER = "How do I keep {topic} from going wrong when the weather turns, step by step?"
REPLY = (
    "For {topic}, start with the basics: check the setup the evening before, keep a log of "
    "what you changed, and change one thing at a time. If it still goes wrong, compare with "
    "the last good day in the log and undo the difference."
)
TOPICS = ("sourdough", "the nginx logs", "the bike chain", "tomatoes", "the backup job")


def write_year(root: Path, days: int, per_day: int, messages: int) -> int:
    """Write the logs; how many messages were written."""
    root.mkdir(parents=True, mode=0o700)
    written = 0
    for offset in range(days):
        day = FIRST_DAY + timedelta(days=offset)
        blocks: list[str] = []
        for number in range(per_day):
            start = datetime(day.year, day.month, day.day, 8, tzinfo=UTC)
            start += timedelta(minutes=30 * number)
            cid = f"{start:%Y%m%d-%H%M%S}-{number:06x}"
            topic = TOPICS[(offset + number) % len(TOPICS)]
            for index in range(messages):
                role = "user" if index % 2 == 0 else "assistant"
                text = (USER if role == "user" else REPLY).format(topic=topic)
                moment = start + timedelta(seconds=20 * index)
                message = LogMessage(role, text, cid, moment, "llama3.2")
                blocks.append(format_message(message))
                written += 1
        (root / f"{day.isoformat()}.md").write_text("".join(blocks), encoding="utf-8")
    return written


CPU: list[float] = []  # the process's CPU ms of every `timed` call, in order


def timed(call: Callable[[], object]) -> tuple[float, object]:
    """Wall ms and the result; the CPU ms go to `CPU` (the machine may be shared)."""
    began, cpu = time.perf_counter(), time.process_time()
    result = call()
    CPU.append((time.process_time() - cpu) * 1000)
    return (time.perf_counter() - began) * 1000, result


def _children_cpu() -> float:
    """CPU seconds (user + system) of the finished child processes so far."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--days", type=int, default=365)
    parser.add_argument("--per-day", type=int, default=20)
    parser.add_argument("--messages", type=int, default=8)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--json", type=Path, help="also write the results here")
    args = parser.parse_args()
    from tui import conversation_index as index

    with tempfile.TemporaryDirectory(prefix="straylight-convlist-") as tmp:
        home = Path(tmp) / "home"
        root = home / "conversation"
        total = write_year(root, args.days, args.per_day, args.messages)
        log = DailyLog(root)
        size = sum(path.stat().st_size for path in root.glob("*.md"))
        print(
            f"{args.days} days × {args.per_day} conversations × {args.messages} messages = "
            f"{total:,} messages, {size / 1e6:.1f} MB of logs"
        )

        def listing() -> object:
            return index.list_conversations(log, {})

        cold, rows = timed(listing)
        cold_cpu = CPU[-1]
        warm = [timed(listing)[0] for _ in range(args.runs)]
        warm_cpu = statistics.median(CPU[-args.runs :])
        newest = log.days()[-1]
        last = datetime(newest.year, newest.month, newest.day, 23, tzinfo=UTC)
        log.append(LogMessage("user", "one more question", "bench-append", last), newest)
        appended, _rows = timed(listing)
        appended_cpu = CPU[-1]
        screen = [timed(lambda: list(index.iter_day_summaries(log)))[0] for _ in range(args.runs)]
        screen_cpu = statistics.median(CPU[-args.runs :])
        env = hermetic_env(Path(tmp), STRAYLIGHT_HOME=str(home))
        entry = "from tui.entry import main; main()"
        command = [sys.executable, "-c", entry, "conversations", "--json"]
        cli, cli_cpu = [], []
        for _ in range(max(3, args.runs)):
            began, used = time.perf_counter(), _children_cpu()
            subprocess.run(command, env=env, check=True, capture_output=True)
            cli.append((time.perf_counter() - began) * 1000)
            cli_cpu.append((_children_cpu() - used) * 1000)
        results: JsonDict = {
            "machine": machine_info(),
            "days": args.days,
            "per_day": args.per_day,
            "messages_per_conversation": args.messages,
            "conversations": len(rows),  # type: ignore[arg-type]
            "cold_ms": cold,
            "warm_ms_median": statistics.median(warm),
            "after_append_ms": appended,
            "screen_index_ms_median": statistics.median(screen),
            "cli_process_ms_median": statistics.median(cli),
            "cpu_ms": {
                "cold": cold_cpu,
                "warm_median": warm_cpu,
                "after_append": appended_cpu,
                "screen_index_median": screen_cpu,
                "cli_process_median": statistics.median(cli_cpu),
            },
        }
    print(format_machine(results["machine"]))
    cpu = list(results["cpu_ms"].values())
    keys = ("cold_ms", "warm_ms_median", "after_append_ms", "screen_index_ms_median")
    for key, cpu_ms in zip(keys, cpu[:-1], strict=True):
        print(f"{key:>24}: {results[key]:8.1f} wall, {cpu_ms:8.1f} CPU")
    cli_ms = results["cli_process_ms_median"]
    print(f"{'cli_process_ms_median':>24}: {cli_ms:8.1f} wall, {cpu[-1]:8.1f} CPU")
    if args.json:
        write_json(args.json, results)


if __name__ == "__main__":
    main()
