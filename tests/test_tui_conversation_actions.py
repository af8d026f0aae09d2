"""Conversations you manage, in the TUI (issue 16): `/title`, `/system` (sent, shown,
carried when continued), `/retry` and r on the last reply, editing the last message (Up in an
empty box, e on it), and r / d / e on the conversations screen; one 80x24 snapshot.

The real app against the real-HTTP stand-in, a real DuckDB and usearch in a temp data dir.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

import pytest
from textual.pilot import Pilot

from agent.settings import Settings
from memory.conversation_notes import ConversationNotes
from store.daily_log import DailyLog, LogMessage
from store.private_files import SymlinkRefused
from tests.support.ollama_standin import OllamaStandIn
from tests.support.pilot_helpers import notices, type_text, wait_until
from tests.test_conversations import (
    BUILD,
    CURRENT,
    KEYS,
    frozen_offline,
    preview_texts,
    tree_of,
    write_sample_logs,
)
from tui.app import StraylightApp
from tui.screens.confirm_screen import ConfirmScreen
from tui.screens.conversation_actions import TitlePrompt, export_conversation
from tui.screens.conversations_screen import ConversationsScreen
from tui.widgets.chat_input import ChatInput
from tui.widgets.chat_message import ChatMessage

SIZE = (110, 32)
QUESTION = "Which flour gives the most open crumb in a sourdough loaf, and why does it?"
FIRST = "Bread flour: more gluten traps more gas, so the crumb opens up more than with others."
SECOND = "High-protein bread flour, because its gluten network holds the gas of fermentation."


def messages(app: StraylightApp) -> list[ChatMessage]:
    return list(app.query(ChatMessage))


def logged(app: StraylightApp) -> list[LogMessage]:
    log = app.engine.daily_log
    return [m for day in log.days() for m in log.read_day(day)]


def notes(app: StraylightApp) -> ConversationNotes:
    assert app.engine.memory is not None
    return ConversationNotes(app.engine.memory.store)


def points_of(app: StraylightApp) -> list[tuple[str, str]]:
    assert app.engine.memory is not None
    store = app.engine.memory.store
    return sorted((p.role, p.content) for p in store.points.list_points())


async def ready(pilot, app: StraylightApp) -> None:
    await wait_until(pilot, lambda: app.engine.memory is not None, what="memory open")


async def send(pilot, app: StraylightApp, text: str, replies: int) -> None:
    """Send `text`; wait until `replies` replies are complete and their points saved."""
    await send_line(pilot, app, text)
    await wait_until(
        pilot,
        lambda: (
            not app.chat.replying
            and sum(1 for m in messages(app) if m.role == "assistant" and m.status == "complete")
            == replies
        ),
        what=f"{replies} replies",
    )
    await app.engine.drain()


async def exchange_shown(pilot, app: StraylightApp, user: str, reply: str) -> None:
    """Wait until the chat shows exactly this exchange, complete, and its points are saved."""
    await wait_until(
        pilot,
        lambda: (
            [m.text for m in messages(app)] == [user, reply]
            and messages(app)[1].status == "complete"
        ),
        what=f"the exchange {user[:20]!r} → {reply[:20]!r}",
    )
    await app.engine.drain()


async def command(pilot, app: StraylightApp, line: str) -> str:
    before = len(notices(app))
    await send_line(pilot, app, line)
    await wait_until(pilot, lambda: len(notices(app)) > before, what=line)
    return notices(app)[-1]


async def send_line(pilot, app: StraylightApp, line: str) -> None:
    box = app.query_one(ChatInput)
    box.focus()
    box.load_text(line)
    await pilot.press("enter")


async def test_title_sets_and_shows_and_is_proposed_from_the_first_message(
    settings: Settings, standin: OllamaStandIn
) -> None:
    app = StraylightApp(settings)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot, app)
        assert "No title yet" in await command(pilot, app, "/title")
        await send(pilot, app, "# Sourdough at altitude\nmore text", 1)
        shown = await command(pilot, app, "/title")
        assert "Sourdough at altitude (proposed from the first message" in shown
        assert await command(pilot, app, "/title   Baking  notes ") == "Title: Baking notes"
        assert notes(app).get(app.chat.conversation_id).title == "Baking notes"
        assert "Baking notes (`/title TEXT` changes it)" in await command(pilot, app, "/title")


async def test_system_prompt_is_sent_shown_cleared_and_never_a_point(
    settings: Settings, standin: OllamaStandIn
) -> None:
    app = StraylightApp(settings)
    prompt = "You are a terse baker who answers in exactly one sentence, always about bread."
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot, app)
        assert "the persona applies" in await command(pilot, app, "/system")
        shown = await command(pilot, app, f"/system {prompt}")
        assert prompt in shown
        await send(pilot, app, QUESTION, 1)
        system = standin.chat_requests()[-1]["messages"][0]["content"]
        assert system.startswith(prompt) and "You are Straylight" not in system
        assert prompt in await command(pilot, app, "/system")
        assert all(prompt not in content for _role, content in points_of(app))
        assert "the persona applies" in await command(pilot, app, "/system --clear")
        await send(pilot, app, "And rye flour, what does it do to the crumb of the loaf?", 2)
        system = standin.chat_requests()[-1]["messages"][0]["content"]
        assert system.startswith("You are Straylight")


async def test_a_system_prompt_too_long_for_the_window_is_named_as_the_cause(
    settings: Settings, standin: OllamaStandIn
) -> None:
    """The message was refused as if the persona and the tools were too long ("Raise
    num_ctx"), not the conversation's own `/system` text the user can shorten or clear."""
    app = StraylightApp(settings)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot, app)
        await command(pilot, app, "/system " + "Answer as a pirate would, at length. " * 4000)
        said = await command(pilot, app, "hi")
        assert said.startswith("⚠ Not sent: this conversation's system prompt alone takes")
        assert said.endswith("Shorten or clear it, or raise num_ctx.")
        assert standin.chat_requests() == []


async def test_the_system_prompt_is_carried_when_a_conversation_is_continued(
    settings: Settings, standin: OllamaStandIn
) -> None:
    app = StraylightApp(settings)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot, app)
        await command(pilot, app, "/system Answer as a pirate.")
        await send(pilot, app, QUESTION, 1)
        first = app.chat.conversation_id
        await pilot.press("ctrl+n")
        await wait_until(pilot, lambda: app.chat.conversation_id != first, what="new chat")
        assert app.chat.system_prompt is None
        await pilot.press("ctrl+o")
        await wait_until(pilot, lambda: isinstance(app.screen, ConversationsScreen), what="list")
        screen = app.screen
        assert isinstance(screen, ConversationsScreen)
        await wait_until(pilot, lambda: bool(preview_texts(screen)), what="preview")
        head = str(screen.query_one("#conversation-preview .conversation-head").render())
        assert "system prompt: Answer as a pirate." in head
        await pilot.press("c")
        await wait_until(pilot, lambda: app.chat.conversation_id == first, what="continued")
        assert app.chat.system_prompt == "Answer as a pirate."
        await send(pilot, app, "And rye flour, what does it do to the crumb of the loaf?", 2)
        assert standin.chat_requests()[-1]["messages"][0]["content"].startswith("Answer as a")


async def test_retry_supersedes_the_reply_and_replaces_its_point(
    settings: Settings, standin: OllamaStandIn
) -> None:
    app = StraylightApp(settings)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot, app)
        standin.script_reply(FIRST)
        await send(pilot, app, QUESTION, 1)
        assert points_of(app) == sorted([("user", QUESTION), ("assistant", FIRST)])
        standin.script_reply(SECOND)
        await send_line(pilot, app, "/retry")
        await exchange_shown(pilot, app, QUESTION, SECOND)
        assert [(m.role, m.content, m.status) for m in logged(app)] == [
            ("user", QUESTION, "superseded"),
            ("assistant", FIRST, "superseded"),
            ("user", QUESTION, "complete"),
            ("assistant", SECOND, "complete"),
        ]
        assert points_of(app) == sorted([("user", QUESTION), ("assistant", SECOND)])
        # the history sent with the next turn skips the superseded pair
        await send(pilot, app, "Thanks, and what hydration works best for bread flour?", 2)
        sent = [m["content"] for m in standin.chat_requests()[-1]["messages"][1:]]
        assert FIRST not in sent and sent.count(QUESTION) == 1 and SECOND in sent


async def test_retry_with_a_model_that_cannot_chat_takes_nothing_back(
    settings: Settings, standin: OllamaStandIn
) -> None:
    """The session's model is one Ollama says cannot chat (an embedding model given at the
    start): /retry superseded the good exchange, then failed with Ollama's HTTP 400, so the
    conversation lost its reply. It is refused first, as a new message is, and the log keeps
    the exchange as it was."""
    app = StraylightApp(settings)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot, app)
        standin.script_reply(FIRST)
        await send(pilot, app, QUESTION, 1)
        await wait_until(
            pilot,
            lambda: (
                app.chat.ollama_status is not None and bool(app.chat.ollama_status.capabilities)
            ),
            what="the models' capabilities",
        )
        requests = len(standin.chat_requests())
        app.chat.model = "nomic-embed-text"  # as `straylight --model nomic-embed-text` starts
        await send_line(pilot, app, "/retry")
        await wait_until(
            pilot, lambda: any("cannot chat" in n for n in notices(app)), what="the refusal"
        )
        assert [(m.role, m.content, m.status) for m in logged(app)] == [
            ("user", QUESTION, "complete"),
            ("assistant", FIRST, "complete"),
        ]
        assert len(standin.chat_requests()) == requests


async def test_retry_while_ollama_is_down_takes_nothing_back(
    settings: Settings, standin: OllamaStandIn
) -> None:
    """Ollama went away after the reply: /retry superseded the good exchange and forgot its
    points, then failed to reach Ollama, so the conversation was left without its reply. It
    asks Ollama first; unreachable, nothing is taken back and the notice says why."""
    app = StraylightApp(settings)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot, app)
        standin.script_reply(FIRST)
        await send(pilot, app, QUESTION, 1)
        before = points_of(app)
        standin.stop()
        await send_line(pilot, app, "/retry")
        await wait_until(
            pilot, lambda: any("Nothing taken back" in n for n in notices(app)), what="refusal"
        )
        assert [(m.role, m.content, m.status) for m in logged(app)] == [
            ("user", QUESTION, "complete"),
            ("assistant", FIRST, "complete"),
        ]
        assert points_of(app) == before == sorted([("user", QUESTION), ("assistant", FIRST)])
        assert not app.chat.replying  # the next message or /retry can go


def pinned_points(app: StraylightApp) -> list[tuple[str, str, tuple[str, ...]]]:
    assert app.engine.memory is not None
    store = app.engine.memory.store
    return sorted((p.role, p.content, p.tags) for p in store.points.list_points() if p.pinned)


def pin(app: StraylightApp, role: str, text: str) -> None:
    assert app.engine.memory is not None
    store = app.engine.memory.store
    point = next(p for p in store.points.list_points() if (p.role, p.content) == (role, text))
    assert store.set_pinned(point.id, True)


async def last_message_back(pilot: Pilot, app: StraylightApp) -> ChatInput:
    """Up in the empty box: the last message (QUESTION) back in it, to edit."""
    box = app.query_one(ChatInput)
    box.focus()
    await pilot.press("up")
    await wait_until(pilot, lambda: box.text == QUESTION, what="the last message back")
    return box


async def edit_resent(
    pilot: Pilot, app: StraylightApp, standin: OllamaStandIn, edited: str
) -> None:
    """Enter sends the edit: the old exchange superseded, the edit and its reply complete."""
    standin.script_reply(SECOND)
    await pilot.press("enter")
    await exchange_shown(pilot, app, edited, SECOND)
    assert [(m.content, m.status) for m in logged(app)] == [
        (QUESTION, "superseded"),
        (FIRST, "superseded"),
        (edited, "complete"),
        (SECOND, "complete"),
    ]


async def test_retry_keeps_a_pinned_reply_pinned_and_tags_it_superseded(
    settings: Settings, standin: OllamaStandIn
) -> None:
    app = StraylightApp(settings)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot, app)
        standin.script_reply(FIRST)
        await send(pilot, app, QUESTION, 1)
        pin(app, "assistant", FIRST)
        pin(app, "user", QUESTION)
        standin.script_reply(SECOND)
        await send_line(pilot, app, "/retry")
        await exchange_shown(pilot, app, QUESTION, SECOND)
        # the pinned reply stays pinned, marked; the pin does not move to the new reply;
        # the pinned question, sent again unchanged, is neither marked nor saved twice
        assert pinned_points(app) == sorted(
            [("assistant", FIRST, ("superseded",)), ("user", QUESTION, ())]
        )
        assert points_of(app) == sorted(
            [("user", QUESTION), ("assistant", FIRST), ("assistant", SECOND)]
        )
        assert app.engine.memory is not None
        superseded = app.engine.memory.store.points.audit_events(event="point_superseded")
        assert len(superseded) == 1 and superseded[0].reason == "superseded by a retry or an edit"
        # retried again: the unpinned SECOND goes, the pinned FIRST stays as it was
        standin.script_reply("A third answer about bread flour and the gluten it brings along.")
        await send_line(pilot, app, "/retry")
        await exchange_shown(
            pilot, app, QUESTION, "A third answer about bread flour and the gluten it brings along."
        )
        assert ("assistant", SECOND) not in points_of(app)
        assert ("assistant", FIRST, ("superseded",)) in pinned_points(app)


async def test_an_edit_tags_the_pinned_question_it_replaces(
    settings: Settings, standin: OllamaStandIn
) -> None:
    app = StraylightApp(settings)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot, app)
        standin.script_reply(FIRST)
        await send(pilot, app, QUESTION, 1)
        pin(app, "user", QUESTION)
        await last_message_back(pilot, app)
        await type_text(pilot, " Short please.")
        edited = QUESTION + " Short please."
        standin.script_reply(SECOND)
        await pilot.press("enter")
        await exchange_shown(pilot, app, edited, SECOND)
        assert pinned_points(app) == [("user", QUESTION, ("superseded",))]
        assert points_of(app) == sorted(
            [("user", QUESTION), ("user", edited), ("assistant", SECOND)]
        )


async def test_retry_with_nothing_to_retry_says_so(
    settings: Settings, standin: OllamaStandIn
) -> None:
    app = StraylightApp(settings)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot, app)
        assert "Nothing to retry" in await command(pilot, app, "/retry")
        assert not app.chat.replying and standin.chat_requests() == []


async def test_r_on_the_selected_last_reply_regenerates_it(
    settings: Settings, standin: OllamaStandIn
) -> None:
    app = StraylightApp(settings)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot, app)
        standin.script_reply(FIRST)
        await send(pilot, app, QUESTION, 1)
        standin.script_reply(SECOND)
        await pilot.press("ctrl+up")  # selects the last message: the reply
        await wait_until(pilot, lambda: app.focused is messages(app)[-1], what="selected")
        await pilot.press("r")
        await exchange_shown(pilot, app, QUESTION, SECOND)
        assert [m.status for m in logged(app)][:2] == ["superseded", "superseded"]
        await pilot.press("ctrl+up", "up", "r")  # the user message: not a reply
        await pilot.pause()
        assert len(logged(app)) == 4


async def test_up_in_an_empty_box_edits_the_last_message_and_resends_it(
    settings: Settings, standin: OllamaStandIn
) -> None:
    app = StraylightApp(settings)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot, app)
        standin.script_reply(FIRST)
        await send(pilot, app, QUESTION, 1)
        await last_message_back(pilot, app)
        await pilot.press("end", "backspace")
        await type_text(pilot, " Be brief!")
        edited = QUESTION[:-1] + " Be brief!"
        await edit_resent(pilot, app, standin, edited)
        assert points_of(app) == sorted([("user", edited), ("assistant", SECOND)])


async def test_an_edit_sent_while_ollama_is_down_stays_in_the_box(
    settings: Settings, standin: OllamaStandIn
) -> None:
    """The box was cleared before the retry asked Ollama: unreachable, nothing was taken
    back, and the edit was gone with it. It stays, still an edit, and goes once Ollama is
    back (the notice no longer says `/retry`, which would send the old text)."""
    app = StraylightApp(settings)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot, app)
        standin.script_reply(FIRST)
        await send(pilot, app, QUESTION, 1)
        box = await last_message_back(pilot, app)
        edited = QUESTION + " Be brief!"
        box.load_text(edited)
        standin.stop()
        await pilot.press("enter")
        await wait_until(
            pilot, lambda: any("Nothing taken back" in n for n in notices(app)), what="refusal"
        )
        assert "Enter resends your edit once it answers" in notices(app)[-1]
        await pilot.pause()
        assert box.text == edited and app.chat.editing_last
        standin.start()
        await edit_resent(pilot, app, standin, edited)


async def test_an_edit_the_log_has_nothing_to_supersede_for_is_sent_as_a_new_message(
    settings: Settings, standin: OllamaStandIn
) -> None:
    """The day file was removed under the chat: the edit found nothing to take back, said
    "Nothing to retry", and (kept in the box, still an edit) could never be sent."""
    app = StraylightApp(settings)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot, app)
        standin.script_reply(FIRST)
        await send(pilot, app, QUESTION, 1)
        for day in app.engine.daily_log.days():
            app.engine.daily_log.path_for(day).unlink()
        box = await last_message_back(pilot, app)
        edited = QUESTION + " Be brief!"
        box.load_text(edited)
        standin.script_reply(SECOND)
        await pilot.press("enter")
        await exchange_shown(pilot, app, edited, SECOND)
        assert [(m.content, m.status) for m in logged(app)] == [
            (edited, "complete"),
            (SECOND, "complete"),
        ]
        assert box.text == "" and not app.chat.editing_last


async def test_e_on_the_selected_last_user_message_puts_it_in_the_box(
    settings: Settings, standin: OllamaStandIn
) -> None:
    app = StraylightApp(settings)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot, app)
        await send(pilot, app, QUESTION, 1)
        await pilot.press("ctrl+up", "up")
        await wait_until(pilot, lambda: app.focused is messages(app)[0], what="user message")
        await pilot.press("e")
        box = app.query_one(ChatInput)
        await wait_until(pilot, lambda: box.text == QUESTION and box.has_focus, what="edit")
        assert app.chat.editing_last
        box.clear()  # emptied: the next message is a new one, nothing is superseded
        await pilot.pause()
        assert not app.chat.editing_last


async def test_rename_delete_and_export_on_the_conversations_screen(
    settings: Settings, standin: OllamaStandIn, home: Path
) -> None:
    app = StraylightApp(settings)
    write_sample_logs(app.engine.daily_log)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot, app)
        app.chat.conversation_id = CURRENT
        await pilot.press("ctrl+o")
        await wait_until(pilot, lambda: isinstance(app.screen, ConversationsScreen), what="list")
        screen = app.screen
        assert isinstance(screen, ConversationsScreen)
        await wait_until(pilot, lambda: screen.index_complete and bool(preview_texts(screen)))

        await pilot.press("d")  # the current conversation: refused
        assert "the conversation you are in" in str(screen.query_one("#screen-status").render())

        await pilot.press("down", "r")  # BUILD
        await wait_until(pilot, lambda: isinstance(app.screen, TitlePrompt), what="prompt")
        await pilot.press("end")
        for _ in range(len("Why did the build fail?")):
            await pilot.press("backspace")
        await type_text(pilot, "Linker OOM")
        await pilot.press("enter")
        await wait_until(
            pilot, lambda: "  20:40–20:41 (2) ⚠ Linker OOM" in tree_of(screen), what="renamed"
        )
        assert notes(app).get(BUILD).title == "Linker OOM"

        await wait_until(pilot, lambda: bool(preview_texts(screen)), what="preview again")
        assert preview_texts(screen)[0] == "Why did the build fail?"  # the cursor stayed on it
        assert screen.highlighted is not None and screen.highlighted.conversation_id == BUILD
        screen.conversation_tree.move_cursor(
            next(n for n in _leaves(screen) if n.data.conversation_id == KEYS)
        )
        await pilot.press("e")
        exported = home / "exports" / f"{KEYS}.md"
        await wait_until(pilot, exported.exists, what="export")
        assert "How do I rotate the backup keys?" in exported.read_text("utf-8")

        await pilot.press("d")
        await wait_until(pilot, lambda: isinstance(app.screen, ConfirmScreen), what="question")
        await pilot.press("y")
        await wait_until(
            pilot, lambda: not any(KEYS in m.conversation_id for m in logged(app)), what="gone"
        )
        await wait_until(pilot, lambda: screen.index_complete, what="reloaded")
        assert not any("backup keys" in line for line in tree_of(screen))
        assert "Deleted" in str(screen.query_one("#screen-status").render())


def _leaves(screen: ConversationsScreen) -> list:
    return [leaf for day in screen.conversation_tree.root.children for leaf in day.children]


def test_snapshot_conversations_screen_at_80x24_with_a_title_and_system_prompt(
    snap_compare, make_settings: Callable[..., Settings]
) -> None:
    app = StraylightApp(frozen_offline(make_settings), poll_offline_seconds=3600)
    write_sample_logs(app.engine.daily_log)

    async def run_before(pilot) -> None:
        await ready(pilot, app)
        book = notes(app)
        book.set_title(BUILD, "Linker out of memory")
        book.set_system_prompt(BUILD, "Answer as a build engineer.")
        screen = ConversationsScreen(app.engine.daily_log, CURRENT, app.engine.memory.store)
        app.push_screen(screen)
        await wait_until(pilot, lambda: screen.index_complete, what="the index")
        await wait_until(pilot, lambda: bool(preview_texts(screen)), what="the preview")
        await pilot.press("down")
        await wait_until(
            pilot, lambda: preview_texts(screen)[:1] == ["Why did the build fail?"], what="build"
        )
        await pilot.pause()

    assert snap_compare(app, terminal_size=(80, 24), run_before=run_before)


async def test_the_day_line_reads_date_dot_count_at_80_columns(
    make_settings: Callable[..., Settings],
) -> None:
    """Issue 16: at 80 columns the day line read "Sun 29 Nov 20263 conversations"."""
    app = StraylightApp(frozen_offline(make_settings), poll_offline_seconds=3600)
    write_sample_logs(app.engine.daily_log)
    async with app.run_test(size=(80, 24)) as pilot:
        await ready(pilot, app)
        screen = ConversationsScreen(app.engine.daily_log, CURRENT, app.engine.memory.store)
        app.push_screen(screen)
        await wait_until(pilot, lambda: screen.index_complete, what="the index")
        await pilot.pause()
        tree = screen.conversation_tree
        lines = [tree.render_line(y).text.rstrip() for y in range(tree.size.height)]
        days = [line for line in lines if "conversation" in line and "·" in line]
        assert [line.lstrip("▼▶ ") for line in days] == [
            "2026-11-29 · 3 conversations",
            "2026-11-28 · 1 conversation",
            "2026-11-27 · 1 conversation",
        ]


def test_an_export_is_never_written_through_an_exports_link(tmp_path: Path) -> None:
    """`exports/` is Straylight's own folder in the data dir: a link planted there would
    carry a whole conversation to wherever it points (README, Security: links)."""
    log = DailyLog(tmp_path / "home" / "conversation")
    write_sample_logs(log)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (tmp_path / "home" / "exports").symlink_to(elsewhere, target_is_directory=True)
    with pytest.raises(SymlinkRefused):
        export_conversation(log, None, KEYS)
    assert list(elsewhere.iterdir()) == []


async def test_deleting_the_only_conversation_clears_its_preview_and_counts_one_point(
    settings: Settings, standin: OllamaStandIn
) -> None:
    """At 80x24: after d deleted the only conversation in the list, the list was empty but
    the preview still showed the deleted conversation, and the status line said
    "1 memory points forgotten"."""
    app = StraylightApp(settings)
    async with app.run_test(size=(80, 24)) as pilot:
        await ready(pilot, app)
        standin.script_reply(FIRST)
        await send(pilot, app, QUESTION, 1)
        pin(app, "user", QUESTION)  # pinned: kept, so one point is forgotten
        first = app.chat.conversation_id
        await pilot.press("ctrl+n")
        await wait_until(pilot, lambda: app.chat.conversation_id != first, what="new chat")
        await pilot.press("ctrl+o")
        await wait_until(pilot, lambda: isinstance(app.screen, ConversationsScreen), what="list")
        screen = app.screen
        assert isinstance(screen, ConversationsScreen)
        await wait_until(pilot, lambda: screen.index_complete and bool(preview_texts(screen)))
        await pilot.press("d")
        await wait_until(pilot, lambda: isinstance(app.screen, ConfirmScreen), what="question")
        await pilot.press("y")
        await wait_until(pilot, lambda: not logged(app), what="deleted")
        await wait_until(pilot, lambda: screen.index_complete, what="reloaded")
        await wait_until(pilot, lambda: not preview_texts(screen), what="the preview cleared")
        assert tree_of(screen) == []
        status = str(screen.query_one("#screen-status").render())
        assert status.endswith(": 2 messages, 1 memory point forgotten.")


async def test_r_on_the_message_of_a_failed_exchange_retries_it(
    settings: Settings, standin: OllamaStandIn
) -> None:
    """A failed exchange has no reply to select, so Ctrl+Up selects its message, and the
    footer offers r: r answered "Only the last reply can be regenerated." while /retry
    worked."""
    app = StraylightApp(settings)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot, app)
        standin.fail_next("status", status=500, message="boom", path="/api/chat")
        await send_line(pilot, app, QUESTION)
        await wait_until(pilot, lambda: not app.chat.replying and bool(logged(app)), what="fail")
        await wait_until(pilot, lambda: len(logged(app)) == 2, what="the failed reply logged")
        standin.script_reply(SECOND)
        await pilot.press("ctrl+up")
        assert isinstance(app.focused, ChatMessage), app.focused
        await pilot.press("r")
        await wait_until(
            pilot,
            lambda: (
                [(m.role, m.content, m.status) for m in logged(app)][-2:]
                == [("user", QUESTION, "complete"), ("assistant", SECOND, "complete")]
            ),
            what="the retried exchange",
        )
        assert not any("Only the last reply" in str(n.message) for n in app._notifications)


@pytest.mark.parametrize("hostile", ["ABSOLUTE", "../../pwned", "..", ".hidden"])
def test_an_export_stays_in_exports_whatever_id_a_copied_day_file_names(
    tmp_path: Path, hostile: str
) -> None:
    """A day file copied in (the README invites it) names its conversation: an absolute id
    or one with `..` was joined as a path, and e on the conversations screen replaced the
    user's file outside the data dir without a question."""
    precious = tmp_path / "precious"
    precious.with_suffix(".md").write_text("precious notes\n")
    cid = str(precious) if hostile == "ABSOLUTE" else hostile
    log = DailyLog(tmp_path / "home" / "conversation")
    when = datetime(2026, 11, 29, 10, tzinfo=UTC)
    log.append(LogMessage("user", "a copied-in question", cid, when), when.date())
    path = export_conversation(log, None, cid)
    exports = tmp_path / "home" / "exports"
    assert path.parent == exports and path.name.endswith(".md")
    assert not path.name.startswith(".")
    assert "a copied-in question" in path.read_text()
    assert precious.with_suffix(".md").read_text() == "precious notes\n"
    assert sorted(p.name for p in tmp_path.rglob("*.md") if exports not in p.parents) == [
        "2026-11-29.md",
        "precious.md",
    ]
