"""Time to open a screen (F1 help, F2–F5, Ctrl+O) against the length of the session.

The real app runs headless under Textual's pilot (Ollama down: a closed port), its chat log
filled with N messages the way a long session fills it (a user line, a Markdown reply with a
list and a code block). Per screen and per N: the wall time from the key press until the
screen is the active one and a frame was drawn (`pilot.pause()` after it), median of a few
runs after one untimed round, and the CPU time of the process over the same span (the
machine may be shared: the CPU time is what the app itself spent); then Esc back to the
chat. Issue 16 asked for <= 100 ms whatever the session length.

    nice -n 10 python -m bench.screen_open [--messages 0,200,800] [--runs 3] [--json PATH]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

from bench._common import JsonDict, closed_port, format_machine, machine_info, write_json

TARGET_MS = 100.0
SCREENS = {  # key → the screen class name that must become active
    "f1": "HelpScreen",
    "f2": "MemoryBrowserScreen",
    "f3": "FactsScreen",
    "f4": "CandidatesScreen",
    "f5": "HypothesesScreen",
    "ctrl+o": "ConversationsScreen",
}
REPLY = """Here is how to rotate the logs:

1. Add a rule under `/etc/logrotate.d/nginx`.
2. Reload nginx after each rotation.

```bash
sudo logrotate -f /etc/logrotate.d/nginx
```

That keeps **14 days** of logs."""


async def _wait(pilot: object, condition: object, timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():  # type: ignore[operator]
        if time.monotonic() > deadline:
            raise TimeoutError("the screen did not open")
        await pilot.pause(0.001)  # type: ignore[attr-defined]


async def measure(messages: int, runs: int, keys: list[str]) -> dict[str, list[float]]:
    from agent.settings import load_settings
    from tui.app import StraylightApp
    from tui.screens.chat_screen import ChatScreen
    from tui.widgets.chat_message import ChatMessage

    with tempfile.TemporaryDirectory() as tmp:
        flags = {
            "home": str(Path(tmp) / "home"),
            "ollama_host": f"127.0.0.1:{closed_port()}",
            "workspace": "bench",
        }
        settings = load_settings(flags=flags, environ={}).settings
        settings = settings.model_copy(
            update={"jobs": settings.jobs.model_copy(update={"enabled": False})}
        )
        app = StraylightApp(settings)
        found: dict[str, list[float]] = {}
        for key in keys:
            found[key], found[f"{key} cpu"] = [], []
        async with app.run_test(size=(120, 40)) as pilot:
            await _wait(pilot, lambda: isinstance(app.screen, ChatScreen))
            await _wait(pilot, lambda: app.engine.memory is not None)
            chat = app.screen
            assert isinstance(chat, ChatScreen)
            when = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)
            widgets = []
            for index in range(messages // 2):
                widgets.append(ChatMessage("user", f"Question {index} about nginx?", time=when))
                widgets.append(ChatMessage("assistant", REPLY, time=when, model="llama3.2"))
            if widgets:
                await chat.chat_log.show(widgets)
            await pilot.pause()
            for key in keys:  # one untimed round: the log's Markdown finishes rendering
                await pilot.press(key)
                await _wait(pilot, lambda k=key: type(app.screen).__name__ == SCREENS[k])
                await pilot.press("escape")
                await _wait(pilot, lambda: app.screen is chat)
            await app.workers.wait_for_complete()
            await pilot.pause()
            for _ in range(runs):
                for key in keys:
                    started, cpu = time.perf_counter(), time.process_time()
                    await pilot.press(key)
                    await _wait(pilot, lambda k=key: type(app.screen).__name__ == SCREENS[k])
                    await pilot.pause()
                    found[key].append((time.perf_counter() - started) * 1000)
                    found[f"{key} cpu"].append((time.process_time() - cpu) * 1000)
                    await pilot.press("escape")
                    await _wait(pilot, lambda: app.screen is chat)
                    await pilot.pause()
        return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", default="0,200,800")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--keys", default=",".join(SCREENS))
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    keys = args.keys.split(",")
    report: JsonDict = {"machine": machine_info(), "target_ms": TARGET_MS, "results": {}}
    print(format_machine(report["machine"]))
    for count in (int(n) for n in args.messages.split(",")):
        found = asyncio.run(measure(count, args.runs, keys))
        medians = {key: round(statistics.median(values), 1) for key, values in found.items()}
        report["results"][str(count)] = medians
        shown = "  ".join(f"{key} {ms:.0f}" for key, ms in medians.items())
        print(f"{count:>5} messages: {shown} (median ms)")
    if args.json:
        write_json(args.json, report)


if __name__ == "__main__":
    main()
