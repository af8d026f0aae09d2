"""config.toml `[keymap]`: a binding id gets new keys; unknown ids and bad types are named."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from textual.binding import Binding

from agent.settings import Settings, SettingsError, load_settings
from tests.support.ollama_standin import OllamaStandIn
from tests.support.pilot_helpers import notices, wait_until
from tui.app import StraylightApp
from tui.keymap import BINDING_IDS, key_conflicts, split_keymap


def test_every_binding_id_in_the_app_is_documented() -> None:
    from tui.screens.candidates_screen import CandidatesScreen
    from tui.screens.chat_screen import ChatScreen
    from tui.screens.confirm_screen import ConfirmScreen
    from tui.screens.conversation_reader import ConversationReader
    from tui.screens.conversations_screen import ConversationsScreen
    from tui.screens.facts_screen import FactsScreen
    from tui.screens.help_screen import HelpScreen
    from tui.screens.hypotheses_screen import HypothesesScreen
    from tui.screens.memory_browser import MemoryBrowserScreen
    from tui.screens.memory_screen import MemoryScreen
    from tui.screens.models_screen import ModelsScreen
    from tui.widgets.candidate_prompt import CandidatePrompt
    from tui.widgets.chat_input import ChatInput
    from tui.widgets.chat_message import ChatMessage
    from tui.widgets.edit_input import EditInput
    from tui.widgets.recalled_hits import RecalledHits

    ids = {
        binding.id
        for owner in (
            StraylightApp,
            ChatScreen,
            ChatInput,
            CandidatePrompt,
            HelpScreen,
            ChatMessage,
            ConfirmScreen,
            MemoryScreen,
            RecalledHits,
            ConversationsScreen,
            ConversationReader,
            FactsScreen,
            CandidatesScreen,
            HypothesesScreen,
            MemoryBrowserScreen,
            ModelsScreen,
            EditInput,
        )
        for binding in owner.BINDINGS
        if getattr(binding, "id", None)
    }
    assert ids == set(BINDING_IDS)


def test_split_keymap_keeps_known_ids_and_names_the_rest() -> None:
    known, unknown = split_keymap({"help": "f2, ctrl+h", "nope": "x"})
    assert known == {"help": "f2,ctrl+h"} and unknown == ["nope"]


def test_a_keymap_table_is_read_from_config_toml(tmp_path: Path) -> None:
    config = tmp_path / "config.toml"
    config.write_text('[keymap]\nnew_conversation = "ctrl+o"\n', encoding="utf-8")
    resolved = load_settings(environ={}, config_path=config, require_config=True)
    assert resolved.settings.keymap == {"new_conversation": "ctrl+o"}
    config.write_text("[keymap]\nnew_conversation = 5\n", encoding="utf-8")
    with pytest.raises(SettingsError, match=r"keymap\.new_conversation"):
        load_settings(environ={}, config_path=config, require_config=True)
    config.write_text('keymap = "ctrl+o"\n', encoding="utf-8")
    with pytest.raises(SettingsError, match="expected a table"):
        load_settings(environ={}, config_path=config, require_config=True)


async def test_a_remapped_key_runs_the_action_and_unknown_ids_are_named(
    make_settings: Callable[..., Settings], standin: OllamaStandIn
) -> None:
    settings = make_settings(
        ollama_host=standin.host,
        keymap={"new_conversation": "ctrl+t", "open_facts": "f10", "frobnicate": "x"},
    )
    app = StraylightApp(settings)
    async with app.run_test(size=(110, 32)) as pilot:
        await wait_until(
            pilot,
            lambda: any("frobnicate" in n for n in notices(app)),
            what="the unknown-id notice",
        )
        before = app.chat.conversation_id
        await pilot.press("ctrl+t")
        await wait_until(pilot, lambda: app.chat.conversation_id != before, what="new conversation")
        from tui.screens.facts_screen import FactsScreen

        await wait_until(pilot, lambda: app.engine.facts is not None, what="memory open")
        await pilot.press("f10")  # a screen key remapped
        await wait_until(pilot, lambda: isinstance(app.screen, FactsScreen), what="facts by F10")
        await pilot.press("escape")
        await pilot.press("f3")  # its old key no longer opens it
        await pilot.pause()
        assert not isinstance(app.screen, FactsScreen)


def test_every_chat_key_is_on_the_help_screen() -> None:
    """The Keys section is prose (it groups keys of several screens); each chat key is in it."""
    from tui.commands import CHAT_KEYS
    from tui.screens.help_screen import HELP_TEXT

    keys_section = HELP_TEXT.split("## Keys")[1].split("## Slash commands")[0]
    for key in CHAT_KEYS:
        shown = "+".join(part.capitalize() for part in key.key.split("+"))
        shown = shown.replace("Escape", "Esc")
        assert f"**{shown}**" in keys_section, key.id


def test_every_memory_screen_key_is_on_the_help_screen() -> None:
    """ "The help lists every key and screen" (README): the conversations screen's r, d and
    e (rename, delete, export) were missing from its line."""
    from tui.screens.candidates_screen import CandidatesScreen
    from tui.screens.conversations_screen import ConversationsScreen
    from tui.screens.facts_screen import FactsScreen
    from tui.screens.help_screen import HELP_TEXT
    from tui.screens.hypotheses_screen import HypothesesScreen
    from tui.screens.memory_browser import MemoryBrowserScreen
    from tui.screens.models_screen import ModelsScreen

    section = HELP_TEXT.split("## On the memory screens")[1].split("\n## ")[0]
    items = {item.split("**")[1]: item for item in section.split("\n- ")[1:]}
    screens = {
        "Memory browser": MemoryBrowserScreen,
        "Facts": FactsScreen,
        "Candidates": CandidatesScreen,
        "Hypotheses": HypothesesScreen,
        "Conversations": ConversationsScreen,
        "Models": ModelsScreen,
    }
    for title, screen in screens.items():
        for binding in screen.BINDINGS:
            assert isinstance(binding, Binding)
            shown = {"slash": "/", "enter": "Enter", "ctrl+t": "Ctrl+T"}.get(
                binding.key, binding.key
            )
            assert f"**{shown}**" in items[title], (title, binding.key)


async def test_the_help_screen_names_the_keys_config_toml_remapped(
    make_settings: Callable[..., Settings], standin: OllamaStandIn
) -> None:
    """F1's Keys section is prose with the default keys (Ctrl+N …): with `new_conversation =
    "ctrl+t"` in `[keymap]` it must not leave Ctrl+N as the only key it names."""
    from textual.widgets import Static

    from tui.screens.help_screen import HelpScreen

    settings = make_settings(
        ollama_host=standin.host, keymap={"new_conversation": "ctrl+t", "open_facts": "f3,f10"}
    )
    app = StraylightApp(settings)
    async with app.run_test(size=(110, 32)) as pilot:
        await pilot.press("f1")
        await wait_until(pilot, lambda: isinstance(app.screen, HelpScreen), what="the help")
        note = str(app.screen.query_one("#help-remaps", Static).render())
        assert "new_conversation — ctrl+t" in note
        assert "open_facts — f3, f10" in note


def test_key_conflicts_name_a_key_two_chat_bindings_would_share() -> None:
    chat = [("open_memory_browser", "f2"), ("open_facts", "f3"), ("toggle_sidebar", "ctrl+b")]
    assert key_conflicts(chat, {}) == []
    assert key_conflicts(chat, {"open_facts": "f2"}) == ["f2: open_memory_browser, open_facts"]
    assert key_conflicts(chat, {"toggle_sidebar": "F3, ctrl+b"}) == [
        "f3: open_facts, toggle_sidebar"
    ]


async def test_a_remapped_key_that_another_chat_key_has_is_named(
    make_settings: Callable[..., Settings], standin: OllamaStandIn
) -> None:
    """With two bindings on one key only one runs: say so instead of a key that does
    nothing."""
    settings = make_settings(ollama_host=standin.host, keymap={"new_conversation": "ctrl+o"})
    app = StraylightApp(settings)
    async with app.run_test(size=(110, 32)) as pilot:
        await wait_until(
            pilot,
            lambda: any(
                "ctrl+o: new_conversation" in n or "ctrl+o: open_conversations" in n
                for n in notices(app)
            ),
            what="the conflict notice",
        )


async def test_a_chat_key_remapped_onto_a_key_of_the_message_box_is_named(
    make_settings: Callable[..., Settings], standin: OllamaStandIn
) -> None:
    """The message box has the focus while you type, and its own keys (TextArea's: Ctrl+K
    deletes to the end of the line, F6 selects the line) come first: a chat key remapped
    onto one never ran, and nothing said why."""
    settings = make_settings(
        ollama_host=standin.host, keymap={"select_message": "ctrl+k", "open_facts": "f6"}
    )
    app = StraylightApp(settings)
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_until(
            pilot,
            lambda: any("one key for two" in n for n in notices(app)),
            what="the conflict notice",
        )
        [notice] = [n for n in notices(app) if "one key" in n]
        said = " ".join(notice.split())
        assert "ctrl+k: select_message, the message box's delete_to_end_of_line" in said
        assert "f6: open_facts, the message box's select_line" in said


async def test_default_chat_keys_share_no_key_with_the_message_box(
    settings: Settings, standin: OllamaStandIn
) -> None:
    app = StraylightApp(settings)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause(0.5)
        assert not any("one key for two" in n for n in notices(app))


async def test_send_and_newline_follow_the_keymap(
    make_settings: Callable[..., Settings], standin: OllamaStandIn
) -> None:
    """`send = "ctrl+s"`, `newline = "enter"`: Enter was wired into the box by hand, so it
    still sent, and Ctrl+J still broke the line."""
    from textual.widgets import TextArea

    from tests.support.pilot_helpers import type_text
    from tui.widgets.chat_message import ChatMessage

    settings = make_settings(
        ollama_host=standin.host, keymap={"send": "ctrl+s", "newline": "enter"}
    )
    app = StraylightApp(settings)
    async with app.run_test(size=(80, 24)) as pilot:
        box = app.screen.query_one(TextArea)
        # The hints name the keys as remapped ("Enter sends" was hard-coded).
        assert box.placeholder == "Message — Ctrl+S sends, Enter new line, F1 help"
        from tui.widgets.chat_message import EmptyChatHint

        (welcome,) = app.query(EmptyChatHint)
        assert "Type below and press Ctrl+S · Enter new line · F1 help" in str(welcome.render())
        await type_text(pilot, "two")
        await pilot.press("enter")
        await type_text(pilot, "lines")
        await pilot.pause(0.3)
        assert box.text == "two\nlines" and not list(app.query(ChatMessage))
        await pilot.press("ctrl+j")  # no longer a newline key; nothing happens
        assert box.text == "two\nlines"
        await pilot.press("ctrl+s")
        await wait_until(pilot, lambda: len(list(app.query(ChatMessage))) == 2, what="sent")
        assert box.text == ""
