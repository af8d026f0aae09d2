"""The chat's view of Ollama after a reply broke off because Ollama went away (pilot, real
HTTP to the stand-in)."""

from __future__ import annotations

from collections.abc import Callable

from agent.settings import Settings
from tests.support.ollama_standin import OllamaStandIn
from tests.support.pilot_helpers import type_text, wait_until
from tui.app import StraylightApp
from tui.widgets.chat_message import ChatMessage
from tui.widgets.status_sidebar import StatusSidebar


def last_reply(app: StraylightApp) -> ChatMessage:
    return [m for m in app.query(ChatMessage) if m.role == "assistant"][-1]


def sidebar_state(app: StraylightApp) -> str | None:
    state = app.query_one(StatusSidebar).state
    return state.ollama if state is not None else None


async def test_ollama_stopping_mid_reply_shows_offline_at_once(
    make_settings: Callable[..., Settings],
) -> None:
    """Ollama stopped (killed, crashed) while a reply streamed: the reply is cut off, and the
    sidebar said "online" until its next check, 30 s later; now it checks at once."""
    server = OllamaStandIn(token_delay=0.05).start()
    try:
        app = StraylightApp(make_settings(ollama_host=server.host))
        async with app.run_test(size=(110, 32)) as pilot:
            await wait_until(pilot, lambda: sidebar_state(app) == "online", what="online")
            server.script_reply(" ".join(f"t{i}" for i in range(200)))
            await type_text(pilot, "go")
            await pilot.press("enter")
            await wait_until(pilot, lambda: "t3" in last_reply(app).text, what="streaming")
            server.stop()
            await wait_until(pilot, lambda: last_reply(app).status == "cut_off", what="cut off")
            await wait_until(pilot, lambda: sidebar_state(app) == "offline", what="offline")
    finally:
        server.stop()
