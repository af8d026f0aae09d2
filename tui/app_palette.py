"""Straylight's commands in the command palette (Ctrl+P), after Textual's own.

Help and the Ollama check on every screen; on the chat screen also the chat's keys that
have a palette entry, the slash commands that take no argument, a pull for each missing
model and a switch to each pulled model that can chat. A memory screen lists its own keys.
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine, Iterable
from typing import TYPE_CHECKING, Any

from textual.app import SystemCommand

from tui.commands import CHAT_KEYS, palette_commands

if TYPE_CHECKING:
    from textual.screen import Screen

    from tui.app import StraylightApp


def straylight_commands(app: StraylightApp, screen: Screen[Any]) -> Iterable[SystemCommand]:
    """The palette's Straylight entries for `screen` (the chat's only on the chat screen,
    as their keys are)."""
    yield SystemCommand("Help: keys and commands", "Show the help screen", app.action_help)
    yield SystemCommand("Check Ollama now", "Re-check the Ollama server", app.action_check_ollama)
    if screen is not app.screen_stack[0]:
        return
    chat = app.chat
    for key in CHAT_KEYS:
        if key.palette is not None:
            title, help_text = key.palette
            yield SystemCommand(title, help_text, _runs(chat.run_action, key.action))
    for command, title, help_text in palette_commands():
        yield SystemCommand(title, help_text, _runs(chat.run_slash_command, command))
    for missing in app.missing_models:
        yield SystemCommand(
            f"Pull missing {missing.role} model: {missing.name}",
            "Open the models screen ready to pull it",
            _opens_pull(chat.action_open_models, missing.name),
        )
    if chat.ollama_status is not None and chat.ollama_status.reachable:
        for name in chat.ollama_status.chat_models:  # by capabilities, not by name
            yield SystemCommand(
                f"Switch model: {name}",
                "Chat with this model for the rest of the session",
                _runs(chat.switch_model, name),
                discover=False,
            )


def _runs(
    call: Callable[[str], Coroutine[Any, Any, object]], argument: str
) -> Callable[[], Coroutine[Any, Any, None]]:
    """A palette callback: `call(argument)`, awaited."""

    async def run() -> None:
        await call(argument)

    return run


def _opens_pull(open_models: Callable[..., None], name: str) -> Callable[[], None]:
    """A palette callback: the models screen with `name` in its pull box."""

    def run() -> None:
        open_models(pull=name)

    return run
