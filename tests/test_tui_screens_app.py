"""The memory screens from the chat: their keys, slash commands and palette entries, and
continuing an old conversation (its history reaches the next prompt)."""

from __future__ import annotations

from datetime import UTC, date, datetime

from agent.settings import Settings
from store.daily_log import DailyLog, LogMessage
from tests.support.ollama_standin import OllamaStandIn
from tests.support.pilot_helpers import type_text, wait_until
from tui.app import StraylightApp
from tui.commands import SLASH_COMMANDS, palette_commands
from tui.screens.conversations_screen import ConversationsScreen
from tui.widgets.chat_message import ChatMessage

SIZE = (110, 32)
OLD = "20261101-090000-abcdef"


def write_old_conversation(log: DailyLog) -> None:
    when = datetime(2026, 11, 1, 9, 0, tzinfo=UTC)
    log.append(LogMessage("user", "Our staging box is nebula-7.", OLD, when), date(2026, 11, 1))
    log.append(
        LogMessage("assistant", "Noted: staging is nebula-7.", OLD, when, model="llama3.2"),
        date(2026, 11, 1),
    )


async def test_ctrl_o_then_c_continues_an_old_conversation_with_its_history(
    settings: Settings, standin: OllamaStandIn
) -> None:
    app = StraylightApp(settings)
    write_old_conversation(app.engine.daily_log)
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(pilot, lambda: app.engine.memory is not None, what="memory open")
        await pilot.press("ctrl+o")
        await wait_until(pilot, lambda: isinstance(app.screen, ConversationsScreen), what="open")
        screen = app.screen
        assert isinstance(screen, ConversationsScreen)
        await wait_until(pilot, lambda: screen.index_complete, what="the index")
        await pilot.press("down")  # from the day line to its conversation
        await pilot.press("c")
        await wait_until(pilot, lambda: app.chat.conversation_id == OLD, what="continued")
        assert [m.text for m in app.query(ChatMessage)] == [
            "Our staging box is nebula-7.",
            "Noted: staging is nebula-7.",
        ]
        standin.clear_requests()
        standin.script_reply("Yes, nebula-7.")
        await type_text(pilot, "which box was staging")
        await pilot.press("enter")
        await wait_until(pilot, lambda: bool(standin.chat_requests()), what="the chat request")
        history = [m["content"] for m in standin.chat_requests()[-1]["messages"]]
        assert "Noted: staging is nebula-7." in history
        await wait_until(pilot, lambda: not app.replying, what="the reply")
    logged = app.engine.daily_log.recent(OLD, 10)
    assert [m.content for m in logged][-2:] == ["which box was staging", "Yes, nebula-7."]


async def test_every_screen_opens_by_key_and_by_slash_command_and_esc_closes_it(
    settings: Settings, standin: OllamaStandIn
) -> None:
    from tui.screens.candidates_screen import CandidatesScreen
    from tui.screens.facts_screen import FactsScreen
    from tui.screens.hypotheses_screen import HypothesesScreen
    from tui.screens.memory_browser import MemoryBrowserScreen

    screens = {
        "f2": ("/recall", MemoryBrowserScreen),
        "f3": ("/facts", FactsScreen),
        "f4": ("/candidates", CandidatesScreen),
        "f5": ("/hypotheses", HypothesesScreen),
        "ctrl+o": ("/conversations", ConversationsScreen),
    }
    app = StraylightApp(settings)
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(pilot, lambda: app.engine.facts is not None, what="memory open")
        on_chat = {c.title for c in app.get_system_commands(app.screen)}
        assert {"Memory browser", "Facts", "Conversations", "Edit longterm.md"} <= on_chat
        await pilot.press("f3")
        await wait_until(pilot, lambda: isinstance(app.screen, FactsScreen), what="facts")
        on_facts = {c.title for c in app.get_system_commands(app.screen)}
        assert "Memory browser" not in on_facts and "Help: keys and commands" in on_facts
        await pilot.press("escape")
        for key, (command, kind) in screens.items():
            await pilot.press(key)
            await wait_until(pilot, lambda k=kind: isinstance(app.screen, k), what=key)
            await pilot.press("escape")
            await wait_until(pilot, lambda k=kind: not isinstance(app.screen, k), what="closed")
            await type_text(pilot, command)
            await pilot.press("enter")
            await wait_until(pilot, lambda k=kind: isinstance(app.screen, k), what=command)
            await pilot.press("escape")
            await wait_until(pilot, lambda k=kind: not isinstance(app.screen, k), what="closed")


def test_every_screen_command_has_a_palette_entry() -> None:
    palette = {command for command, _title, _help in palette_commands()}
    assert {name for name, command in SLASH_COMMANDS.items() if command.opens} <= palette


async def test_model_switching_offers_only_models_that_can_chat(
    settings: Settings, standin: OllamaStandIn
) -> None:
    """By what /api/show says, not by name: an embedding model called like a chat model is
    not offered, a chat model whose name says 'embed' nowhere is."""
    from tui.widgets.chat_message import ChatNotice

    standin.set_models(
        ["llama3.2", "qwen3:8b", "nomic-embed-text", "bge-large"],
        capabilities={"bge-large": ["embedding"]},
    )
    app = StraylightApp(settings)
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(
            pilot,
            lambda: app.chat.ollama_status is not None and app.chat.ollama_status.reachable,
            what="Ollama online",
        )
        titles = {c.title for c in app.get_system_commands(app.screen)}
        switches = {t.removeprefix("Switch model: ") for t in titles if t.startswith("Switch")}
        assert switches == {"llama3.2:latest", "qwen3:8b"}
        await type_text(pilot, "/model")
        await pilot.press("enter")
        await wait_until(pilot, lambda: bool(app.query(ChatNotice)), what="the model list")
        listed = str(list(app.query(ChatNotice))[-1].render())
        assert "qwen3:8b" in listed and "llama3.2" in listed
        assert "bge-large" not in listed and "nomic-embed-text" not in listed
