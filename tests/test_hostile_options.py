"""Odd options (issue 15 §2 and §8): each is one line on stderr and exit 2, never a traceback,
a silent fallback or a token written to the data dir.

`--home ""` used the current directory, `STRAYLIGHT_HOME=/dev/null` said "details in
/dev/null/straylight.log", a non-UTF-8 home path was "RuntimeError: std::bad_cast", `--model
""` was "malformed reply", `remember ""` said "ask needs …", and `ask --conversation` stored
whatever it was given (a token too) or hit an OverflowError after logging the message.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from datetime import UTC, date, datetime
from pathlib import Path

import pytest

from store.conversation_id import check_conversation_id
from store.daily_log import DailyLog, LogMessage
from tests.support.cli import CliResult, cli_command, run_cli, run_process
from tests.support.ollama_standin import OllamaStandIn

Env = dict[str, str]
TOKEN = "ghp_ZZZZYYYYXXXXWWWWVVVVUUUUTTTTSSSSRRRR"


def one_line_exit_2(proc: CliResult, *fragments: str) -> str:
    assert proc.returncode == 2, (proc.returncode, proc.stderr)
    assert "Traceback" not in proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    for fragment in fragments:
        assert fragment in lines[0]
    return lines[0]


@pytest.fixture
def env(cli_env: Callable[..., Env], standin: OllamaStandIn) -> Env:
    return cli_env(OLLAMA_HOST=standin.url)


def files_under(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*")) if root.exists() else []


@pytest.mark.parametrize("command", [["status"], ["ask", "hi"], ["remember", "a note"]])
def test_an_empty_home_is_refused_not_the_current_directory(
    env: Env, tmp_path: Path, command: list[str]
) -> None:
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    one_line_exit_2(run_cli(env, "--home", "", *command, cwd=cwd), "--home", "must not be empty")
    assert files_under(cwd) == []


@pytest.mark.parametrize("home", ["/dev/null", "/dev/null/below"])
@pytest.mark.parametrize("command", [["status"], ["recall", "x"], ["ask", "hi"]])
def test_a_home_that_is_not_a_directory_is_named(env: Env, home: str, command: list[str]) -> None:
    line = one_line_exit_2(run_cli(dict(env, STRAYLIGHT_HOME=home), *command), "STRAYLIGHT_HOME")
    assert "/dev/null exists and is not a directory" in line
    assert "details in" not in line


def test_a_home_path_that_is_not_utf8_is_named(env: Env, tmp_path: Path) -> None:
    odd = str(tmp_path) + "/data-\udcff"  # the byte 0xff in a path, as the shell passes it
    one_line_exit_2(run_cli(dict(env, STRAYLIGHT_HOME=odd), "ask", "hi"), "not valid UTF-8")
    one_line_exit_2(run_cli(env, "--home", odd, "remember", "x"), "not valid UTF-8")
    assert files_under(tmp_path / "home") == []


@pytest.mark.parametrize("below", ["", "/data"])
@pytest.mark.parametrize("command", [["status"], ["remember", "a note"]])
def test_a_home_behind_a_link_that_loops_is_named(
    env: Env, tmp_path: Path, below: str, command: list[str]
) -> None:
    """`--home` naming a link that loops (or a path below one) was a traceback (OSError:
    Too many levels of symbolic links, from the data dir check): one line, exit 2 now."""
    loop = tmp_path / "loop"
    loop.symlink_to(loop)
    given = f"{loop}{below}"
    line = one_line_exit_2(run_cli(env, "--home", given, *command), "--home")
    assert f"{given} cannot be used: Too many levels of symbolic links" in line
    line = one_line_exit_2(run_cli(dict(env, STRAYLIGHT_HOME=given), *command))
    assert "STRAYLIGHT_HOME" in line and "Too many levels of symbolic links" in line


@pytest.mark.parametrize("locked", ["", "conversation"])
@pytest.mark.parametrize("command", [["status"], ["history"], ["remember", "a note"]])
def test_a_data_dir_this_user_may_not_enter_is_one_line_exit_2(
    env: Env, home: Path, locked: str, command: list[str]
) -> None:
    """A data dir (or its conversation/ folder) with mode 000 was a PermissionError
    traceback from the data dir check, for every command. As root (who enters any folder)
    the command runs with the capabilities that bypass modes dropped (setpriv)."""
    prefix: list[str] = []
    if os.geteuid() == 0:
        setpriv = shutil.which("setpriv")
        if setpriv is None:
            pytest.skip("root enters any folder, and setpriv is not there to drop that")
        prefix = [setpriv, "--bounding-set=-dac_override,-dac_read_search"]
    (home / "conversation").mkdir(parents=True)
    folder = home / locked
    folder.chmod(0)
    try:
        proc = run_process([*prefix, *cli_command(*command)], env)
    finally:
        folder.chmod(0o700)
    line = one_line_exit_2(proc, f"cannot use data dir {home}: Permission denied")
    assert str(folder) in line


def _without_root_bypass() -> list[str]:
    """A command prefix under which file modes apply (root reads any file)."""
    if os.geteuid() != 0:
        return []
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        pytest.skip("root reads any file, and setpriv is not there to drop that")
    return [setpriv, "--bounding-set=-dac_override,-dac_read_search"]


@pytest.mark.parametrize(
    ("name", "command"),
    [
        ("conversation/TODAY.md", ["status"]),
        ("conversation/TODAY.md", ["history"]),
        ("straylight.log", ["remember", "a note"]),
    ],
)
def test_a_file_of_the_data_dir_shut_by_its_mode_is_named_with_the_fix(
    env: Env, home: Path, name: str, command: list[str]
) -> None:
    """A daily log with mode 000 made `status` and `history` say the data dir could not be
    written and that the reading commands (they themselves) work on it; an unwritable
    `straylight.log` said "cannot use data dir: Permission denied" without naming it."""
    prefix = _without_root_bypass()
    today = datetime.now(UTC).date()
    DailyLog(home / "conversation").append(LogMessage("user", "hello", "2026-11-29-abcd"), today)
    (home / "straylight.log").touch()
    shut = home / name.replace("TODAY", today.isoformat())
    shut.chmod(0)
    try:
        proc = run_process([*prefix, *cli_command(*command)], env)
    finally:
        shut.chmod(0o600)
    line = one_line_exit_2(proc, f"cannot read or write {shut} (mode 0)", f"chmod u+rw {shut}")
    assert "data dir" not in line


def test_an_empty_model_name_is_refused(env: Env, standin: OllamaStandIn) -> None:
    one_line_exit_2(run_cli(env, "--model", "", "ask", "hi"), "--model", "must not be empty")
    assert standin.chat_requests() == []


@pytest.mark.parametrize("flag", ["--ollama-host", "--workspace", "--config"])
def test_an_empty_global_option_is_refused_not_the_default(
    env: Env, tmp_path: Path, flag: str
) -> None:
    """`--ollama-host "$UNSET"` used to mean Ollama on this machine (overriding OLLAMA_HOST),
    an empty --workspace the git root and an empty --config the default file, silently."""
    home = tmp_path / "data"
    for value in ("", "  "):
        write = ["facts", "set", "a:b", "--type", "fact", "--body", "x"]
        proc = run_cli(env, "--home", str(home), flag, value, *write)
        one_line_exit_2(proc, flag, "must not be empty")
        one_line_exit_2(run_cli(env, "status", flag, value), flag, "must not be empty")
    assert not home.exists()


@pytest.mark.parametrize("text", ["", "   "])
def test_remember_names_itself_when_the_text_is_empty(env: Env, text: str) -> None:
    one_line_exit_2(run_cli(env, "remember", text), "remember needs a non-empty TEXT")


@pytest.mark.parametrize(
    "given",
    [
        TOKEN,
        "AKIAZ7Q3XK4PLM2RT9WB",
        "xoxb-1234567890-abcdefghijklmn",  # the name shape, but the masker would change it
        "00010101-000000-abcdef",  # the id shape, year 1: the history walk overflowed
        "99991231-235959-abcdef",
        "20261301-000000-abcdef",  # month 13
        "a" * 33,
        "Project X",
        "",
    ],
)
def test_a_conversation_id_of_another_format_is_refused_before_anything_is_logged(
    env: Env, home: Path, standin: OllamaStandIn, given: str
) -> None:
    line = one_line_exit_2(run_cli(env, "ask", "--conversation", given, "hello"), "--conversation")
    if given:
        assert given not in line
    assert not (home / "conversation").exists()
    assert standin.chat_requests() == []
    log_file = home / "straylight.log"
    if given and log_file.exists():
        assert given not in log_file.read_text(encoding="utf-8")


@pytest.mark.parametrize("given", ["20261129-210438-3fa9c1", "project-x", "c1"])
def test_made_ids_and_plain_names_are_accepted(given: str) -> None:
    assert check_conversation_id(given) == given


def test_a_hand_written_year_one_id_does_not_break_the_history_walk(tmp_path: Path) -> None:
    log = DailyLog(tmp_path / "conversation")
    log.append(
        LogMessage("user", "old", conversation_id="00010101-000000-abcdef"), date(2031, 2, 3)
    )
    assert [m.content for m in log.recent("00010101-000000-abcdef", 5)] == ["old"]


def test_a_database_shut_by_its_mode_is_exit_2_with_the_fix_and_the_logs_still_list(
    env: Env, home: Path
) -> None:
    """`chmod 000 straylight.duckdb` was "cannot open …: IO Error: Cannot open file …",
    exit 1, and `conversations` failed where a damaged database only leaves titles out."""
    prefix = _without_root_bypass()
    assert run_cli(env, "ask", "a question to list").returncode == 0
    database = home / "straylight.duckdb"
    database.chmod(0)
    try:
        status = run_process([*prefix, *cli_command("status")], env)
        listing = run_process([*prefix, *cli_command("conversations")], env)
    finally:
        database.chmod(0o600)
    one_line_exit_2(status, f"cannot open {database}: permission denied", f"chmod u+rw {database}")
    assert listing.returncode == 0, listing.stderr
    assert "a question to list" in listing.stdout
    assert f"chmod u+rw {database}" in listing.stderr


DEEP = "[" * 100_000 + "]" * 100_000  # JSON nested past Python's recursion limit


def test_json_nested_past_the_recursion_limit_is_damage_not_a_traceback(
    env: Env, home: Path, standin: OllamaStandIn
) -> None:
    """A day file's metadata line, the derived `conversation-index.json` and an Ollama
    error body nested 100,000 deep were "unexpected error: RecursionError" (exit 1): each is
    read as the damaged or unknown text it is."""
    today = datetime.now(UTC).date()
    day_file = home / "conversation" / f"{today.isoformat()}.md"
    day_file.parent.mkdir(parents=True)
    day_file.write_text(f"### user\n<!-- straylight {DEEP} -->\nhello from a hand edit\n")
    (home / "conversation-index.json").write_text(DEEP)

    history = run_cli(env, "history")
    assert history.returncode == 0 and "hello from a hand edit" in history.stdout, history
    listed = run_cli(env, "conversations")
    assert listed.returncode == 0 and "hello from a hand edit" in listed.stdout, listed

    standin.fail_next("status", status=500, body=DEEP, path="/api/chat")
    asked = run_cli(env, "ask", "hi")
    assert asked.returncode != 1 and "RecursionError" not in asked.stderr, asked
    assert "Traceback" not in asked.stderr and asked.stderr.count("\n") <= 2, asked.stderr


def test_a_data_dir_folder_shut_to_writes_is_refused_before_anything_is_logged(
    env: Env, home: Path, standin: OllamaStandIn
) -> None:
    """`chmod 500` on a copied data dir whose files stay writable: DuckDB could not make its
    `.wal`, so `ask` logged the message, then said "unexpected error: TransactionException"
    and marked the reply "cancelled by the user". Refused first now, as a read-only mount."""
    prefix = _without_root_bypass()
    assert run_cli(env, "ask", "the copper kettle is in the attic").returncode == 0
    requests = len(standin.chat_requests())
    before = {p.name: p.stat().st_size for p in home.rglob("*") if p.is_file()}
    home.chmod(0o500)
    try:
        asked = run_process([*prefix, *cli_command("ask", "where is the copper kettle?")], env)
        listed = run_process([*prefix, *cli_command("status")], env)
    finally:
        home.chmod(0o700)
    line = one_line_exit_2(asked, f"cannot write to data dir {home} (no permission)")
    assert "unexpected error" not in line
    assert {p.name: p.stat().st_size for p in home.rglob("*") if p.is_file()} == before
    assert len(standin.chat_requests()) == requests
    assert listed.returncode == 0, listed.stderr
