"""Layer 1: the daily log format survives any text, hand edits and crashes."""

from __future__ import annotations

import stat
from datetime import UTC, date, datetime
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from store.daily_log import (
    CUT_ALIGNMENT,
    PREVIOUS_CUT_SHORT,
    DailyLog,
    LogMessage,
    format_message,
    parse_messages,
)

DAY = date(2026, 11, 29)
T0 = datetime(2026, 11, 29, 21, 4, 38, tzinfo=UTC)

# Text that loves to look like structure: headers, our metadata comment, backslashes.
tricky_lines = st.sampled_from(
    [
        "### user",
        "### assistant",
        "### user  ",
        "\\### user",
        "\\\\### assistant\t",
        "### Summary",
        "###user",
        "<!-- straylight {} -->",
        '<!-- straylight {"conversation": "evil"} -->',
        "\\<!-- straylight x",
        "",
        "\\",
        "```",
        "über ✓ 日本語",
        "\r",
        "a\rb",
    ]
)
message_text = st.one_of(
    st.text(),
    st.lists(st.one_of(tricky_lines, st.text()), max_size=8).map("\n".join),
)
messages_strategy = st.lists(
    st.tuples(st.sampled_from(["user", "assistant"]), message_text), max_size=6
)


@settings(max_examples=300, deadline=None)
@given(messages_strategy)
def test_any_text_round_trips_through_write_and_parse(pairs: list[tuple[str, str]]) -> None:
    messages = [LogMessage(role, text, conversation_id="c1", time=T0) for role, text in pairs]  # type: ignore[arg-type]
    parsed = parse_messages("".join(format_message(m) for m in messages))
    assert [(m.role, m.content) for m in parsed] == pairs
    assert all(m.status == "complete" and m.conversation_id == "c1" for m in parsed)


@settings(max_examples=100, deadline=None)
@given(messages_strategy)
def test_round_trip_through_the_file_on_disk(tmp_path_factory, pairs) -> None:
    log = DailyLog(tmp_path_factory.mktemp("log"))
    for role, text in pairs:
        log.append(LogMessage(role, text, conversation_id="c1", time=T0), DAY)
    assert [(m.role, m.content) for m in log.read_day(DAY)] == pairs


def test_markdown_headings_inside_a_reply_do_not_split_it() -> None:
    reply = "### Summary\nIt works.\n### Steps\n1. one\n### user\nnot a header"
    text = format_message(LogMessage("assistant", reply)) + format_message(
        LogMessage("user", "next")
    )
    parsed = parse_messages(text)
    assert [(m.role, m.content) for m in parsed] == [("assistant", reply), ("user", "next")]


def test_metadata_is_one_comment_line_after_the_header() -> None:
    message = LogMessage("assistant", "hi", conversation_id="c9", time=T0, model="llama3.2")
    lines = format_message(message).split("\n")
    assert lines[0] == "### assistant"
    assert lines[1].startswith("<!-- straylight {") and lines[1].endswith("} -->")
    assert '"2026-11-29T21:04:38Z"' in lines[1] and '"c9"' in lines[1]
    parsed = parse_messages(format_message(message))[0]
    assert (parsed.time, parsed.model, parsed.conversation_id) == (T0, "llama3.2", "c9")


def test_metadata_cannot_close_its_comment_early() -> None:
    message = LogMessage("assistant", "x", reason="a --> b", model="m-->")
    line = format_message(message).split("\n")[1]
    assert line.count("-->") == 1
    parsed = parse_messages(format_message(message))[0]
    assert (parsed.reason, parsed.model, parsed.content) == ("a --> b", "m-->", "x")


def test_hand_edits_are_tolerated() -> None:
    text = (
        "# My notes for today\n\n"
        "### user\n"
        '<!-- straylight {"conversation": "c1"} -->\n'
        "first\n\n"
        "### assistant   \n"  # trailing blanks, no metadata line
        "typed by hand\n"
        "### user\n"
        "<!-- straylight {broken json -->\n"
        "third\n"
    )
    parsed = parse_messages(text)
    assert [(m.role, m.content) for m in parsed] == [
        ("user", "first"),
        ("assistant", "typed by hand"),
        ("user", "third"),
    ]
    # A message without metadata belongs to the conversation it sits in.
    assert [m.conversation_id for m in parsed] == ["c1", "c1", "c1"]


def test_a_truncated_last_message_is_kept_and_marked() -> None:
    whole = format_message(LogMessage("user", "hello", conversation_id="c"))
    cut = format_message(LogMessage("assistant", "a long reply that was", conversation_id="c"))
    parsed = parse_messages(whole + cut[:-5])
    assert parsed[0].content == "hello" and parsed[0].status == "complete"
    assert parsed[1].status == "truncated"
    assert parsed[1].content.startswith("a long reply")


def test_a_crash_mid_append_cuts_only_that_message(tmp_path: Path) -> None:
    log = DailyLog(tmp_path / "conversation")
    log.append(LogMessage("user", "kept one", conversation_id="c"), DAY)
    log.append(LogMessage("assistant", "kept two", conversation_id="c"), DAY)
    path = log.path_for(DAY)
    # Simulate a crash in the middle of the third append: half its bytes reached the disk.
    partial = format_message(LogMessage("user", "lost in the crash ü", conversation_id="c"))
    data = partial.encode()
    with path.open("ab") as handle:
        handle.write(data[: len(data) // 2 + 1])
    # The next run appends again: the earlier messages and the new one are intact.
    log.append(LogMessage("user", "after restart", conversation_id="c"), DAY)
    contents = [m.content for m in log.read_day(DAY)]
    assert contents[:2] == ["kept one", "kept two"]
    assert contents[-1] == "after restart"
    assert len(contents) == 4


def test_files_are_private(tmp_path: Path) -> None:
    log = DailyLog(tmp_path / "conversation")
    path = log.append(LogMessage("user", "secret plans"), DAY)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    assert path.name == "2026-11-29.md"


def test_recent_returns_the_last_messages_of_one_conversation_across_days(
    tmp_path: Path,
) -> None:
    log = DailyLog(tmp_path)
    yesterday, today = date(2026, 11, 28), DAY
    for index in range(4):
        log.append(LogMessage("user", f"old {index}", conversation_id="a"), yesterday)
    log.append(LogMessage("user", "other conversation", conversation_id="b"), today)
    for index in range(3):
        log.append(LogMessage("user", f"new {index}", conversation_id="a"), today)
    assert [m.content for m in log.recent("a", 5)] == ["old 2", "old 3", "new 0", "new 1", "new 2"]
    assert [m.content for m in log.recent("b", 5)] == ["other conversation"]
    assert log.recent("a", 0) == []
    assert log.recent("missing", 5) == []


def test_a_conversation_continued_weeks_later_keeps_its_history(tmp_path: Path) -> None:
    """Days in between without the conversation do not cut its history off (its id says
    the day it started); older days than that are not read."""
    log = DailyLog(tmp_path)
    cid = "20261101-090000-abcdef"
    log.append(LogMessage("user", "before it started", conversation_id=cid), date(2026, 10, 20))
    log.append(LogMessage("user", "first", conversation_id=cid), date(2026, 11, 1))
    log.append(LogMessage("assistant", "reply", conversation_id=cid), date(2026, 11, 1))
    log.append(LogMessage("user", "elsewhere", conversation_id="other"), date(2026, 11, 15))
    log.append(LogMessage("user", "back again", conversation_id=cid), date(2026, 11, 29))
    assert [m.content for m in log.recent(cid, 10)] == ["first", "reply", "back again"]
    assert [m.content for m in log.recent(cid, 2)] == ["reply", "back again"]


def test_non_utf8_bytes_do_not_stop_the_parser(tmp_path: Path) -> None:
    log = DailyLog(tmp_path)
    log.append(LogMessage("user", "fine", conversation_id="c"), DAY)
    with log.path_for(DAY).open("ab") as handle:
        handle.write(b"### assistant\n\xff\xfe broken bytes\n\n")
    parsed = log.read_day(DAY)
    assert [m.role for m in parsed] == ["user", "assistant"]
    assert "broken bytes" in parsed[1].content


def test_a_log_saved_with_crlf_line_ends_still_parses() -> None:
    messages = [
        LogMessage("user", "hello\nthere", conversation_id="c"),
        LogMessage("assistant", "### Summary\nhi", conversation_id="c"),
    ]
    text = "".join(format_message(m) for m in messages).replace("\n", "\r\n")
    parsed = parse_messages(text)
    assert [(m.role, m.content, m.conversation_id) for m in parsed] == [
        ("user", "hello\nthere", "c"),
        ("assistant", "### Summary\nhi", "c"),
    ]


def crlf_log(root: Path, reply: str) -> tuple[DailyLog, Path]:
    log = DailyLog(root)
    log.append(LogMessage("user", "first", conversation_id="c"), DAY)
    log.append(LogMessage("assistant", reply, conversation_id="c"), DAY)
    path = log.path_for(DAY)
    path.write_bytes(path.read_bytes().replace(b"\n", b"\r\n"))
    return log, path


def test_an_append_to_a_log_saved_with_crlf_keeps_the_last_message_as_it_was(
    tmp_path: Path,
) -> None:
    """A file an editor saved with CRLF ends in `\r\n\r\n`, its blank line: the next append
    added one more newline, which the last message then read as its own (`"reply\n"`), and
    at a block-aligned size it was even marked `truncated`."""
    _, probe = crlf_log(tmp_path / "probe", "a reply")
    aligned = "a reply" + "!" * (-probe.stat().st_size % CUT_ALIGNMENT)
    for name, reply in (("plain", "a reply"), ("aligned", aligned)):
        log, path = crlf_log(tmp_path / name, reply)
        log.append(LogMessage("user", "second", conversation_id="c"), DAY)
        assert [(m.content, m.status) for m in log.read_day(DAY)] == [
            ("first", "complete"),
            (reply, "complete"),
            ("second", "complete"),
        ], name
        assert PREVIOUS_CUT_SHORT not in path.read_text()


def test_a_message_cut_short_stays_marked_after_later_appends(tmp_path: Path) -> None:
    log = DailyLog(tmp_path)
    log.append(LogMessage("user", "complete one", conversation_id="c"), DAY)
    data = format_message(LogMessage("assistant", "half a message here", conversation_id="c"))
    with log.path_for(DAY).open("a") as handle:
        handle.write(data[: len(data) - 8])
    log.append(LogMessage("user", "next", conversation_id="c"), DAY)
    log.append(LogMessage("assistant", "reply", conversation_id="c"), DAY)
    statuses = [(m.content, m.status) for m in log.read_day(DAY)]
    assert statuses[0] == ("complete one", "complete")
    assert statuses[1][1] == "truncated" and statuses[1][0].startswith("half a mess")
    assert statuses[2:] == [("next", "complete"), ("reply", "complete")]


def test_a_header_cut_short_by_a_crash_leaves_the_message_before_it_alone(
    tmp_path: Path,
) -> None:
    """A kill inside the next append's header line ("### us") is not glued onto the
    committed message before it — neither right after the crash nor after the next append.
    A message that really ends in a line like "#" keeps it when nothing was cut."""
    log = DailyLog(tmp_path)
    log.append(LogMessage("assistant", "Paris.", conversation_id="a"), DAY)
    with log.path_for(DAY).open("ab") as handle:
        handle.write(b"### us")
    [only] = log.read_day(DAY)
    assert (only.content, only.status) == ("Paris.", "complete")
    log.append(LogMessage("user", "after the restart", conversation_id="b"), DAY)
    first, second = log.read_day(DAY)
    assert (first.content, first.status) == ("Paris.", "complete")
    assert (second.content, second.status) == ("after the restart", "complete")

    other = DailyLog(tmp_path / "other")
    other.append(LogMessage("user", "Use a heading:\n\n#", conversation_id="c"), DAY)
    other.append(LogMessage("assistant", "Done.", conversation_id="c"), DAY)
    assert [m.content for m in other.read_day(DAY)] == ["Use a heading:\n\n#", "Done."]


def test_a_last_message_whose_blank_line_an_editor_trimmed_is_whole(tmp_path: Path) -> None:
    """An editor that trims trailing blank lines leaves the file ending `reply\n`: the reply
    is not marked `truncated`, and the next append neither marks it nor loses a byte."""
    log = DailyLog(tmp_path)
    log.append(LogMessage("user", "first", conversation_id="c"), DAY)
    log.append(LogMessage("assistant", "a reply\non two lines", conversation_id="c"), DAY)
    path = log.path_for(DAY)
    trimmed = path.read_text().rstrip("\n") + "\n"
    assert len(trimmed.encode()) % CUT_ALIGNMENT != 0
    path.write_text(trimmed)
    assert [m.status for m in log.read_day(DAY)] == ["complete", "complete"]
    log.append(LogMessage("user", "second", conversation_id="c"), DAY)
    assert PREVIOUS_CUT_SHORT not in path.read_text()
    assert [(m.content, m.status) for m in log.read_day(DAY)] == [
        ("first", "complete"),
        ("a reply\non two lines", "complete"),
        ("second", "complete"),
    ]


def test_a_cut_on_a_line_end_at_a_block_boundary_is_still_truncated(tmp_path: Path) -> None:
    """A crash cuts a write where a block ends: a file ending with one newline at a size
    that is a multiple of 512 bytes reads as cut there, and the next append marks it."""
    log = DailyLog(tmp_path)
    log.append(LogMessage("user", "first", conversation_id="c"), DAY)
    path = log.path_for(DAY)
    head = (
        path.read_bytes()
        + format_message(
            LogMessage("assistant", "x" * 700 + "\nthe rest", conversation_id="c")
        ).encode()
    )
    cut = head[: head.index(b"\nthe rest") + 1]
    pad = -len(cut) % CUT_ALIGNMENT  # widen the first line so the cut ends on a block
    cut = cut.replace(b"x" * 700, b"x" * (700 + pad))
    assert len(cut) % CUT_ALIGNMENT == 0 and cut.endswith(b"x\n")
    path.write_bytes(cut)
    assert [m.status for m in log.read_day(DAY)] == ["complete", "truncated"]
    log.append(LogMessage("user", "second", conversation_id="c"), DAY)
    assert [m.status for m in log.read_day(DAY)] == ["complete", "truncated", "complete"]


def test_a_message_appended_while_a_day_is_rewritten_is_kept(tmp_path: Path) -> None:
    """A rewrite (a shell's `conversations delete`, run in the data dir's owner) reads the
    day file and renames a new one over it: the chat's message appended in between was
    lost. The append now waits for the rewrite."""
    import threading

    from store.daily_log_rewrite import rewrite_day

    log = DailyLog(tmp_path / "conversation")
    log.append(LogMessage("user", "delete me", "2026-11-29-aaaa", T0), DAY)
    appender = threading.Thread(
        target=log.append, args=(LogMessage("user", "keep me", "2026-11-29-bbbb", T0), DAY)
    )

    def drop_while_the_chat_appends(_index: int, message: LogMessage) -> str:
        if not appender.is_alive() and appender.ident is None:
            appender.start()
            appender.join(timeout=1.0)  # the old code appended here, then renamed over it
        return "drop" if message.conversation_id == "2026-11-29-aaaa" else "keep"

    assert rewrite_day(log, DAY, drop_while_the_chat_appends) == 1
    appender.join()
    assert [m.content for m in log.read_day(DAY)] == ["keep me"]
