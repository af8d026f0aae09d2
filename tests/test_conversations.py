"""The Conversations screen: the daily logs by day and conversation; read one, continue it.

Unit tests for `tui.conversation_index` over real log files in tmp, pilot tests and one
snapshot of `ConversationsScreen` on the real app (Ollama stand-in or an offline host).
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, date, datetime
from pathlib import Path

from textual.widgets import Input, TextArea, Tree

from agent.settings import Settings
from store.daily_log import DailyLog, LogMessage
from tests.conftest import FIXED_NOW
from tests.support.pilot_helpers import wait_until
from tui.app import StraylightApp
from tui.conversation_index import (
    conversation_days,
    conversation_index,
    load_conversation,
    trim_line,
)
from tui.screens.conversation_reader import ConversationReader
from tui.screens.conversation_views import ContinueConversation, ReadOnlyMessage, chat_widgets
from tui.screens.conversations_screen import ConversationsScreen
from tui.widgets.chat_message import ChatMessage

DAY_27, DAY_28, DAY_29 = date(2026, 11, 27), date(2026, 11, 28), date(2026, 11, 29)
KEYS = "20261127-091500-aaaaaa"  # one message pair on the 27th
RELEASE = "20261128-233000-bbbbbb"  # starts on the 28th, goes on past midnight
BUILD = "20261129-204000-cccccc"  # the reply was truncated by a crash
CURRENT = "20261129-210000-dddddd"  # the app's conversation in the pilot tests
OFFLINE_HOST = "127.0.0.1:9"  # the discard port: nothing listens there


def at(day: date, hour: int, minute: int) -> datetime:
    return datetime(day.year, day.month, day.day, hour, minute, tzinfo=UTC)


def say(log: DailyLog, conversation: str, when: datetime, role: str, text: str, **kw) -> None:
    """Append one message to the day file of `when` (TZ is UTC in every test)."""
    message = LogMessage(role, text, conversation, when, **kw)  # type: ignore[arg-type]
    log.append(message, when.date())


def write_sample_logs(log: DailyLog) -> None:
    """Three days, four conversations: one across midnight, one truncated, one current."""
    say(log, KEYS, at(DAY_27, 9, 15), "user", "  How do I rotate the backup keys?\nsoon")
    say(log, KEYS, at(DAY_27, 9, 16), "assistant", "Run `keys rotate`.", model="llama3.2")
    say(log, RELEASE, at(DAY_28, 23, 30), "user", "Plan the release notes for 0.4")
    say(log, RELEASE, at(DAY_28, 23, 58), "assistant", "1. Features\n2. Fixes", model="llama3.2")
    say(log, RELEASE, at(DAY_29, 0, 5), "user", "And the changelog?")
    say(log, RELEASE, at(DAY_29, 0, 6), "assistant", "Same list, dated.", model="qwen2.5")
    say(log, BUILD, at(DAY_29, 20, 40), "user", "Why did the build fail?")
    say(
        log,
        BUILD,
        at(DAY_29, 20, 41),
        "assistant",
        "The linker ran out of",
        model="llama3.2",
        status="truncated",
    )
    say(log, CURRENT, at(DAY_29, 21, 0), "user", "Hello again")
    say(log, CURRENT, at(DAY_29, 21, 1), "assistant", "Hi! What now?", model="llama3.2")


def sample_log(tmp_path: Path) -> DailyLog:
    log = DailyLog(tmp_path / "conversation")
    write_sample_logs(log)
    return log


# ---- the index ---------------------------------------------------------------------------
def test_days_newest_first_and_conversations_latest_started_first(tmp_path: Path) -> None:
    index = conversation_index(sample_log(tmp_path))
    assert [d.day for d in index] == [DAY_29, DAY_28, DAY_27]
    assert [c.conversation_id for c in index[0].conversations] == [CURRENT, BUILD, RELEASE]
    keys = index[2].conversations[0]
    assert (keys.message_count, keys.models, keys.statuses) == (2, ("llama3.2",), ())
    assert keys.first_line == "How do I rotate the backup keys?"
    assert (keys.started, keys.ended) == (at(DAY_27, 9, 15), at(DAY_27, 9, 16))


def test_a_conversation_across_midnight_is_under_both_days_and_loads_whole(
    tmp_path: Path,
) -> None:
    log = sample_log(tmp_path)
    index = conversation_index(log)
    parts = [c for d in index for c in d.conversations if c.conversation_id == RELEASE]
    assert [(p.day, p.message_count) for p in parts] == [(DAY_29, 2), (DAY_28, 2)]
    assert parts[0].first_line == "And the changelog?"
    assert parts[0].models == ("qwen2.5",)
    expected = [
        "Plan the release notes for 0.4",
        "1. Features\n2. Fixes",
        "And the changelog?",
        "Same list, dated.",
    ]
    assert [m.content for m in load_conversation(log, RELEASE)] == expected
    days = conversation_days(index)
    assert days[RELEASE] == [DAY_28, DAY_29]
    assert [m.content for m in load_conversation(log, RELEASE, days[RELEASE])] == expected


def test_a_conversation_continued_days_later_loads_across_the_gap(tmp_path: Path) -> None:
    log = sample_log(tmp_path)
    say(log, KEYS, at(DAY_29, 22, 0), "user", "Back to the keys")
    contents = [m.content for m in load_conversation(log, KEYS)]
    assert contents == [
        "  How do I rotate the backup keys?\nsoon",
        "Run `keys rotate`.",
        "Back to the keys",
    ]


def test_truncated_and_failed_messages_mark_their_conversation(tmp_path: Path) -> None:
    log = sample_log(tmp_path)
    say(log, KEYS, at(DAY_27, 9, 20), "assistant", "", model="llama3.2", status="failed")
    index = conversation_index(log)
    build = index[0].conversations[1]
    keys = index[2].conversations[0]
    assert (build.statuses, build.has_problem) == (("truncated",), True)
    assert (keys.statuses, keys.has_problem) == (("failed",), True)
    assert not index[0].conversations[0].has_problem


def test_an_empty_or_missing_data_dir_has_no_conversations(tmp_path: Path) -> None:
    missing = DailyLog(tmp_path / "nowhere")
    assert conversation_index(missing) == []
    assert load_conversation(missing, KEYS) == []
    empty = DailyLog(tmp_path / "conversation")
    empty.root.mkdir()
    (empty.root / "2026-11-29.md").write_text("")
    (empty.root / "notes.txt").write_text("### user\nnot a day file\n")
    assert conversation_index(empty) == []


def test_damaged_logs_do_not_break_the_index(tmp_path: Path) -> None:
    """Hand edits: prose before the first header, headers without metadata, broken JSON,
    a wrong-case header, CRLF line ends, bad bytes, a file name that is not a date."""
    log = DailyLog(tmp_path / "conversation")
    log.root.mkdir()
    (log.root / "2026-13-45.md").write_text("### user\nnot a real day\n")
    (log.root / "2026-11-28.md").write_bytes(
        b"# my notes\nsome prose\n\n"
        b"### user\nno metadata at all \xff\xfe\n\n"
        b"### assistant\n<!-- straylight {broken json -->\nanswer\n\n"
        b"### User\nwrong case: part of the answer\n\n"
        b'### user\r\n<!-- straylight {"time": "2026-11-28T10:00:00Z", "conversation": "x"}'
        b" -->\r\nsaved by an editor\r\n\r\n"
        b"### assistant\nno meta: inherits x\n\n"
        b'### user\n<!-- straylight {"time": "not a time", "conversation": 7} -->\nodd\n\n'
        b"### assistant\n<!-- straylight [1, 2] -->\ncut short by a cra"
    )
    index = conversation_index(log)
    assert [d.day for d in index] == [date(2026, 11, 28)]
    by_id = {c.conversation_id: c for c in index[0].conversations}
    assert set(by_id) == {"", "x"}
    assert by_id["x"].first_line == "saved by an editor"
    assert by_id["x"].started == datetime(2026, 11, 28, 10, tzinfo=UTC)
    assert by_id[""].message_count == 2  # the two before "x" (no conversation at all)
    assert by_id["x"].message_count == 4  # its own, the one inheriting it, and the last two
    assert by_id["x"].statuses == ("truncated",)
    assert load_conversation(log, "x")[0].content == "saved by an editor"


def test_trim_line_keeps_the_first_non_blank_line_and_cuts_long_ones() -> None:
    assert trim_line("\n\n   hello    world  \nsecond") == "hello world"
    assert trim_line("") == ""
    long = trim_line("word " * 40, width=20)
    assert len(long) == 20 and long.endswith("…")


def test_chat_widgets_are_what_the_chat_log_shows(tmp_path: Path) -> None:
    messages = load_conversation(sample_log(tmp_path), BUILD)
    widgets = chat_widgets(messages)
    assert [type(w) for w in widgets] == [ChatMessage, ChatMessage]
    user, reply = widgets
    assert (user.role, user.text, user.time) == (
        "user",
        "Why did the build fail?",
        at(DAY_29, 20, 40),
    )
    assert (reply.role, reply.model, reply.text) == (
        "assistant",
        "llama3.2",
        "The linker ran out of",
    )
    assert reply.status in ("truncated", "cut_off")  # a label ChatMessage knows
    assert reply.has_class("-problem") and not user.has_class("-problem")
    read_only = chat_widgets(messages, read_only=True)
    assert all(isinstance(w, ReadOnlyMessage) and not w.can_focus for w in read_only)


def test_a_failed_reply_shows_its_reason(tmp_path: Path) -> None:
    """Issue 16: the conversations screen showed "⚠ failed" without the reason."""
    log = DailyLog(tmp_path / "conversation")
    say(log, KEYS, at(DAY_27, 9, 20), "user", "Are you there?")
    reason = "Ollama is not reachable at http://127.0.0.1:11434"
    say(
        log,
        KEYS,
        at(DAY_27, 9, 20),
        "assistant",
        "",
        model="llama3.2",
        status="failed",
        reason=reason,
    )
    _user, reply = chat_widgets(load_conversation(log, KEYS))
    title = reply._title_text().plain
    assert "⚠ failed" in title and reason in title


# ---- the screen on the real app ------------------------------------------------------------
def tree_of(screen: ConversationsScreen) -> list[str]:
    """The tree as text: day lines, then their conversation lines indented (expanded days)."""
    tree: Tree[object] = screen.query_one("#conversation-tree", Tree)
    lines = []
    for day in tree.root.children:
        lines.append(day.label.plain)
        if day.is_expanded:
            lines.extend("  " + leaf.label.plain for leaf in day.children)
    return lines


def preview_texts(screen: ConversationsScreen) -> list[str]:
    return [
        m.text for m in screen.query("#conversation-preview ReadOnlyMessage").results(ChatMessage)
    ]


async def open_screen(pilot, app: StraylightApp, results: list[object]) -> ConversationsScreen:
    screen = ConversationsScreen(app.engine.daily_log, CURRENT)
    app.push_screen(screen, results.append)
    await wait_until(pilot, lambda: screen.index_complete, what="the index")
    await wait_until(pilot, lambda: len(preview_texts(screen)) >= 2, what="the preview")
    return screen


async def test_the_list_shows_days_and_conversations_and_previews_the_highlighted_one(
    settings: Settings,
) -> None:
    app = StraylightApp(settings)
    write_sample_logs(app.engine.daily_log)
    async with app.run_test(size=(110, 32)) as pilot:
        screen = await open_screen(pilot, app, [])
        assert tree_of(screen) == [
            "2026-11-29 · 3 conversations",
            "  21:00–21:01 (2) current Hello again",
            "  20:40–20:41 (2) ⚠ Why did the build fail?",
            "  00:05–00:06 (2) ↳ Plan the release notes for 0.4",  # its title, as the CLI's
            "2026-11-28 · 1 conversation",
            "  23:30–23:58 (2) Plan the release notes for 0.4",
            "2026-11-27 · 1 conversation",
            "  09:15–09:16 (2) How do I rotate the backup keys?",
        ]
        assert preview_texts(screen) == ["Hello again", "Hi! What now?"]
        await pilot.press("down")
        await wait_until(
            pilot, lambda: preview_texts(screen)[:1] == ["Why did the build fail?"], what="build"
        )
        reply = screen.query("#conversation-preview ReadOnlyMessage").results(ChatMessage)
        assert [m.has_class("-problem") for m in reply] == [False, True]
        await pilot.press("down")
        await wait_until(pilot, lambda: len(preview_texts(screen)) == 4, what="whole release")
        head = str(screen.query_one("#conversation-preview .conversation-head").render())
        assert RELEASE in head and "2 days" in head and "llama3.2, qwen2.5" in head
        assert "conversations on 3 days" in str(screen.query_one("#screen-status").render())


async def test_enter_opens_it_read_only_and_escape_comes_back(settings: Settings) -> None:
    app = StraylightApp(settings)
    write_sample_logs(app.engine.daily_log)
    async with app.run_test(size=(110, 32)) as pilot:
        screen = await open_screen(pilot, app, [])
        await pilot.press("down", "down")
        await wait_until(pilot, lambda: len(preview_texts(screen)) == 4, what="release")
        await pilot.press("enter")
        await wait_until(pilot, lambda: isinstance(app.screen, ConversationReader), what="reader")
        reader = app.screen
        assert isinstance(reader, ConversationReader) and reader.conversation_id == RELEASE
        assert len(reader.query(ReadOnlyMessage)) == 4
        assert not reader.query(Input) and not reader.query(TextArea)  # nothing to type in
        assert "── Sun 29 Nov 2026 ──" in [
            str(s.render()) for s in reader.query(".conversation-day-rule")
        ]
        await pilot.press("escape")
        await wait_until(pilot, lambda: app.screen is screen, what="back to the list")


async def test_enter_on_a_day_folds_it(settings: Settings) -> None:
    app = StraylightApp(settings)
    write_sample_logs(app.engine.daily_log)
    async with app.run_test(size=(110, 32)) as pilot:
        screen = await open_screen(pilot, app, [])
        await pilot.press("up", "enter")
        await pilot.pause()
        assert tree_of(screen)[:2] == [
            "2026-11-29 · 3 conversations",
            "2026-11-28 · 1 conversation",
        ]
        assert isinstance(app.screen, ConversationsScreen)


async def test_c_continues_the_highlighted_conversation(settings: Settings) -> None:
    app = StraylightApp(settings)
    write_sample_logs(app.engine.daily_log)
    results: list[object] = []
    async with app.run_test(size=(110, 32)) as pilot:
        screen = await open_screen(pilot, app, results)
        await pilot.press("down", "down")
        await wait_until(pilot, lambda: len(preview_texts(screen)) == 4, what="release")
        await pilot.press("c")
        await wait_until(pilot, lambda: bool(results), what="the result")
        assert not isinstance(app.screen, ConversationsScreen)
    (result,) = results
    assert isinstance(result, ContinueConversation)
    assert result.conversation_id == RELEASE
    assert [m.content for m in result.messages][::3] == [
        "Plan the release notes for 0.4",
        "Same list, dated.",
    ]
    assert result.started == at(DAY_28, 23, 30)


async def test_c_in_the_reader_continues_and_escape_twice_returns_nothing(
    settings: Settings,
) -> None:
    app = StraylightApp(settings)
    write_sample_logs(app.engine.daily_log)
    results: list[object] = []
    async with app.run_test(size=(110, 32)) as pilot:
        await open_screen(pilot, app, results)
        await pilot.press("enter")
        await wait_until(pilot, lambda: isinstance(app.screen, ConversationReader), what="reader")
        await pilot.press("c")
        await wait_until(pilot, lambda: bool(results), what="the result")
        assert [
            type(s)
            for s in app.screen_stack
            if isinstance(s, ConversationsScreen | ConversationReader)
        ] == []
        await open_screen(pilot, app, results)
        await pilot.press("escape")
        await wait_until(pilot, lambda: len(results) == 2, what="closed")
    assert isinstance(results[0], ContinueConversation) and results[0].conversation_id == CURRENT
    assert results[1] is None


async def test_at_80_by_24_with_no_logs_it_says_so(settings: Settings) -> None:
    app = StraylightApp(settings)
    async with app.run_test(size=(80, 24)) as pilot:
        screen = ConversationsScreen(app.engine.daily_log, CURRENT)
        app.push_screen(screen)
        await wait_until(pilot, lambda: screen.index_complete, what="the index")
        await pilot.pause()
        assert tree_of(screen) == []
        assert "No conversations yet" in str(screen.query_one("#screen-status").render())
        await pilot.press("c")
        assert "Highlight a conversation" in str(screen.query_one("#screen-status").render())
        assert app.screen is screen


async def test_at_80_by_24_the_list_and_preview_fit(settings: Settings) -> None:
    app = StraylightApp(settings)
    write_sample_logs(app.engine.daily_log)
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await open_screen(pilot, app, [])
        tree = screen.query_one("#conversation-tree", Tree)
        preview = screen.query_one("#conversation-preview")
        assert tree.region.width >= 30 and preview.region.width >= 40
        assert tree.region.right <= preview.region.x
        assert screen.query_one("#screen-status").region.bottom <= 23  # above the Footer


# ---- snapshot -----------------------------------------------------------------------------
def frozen_offline(make_settings: Callable[..., Settings]) -> Settings:
    """Fixed clock, no jobs, an offline host (the screen shows no host at all)."""
    from store.clock import parse_instant

    return make_settings(ollama_host=OFFLINE_HOST, jobs_enabled=False).model_copy(
        update={"now": parse_instant(FIXED_NOW)}
    )


def test_snapshot_conversations_screen(snap_compare, make_settings) -> None:
    app = StraylightApp(frozen_offline(make_settings), poll_offline_seconds=3600)
    write_sample_logs(app.engine.daily_log)

    async def run_before(pilot) -> None:
        await wait_until(pilot, lambda: app.engine.memory is not None, what="memory open")
        screen = await open_screen(pilot, app, [])
        await pilot.press("down")
        await wait_until(
            pilot, lambda: preview_texts(screen)[:1] == ["Why did the build fail?"], what="build"
        )
        await pilot.pause()

    assert snap_compare(app, terminal_size=(100, 30), run_before=run_before)


def test_snapshot_conversation_reader(snap_compare, make_settings) -> None:
    """Enter on a conversation: the whole of it, full width, read-only (no message box)."""
    app = StraylightApp(frozen_offline(make_settings), poll_offline_seconds=3600)
    write_sample_logs(app.engine.daily_log)

    async def run_before(pilot) -> None:
        await wait_until(pilot, lambda: app.engine.memory is not None, what="memory open")
        screen = await open_screen(pilot, app, [])
        await pilot.press("down", "down")
        await wait_until(pilot, lambda: len(preview_texts(screen)) == 4, what="release")
        await pilot.press("enter")
        await wait_until(pilot, lambda: isinstance(app.screen, ConversationReader), what="reader")
        await pilot.pause()

    assert snap_compare(app, terminal_size=(100, 30), run_before=run_before)
