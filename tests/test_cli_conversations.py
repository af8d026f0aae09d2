"""`straylight conversations …` and `ask --system` as a user meets them (issue 16): list with
the JSON contract, rename, export (md, json, -o), delete (logs rewritten, unpinned points
forgotten, an audit row, the question), and every exit code. In-process runs against the
real-HTTP stand-in, a real DuckDB and usearch in a temp data dir; the question on a terminal
is met by a real process on a pseudo-terminal."""

from __future__ import annotations

import json
import os
import pty
import stat
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from store.daily_log import DailyLog
from tests.support.cli import (
    NOW,
    Env,
    assert_ok,
    assert_one_line,
    cli_command,
    printed_json,
    read_terminal,
    run_cli,
    run_cli_process,
    run_process,
)
from tests.support.ollama_standin import OllamaStandIn

FIRST = "## How do I keep sourdough starter alive over a two-week holiday?\nMore detail."
REPLY = "Feed it, then refrigerate it: a cold starter keeps for two weeks without feeding at all."
OTHER_DAY_TEXT = "### user\nan older conversation without metadata\n\n"


@pytest.fixture
def env(cli_env: Callable[..., Env], standin: OllamaStandIn) -> Env:
    return cli_env(OLLAMA_HOST=standin.host, STRAYLIGHT_NOW=NOW)


def ask(env: Env, standin: OllamaStandIn, text: str, *extra: str, reply: str = REPLY) -> str:
    """One turn; the id of its conversation."""
    standin.script_reply(reply)
    assert_ok(run_cli(env, "ask", text, *extra))
    rows = printed_json(run_cli(env, "history", "--json"))
    return str(rows[-1]["conversation_id"])


def listing(env: Env) -> list[dict[str, object]]:
    rows: list[dict[str, object]] = printed_json(
        run_cli(env, "conversations", "--json"), quiet=True
    )
    return rows


def test_list_json_has_the_contract_fields_and_a_proposed_title(
    env: Env, standin: OllamaStandIn
) -> None:
    cid = ask(env, standin, FIRST)
    rows = listing(env)
    assert rows == [
        {
            "id": cid,
            "title": "How do I keep sourdough starter alive over a two-week holiday?",
            "started": NOW,
            "last": NOW,
            "messages": 2,
            "model": "llama3.2",
        }
    ]
    assert printed_json(run_cli(env, "conversations", "list", "--json")) == rows
    text = run_cli(env, "conversations")
    assert_ok(text)
    assert cid in text.stdout and "2 msg" in text.stdout and "sourdough" in text.stdout


@pytest.mark.parametrize(
    ("first", "title"),
    [
        ("## Sourdough   at altitude\nmore details", "Sourdough at altitude"),
        ("**Bold** start and `code` here", "Bold start and code here"),  # was "Bold** start…"
        ("Why does __init__.py matter?", "Why does __init__.py matter?"),
        ("Compute 2**10 and 3**5 in python", "Compute 2**10 and 3**5 in python"),
    ],
)
def test_a_proposed_title_drops_markdown_marks(
    env: Env, standin: OllamaStandIn, first: str, title: str
) -> None:
    ask(env, standin, first)
    assert [row["title"] for row in listing(env)] == [title]


def test_json_before_the_list_action_is_kept_and_before_another_action_refused(
    env: Env, standin: OllamaStandIn
) -> None:
    """`conversations --json list` prints JSON like `conversations list --json` (the list's own
    flag used to reset it silently); `--json` before (or after) another action is one line,
    exit 2."""
    cid = ask(env, standin, FIRST)
    assert printed_json(run_cli(env, "conversations", "--json", "list")) == listing(env)
    assert_one_line(
        run_cli(env, "conversations", "--json", "export", cid), 2, "--json is for the list"
    )
    assert_one_line(
        run_cli(env, "conversations", "--json", "delete", cid, "--yes"), 2, "takes none"
    )
    # without --yes too: refused for the --json, not sent off to ask (or to find a terminal)
    assert_one_line(
        run_cli(env, "conversations", "--json", "delete", cid), 2, "--json is for the list"
    )
    # after the action as well: the same line (with export's hint), not argparse's
    assert_one_line(
        run_cli(env, "conversations", "export", cid, "--json"), 2, "export: --format json"
    )
    assert_one_line(
        run_cli(env, "conversations", "delete", cid, "--yes", "--json"), 2, "takes none"
    )
    assert_one_line(
        run_cli(env, "conversations", "rename", cid, "Bread", "--json"), 2, "takes none"
    )
    assert listing(env)[0]["id"] == cid  # nothing deleted


def test_list_on_an_empty_or_missing_data_dir_creates_nothing(env: Env, home: Path) -> None:
    listed = run_cli(env, "conversations", "--json")
    assert (listed.returncode, json.loads(listed.stdout)) == (0, [])
    assert "no data dir at" in listed.stderr  # the README's hint of every list action
    proc = run_cli(env, "conversations")
    assert (proc.returncode, proc.stdout) == (0, "")  # stdout stays the list
    assert proc.stderr.startswith("no conversations yet\n")
    assert not (home / "straylight.duckdb").exists()


def test_list_on_a_mistyped_home_hints_at_it_like_the_other_list_actions(
    env: Env, tmp_path: Path
) -> None:
    typo = tmp_path / "hoem"
    for args in (["conversations"], ["conversations", "list", "--json"]):
        proc = run_cli(env, *args, "--home", str(typo))
        assert proc.returncode == 0, proc.stderr
        assert f"no data dir at {typo} — mistyped --home?" in proc.stderr, args
    assert not typo.exists()


def test_rename_sets_the_title_and_bad_input_exits_2(env: Env, standin: OllamaStandIn) -> None:
    cid = ask(env, standin, FIRST)
    proc = run_cli(env, "conversations", "rename", cid, "  Sourdough\n holiday ")
    assert_ok(proc)
    assert proc.stdout == f"renamed {cid}: Sourdough holiday\n"
    assert listing(env)[0]["title"] == "Sourdough holiday"

    assert_one_line(run_cli(env, "conversations", "rename", cid, "   "), 2, "must not be empty")
    assert_one_line(
        run_cli(env, "conversations", "rename", "nope-123", "x"), 1, "no conversation 'nope-123'"
    )
    assert_one_line(run_cli(env, "conversations", "rename", cid), 2, "TITLE")

    # A title is stored text like the system prompt: masked before it is written (issue 15)
    token = "ghp_ZZZZYYYYXXXXWWWWVVVVUUUUTTTTSSSSRRRR"
    masked = run_cli(env, "conversations", "rename", cid, f"deploy with {token}")
    assert_ok(masked)
    assert token not in masked.stdout
    assert listing(env)[0]["title"] == "deploy with [REDACTED:github_token]"


def test_export_markdown_and_json_to_stdout_and_to_a_file(
    env: Env, standin: OllamaStandIn, tmp_path: Path
) -> None:
    cid = ask(env, standin, FIRST, "--system", "Answer like a baker.")
    ask(env, standin, "And in summer?", "--conversation", cid, reply="Same, but feed it first.")
    assert_ok(run_cli(env, "conversations", "rename", cid, "Starter care"))

    md = run_cli(env, "conversations", "export", cid)
    assert_ok(md)
    assert md.stdout.startswith(f"# Starter care\n\n- id: `{cid}`\n")
    assert "- system prompt: Answer like a baker." in md.stdout
    assert f"## user · {NOW}\n\n{FIRST}\n" in md.stdout
    assert f"## assistant · {NOW} · llama3.2\n\nSame, but feed it first.\n" in md.stdout

    data = printed_json(run_cli(env, "conversations", "export", cid, "--format", "json"))
    assert (data["id"], data["title"], data["system"]) == (
        cid,
        "Starter care",
        "Answer like a baker.",
    )
    assert [m["content"] for m in data["messages"]] == [
        FIRST,
        REPLY,
        "And in summer?",
        "Same, but feed it first.",
    ]

    target = tmp_path / "out.json"
    proc = run_cli(env, "conversations", "export", cid, "--format", "json", "-o", str(target))
    assert_ok(proc)
    assert json.loads(target.read_text("utf-8")) == data
    assert (target.stat().st_mode & 0o777) == 0o600

    missing = tmp_path / "no" / "such" / "dir.md"
    assert_one_line(
        run_cli(env, "conversations", "export", cid, "-o", str(missing)), 2, "no folder"
    )
    assert_one_line(
        run_cli(env, "conversations", "export", cid, "-o", str(tmp_path)), 2, "directory"
    )
    for empty in ("", " "):  # not "`.` is a directory": the user gave no FILE at all
        assert_one_line(
            run_cli(env, "conversations", "export", cid, "-o", empty), 2, "-o needs a FILE"
        )
    assert_one_line(run_cli(env, "conversations", "export", "x-1"), 1, "no conversation 'x-1'")
    proc = run_cli(env, "conversations", "export", cid, "--format", "pdf")
    assert proc.returncode == 2 and "invalid choice" in proc.stderr

    standin.fail_next("status", path="/api/chat", status=500, message="model exploded")
    assert run_cli(env, "ask", "Still there?", "--conversation", cid).returncode == 5
    md = run_cli(env, "conversations", "export", cid)  # why it failed, as `history` says it
    assert f"## assistant · {NOW} · llama3.2 · failed: " in md.stdout
    assert "model exploded" in md.stdout.rsplit("## assistant", 1)[1].splitlines()[0]


def test_an_unknown_id_exits_1_and_a_value_no_id_could_be_exits_2_unrepeated(
    env: Env, standin: OllamaStandIn
) -> None:
    """Unknown ids exit 1 as in `history --conversation`, `forget`, `facts get`; a value that
    could never be an id (a pasted token) is a usage error, exit 2, and is not echoed."""
    ask(env, standin, FIRST)
    token = "ghp_ZZZZYYYYXXXXWWWWVVVVUUUUTTTTSSSSRRRR"
    for action, rest in (("rename", ["x"]), ("export", []), ("delete", ["--yes"])):
        unknown = run_cli(env, "conversations", action, "nope-123", *rest)
        assert_one_line(unknown, 1, "no conversation 'nope-123'")
        refused = run_cli(env, "conversations", action, token, *rest)
        assert_one_line(refused, 2, "ID wants an id like")
        assert token not in refused.stderr
    assert len(listing(env)) == 1


def test_export_to_dash_is_standard_output(
    env: Env, standin: OllamaStandIn, tmp_path: Path
) -> None:
    """`-o -` means stdout, as `-` means stdin for `ask`, `remember` and `facts set --body`
    (it used to write a file named `-`)."""
    cid = ask(env, standin, FIRST)
    proc = run_cli_process(env, "conversations", "export", cid, "-o", "-", cwd=tmp_path)
    assert_ok(proc)
    assert proc.stdout == run_cli(env, "conversations", "export", cid).stdout
    assert not (tmp_path / "-").exists()


# `python -m tui.cli` whose files cannot grow past a size (RLIMIT_FSIZE, SIGXFSZ ignored): a
# full disk for that process, unprivileged, with the real write path (as in tests/reliability)
_FILE_SIZE_LIMITED = (
    "import resource, runpy, signal, sys\n"
    "signal.signal(signal.SIGXFSZ, signal.SIG_IGN)\n"
    "limit = int(sys.argv[1])\n"
    "resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))\n"
    "sys.argv = ['straylight', *sys.argv[2:]]\n"
    "runpy.run_module('tui.cli', run_name='__main__', alter_sys=True)\n"
)


def test_an_export_the_disk_cannot_hold_fails_and_keeps_the_file_it_would_replace(
    env: Env, standin: OllamaStandIn, tmp_path: Path, home: Path
) -> None:
    """A full disk took part of the export in one short write and reported no error: the
    FILE was replaced by the cut transcript, exit 0 and `exported …`. It is exit 1 now (a
    full disk), one line, and FILE keeps what it held; no temp file is left beside it."""
    cid = ask(env, standin, FIRST, reply="Feed it well. " * 2000)  # a ~28 KB transcript
    target = tmp_path / "out" / "starter.md"
    target.parent.mkdir()
    target.write_text("my own notes\n", "utf-8")
    limit = 16 * 1024
    assert max(f.stat().st_size for f in home.glob("straylight.log*")) < limit
    command = [sys.executable, "-c", _FILE_SIZE_LIMITED, str(limit)]
    proc = run_process([*command, "conversations", "export", cid, "-o", str(target)], env)
    assert_one_line(proc, 1, f"cannot write {target}: File too large")
    assert proc.stdout == ""
    assert target.read_text("utf-8") == "my own notes\n"
    assert sorted(p.name for p in target.parent.iterdir()) == ["starter.md"]
    assert_ok(run_cli(env, "conversations", "export", cid, "-o", str(target)))  # room: written
    assert target.read_text("utf-8") == run_cli(env, "conversations", "export", cid).stdout


def test_an_export_onto_a_fifo_is_refused_and_the_fifo_stays(
    env: Env, standin: OllamaStandIn, tmp_path: Path
) -> None:
    """`-o` naming a FIFO (or a device: `-o /dev/null` as root) wrote a temp file beside it
    and renamed it over it, exit 0: the FIFO was gone, replaced by a regular file. It is
    refused in one line, exit 2, like a directory, and left as it was."""
    cid = ask(env, standin, FIRST)
    fifo = tmp_path / "out" / "pipe.md"
    fifo.parent.mkdir()
    os.mkfifo(fifo)
    proc = run_cli(env, "conversations", "export", cid, "-o", str(fifo))
    assert_one_line(proc, 2, f"{fifo} is not a regular file; -o wants a file")
    assert stat.S_ISFIFO(fifo.lstat().st_mode)
    assert sorted(p.name for p in fifo.parent.iterdir()) == ["pipe.md"]


def test_an_export_onto_a_file_straylight_keeps_is_refused_and_the_file_stays(
    env: Env, standin: OllamaStandIn, home: Path
) -> None:
    """`-o` naming the database, longterm.md or a daily log replaced it with the transcript,
    exit 0: the whole memory (the next command said the database is damaged), the curated
    long-term memory or a day of messages was gone. Refused in one line, exit 2, now; a file
    of the user's in the data dir (the screen's `exports/`) is written as before."""
    cid = ask(env, standin, FIRST)
    [day] = (home / "conversation").glob("*.md")
    kept = [home / "straylight.duckdb", home / "longterm.md", day]
    before = {path: path.read_bytes() for path in kept}
    for path in (*kept, home / "conversation" / "notes.md"):
        proc = run_cli(env, "conversations", "export", cid, "-o", str(path))
        assert_one_line(proc, 2, f"{path} belongs to Straylight's data dir")
    assert {path: path.read_bytes() for path in kept} == before
    assert not (home / "conversation" / "notes.md").exists()
    assert len(listing(env)) == 1
    (home / "exports").mkdir(exist_ok=True)
    assert_ok(run_cli(env, "conversations", "export", cid, "-o", str(home / "exports" / "a.md")))


def test_delete_without_a_terminal_needs_yes(env: Env, standin: OllamaStandIn, home: Path) -> None:
    cid = ask(env, standin, FIRST)
    proc = run_cli(env, "conversations", "delete", cid)
    assert_one_line(proc, 2, "--yes", "no terminal")
    assert len(listing(env)) == 1
    assert_one_line(
        run_cli(env, "conversations", "delete", "gone-1", "--yes"), 1, "no conversation"
    )


def test_delete_rewrites_the_logs_forgets_unpinned_points_and_audits(
    env: Env, standin: OllamaStandIn, home: Path
) -> None:
    keep = ask(env, standin, "A conversation that stays, about the herb garden and its basil.")
    cid = ask(env, standin, FIRST)
    ask(env, standin, "A second question in the same conversation, about rye flour.", "-c", cid)
    assert_ok(run_cli(env, "remember", "A pinned note that is not part of any conversation."))
    day_file = next((home / "conversation").glob("*.md"))
    day_file.write_text(OTHER_DAY_TEXT + day_file.read_text("utf-8"), encoding="utf-8")

    points_before = _points(home)
    assert any(p[1] == cid for p in points_before)
    proc = run_cli(env, "conversations", "delete", cid, "--yes")
    assert_ok(proc)
    assert proc.stdout.startswith(f"deleted {cid}: 4 messages from 1 daily log, ")

    text = day_file.read_text("utf-8")
    assert cid not in text and keep in text and text.startswith(OTHER_DAY_TEXT)
    assert (day_file.stat().st_mode & 0o777) == 0o600
    assert not list((home / "conversation").glob(".*tmp"))
    assert [row["id"] for row in listing(env)] == [keep, ""]
    points_after = _points(home)
    assert not any(p[1] == cid for p in points_after)
    assert [p for p in points_before if p[1] != cid] == points_after
    events = _audit(home, "conversation_delete")
    assert len(events) == 1 and json.loads(events[0])["conversation_id"] == cid


def test_delete_keeps_pinned_points_of_the_conversation(
    env: Env, standin: OllamaStandIn, home: Path
) -> None:
    cid = ask(env, standin, FIRST)
    ids = [p[0] for p in _points(home) if p[1] == cid]
    _pin(home, ids[0])
    proc = run_cli(env, "conversations", "delete", cid, "--yes")
    assert_ok(proc)
    assert "(1 pinned kept)" in proc.stdout
    assert [p[0] for p in _points(home) if p[1] == cid] == [ids[0]]


def test_a_one_message_conversation_is_counted_in_the_singular(env: Env, home: Path) -> None:
    """A question whose reply never came (the process was killed mid-stream) is a conversation
    of one message: export and delete said `(1 messages)`, `1 messages from …`."""
    folder = home / "conversation"
    folder.mkdir(parents=True, mode=0o700, exist_ok=True)
    day_file = folder / f"{NOW[:10]}.md"
    meta = {"time": NOW, "conversation": "solo", "model": "llama3.2"}
    day_file.write_text(f"### user\n<!-- straylight {json.dumps(meta)} -->\na lone question\n")
    day_file.chmod(0o600)
    out = home.parent / "solo.md"
    exported = run_cli(env, "conversations", "export", "solo", "-o", str(out))
    assert_ok(exported)
    assert exported.stdout.strip().endswith("(1 message)"), exported.stdout
    code, said = _on_a_terminal(env, "n\n", "conversations", "delete", "solo")
    assert code == 1 and ": 1 message on 1 day and" in said, said
    deleted = run_cli(env, "conversations", "delete", "solo", "--yes")
    assert_ok(deleted)
    assert deleted.stdout.startswith("deleted solo: 1 message from 1 daily log, "), deleted.stdout


def test_delete_asks_on_a_terminal(env: Env, standin: OllamaStandIn) -> None:
    cid = ask(env, standin, FIRST)
    code, said = _on_a_terminal(env, "n\n", "conversations", "delete", cid)
    assert code == 1 and "[y/N]" in said and "nothing deleted" in said
    assert len(listing(env)) == 1
    code, said = _on_a_terminal(env, "y\n", "conversations", "delete", cid)
    assert code == 0 and f"deleted {cid}" in said
    assert listing(env) == []


def test_ask_system_is_sent_kept_and_carried(env: Env, standin: OllamaStandIn) -> None:
    cid = ask(env, standin, "hello there", "--system", "You are a pirate. Say arr.")
    system = standin.chat_requests()[-1]["messages"][0]["content"]
    assert system.startswith("You are a pirate. Say arr.")
    assert "You are Straylight" not in system

    ask(env, standin, "and again", "--conversation", cid)
    assert standin.chat_requests()[-1]["messages"][0]["content"].startswith("You are a pirate.")

    ask(env, standin, "another conversation")  # the persona stays the default
    assert standin.chat_requests()[-1]["messages"][0]["content"].startswith("You are Straylight")

    ask(env, standin, "plain now", "--conversation", cid, "--system", "")
    assert standin.chat_requests()[-1]["messages"][0]["content"].startswith("You are Straylight")


def _db(home: Path):
    import duckdb

    return duckdb.connect(str(home / "straylight.duckdb"), read_only=True)


def _points(home: Path) -> list[tuple[int, str]]:
    with _db(home) as con:
        rows = con.execute("SELECT id, conversation_id FROM points ORDER BY id").fetchall()
    return [(int(r[0]), str(r[1])) for r in rows]


def _audit(home: Path, event: str) -> list[str]:
    with _db(home) as con:
        rows = con.execute("SELECT detail FROM audit WHERE event = ?", [event]).fetchall()
    return [str(r[0]) for r in rows]


def _pin(home: Path, point_id: int) -> None:
    import duckdb

    with duckdb.connect(str(home / "straylight.duckdb")) as con:
        con.execute("UPDATE points SET pinned = TRUE WHERE id = ?", [point_id])


def _on_a_terminal(env: Env, answer: str, *args: str) -> tuple[int, str]:
    """Run `straylight ARGS` with stdin and stderr on a pseudo-terminal, typing `answer`."""
    leader, follower = pty.openpty()
    proc = subprocess.Popen(
        cli_command(*args), env=env, stdin=follower, stdout=follower, stderr=follower
    )
    os.close(follower)
    os.write(leader, answer.encode())
    shown = read_terminal(leader)
    proc.wait(timeout=60)
    os.close(leader)
    return proc.returncode, shown


def test_daily_log_rewrite_keeps_other_blocks_byte_for_byte(home: Path) -> None:
    from store.daily_log_rewrite import rewrite_text, supersede_last_exchange

    text = (
        "preamble\n\n"
        '### user\n<!-- straylight {"conversation": "a", "extra": "kept"} -->\nq1\n\n'
        '### assistant\n<!-- straylight {"conversation": "a"} -->\n\\### user\n\n'
        "### user\r\nno metadata, CRLF\r\n\r\n"
    )
    same, changed = rewrite_text(text, lambda _i, _m: "keep")
    assert (same, changed) == (text, 0)
    dropped, changed = rewrite_text(text, lambda i, _m: "drop" if i == 1 else "keep")
    assert (
        changed == 1 and "\\### user" not in dropped and dropped.startswith("preamble\n\n### user")
    )
    marked, _ = rewrite_text(text, lambda _i, _m: "supersede")
    from store.daily_log import parse_messages

    assert [m.status for m in parse_messages(marked)] == ["superseded"] * 3
    assert [m.content for m in parse_messages(marked)] == [m.content for m in parse_messages(text)]
    assert '"extra": "kept"' in marked

    log = DailyLog(home / "conversation")
    folder = home / "conversation"
    folder.mkdir(parents=True)
    (folder / "2031-02-03.md").write_text(text, encoding="utf-8")
    taken = supersede_last_exchange(log, "a")
    assert [m.content for m in taken] == ["no metadata, CRLF"]  # it inherits conversation "a"
    assert [m.status for m in log.read_day(log.days()[0])] == ["complete", "complete", "superseded"]
    assert [m.content for m in log.recent("a", 10)] == ["q1", "### user"]


def test_history_and_the_listing_leave_superseded_messages_out(
    env: Env, standin: OllamaStandIn, home: Path
) -> None:
    from store.daily_log_rewrite import supersede_last_exchange

    cid = ask(env, standin, FIRST)
    ask(env, standin, "And in summer?", "-c", cid, reply="Same, but feed it first.")
    log = DailyLog(home / "conversation")
    taken = supersede_last_exchange(log, cid)
    assert [m.content for m in taken] == ["And in summer?", "Same, but feed it first."]
    rows = printed_json(run_cli(env, "history", "--json"))
    assert [r["content"] for r in rows] == [FIRST, REPLY]
    assert listing(env)[0]["messages"] == 2
    standin.script_reply("ok")
    assert_ok(run_cli(env, "ask", "next", "-c", cid))
    sent = [m["content"] for m in standin.chat_requests()[-1]["messages"][1:]]
    assert sent == [FIRST, REPLY, "next"]


def test_an_exchange_past_midnight_is_superseded_on_both_days(home: Path) -> None:
    """A question at 23:59 whose reply ended at 00:01 is split over two day files: /retry
    and edit looked only at the newest day, found no question there, and said "Nothing to
    retry" (the edit then sent the new text beside the old exchange)."""
    from datetime import UTC, date, datetime

    from store.daily_log import LogMessage
    from store.daily_log_rewrite import supersede_last_exchange

    log = DailyLog(home / "conversation")
    first, second = date(2031, 2, 2), date(2031, 2, 3)
    before = datetime(2031, 2, 2, 23, 59, tzinfo=UTC)
    after = datetime(2031, 2, 3, 0, 1, tzinfo=UTC)
    log.append(LogMessage("user", "Earlier question?", conversation_id="late", time=before), first)
    log.append(
        LogMessage("assistant", "Earlier answer.", conversation_id="late", time=before), first
    )
    log.append(LogMessage("user", "Late question?", conversation_id="late", time=before), first)
    log.append(LogMessage("assistant", "Late answer.", conversation_id="late", time=after), second)
    taken = supersede_last_exchange(log, "late")
    assert [m.content for m in taken] == ["Late question?", "Late answer."]
    assert [m.status for m in log.read_day(first)] == ["complete", "complete", "superseded"]
    assert [m.status for m in log.read_day(second)] == ["superseded"]
    assert [m.content for m in log.recent("late", 10)] == ["Earlier question?", "Earlier answer."]


def test_a_delete_that_finds_its_conversation_gone_meanwhile_says_so(
    env: Env, standin: OllamaStandIn, home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Two clients deleting one conversation through the data dir's owner both found it
    listed, and both printed `deleted …`; the second now finds nothing to drop (the logs'
    rewrites take turns) and names the id as unknown, exit 1."""
    import asyncio

    from agent.settings import load_settings
    from tui.cli_conversations import _delete, _find

    cid = ask(env, standin, FIRST)
    daily_log = DailyLog(home / "conversation")
    seen_by_the_second_client = _find(daily_log, cid)
    assert seen_by_the_second_client is not None
    assert_ok(run_cli(env, "conversations", "delete", cid, "--yes"))

    settings = load_settings(environ=env).settings
    capsys.readouterr()
    code = asyncio.run(_delete(settings, daily_log, seen_by_the_second_client, assume_yes=True))
    out, err = capsys.readouterr()
    assert (code, out) == (1, "")
    assert f"no conversation {cid!r}" in err


@pytest.mark.parametrize("fmt", ["md", "json"])
def test_an_export_whose_reader_leaves_exits_141(env: Env, home: Path, fmt: str) -> None:
    """`conversations export ID | head`: one large write met the reader's going as a short
    write Python does not report, and the command exited 0 with most of it dropped."""
    from datetime import UTC, datetime

    from store.daily_log import LogMessage

    when = datetime.now(UTC)
    log = DailyLog(home / "conversation")
    for number in range(120):
        text = f"message {number}: " + "sourdough " * 300
        log.append(LogMessage("user", text, "2026-12-06-abcd", when), when.date())
    process = subprocess.Popen(
        cli_command("conversations", "export", "2026-12-06-abcd", "--format", fmt),
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert process.stdout is not None and process.stderr is not None
    assert process.stdout.read1(100)
    process.stdout.close()  # `head` has what it wanted
    assert process.wait(60) == 141
    assert process.stderr.read() == b""


def test_messages_in_a_day_file_dated_before_the_id_are_exported_and_deleted(
    env: Env, standin: OllamaStandIn, home: Path
) -> None:
    """A message written while the clock was behind (or a day file copied in) lies in a
    file dated before the conversation's id: `conversations` listed it, but `export` left
    it out and `delete` left it on disk, then called the id unknown."""
    cid = ask(env, standin, "first message about the garden shed roof")
    earlier = {**env, "STRAYLIGHT_NOW": "2031-01-20T10:00:00Z"}  # two weeks before NOW
    standin.script_reply(REPLY)
    assert_ok(run_cli(earlier, "ask", "-c", cid, "second message while the clock was wrong"))
    assert [row["messages"] for row in listing(env)] == [4]

    exported = run_cli(env, "conversations", "export", cid, "--format", "json")
    assert_ok(exported)
    contents = [m["content"] for m in json.loads(exported.stdout)["messages"]]
    assert "second message while the clock was wrong" in contents and len(contents) == 4

    proc = run_cli(env, "conversations", "delete", cid, "--yes")
    assert_ok(proc)
    assert proc.stdout.startswith(f"deleted {cid}: 4 messages from 2 daily logs, ")
    assert listing(env) == []
    assert not any(cid in day.read_text("utf-8") for day in (home / "conversation").glob("*.md"))
