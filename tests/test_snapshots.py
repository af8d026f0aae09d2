"""SVG snapshots of the chat screen, with a frozen clock and fixed hosts (review the SVGs)."""

from __future__ import annotations

import errno
import os
import re
import shutil
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from agent.settings import Settings
from tests.conftest import FIXED_NOW
from tests.support.ollama_standin import OllamaStandIn
from tests.support.pilot_helpers import wait_until
from tui.app import StraylightApp
from tui.widgets.chat_input import ChatInput
from tui.widgets.chat_message import ChatMessage
from tui.widgets.status_sidebar import StatusSidebar

SNAPSHOT_PORT = 28434  # fixed, so the sidebar shows the same host; below the ephemeral range
# (32768–60999 on Linux), where a client socket of another test could hold it
OFFLINE_HOST = "127.0.0.1:9"  # the discard port: nothing listens there
SIZE = (100, 30)

REPLY_WITH_CODE = """\
Here is a tiny script that counts words:

```python
import sys

words = sys.stdin.read().split()
print(len(words))
```

Run it with `python count.py < notes.txt`.
"""


@pytest.fixture
def fixed_standin() -> Iterator[OllamaStandIn]:
    """The stand-in on the fixed port; another suite on this machine may hold it for a
    moment (two checkouts tested side by side), so wait for it rather than fail."""
    deadline = time.monotonic() + 120
    while True:
        try:
            server = OllamaStandIn(port=SNAPSHOT_PORT).start()
            break
        except OSError as error:
            if error.errno != errno.EADDRINUSE or time.monotonic() > deadline:
                raise
            time.sleep(0.5)
    try:
        yield server
    finally:
        server.stop()


# A fixed path whatever TMPDIR says: the first screen shows it, and the pictures must match.
SNAPSHOT_HOMES = Path("/tmp/straylight-snapshot-homes")


def frozen(make_settings: Callable[..., Settings], host: str) -> Settings:
    """Fixed clock; no background jobs (their start-up catch-up would race the picture); a
    data dir at a fixed path per test (the first screen names it), emptied first."""
    test = os.environ.get("PYTEST_CURRENT_TEST", "snapshot").split("::")[-1].split(" ")[0]
    home = SNAPSHOT_HOMES / re.sub(r"[^\w.-]", "_", test)
    shutil.rmtree(home, ignore_errors=True)
    return make_settings(ollama_host=host, jobs_enabled=False, home=str(home)).model_copy(
        update={"now": _fixed_now()}
    )


def _fixed_now():
    from store.clock import parse_instant

    return parse_instant(FIXED_NOW)


def ollama_state(app: StraylightApp) -> str:
    state = app.query_one(StatusSidebar).state
    return state.ollama if state else "none"


def memory_line(app: StraylightApp) -> str:
    state = app.query_one(StatusSidebar).state
    return state.memory_line if state else ""


async def settle(pilot, app: StraylightApp, expected: str) -> None:
    """Ollama checked, memory open and its background saves done, sidebar up to date."""
    app.query_one(ChatInput).cursor_blink = False
    await wait_until(pilot, lambda: ollama_state(app) == expected, what=expected)
    await wait_until(pilot, lambda: app.engine.memory is not None, what="memory open")
    await app.engine.drain()
    total = app.engine.memory.store.points.counts()["total"]
    app.chat.refresh_memory_status()
    await wait_until(
        pilot, lambda: memory_line(app).startswith(f"{total} point"), what="memory line"
    )
    await pilot.pause()


async def finished_turn(pilot, app: StraylightApp, text: str) -> None:
    """Send `text` from a settled chat and settle again once the reply is complete."""
    await settle(pilot, app, "online")
    app.query_one(ChatInput).text = text
    await pilot.press("enter")
    await wait_until(
        pilot,
        lambda: [m.status for m in app.query(ChatMessage)] == ["complete", "complete"],
        what="finished reply",
    )
    await settle(pilot, app, "online")


def test_empty_chat(snap_compare, make_settings, fixed_standin) -> None:
    app = StraylightApp(frozen(make_settings, fixed_standin.host))

    async def run_before(pilot) -> None:
        await settle(pilot, app, "online")

    assert snap_compare(app, terminal_size=SIZE, run_before=run_before)


def test_finished_reply_with_code_block(snap_compare, make_settings, fixed_standin) -> None:
    fixed_standin.script_reply(REPLY_WITH_CODE)
    app = StraylightApp(frozen(make_settings, fixed_standin.host))

    async def run_before(pilot) -> None:
        await finished_turn(pilot, app, "Write a word counter in Python")

    assert snap_compare(app, terminal_size=SIZE, run_before=run_before)


def test_reply_with_folded_thinking(snap_compare, make_settings, fixed_standin) -> None:
    """A thinking model's reply: the "Thinking" block folded above the answer."""
    fixed_standin.set_models(["llama3.2", "qwen3:8b", "nomic-embed-text"])
    fixed_standin.script_reply(
        "Paris is the capital of France.",
        thinking="The user asks for the capital of France. That is Paris; answer in one line.",
    )
    settings = make_settings(
        ollama_host=fixed_standin.host, jobs_enabled=False, model="qwen3:8b"
    ).model_copy(update={"now": _fixed_now()})
    app = StraylightApp(settings)

    async def run_before(pilot) -> None:
        await finished_turn(pilot, app, "What is the capital of France?")

    assert snap_compare(app, terminal_size=SIZE, run_before=run_before)


def test_offline_state(snap_compare, make_settings) -> None:
    app = StraylightApp(frozen(make_settings, OFFLINE_HOST), poll_offline_seconds=3600)

    async def run_before(pilot) -> None:
        await settle(pilot, app, "offline")

    assert snap_compare(app, terminal_size=SIZE, run_before=run_before)


def test_help_screen(snap_compare, make_settings) -> None:
    app = StraylightApp(frozen(make_settings, OFFLINE_HOST), poll_offline_seconds=3600)

    async def run_before(pilot) -> None:
        await settle(pilot, app, "offline")
        await pilot.press("f1")
        await pilot.pause()

    assert snap_compare(app, terminal_size=SIZE, run_before=run_before)


def test_inline_candidate_prompt(snap_compare, make_settings, fixed_standin) -> None:
    """The model called memory_write: the inline approval box waits for a/e/r/l."""
    from tui.widgets.candidate_prompt import CandidatePrompt

    write = {
        "name": "memory_write",
        "arguments": {
            "key": "deploy:blyck",
            "body": "This PC can deploy blyck: npm run dist, then aws s3 cp to the bucket.",
            "type": "capability",
        },
    }
    fixed_standin.script_reply("I will remember that.", tool_calls=[write])
    fixed_standin.script_reply("Saved.")
    app = StraylightApp(frozen(make_settings, fixed_standin.host))

    async def run_before(pilot) -> None:
        await settle(pilot, app, "online")
        app.query_one(ChatInput).text = "Remember how we deploy blyck"
        await pilot.press("enter")
        await wait_until(pilot, lambda: len(app.query(CandidatePrompt)) == 1, what="prompt")
        await wait_until(  # the sidebar counts the candidate at once (issue 16)
            pilot, lambda: app.chat.sidebar_state.facts_line.endswith("1 pending"), what="count"
        )
        await pilot.pause()

    assert snap_compare(app, terminal_size=SIZE, run_before=run_before)


def test_narrow_terminal_folds_the_sidebar(snap_compare, make_settings, fixed_standin) -> None:
    app = StraylightApp(frozen(make_settings, fixed_standin.host))

    async def run_before(pilot) -> None:
        await settle(pilot, app, "online")

    assert snap_compare(app, terminal_size=(80, 24), run_before=run_before)


def test_footer_at_120_columns_shows_the_keys_80_columns_hide(
    snap_compare, make_settings, fixed_standin
) -> None:
    """The footer at 120x24 (issue 16): the keys that fit whole, more than at 80 columns."""
    app = StraylightApp(frozen(make_settings, fixed_standin.host))

    async def run_before(pilot) -> None:
        await settle(pilot, app, "online")

    assert snap_compare(app, terminal_size=(120, 24), run_before=run_before)


@pytest.mark.parametrize(
    ("level", "warn_bytes", "crit_bytes"),
    [
        pytest.param("ok", 2**30, 2**31, id="ok"),
        pytest.param("warn", 1, 2**31, id="warn"),
        pytest.param("critical", 1, 2, id="critical"),
    ],
)
def test_sidebar_headroom(
    snap_compare, make_settings, fixed_standin, level: str, warn_bytes: int, crit_bytes: int
) -> None:
    """The sidebar after a turn that recalled memories and carried a fact, with the RAM
    estimate under, over the warn and over the critical threshold (the real estimate of
    the real store; only the thresholds differ)."""
    settings = make_settings(
        ollama_host=fixed_standin.host,
        jobs_enabled=False,
        memory_ram_warn_bytes=warn_bytes,
        memory_ram_crit_bytes=crit_bytes,
    ).model_copy(update={"now": _fixed_now()})
    fixed_standin.script_reply("Staging runs on nebula-7; deploy with npm run dist.")
    app = StraylightApp(settings)

    async def run_before(pilot) -> None:
        await settle(pilot, app, "online")
        memory, facts = app.engine.memory, app.engine.facts
        assert memory is not None and facts is not None
        facts.set("deploy:blyck", "capability", "This PC deploys blyck: npm run dist.")
        await memory.remember("The blyck staging server is nebula-7.")
        await memory.remember("Deploys of blyck go out on Fridays only.")
        app.query_one(ChatInput).text = "where does blyck staging run"
        await pilot.press("enter")
        await wait_until(
            pilot,
            lambda: [m.status for m in app.query(ChatMessage)] == ["complete", "complete"],
            what="finished reply",
        )
        app.chat.refresh_fact_status()
        await settle(pilot, app, "online")
        state = app.query_one(StatusSidebar).state
        assert state is not None and state.headroom == level
        await wait_until(pilot, lambda: "1 active" in app.query_one(StatusSidebar).state.facts_line)

    assert snap_compare(app, terminal_size=(100, 40), run_before=run_before)


def test_models_screen_at_80x24(snap_compare, make_settings, fixed_standin) -> None:
    """F8: the pulled models with capabilities, window, size and loaded state."""
    from tui.screens.models_screen import ModelsScreen

    app = StraylightApp(frozen(make_settings, fixed_standin.host))

    async def run_before(pilot) -> None:
        await settle(pilot, app, "online")
        await pilot.press("f8")
        await wait_until(pilot, lambda: isinstance(app.screen, ModelsScreen), what="models")
        screen = app.screen
        await wait_until(pilot, lambda: screen.loaded and bool(screen.records), what="list")
        await pilot.pause()

    assert snap_compare(app, terminal_size=(80, 24), run_before=run_before)
