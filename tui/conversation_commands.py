"""The chat's conversation commands: `/title`, `/system`, `/retry`, and editing the last
message (Up in an empty message box, or e on the selected message).

`/title` and `/system` keep their values in the `conversations` table (memory/
conversation_notes.py). A retry or an edit takes the last exchange back: the last user
message and its reply are marked superseded in the daily log (store/daily_log_rewrite.py),
their unpinned memory points are forgotten (the new turn saves its own: replaced, not
duplicated) and a pinned one is kept, tagged `superseded`, and the turn runs again with the
same or the edited text. Files and the database are touched in threads, never on the event
loop.
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING

from tui.conversation_index import clean_title, propose_title

if TYPE_CHECKING:
    from agent.image_attachment import ImageAttachment
    from memory.conversation_notes import ConversationNotes
    from store.daily_log import LogMessage
    from tui.screens.chat_screen import ChatScreen

log = logging.getLogger("straylight.tui")
CLEAR_SYSTEM = "--clear"


def _notes(chat: ChatScreen) -> ConversationNotes | None:
    from memory.conversation_notes import ConversationNotes

    memory = chat.engine.memory
    return ConversationNotes(memory.store) if memory is not None else None


async def run_conversation_command(chat: ChatScreen, command: str, argument: str) -> None:
    """Run `/title`, `/system` or `/retry`; a failure is named in the chat."""
    try:
        if command == "/retry":
            await retry_last(chat)
            return
        notes = _notes(chat)
        if notes is None:
            problem = chat.straylight.memory_problem
            await chat.notice(f"Memory is not available: {problem}", kind="error")
        elif command == "/title":
            await _title(chat, notes, argument)
        else:
            await _system(chat, notes, argument)
    except Exception as error:  # named on screen, detailed in the log
        log.exception("%s failed", command)
        await chat.notice(f"⚠ {command} failed: {error}", kind="error")


async def _title(chat: ChatScreen, notes: ConversationNotes, argument: str) -> None:
    cid = chat.conversation_id
    if argument:
        title = clean_title(argument)
        await asyncio.to_thread(notes.set_title, cid, title)
        await chat.notice(f"Title: {title}")
        return
    record = await asyncio.to_thread(notes.get, cid)
    if record.title:
        await chat.notice(f"Title: {record.title} (`/title TEXT` changes it)")
        return
    first = next((m.text for m in chat.chat_messages() if m.role == "user"), "")
    if first:
        await chat.notice(
            f"Title: {propose_title(first)} (proposed from the first message; "
            "`/title TEXT` sets one)"
        )
    else:
        await chat.notice("No title yet: `/title TEXT` sets one, or the first message does.")


async def _system(chat: ChatScreen, notes: ConversationNotes, argument: str) -> None:
    cid = chat.conversation_id
    if argument:
        prompt = None if argument == CLEAR_SYSTEM else argument
        await asyncio.to_thread(notes.set_system_prompt, cid, prompt)
        record = await asyncio.to_thread(notes.get, cid)
        chat.system_prompt = record.system_prompt
    if chat.system_prompt:
        await chat.notice(
            f"System prompt of this conversation (instead of the persona):\n{chat.system_prompt}"
        )
    else:
        await chat.notice(
            "No system prompt for this conversation: the persona applies "
            "(`/system TEXT` sets one, `/system --clear` removes it)."
        )


def _take_back(chat: ChatScreen, new_text: str | None) -> list[LogMessage]:
    """In a thread: the last exchange marked superseded in the log, its unpinned points
    forgotten, its pinned ones tagged `superseded` (memory/conversation_notes.py)."""
    from store.daily_log_rewrite import supersede_last_exchange

    cid = chat.conversation_id
    taken = supersede_last_exchange(chat.engine.daily_log, cid)
    notes = _notes(chat)
    if notes is not None and taken:
        sent_again = taken[0].content if new_text is None else new_text
        for message in taken:
            notes.supersede_message_points(
                cid, message.role, message.content, sent_again=sent_again
            )
    return taken


async def retry_last(chat: ChatScreen, new_text: str | None = None) -> bool:
    """Take the last exchange back and send its user message again (or `new_text`, an edit
    of it). False, with a notice, when there is nothing to take back or a reply streams."""
    if chat.replying:
        chat.notify("A reply is still streaming: Esc cancels it first.", severity="warning")
        return False
    refusal = chat.chat_refusal()
    if refusal is not None:  # a model that cannot answer: nothing is taken back
        await chat.notice(refusal, kind="error")
        return False
    chat.replying = True  # no other turn starts while the log is rewritten
    ollama = await chat.engine.gateway.check()  # taken back, the exchange needs a new reply
    if not ollama.reachable:
        chat.replying = False
        why = ollama.error or f"Ollama is not reachable at {ollama.host}"
        again = "/retry" if new_text is None else "Enter resends your edit"
        await chat.notice(f"⚠ Nothing taken back: {why}. {again} once it answers.", kind="error")
        return False
    try:
        await chat.engine.drain(timeout=30)  # the last turn's points are saved: then replaced
        taken = await asyncio.to_thread(_take_back, chat, new_text)
    except Exception as error:
        chat.replying = False
        log.exception("taking back the last exchange failed")
        await chat.notice(f"⚠ Could not take back the last exchange: {error}", kind="error")
        return False
    if not taken:
        if new_text is not None:  # an edit of a message the log no longer holds: sent as is
            await chat.remove_last_exchange()  # (refused, it came back to the box for ever)
            chat.send_turn(new_text)
            return True
        chat.replying = False
        await chat.notice("Nothing to retry: this conversation has no message yet.", kind="error")
        return False
    await chat.remove_last_exchange()
    if chat.pending_image is None:  # (one attached since goes instead)
        chat.pending_image = await _image_again(chat, taken[0])
    chat.send_turn(taken[0].content if new_text is None else new_text)
    return True


async def _image_again(chat: ChatScreen, message: LogMessage) -> ImageAttachment | None:
    """The image the taken-back message carried (its path and hash are in the log), read
    again so the retry or the edit shows the model the same picture; None, with a notice
    saying why, when the file is gone or changed since."""
    from agent.image_attachment import ImageError, read_image

    path = message.extra.get("image")
    if not path:
        return None
    try:
        image = await asyncio.to_thread(read_image, path)
    except ImageError as error:
        await chat.notice(f"The image is not sent again: {error}", kind="warning")
        return None
    if image.sha256 != message.extra.get("image_sha256"):
        await chat.notice(
            f"The image is not sent again: {image.path} changed since it was sent "
            "(`/image PATH` attaches it as it is now).",
            kind="warning",
        )
        return None
    return image
