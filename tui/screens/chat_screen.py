"""The chat screen: the chat log, the message box, the status sidebar and the chat's keys.

It keeps the conversation (its id, new and continued conversations), sends what the message
box holds (a message starts a turn, a slash command goes through the one registry,
tui/commands.py) and owns the chat's keys and actions. Its bases, each a layer on the one
before: moving around (sidebar, memory screens) in tui/screens/chat_navigation.py, the
selected message (pin, forget, copy) in chat_selection.py, the session's model and thinking
in chat_models.py, the last message's edit in chat_editing.py, approval, candidates and
reflection in chat_facts.py, the turn's events (agent/turn_events.py) into the chat log and
sidebar and Ollama's status in chat_turn.py.
Workers do the I/O and report back with messages; the handlers update widgets.
"""

from __future__ import annotations

import asyncio
from datetime import datetime
from typing import TYPE_CHECKING, ClassVar

from textual.app import ComposeResult
from textual.binding import BindingType
from textual.containers import Horizontal, Vertical
from textual.geometry import Size

from agent.turn import new_conversation_id
from tui.commands import CHAT_KEYS, CHAT_ONLY_ACTIONS
from tui.gc_pauses import freeze_long_lived, unfreeze_all
from tui.screens.chat_turn import ChatTurn
from tui.slash_router import run_slash_command, slash_refusal
from tui.widgets.chat_input import ChatInput
from tui.widgets.chat_log import ChatLog
from tui.widgets.chat_message import ChatMessage, EmptyChatHint
from tui.widgets.fitting_footer import FittingFooter
from tui.widgets.status_sidebar import SidebarState, SidebarSummary, StatusSidebar

if TYPE_CHECKING:
    from pathlib import Path

    from agent.gateway_values import OllamaStatus
    from agent.image_attachment import ImageAttachment
    from agent.model_catalog import MissingModel
    from tui.app import StraylightApp
    from tui.screens.conversation_views import ContinueConversation


class ChatScreen(ChatTurn):
    """The conversation: the box, the slash commands, the keys and actions (the turn itself
    streams in through `ChatTurn`)."""

    BINDINGS: ClassVar[list[BindingType]] = [key.binding() for key in CHAT_KEYS]

    def __init__(self, app: StraylightApp) -> None:
        settings = app.settings
        started = settings.clock.now()
        super().__init__(
            app.engine,
            SidebarState(
                host=settings.ollama.host,
                model=settings.ollama.model,
                conversation_started=started,
                longterm_budget=settings.longterm_budget_bytes,
                workspace=app.workspace,
            ),
        )
        self.settings = settings
        self.model = settings.ollama.model
        self.conversation_id = new_conversation_id(settings.clock)
        self.conversation_started: datetime = started
        self.ollama_status: OllamaStatus | None = None
        self.replying = False
        self.unreflected_turns = 0  # finished turns of this conversation since its reflection
        self.system_prompt: str | None = None  # this conversation's own (`/system`), or none
        self.editing_last = False  # the box holds the last user message, to resend edited
        self._unsaved: dict[int, tuple[ChatMessage, ChatMessage]] = {}  # turn → its messages
        self._offered_pulls: set[MissingModel] = set()  # missing models with a notice shown
        self.pending_image: ImageAttachment | None = None  # `/image PATH`, for the next message
        self.store_commands = asyncio.Lock()  # `/import`, `/recall`…: one at a time, in order

    # ---- layout ---------------------------------------------------------------------
    def compose(self) -> ComposeResult:
        with Horizontal(id="main"):
            with Vertical(id="chat-column"):
                yield SidebarSummary(id="sidebar-summary")
                with ChatLog(id="chat-log"):
                    yield EmptyChatHint()
                yield ChatInput(id="input")
            yield StatusSidebar(id="sidebar")
        yield FittingFooter()

    def on_mount(self) -> None:
        self.query_one(ChatInput).focus()
        self.chat_log.anchor()
        self.publish_sidebar()
        self.watch_longterm_file()

    def on_screen_suspend(self) -> None:
        """A screen opens over the chat: the chat's objects, alive and unchanged while it is
        open, leave the collector's full passes first (tui/gc_pauses.py)."""
        freeze_long_lived()

    def _screen_resized(self, size: Size) -> None:
        """A screen pushed over the chat gets a first Resize, which Textual passes on to the
        chat below it: the chat then laid its whole log out again for nothing, so opening F1
        or F2 slowed with the session's length (issue 16). Only a real change of size lays
        it out (Textual 8.2's hook; a size changed while suspended is laid out on resume)."""
        if size != self.outer_size:
            super()._screen_resized(size)

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """The chat's own keys work (and show in the Footer) only while the chat is on top; a
        memory screen or the help has its own keys, and Esc closes it first."""
        return not (action in CHAT_ONLY_ACTIONS and self.app.screen is not self)

    # ---- sending -----------------------------------------------------------------
    async def on_chat_input_submitted(self, message: ChatInput.Submitted) -> None:
        text = message.text
        if text.lstrip().startswith("//"):  # `//etc/hosts has…`: a message, one `/` less
            text = text.lstrip()[1:]
        elif text.lstrip().startswith("/"):
            refusal = slash_refusal(text)
            if refusal is not None:  # kept in the box: maybe a message starting with a path
                await self.notice(refusal, kind="error")
                return
            message.input.clear()
            await self.run_slash_command(text.strip())
            return
        if self.replying:
            self.notify("A reply is still streaming: Esc cancels it.", severity="warning")
            return
        refusal = self.chat_refusal()
        if refusal is not None:  # as `/model` and `ask --model`: nothing logged, text kept
            await self.notice(refusal, kind="error")
            return
        message.input.clear()
        if self.editing_last:  # the edited last message: the old exchange is superseded
            from tui.conversation_commands import retry_last

            self.editing_last = False
            if not await retry_last(self, new_text=text) and not message.input.text:
                message.input.load_text(text)  # not resent (Ollama away): the edit stays
                message.input.move_cursor(message.input.document.end)
                self.editing_last = True
            return
        self.replying = True
        self.send_turn(text)

    # ---- slash commands ----------------------------------------------------------------
    async def run_slash_command(self, line: str) -> None:
        await run_slash_command(self, line)

    async def report_unknown_bindings(self, unknown: list[str]) -> None:
        await self.notice(
            f"config.toml [keymap]: unknown binding id {', '.join(unknown)} (ignored); "
            "F1 lists the ids.",
            kind="error",
        )

    async def report_key_conflicts(self, shared: list[str]) -> None:
        await self.notice(
            f"config.toml [keymap]: one key for two bindings ({'; '.join(shared)}): only one "
            "of them runs; F1 lists the keys in use.",
            kind="error",
        )

    # ---- actions -----------------------------------------------------------------
    def action_cancel_reply(self) -> None:
        if self.replying:
            self.cancel_reply()
            self.notify("Reply cancelled; what arrived is kept.", timeout=3)

    async def action_new_conversation(self) -> None:
        self.cancel_reply()
        self.reflect_in_background()
        self.system_prompt, self.editing_last = None, False
        self.conversation_id = new_conversation_id(self.settings.clock)
        self.conversation_started = self.settings.clock.now()
        await self.chat_log.clear()
        unfreeze_all()  # the old log is garbage now: let the collector have it
        self._publish_new_conversation(self.conversation_started)
        self.notify("New conversation.", timeout=3)

    def _publish_new_conversation(self, started: datetime) -> None:
        self.publish_sidebar(
            conversation_started=started,
            last_reply=None,
            recalled=None,
            injected=(),
            injected_facts=None,
            context=None,  # the last prompt was the old conversation's
            context_headroom="ok",
            context_notes=(),
        )

    def action_open_conversations(self) -> None:
        from tui.screens.conversations_screen import ConversationsScreen

        memory = self.engine.memory
        self._open_screen(
            ConversationsScreen(
                self.engine.daily_log, self.conversation_id, memory.store if memory else None
            ),
            self._continue_conversation,
        )

    async def _continue_conversation(self, chosen: ContinueConversation | None) -> None:
        """The conversations screen chose one to continue: show it and make it current."""
        if chosen is None:
            return
        if chosen.conversation_id == self.conversation_id:
            self.notify("That is the conversation you are in.", timeout=3)
            return
        from tui.screens.conversation_views import chat_widgets

        self.cancel_reply()
        self.reflect_in_background()  # the conversation being left gets its reflection
        self.conversation_id = chosen.conversation_id
        self.system_prompt, self.editing_last = chosen.system_prompt, False
        first = chosen.started or self.settings.clock.now()
        self.conversation_started = first
        await self.chat_log.show(chat_widgets(chosen.messages))
        unfreeze_all()  # the log it replaced is garbage now
        self._publish_new_conversation(first)
        await self.notice(
            f"Continuing conversation {chosen.conversation_id}: the next message goes on it."
        )
        self.query_one(ChatInput).focus()

    async def action_retry_message(self) -> None:
        """r on the selected message: regenerate it, when it is the last reply."""
        from tui.conversation_commands import retry_last

        selected = self._selected()
        messages = list(self.chat_messages())
        replies = [m for m in messages if m.role == "assistant"]
        last_reply = bool(replies) and selected is replies[-1]
        # a failed exchange has no reply to select: its message, the last one, is retried
        unanswered = bool(messages) and selected is messages[-1] and selected.role == "user"
        if selected is None or not (last_reply or unanswered):
            self.notify("Only the last reply can be regenerated.", severity="warning")
            return
        self.query_one(ChatInput).focus()
        await retry_last(self)

    def action_edit_longterm(self) -> None:
        """Suspend the TUI, edit longterm.md in $VISUAL / $EDITOR, re-read it after."""
        from textual.app import SuspendNotSupported

        from tui.external_editor import EditorError, edit_file

        path = self.engine.longterm.path
        failed: EditorError | OSError | None = None
        try:
            self.engine.longterm.ensure_template()
            before = _file_stamp(path)
            try:
                with self.app.suspend():  # the editor owns the terminal until it exits
                    # caught in here: Textual's suspend() resumes the app only when its block
                    # ends normally (an exception left the terminal cooked and the app deaf)
                    try:
                        edit_file(path)
                    except (EditorError, OSError) as error:
                        failed = error
            except SuspendNotSupported:
                if not self.app.is_headless:
                    raise EditorError(
                        f"this terminal cannot hand over to an editor; edit {path} yourself"
                    ) from None
                edit_file(path)  # headless (tests): there is no terminal to hand over
        except (EditorError, OSError) as error:
            failed = error
        if failed is not None:
            self.notify(str(failed), severity="error", timeout=8)
            return
        self.check_status()  # re-reads longterm.md and updates the sidebar
        if _file_stamp(path) == before:  # the editor quit without writing (`:q!`)
            self.notify(f"longterm.md unchanged ({path})", timeout=4)
        else:
            self.notify(f"longterm.md saved; the next turn reads it ({path})", timeout=4)


def _file_stamp(path: Path) -> tuple[int, int] | None:
    """(mtime in ns, size) of a file, None when it is gone: a write changes it."""
    try:
        stat = path.stat()
    except OSError:
        return None
    return stat.st_mtime_ns, stat.st_size
