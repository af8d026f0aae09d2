"""Opening a screen costs the same whatever the session length (issue 16: F1 took 2.6 s late in
a long session). The time itself is measured in bench/screen_open.py; here, what made it grow:
the chat's whole log laid out again under a screen pushed over it, and a help page of ~120
Markdown widgets built on every F1."""

from __future__ import annotations

import gc
from datetime import UTC, datetime

import pytest

from agent.settings import Settings
from store.database import database_path, open_database
from tests.support.ollama_standin import OllamaStandIn
from tests.support.pilot_helpers import type_text, wait_until
from tui.app import StraylightApp
from tui.screens.chat_screen import ChatScreen
from tui.screens.help_screen import HelpScreen
from tui.screens.memory_browser import MemoryBrowserScreen
from tui.widgets.chat_message import ChatMessage
from tui.widgets.status_sidebar import StatusSidebar

REPLY = "Use **logrotate**:\n\n1. a rule\n2. a reload\n\n```bash\nsudo logrotate -f x\n```"


@pytest.mark.parametrize(("key", "screen_type"), [("f1", HelpScreen), ("f2", MemoryBrowserScreen)])
async def test_a_screen_opened_over_a_long_chat_does_not_lay_the_chat_out_again(
    settings: Settings, monkeypatch: pytest.MonkeyPatch, key: str, screen_type: type
) -> None:
    # a long chat has its database (a new data dir's is created at the first write, and that
    # open would refresh the sidebar under the screen)
    open_database(database_path(settings.home), clock=settings.clock).close()
    app = StraylightApp(settings)
    layouts: list[str] = []
    original = ChatScreen._refresh_layout

    def counted(screen: ChatScreen, *args: object, **kwargs: object) -> None:
        layouts.append(type(screen).__name__)
        original(screen, *args, **kwargs)  # type: ignore[arg-type]

    async with app.run_test(size=(100, 30)) as pilot:
        await wait_until(pilot, lambda: app.engine.memory is not None, what="memory open")
        chat = app.screen
        assert isinstance(chat, ChatScreen)
        when = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)
        widgets = []
        for index in range(25):
            widgets.append(ChatMessage("user", f"Question {index}?", time=when))
            widgets.append(ChatMessage("assistant", REPLY, time=when, model="llama3.2"))
        await chat.chat_log.show(widgets)
        await pilot.pause()
        monkeypatch.setattr(ChatScreen, "_refresh_layout", counted)
        await pilot.press(key)
        await wait_until(pilot, lambda: isinstance(app.screen, screen_type), what="the screen")
        await pilot.pause()
        assert layouts == []  # the chat under it was not laid out again
        opened = app.screen
        assert len(list(opened.walk_children())) < 40, "a light screen"
        await pilot.press("escape")
        await wait_until(pilot, lambda: app.screen is chat, what="back to the chat")
        await pilot.resize_terminal(90, 30)  # a real resize still lays the chat out
        await wait_until(pilot, lambda: bool(layouts), what="the chat laid out")


async def test_the_chat_log_is_kept_out_of_the_collectors_full_passes(
    settings: Settings, standin: OllamaStandIn
) -> None:
    """What made F1 take seconds late in a long session was a full garbage collection walking
    every object of the chat log (1.9 M at 800 messages): when a screen opens over the chat
    they are frozen (tui/gc_pauses.py); /new, continuing another conversation and quitting
    unfreeze them so the old log can be collected."""
    gc.unfreeze()
    app = StraylightApp(settings)
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_until(pilot, lambda: app.engine.memory is not None, what="memory open")
        assert gc.get_freeze_count() > 0  # the start-up's objects
        standin.script_reply("Use **logrotate**.")
        await type_text(pilot, "how do I rotate logs")
        await pilot.press("enter")
        await wait_until(pilot, lambda: not app.replying and bool(standin.chat_requests()))
        reply = app.chat.chat_messages()[-1]
        assert any(obj is reply for obj in gc.get_objects())  # walked by a full pass
        await pilot.press("f1")
        await wait_until(pilot, lambda: isinstance(app.screen, HelpScreen), what="the help")
        assert not any(obj is reply for obj in gc.get_objects())  # frozen: not walked
        await pilot.press("escape")
        await pilot.press("ctrl+n")
        await wait_until(pilot, lambda: gc.get_freeze_count() == 0, what="unfrozen by /new")
        await pilot.press("f1")
        await wait_until(pilot, lambda: gc.get_freeze_count() > 0, what="frozen again")
    assert gc.get_freeze_count() == 0  # the app stopped: nothing of it stays frozen


async def test_the_sidebar_is_updated_without_walking_the_chat_log(
    settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every Ollama check (every 3 s while it is offline) updates the sidebar; a `query()` over
    the screen walked every widget of the chat log (~0.2 s at 800 messages), and the opens
    that met one took that much longer."""
    app = StraylightApp(settings)
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_until(pilot, lambda: app.engine.memory is not None, what="memory open")
        chat = app.chat
        walked: list[str] = []
        original = ChatScreen.query

        def counted(screen: ChatScreen, selector: object = None) -> object:
            walked.append(str(selector))
            return original(screen, selector)  # type: ignore[arg-type]

        monkeypatch.setattr(ChatScreen, "query", counted)
        chat.publish_sidebar(model="llama3.2")
        chat.ollama_status = None
        chat.check_status()
        await wait_until(pilot, lambda: chat.ollama_status is not None, what="the check")
        await pilot.pause()
        assert walked == []
        assert chat.query_one(StatusSidebar).state.model == "llama3.2"
