"""The slash-command router: `/command argument` from the message box, looked up in the one
registry (tui/commands.py) and run on the chat screen.

Without an argument a command that `opens` a screen runs that action; otherwise what it
`runs` decides. A memory, fact or hypothesis command that fails is named in the chat
(detailed in the log), and the sidebar's counts are refreshed after it.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from memory.point_limits import text_size_problem
from tui.commands import SLASH_COMMANDS

if TYPE_CHECKING:
    from tui.screens.chat_screen import ChatScreen

log = logging.getLogger("straylight.tui")


def slash_refusal(line: str) -> str | None:
    """Why a typed `/…` line runs nothing (an unknown command, or an argument given to one
    that takes none), or None when it runs. The chat then keeps the text in the box: it may
    be a message that starts with a path (`/etc/hosts has…`), not a command; typed as
    `//etc/hosts has…` it is sent as that message (the chat screen drops one `/`)."""
    command, _, argument = line.strip().partition(" ")
    entry = SLASH_COMMANDS.get(command)
    if entry is None:
        known = ", ".join(SLASH_COMMANDS)
        return (
            f"Unknown command {command} (your text stays in the box; // at its start sends it"
            f" as a message). Known: {known}."
        )
    if (entry.runs is None or entry.bare) and argument.strip():
        return f"{command} takes no argument: {entry.usage} (your text stays in the box)."
    verb, _, rest = argument.strip().partition(" ")
    if entry.verbs and verb and (verb not in entry.verbs or (verb == "list" and rest.strip())):
        wrong = "nothing after list" if verb == "list" else f"no {verb!r}"
        return f"{command} takes {wrong}: {entry.usage} (your text stays in the box)."
    if command == "/remember" and (too_long := text_size_problem(argument.strip(), command)):
        return f"Not remembered: {too_long} (your text stays in the box)."
    return None


async def run_slash_command(chat: ChatScreen, line: str) -> None:
    """Run one typed `/command argument` line on the chat screen."""
    refusal = slash_refusal(line)
    if refusal is not None:
        await chat.notice(refusal, kind="error")
        return
    command, _, argument = line.partition(" ")
    argument = argument.strip()
    entry = SLASH_COMMANDS[command]
    if entry.opens and not argument:
        await chat.run_action(entry.opens)
    elif entry.runs is None:
        return  # (an argument: refused above)
    elif entry.runs == "help":
        chat.straylight.action_help()
    elif entry.runs == "new":
        await chat.action_new_conversation()
    elif entry.runs == "model":
        if argument:
            await chat.switch_model(argument)
        else:
            await chat.notice(chat.models_text())
    elif entry.runs == "think":
        await chat.set_think(argument)
    elif entry.runs == "image":
        from tui.image_command import run_image_command

        await run_image_command(chat, argument)
    elif entry.runs == "dream":
        chat.straylight.run_job_now("dream", announce=True)
    elif entry.runs == "conversation":
        from tui.conversation_commands import run_conversation_command

        await run_conversation_command(chat, command, argument)
    else:  # in a worker: `/import` of 320 sections, or an embedding that stalls, froze the
        # whole chat (typing, F1, Ctrl+Q) until it ended; one at a time, in the order typed
        chat.run_worker(
            _run_store_command(chat, command, argument),
            name=f"slash {command}",
            group=SLASH_GROUP,
            exit_on_error=False,
        )


SLASH_GROUP = "slash-commands"
"""The workers of the store commands (`/remember`, `/import`, …): Ctrl+Q waits for them."""


async def _run_store_command(chat: ChatScreen, command: str, argument: str) -> None:
    """A memory, fact or hypothesis command: its failure is named on screen (detailed in
    the log), and the sidebar's counts are refreshed after. Commands typed while one runs
    wait for it (the chat's lock), so they run and answer in the order they were typed."""
    async with chat.store_commands:
        await _run_store_command_now(chat, command, argument)


async def _run_store_command_now(chat: ChatScreen, command: str, argument: str) -> None:
    from tui.fact_commands import run_fact_command, run_hypothesis_command
    from tui.memory_commands import run_memory_command

    app = chat.straylight
    runs = SLASH_COMMANDS[command].runs
    try:
        if runs == "memory":
            await run_memory_command(
                chat.engine.memory, app.memory_problem, command, argument, chat.notice
            )
        elif runs == "fact":
            await run_fact_command(
                chat.engine.facts, app.memory_problem, command, argument, chat.notice
            )
        else:
            await run_hypothesis_command(chat.engine.facts, argument, chat.notice)
    except Exception as error:  # named on screen, detailed in the log
        log.exception("%s failed", command)
        await chat.notice(f"⚠ {command} failed: {error}", kind="error")
    if runs == "memory":
        chat.refresh_memory_status()
    else:
        chat.refresh_fact_status()
