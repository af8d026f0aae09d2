"""Opening a screen costs the same whatever the session length (issue 16: F1 took 2.6 s late in
a long session). The time itself is measured in bench/screen_open.py; here, what made it grow:
the chat's whole log laid out again under a screen pushed over it, and a help page of ~120
Markdown widgets built on every F1."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from agent.settings import Settings
from tests.support.pilot_helpers import wait_until
from tui.app import StraylightApp
from tui.screens.chat_screen import ChatScreen
from tui.screens.help_screen import HelpScreen
from tui.screens.memory_browser import MemoryBrowserScreen
from tui.widgets.chat_message import ChatMessage

REPLY = "Use **logrotate**:\n\n1. a rule\n2. a reload\n\n```bash\nsudo logrotate -f x\n```"


@pytest.mark.parametrize(("key", "screen_type"), [("f1", HelpScreen), ("f2", MemoryBrowserScreen)])
async def test_a_screen_opened_over_a_long_chat_does_not_lay_the_chat_out_again(
    settings: Settings, monkeypatch: pytest.MonkeyPatch, key: str, screen_type: type
) -> None:
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
