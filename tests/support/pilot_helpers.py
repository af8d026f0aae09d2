"""Helpers for Textual pilot tests: wait for a condition instead of sleeping."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

from textual.app import App
from textual.pilot import Pilot


async def wait_until(
    pilot: Pilot, condition: Callable[[], bool], *, timeout: float = 5.0, what: str = ""
) -> None:
    """Let the app run until `condition()` holds; fail with `what` after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {what or condition}")
        await pilot.pause(0.02)
    await asyncio.sleep(0)


def notices(app: App[object]) -> list[str]:
    """The text of every notice in the chat log, oldest first."""
    from tui.widgets.chat_message import ChatNotice

    return [str(notice.render()) for notice in app.query(ChatNotice)]


async def type_text(pilot: Pilot, text: str) -> None:
    """Type into the focused widget, key by key (newlines as Ctrl+J)."""
    for char in text:
        if char == "\n":
            await pilot.press("ctrl+j")
        elif char == " ":
            await pilot.press("space")
        else:
            await pilot.press(char)
