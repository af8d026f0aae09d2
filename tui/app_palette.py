"""Straylight's commands in the command palette (Ctrl+P), after Textual's own.

Help and the Ollama check on every screen; on the chat screen also the chat's keys that
have a palette entry, the slash commands that take no argument, those that take one (put in
the message box to finish typing), the selected message's pin, forget and copy, a pull for
each missing model and a switch to each pulled model that can chat. A memory screen lists
its own keys.
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine, Iterable
from typing import TYPE_CHECKING, Any

from textual.app import SystemCommand

from tui.commands import CHAT_KEYS, palette_commands
from tui.widgets.chat_input import ChatInput
from tui.widgets.chat_message import ChatMessage

if TYPE_CHECKING:
    from textual.screen import Screen

    from tui.app import StraylightApp

TYPED: tuple[tuple[str, str, str], ...] = (  # (what goes in the box, title, help)
    ("/remember ", "Remember…", "Type what to pin as a memory (/remember TEXT)"),
    ("/forget ", "Forget a memory point…", "Type the id shown as #ID (/forget ID)"),
    ("/import ", "Import a Markdown file…", "Type its path (/import PATH)"),
    ("/fact set ", "Set a fact…", "Type KEY TYPE BODY (/fact set)"),
)
SELECTED: tuple[tuple[str, str, str], ...] = (  # (chat action, title, help)
    ("pin_message", "Pin the selected message", "Pin its memory point (p)"),
    ("forget_message", "Forget the selected message", "Forget its memory point, after a yes (f)"),
    ("copy_message", "Copy the selected message", "Copy it to the clipboard (c)"),
)


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
    for text, title, help_text in TYPED:
        yield SystemCommand(title, help_text, _types(screen, text))
    if isinstance(screen.focused, ChatMessage):  # the palette gives the focus back to it
        for action, title, help_text in SELECTED:
            yield SystemCommand(title, help_text, _runs(chat.run_action, action))
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


def _types(screen: Screen[Any], text: str) -> Callable[[], None]:
    """A palette callback: `text` in the message box, the cursor after it."""

    def run() -> None:
        box = screen.query_one(ChatInput)
        box.load_text(text)
        box.move_cursor(box.document.end)
        box.focus()

    return run


def _opens_pull(open_models: Callable[..., None], name: str) -> Callable[[], None]:
    """A palette callback: the models screen with `name` in its pull box."""

    def run() -> None:
        open_models(pull=name)

    return run
