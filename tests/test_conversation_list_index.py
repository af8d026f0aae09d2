"""The conversations list and the screen's day index from the logs' summary file
(store/daily_log_index.py, issue 16): equal to a full rescan of every day file after appends,
an outside edit, a deleted day file, `conversations delete` and `/retry`; a changed file is
the only one read again; a damaged or unwritable summary file costs only speed.

Real daily-log files in tmp; the reference is the plain parse of every file."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from datetime import date
from pathlib import Path

import pytest

from store.daily_log import SUPERSEDED, DailyLog, LogMessage
from store.daily_log_index import INDEX_FILENAME, DailyLogIndex
from store.daily_log_rewrite import drop_conversation, supersede_last_exchange
from store.private_files import SymlinkRefused
from tests.support.cli import NOW, Env, assert_ok, printed_json, run_cli
from tests.support.ollama_standin import OllamaStandIn
from tests.test_conversations import (
    BUILD,
    CURRENT,
    DAY_28,
    DAY_29,
    KEYS,
    RELEASE,
    at,
    sample_log,
    say,
)
from tui.conversation_index import (
    ConversationInfo,
    DaySummary,
    conversation_info,
    iter_day_summaries,
    list_conversations,
    propose_title,
    summarize_day,
)

TITLES = {KEYS: "Backup keys"}


def rescanned(log: DailyLog, titles: dict[str, str] = TITLES) -> list[ConversationInfo]:
    """What the list was before the summary file: every message of every file, parsed."""
    found: dict[str, list[tuple[date, LogMessage]]] = {}
    for day in log.days():
        for message in log.read_day(day):
            if message.status != SUPERSEDED:
                found.setdefault(message.conversation_id, []).append((day, message))
    infos = [reference_info(cid, entries, titles.get(cid)) for cid, entries in found.items()]
    return sorted(
        infos, key=lambda i: i.last.timestamp() if i.last else float("-inf"), reverse=True
    )


def reference_info(
    cid: str, entries: list[tuple[date, LogMessage]], title: str | None
) -> ConversationInfo:
    messages = [m for _day, m in entries]
    times = [m.time for m in messages if m.time is not None]
    first_user = next((m.content for m in messages if m.role == "user" and m.content.strip()), "")
    models = [m.model for m in messages if m.model]
    return ConversationInfo(
        conversation_id=cid,
        title=title or propose_title(first_user),
        title_set=bool(title),
        started=min(times) if times else None,
        last=max(times) if times else None,
        messages=len(messages),
        model=models[-1] if models else None,
        days=tuple(dict.fromkeys(day for day, _m in entries)),
    )


def screen_rescanned(log: DailyLog) -> list[DaySummary]:
    summaries = [summarize_day(log, day) for day in reversed(log.days())]
    return [summary for summary in summaries if summary.conversations]


def assert_like_a_rescan(log: DailyLog) -> None:
    assert list_conversations(log, TITLES) == rescanned(log)
    assert list(iter_day_summaries(log)) == screen_rescanned(log)
    for info in rescanned(log, {}):  # rename, export and delete find one the same way
        assert conversation_info(log, info.conversation_id) == info


def reads(log: DailyLog) -> int:
    """How many day files one pass over the index read again."""
    index = DailyLogIndex(log)
    list(index.entries())
    return index.last.read


@pytest.fixture
def log(tmp_path: Path) -> DailyLog:
    built = sample_log(tmp_path)
    assert_like_a_rescan(built)  # builds the summary file
    assert (tmp_path / INDEX_FILENAME).is_file()
    return built


def test_a_second_list_reads_no_day_file_and_an_append_reads_only_its_day(
    log: DailyLog,
) -> None:
    assert reads(log) == 0
    say(log, CURRENT, at(DAY_29, 21, 5), "user", "One more thing about the keys")
    say(log, "20261129-220000-eeeeee", at(DAY_29, 22, 0), "user", "A new one")
    assert reads(log) == 1
    assert reads(log) == 0
    say(log, RELEASE, at(DAY_28, 23, 59), "user", "Late addition to the 28th")
    assert_like_a_rescan(log)
    assert list_conversations(log, {})[0].conversation_id == "20261129-220000-eeeeee"


def test_an_outside_edit_of_a_day_file_is_read_again(log: DailyLog) -> None:
    path = log.path_for(DAY_29)
    text = path.read_text(encoding="utf-8")
    path.write_text(text.replace("Why did the build fail?", "Why did it fail?"), encoding="utf-8")
    assert_like_a_rescan(log)
    build = next(i for i in list_conversations(log, {}) if i.conversation_id == BUILD)
    assert build.title == "Why did it fail?"
    # an editor that writes a new file and renames it over the old one, same size
    replacement = path.with_name("edited.tmp")
    replacement.write_text(text.replace("Hello again", "Hello AGAIN"), encoding="utf-8")
    os.replace(replacement, path)
    assert_like_a_rescan(log)


def test_a_deleted_day_file_drops_its_rows(log: DailyLog) -> None:
    log.path_for(DAY_28).unlink()
    assert_like_a_rescan(log)
    ids = [i.conversation_id for i in list_conversations(log, {})]
    assert KEYS in ids and RELEASE in ids  # RELEASE goes on on the 29th
    release = next(i for i in list_conversations(log, {}) if i.conversation_id == RELEASE)
    assert (release.messages, release.days) == (2, (DAY_29,))
    for day in log.days():
        log.path_for(day).unlink()
    assert list_conversations(log, {}) == [] and list(iter_day_summaries(log)) == []


def test_delete_and_retry_are_seen(log: DailyLog) -> None:
    drop_conversation(log, KEYS)
    assert_like_a_rescan(log)
    assert KEYS not in [i.conversation_id for i in list_conversations(log, {})]
    before = next(i for i in list_conversations(log, {}) if i.conversation_id == RELEASE)
    taken = supersede_last_exchange(log, RELEASE)
    assert len(taken) == 2
    assert_like_a_rescan(log)
    after = next(i for i in list_conversations(log, {}) if i.conversation_id == RELEASE)
    assert (before.messages, after.messages) == (4, 2)
    assert after.model == "llama3.2"  # the superseded reply's qwen2.5 no longer counts


def test_a_deleted_conversations_first_line_leaves_the_summary_file_at_once(
    log: DailyLog, tmp_path: Path
) -> None:
    """`conversations delete` (CLI and screen: `drop_conversation`) rewrites the summary
    file too: the conversation's first user line does not wait there for the next list."""
    index_file = tmp_path / INDEX_FILENAME
    assert b"rotate the backup keys" in index_file.read_bytes()
    drop_conversation(log, KEYS)
    assert b"rotate the backup keys" not in index_file.read_bytes()
    assert KEYS.encode() not in index_file.read_bytes()
    assert_like_a_rescan(log)


def test_a_damaged_or_foreign_summary_file_is_rebuilt(log: DailyLog, tmp_path: Path) -> None:
    index_file = tmp_path / INDEX_FILENAME
    for damage in ("{not json", json.dumps({"version": 99, "days": {}}), '{"version": 1}'):
        index_file.write_text(damage, encoding="utf-8")
        assert_like_a_rescan(log)
        assert json.loads(index_file.read_text(encoding="utf-8"))["version"] == 1
    data = json.loads(index_file.read_text(encoding="utf-8"))
    entry = data["days"][DAY_29.isoformat()]
    entry["rows"] = [["x"]]  # a row cut short: that day is read again
    index_file.write_text(json.dumps(data), encoding="utf-8")
    assert_like_a_rescan(log)


def test_a_summary_file_that_cannot_be_written_costs_only_speed(
    log: DailyLog, tmp_path: Path
) -> None:
    (tmp_path / INDEX_FILENAME).unlink()
    (tmp_path / INDEX_FILENAME).mkdir()  # a rename over it fails, like on a read-only mount
    index = DailyLogIndex(log)
    assert len(list(index.entries())) == 3
    assert (index.last.read, index.last.saved) == (3, False)
    assert_like_a_rescan(log)
    assert [p.name for p in tmp_path.iterdir() if p.name.endswith(".tmp")] == []


def test_a_link_in_place_of_the_summary_file_is_not_followed(log: DailyLog, tmp_path: Path) -> None:
    outside = tmp_path / "outside.json"
    outside.write_text("keep me", encoding="utf-8")
    index_file = tmp_path / INDEX_FILENAME
    index_file.unlink()
    index_file.symlink_to(outside)
    say(log, CURRENT, at(DAY_29, 21, 5), "user", "changed")
    assert_like_a_rescan(log)
    assert outside.read_text(encoding="utf-8") == "keep me"


@pytest.fixture
def env(cli_env: Callable[..., Env], standin: OllamaStandIn) -> Env:
    return cli_env(OLLAMA_HOST=standin.host, STRAYLIGHT_NOW=NOW)


def test_the_cli_list_after_ask_delete_and_an_edit(
    env: Env, standin: OllamaStandIn, home: Path
) -> None:
    def listed() -> list[dict[str, object]]:
        rows: list[dict[str, object]] = printed_json(
            run_cli(env, "conversations", "--json"), quiet=True
        )
        return rows

    def expected() -> list[dict[str, object]]:
        return [info.to_json() for info in rescanned(DailyLog(home / "conversation"), {})]

    for text in ("First question about sourdough starters", "Second one, about rye bread"):
        standin.script_reply("An answer that is long enough to keep.")
        assert_ok(run_cli(env, "ask", text))
    assert len(listed()) == 2 and listed() == expected()
    standin.script_reply("A follow-up answer.")
    first = str(listed()[-1]["id"])
    assert_ok(run_cli(env, "ask", "and a follow-up", "-c", first))
    assert listed() == expected() and listed()[-1]["messages"] == 4
    assert_ok(run_cli(env, "conversations", "delete", first, "--yes"))
    assert listed() == expected() and [row["id"] for row in listed()] != [first]
    assert (home / INDEX_FILENAME).is_file()


def test_a_link_planted_in_place_of_a_day_file_is_refused_as_before(
    log: DailyLog, tmp_path: Path
) -> None:
    secret = tmp_path / "secret.md"
    secret.write_text("### user\nnot a log of ours\n\n", encoding="utf-8")
    path = log.path_for(DAY_28)
    path.unlink()
    path.symlink_to(secret)
    with pytest.raises(SymlinkRefused):
        list_conversations(log, {})
    with pytest.raises(SymlinkRefused):
        list(iter_day_summaries(log))
