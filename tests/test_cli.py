"""The headless CLI as a user runs it: `tui.cli.main` in-process with its own environment,
stdin and cwd (tests/support/cli.py), and `python -m tui.cli` in a subprocess where only a
process shows it (streaming without PYTHONUNBUFFERED, exit codes through the interpreter).

Every model call goes to the real-HTTP Ollama stand-in; exit codes, stdout, the one-line
stderr, the daily log (read back through `history --json`) and file modes are checked.
"""

from __future__ import annotations

import json
import os
import select
import stat
import subprocess
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest

from tests.support.cli import (
    DAY,
    NOW,
    REPO_ROOT,
    TIMEOUT,
    CliResult,
    Env,
    assert_one_line,
    assert_quiet,
    cli_command,
    printed_json,
    run_cli,
    run_cli_process,
    spawn_many,
)
from tests.support.ollama_standin import OllamaStandIn
from tests.support.ports import closed_port

REPLY = "alpha beta gamma delta"  # streamed by the stand-in as 4 chunks
PARTIAL = "alpha beta "  # what arrives before a fault injected `after=2`
SLOW_LIMIT = 5  # seconds: a failing ask must not hang (generous for a loaded machine)


# --------------------------------------------------------------------------- helpers


def history_json(env: Env, *args: str) -> list[dict[str, Any]]:
    return printed_json(run_cli(env, "history", "--json", *args), quiet=True)


def status_json(env: Env, *args: str) -> dict[str, Any]:
    return printed_json(run_cli(env, "status", "--json", *args))


def run_each(calls: Sequence[tuple[Env, Sequence[str], str | None]]) -> list[CliResult]:
    """Independent calls (env, args, stdin), in-process, one after the other."""
    return [run_cli(env, *args, stdin=stdin) for env, args, stdin in calls]


def log_block(role: str, content: str, conversation: str, when: str) -> str:
    """One message in the daily log's documented on-disk format."""
    meta = json.dumps({"time": when, "conversation": conversation, "model": "llama3.2"})
    return f"### {role}\n<!-- straylight {meta} -->\n{content}\n\n"


def write_day(home: Path, day: str, text: str) -> Path:
    folder = home / "conversation"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{day}.md"
    path.write_text(text, encoding="utf-8")
    return path


@pytest.fixture
def env(cli_env: Callable[..., Env], standin: OllamaStandIn) -> Env:
    """Data dir in tmp, Ollama = the stand-in, clock frozen at NOW."""
    return cli_env(OLLAMA_HOST=standin.host, STRAYLIGHT_NOW=NOW)


# --------------------------------------------------------------------------- ask: success


def test_ask_prints_reply_and_logs_both_messages(
    env: Env, standin: OllamaStandIn, home: Path
) -> None:
    standin.script_reply(REPLY)
    proc = run_cli(env, "ask", "What comes after alpha?")
    assert_quiet(proc)
    assert proc.stdout == REPLY + "\n"

    request = standin.chat_requests()[-1]
    assert request["model"] == "llama3.2"
    assert request["messages"][0]["role"] == "system"
    assert request["messages"][-1] == {"role": "user", "content": "What comes after alpha?"}

    messages = history_json(env)
    assert [(m["role"], m["content"], m["status"]) for m in messages] == [
        ("user", "What comes after alpha?", "complete"),
        ("assistant", REPLY, "complete"),
    ]
    assert messages[0]["conversation_id"] == messages[1]["conversation_id"] != ""
    assert all(m["model"] == "llama3.2" for m in messages)


def test_ask_streams_while_the_model_is_still_answering(env: Env, standin: OllamaStandIn) -> None:
    standin.script_reply("first second third fourth")
    standin.token_delay = 0.25
    # A user's shell does not set PYTHONUNBUFFERED: the CLI must flush by itself.
    buffered = {name: value for name, value in env.items() if name != "PYTHONUNBUFFERED"}
    process = subprocess.Popen(
        cli_command("ask", "count"),
        env=buffered,
        cwd=REPO_ROOT,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        assert process.stdout is not None
        received = b""
        deadline = time.monotonic() + TIMEOUT
        while b"first" not in received and time.monotonic() < deadline:
            ready, _, _ = select.select([process.stdout], [], [], 0.05)
            if ready:
                chunk = os.read(process.stdout.fileno(), 4096)
                if not chunk:
                    break
                received += chunk
        assert b"first" in received
        # The first words are on stdout while the rest is still on its way.
        assert b"fourth" not in received
        assert process.poll() is None
        rest, err = process.communicate(timeout=TIMEOUT)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait(timeout=TIMEOUT)
    assert process.returncode == 0, err
    assert (received + rest).decode() == "first second third fourth\n"


def test_ask_dash_reads_standard_input(env: Env, standin: OllamaStandIn) -> None:
    # Lines that look like the log's own structure must come back intact.
    text = "line one\n### assistant\n<!-- straylight {} -->\nline four with `code`\n"
    proc = run_cli(env, "ask", "-", stdin=text)
    assert_quiet(proc)
    assert standin.chat_requests()[-1]["messages"][-1] == {"role": "user", "content": text}
    users = [m for m in history_json(env) if m["role"] == "user"]
    assert [m["content"] for m in users] == [text]


def test_nul_characters_reach_neither_the_log_nor_the_memory(
    env: Env, standin: OllamaStandIn, home: Path
) -> None:
    """A file piped in with NUL bytes: the daily log stays a text file grep reads as text."""
    standin.script_reply("noted\0 the port")
    typed = "my server port is 8443 and\0 the backup runs nightly at three\n"
    proc = run_cli(env, "ask", "-", stdin=typed)
    assert_quiet(proc)
    assert standin.chat_requests()[-1]["messages"][-1]["content"] == typed.replace("\0", "")
    [log] = (home / "conversation").glob("*.md")
    assert b"\0" not in log.read_bytes() and b"noted the port" in log.read_bytes()
    recalled = json.loads(run_cli(env, "recall", "backup nightly", "--json").stdout)
    assert recalled["hits"] and not any("\0" in hit["content"] for hit in recalled["hits"])


def test_ask_survives_a_pause_shorter_than_the_timeout(env: Env, standin: OllamaStandIn) -> None:
    standin.script_reply(REPLY)
    standin.fail_next("stall", after=1, seconds=0.3)
    proc = run_cli(dict(env, STRAYLIGHT_HTTP_TIMEOUT_SECONDS="1.5"), "ask", "slowly")
    assert_quiet(proc)
    assert proc.stdout == REPLY + "\n"


def test_ollama_host_flag_beats_environment(cli_env: Callable[..., Env], standin: OllamaStandIn):
    dead = cli_env(OLLAMA_HOST=f"127.0.0.1:{closed_port()}", STRAYLIGHT_NOW=NOW)
    standin.script_reply(REPLY)
    proc = run_cli(dead, "ask", "--ollama-host", standin.url, "hi")
    assert_quiet(proc)
    assert proc.stdout == REPLY + "\n"


def test_model_flag_and_env_choose_the_model(env: Env, standin: OllamaStandIn) -> None:
    standin.set_models(["llama3.2", "qwen3:8b", "mistral", "nomic-embed-text"])
    assert_quiet(run_cli(dict(env, STRAYLIGHT_MODEL="qwen3:8b"), "ask", "one"))
    assert standin.chat_requests()[-1]["model"] == "qwen3:8b"
    assert_quiet(
        run_cli(dict(env, STRAYLIGHT_MODEL="qwen3:8b"), "ask", "--model", "mistral", "two")
    )
    assert standin.chat_requests()[-1]["model"] == "mistral"
    assert [m["model"] for m in history_json(env)] == ["qwen3:8b"] * 2 + ["mistral"] * 2


# --------------------------------------------------------------------------- ask: failures


@pytest.mark.parametrize("how", ["stopped", "closed-port"])
def test_ask_exits_3_when_ollama_is_unreachable(env: Env, standin: OllamaStandIn, how: str) -> None:
    if how == "stopped":
        standin.stop()
        target = env
    else:
        target = dict(env, OLLAMA_HOST=f"127.0.0.1:{closed_port()}")
    proc = run_cli(target, "ask", "anyone there?")
    line = assert_one_line(proc, 3)
    assert target["OLLAMA_HOST"].split(":")[-1] in line  # names where it looked
    assert proc.stdout == ""


def test_ask_exits_4_when_model_is_not_pulled(env: Env, standin: OllamaStandIn) -> None:
    proc = run_cli(env, "ask", "--model", "phi9:404b", "hello")
    assert_one_line(proc, 4, "phi9:404b")
    assert proc.stdout == ""


@pytest.mark.parametrize(
    ("fault", "params", "extra_env"),
    [
        ("status", {"status": 500, "message": "CUDA out of memory"}, {}),
        ("status", {"status": 503, "message": "busy"}, {}),
        ("delay", {"seconds": 2.0}, {"STRAYLIGHT_HTTP_TIMEOUT_SECONDS": "0.5"}),
        ("stall", {"after": 0, "seconds": 2.0}, {"STRAYLIGHT_HTTP_TIMEOUT_SECONDS": "0.5"}),
        ("drop", {"after": 0}, {}),
        ("error_line", {"after": 0, "message": "model crashed"}, {}),
        ("malformed", {"after": 0}, {}),
    ],
    ids=[
        "http-500",
        "http-503",
        "timeout-before-headers",
        "timeout-before-text",
        "drop",
        "error-line",
        "malformed",
    ],
)
def test_ask_exits_5_on_model_errors_before_any_text(
    env: Env,
    standin: OllamaStandIn,
    home: Path,
    fault: str,
    params: dict[str, Any],
    extra_env: Env,
) -> None:
    standin.script_reply(REPLY)
    standin.fail_next(fault, path="/api/chat", **params)  # type: ignore[arg-type]
    started = time.monotonic()
    proc = run_cli(dict(env, **extra_env), "ask", "hello")
    assert time.monotonic() - started < SLOW_LIMIT
    assert_one_line(proc, 5)
    assert "alpha" not in proc.stdout
    # The user's message is kept; the reply is an empty message marked failed, with why.
    messages = history_json(env)
    assert [(m["role"], m["content"], m["status"]) for m in messages] == [
        ("user", "hello", "complete"),
        ("assistant", "", "failed"),
    ]
    assert messages[1]["reason"] == proc.stderr.strip().removeprefix("straylight: ")


@pytest.mark.parametrize(
    ("fault", "params", "extra_env"),
    [
        # 1 s, not 0.5: the first two chunks must come within the timeout on a loaded machine
        ("stall", {"after": 2, "seconds": 3.0}, {"STRAYLIGHT_HTTP_TIMEOUT_SECONDS": "1.0"}),
        ("drop", {"after": 2}, {}),
        ("malformed", {"after": 2}, {}),
        ("error_line", {"after": 2, "message": "model crashed"}, {}),
    ],
    ids=["stall-timeout", "drop", "malformed", "error-line"],
)
def test_ask_exits_5_and_logs_partial_reply_as_cut_off(
    env: Env, standin: OllamaStandIn, fault: str, params: dict[str, Any], extra_env: Env
) -> None:
    standin.script_reply(REPLY)
    standin.fail_next(fault, path="/api/chat", **params)  # type: ignore[arg-type]
    started = time.monotonic()
    proc = run_cli(dict(env, **extra_env), "ask", "hello")
    assert time.monotonic() - started < SLOW_LIMIT
    assert_one_line(proc, 5)
    assert proc.stdout.startswith(PARTIAL)
    assert "gamma" not in proc.stdout

    user, assistant = history_json(env)
    assert user["role"] == "user" and user["status"] == "complete"
    assert assistant["role"] == "assistant"
    assert assistant["content"] == PARTIAL
    assert assistant["status"] == "cut_off"
    assert assistant["reason"]
    assert assistant["conversation_id"] == user["conversation_id"]
    assert assistant["time"] == NOW


# --------------------------------------------------------------------------- usage errors


def test_ask_with_no_text_is_usage_error(env: Env, standin: OllamaStandIn, home: Path) -> None:
    cases = {
        "empty": (["ask", ""], None),
        "blank": (["ask", "  \n\t "], None),
        "empty-stdin": (["ask", "-"], ""),
        "blank-stdin": (["ask", "-"], " \n"),
    }
    calls = [(env, args, stdin) for args, stdin in cases.values()]
    for label, proc in zip(cases, run_each(calls), strict=True):
        assert_one_line(proc, 2, label=label)
    assert standin.chat_requests() == []
    assert not (home / "conversation").exists()


def run_with_closed(fd: int, env: Env, *args: str) -> CliResult:
    """The CLI as a real process started with `fd` closed (`<&-`, `>&-`: a service); the
    other two streams captured."""
    keep = {0: None, 1: subprocess.PIPE, 2: subprocess.PIPE}
    keep[fd] = None  # inherited, then closed in the child before the command starts
    proc = subprocess.run(
        cli_command(*args),
        env=env,
        cwd=REPO_ROOT,
        stdin=keep[0],
        stdout=keep[1],
        stderr=keep[2],
        text=True,
        timeout=TIMEOUT,
        preexec_fn=lambda: os.close(fd),
        check=False,
    )
    return CliResult(list(args), proc.returncode, proc.stdout or "", proc.stderr or "")


def test_a_closed_standard_input_reads_as_empty_not_a_traceback(
    env: Env, standin: OllamaStandIn, home: Path
) -> None:
    """Started with stdin closed (`straylight ask - <&-`, a service with no stdin), Python
    gives `sys.stdin = None`: `ask -`, `remember -`, `facts set --body -` and the question
    of `conversations delete` were AttributeError tracebacks (exit 1). A closed stdin reads
    as /dev/null does: nothing (exit 2, one line), and no terminal to ask on."""

    def closed_stdin(*args: str) -> CliResult:
        return run_with_closed(0, env, *args)

    assert_one_line(closed_stdin("ask", "-"), 2, "ask needs a non-empty TEXT")  # no data dir
    assert run_cli(env, "ask", "Keep this conversation around, please.").returncode == 0
    cid = history_json(env)[0]["conversation_id"]
    assert_one_line(closed_stdin("ask", "-"), 2, "ask needs a non-empty TEXT")
    assert_one_line(closed_stdin("remember", "-"), 2, "remember needs a non-empty TEXT")
    fact = closed_stdin("facts", "set", "k", "--type", "fact", "--body", "-")
    assert_one_line(fact, 2, "a fact needs a body")
    assert_one_line(closed_stdin("conversations", "delete", cid), 2, "no terminal", "--yes")
    assert len(history_json(env)) == 2


def test_a_closed_standard_output_is_no_error_after_the_work(env: Env, home: Path) -> None:
    """Started with stdout closed (`straylight remember TEXT >&-`, a service), Python gives
    `sys.stdout = None`: the point was stored, then printing "remembered" failed with
    "unexpected error" (exit 1), so a retry stored it twice. Now it exits 0."""
    proc = run_with_closed(1, env, "remember", "The spare key hangs behind the kitchen calendar.")
    assert (proc.returncode, proc.stderr) == (0, "")
    recalled = run_cli(env, "recall", "spare key", "--json")
    assert len(json.loads(recalled.stdout)["hits"]) == 1


BAD_COMMAND_LINES = {
    "unknown-ask-flag": ["ask", "--bogus", "hi"],
    "unknown-top-flag": ["--frobnicate", "status"],
    "misspelt-flag": ["history", "--daet", DAY],
    "missing-text": ["ask"],
    "unknown-command": ["chat", "hi"],
    "missing-option-value": ["ask", "hi", "--conversation"],
}


def test_bad_command_line_exits_2_without_traceback(env: Env, standin: OllamaStandIn) -> None:
    # Real processes: the exit code the shell sees, through `python -m tui.cli`.
    calls = [(env, args, None) for args in BAD_COMMAND_LINES.values()]
    for label, proc in zip(BAD_COMMAND_LINES, spawn_many(calls), strict=True):
        assert proc.returncode == 2, (label, proc.stderr)
        assert "Traceback" not in proc.stderr, label
        assert proc.stderr.strip(), label
    assert standin.chat_requests() == []


def test_bad_command_line_is_one_line(env: Env) -> None:
    calls = [(env, args, None) for args in BAD_COMMAND_LINES.values()]
    for label, proc in zip(BAD_COMMAND_LINES, run_each(calls), strict=True):
        assert_one_line(proc, 2, label=label)


@pytest.mark.parametrize(
    ("args", "named"),
    [
        (["ask", "hello", "world"], "straylight ask --help"),
        (["remember", "my", "note"], "straylight remember --help"),
        (
            ["facts", "set", "k", "--type", "fact", "--body", "two", "words"],
            "straylight facts set --help",
        ),
        (["conversations", "delete", "x", "--force"], "straylight conversations delete --help"),
    ],
)
def test_leftover_words_name_their_command_and_the_quotes(
    env: Env, standin: OllamaStandIn, args: list[str], named: str
) -> None:
    """`straylight ask hello world` (no quotes) used to send the user to `straylight --help`,
    which does not list ask's arguments; the line names the command, and for a stray word
    (not an option) the missing quotes."""
    line = assert_one_line(run_cli(env, *args), 2, "unrecognized arguments:")
    assert f"(try '{named}')" in line
    assert ("needs quotes" in line) is (not args[-1].startswith("-"))
    assert standin.chat_requests() == []


@pytest.mark.parametrize(
    ("args", "line"),
    [
        (["--json", "status"], "--json goes after 'status': straylight status … --json"),
        (["--json", "recall", "bees"], "--json goes after 'recall': straylight recall … --json"),
        (
            ["conversations", "--yes", "delete", "x"],
            "--yes goes after 'delete': straylight conversations delete … --yes",
        ),
    ],
)
def test_an_option_before_its_command_is_named_with_where_it_goes(
    env: Env, standin: OllamaStandIn, args: list[str], line: str
) -> None:
    """`straylight --json status` was `unrecognized arguments: --json (try 'straylight status
    --help')`, whose help lists `--json`: the line now says it goes after the command. An
    option no command takes stays unrecognized."""
    assert line in assert_one_line(run_cli(env, *args), 2)
    unknown = assert_one_line(run_cli(env, "--jsn", "status"), 2)
    assert "unrecognized arguments: --jsn" in unknown
    assert standin.chat_requests() == []


def test_history_bad_date_exits_2(env: Env) -> None:
    days = ["2031-13-01", "2031-02-30", "yesterday", "03/02/2031", "2031-02-03T04:05"]
    calls = [(env, ["history", "--date", day], None) for day in days]
    for day, proc in zip(days, run_each(calls), strict=True):
        assert_one_line(proc, 2, label=day)
        assert proc.stdout == "", day


def test_history_empty_date_exits_2(env: Env) -> None:
    assert_one_line(run_cli(env, "history", "--date", ""), 2)


BAD_SETTINGS = {
    "malformed-toml": ("history_turns = [1\n", {}, "TOML"),
    "unknown-key": ("tokens = 5\n", {}, "tokens"),
    "wrong-type": ("memory_top_k = 'five'\n", {}, "memory_top_k"),
    "out-of-range": ("memory_min_score = 7\n", {}, "memory_min_score"),
    "bad-env": (
        "",
        {"STRAYLIGHT_HTTP_TIMEOUT_SECONDS": "forever"},
        "STRAYLIGHT_HTTP_TIMEOUT_SECONDS",
    ),
    "bad-host": ("", {"OLLAMA_HOST": "localhost:123456"}, "OLLAMA_HOST"),
    "bad-now": ("", {"STRAYLIGHT_NOW": "tomorrow-ish"}, "STRAYLIGHT_NOW"),
}


def test_bad_settings_stop_ask_with_exit_2(
    env: Env, standin: OllamaStandIn, tmp_path: Path
) -> None:
    calls = []
    paths = {}
    for label, (config, extra_env, _fragment) in BAD_SETTINGS.items():
        # Each case gets its own platform config dir ($XDG_CONFIG_HOME/straylight/config.toml).
        xdg = tmp_path / f"xdg-{label}"
        paths[label] = xdg / "straylight" / "config.toml"
        paths[label].parent.mkdir(parents=True)
        paths[label].write_text(config, encoding="utf-8")
        calls.append((dict(env, XDG_CONFIG_HOME=str(xdg), **extra_env), ["ask", "hello"], None))
    for (label, (config, _env, fragment)), proc in zip(
        BAD_SETTINGS.items(), run_each(calls), strict=True
    ):
        line = assert_one_line(proc, 2, fragment, label=label)
        if config:
            assert str(paths[label]) in line, label
        assert proc.stdout == "", label
    assert standin.chat_requests() == []


def test_config_option_and_env_select_the_file(env: Env, tmp_path: Path) -> None:
    by_env = tmp_path / "env.toml"
    by_env.write_text("memory_top_k = 11\n", encoding="utf-8")
    by_flag = tmp_path / "flag.toml"
    by_flag.write_text("memory_top_k = 12\n", encoding="utf-8")
    with_env = dict(env, STRAYLIGHT_CONFIG=str(by_env))

    described = json.loads(run_cli(with_env, "config", "--json").stdout)
    assert described["memory_top_k"] == {"value": 11, "source": "file", "origin": str(by_env)}
    proc = run_cli(with_env, "config", "--json", "--config", str(by_flag))
    assert_quiet(proc)
    assert json.loads(proc.stdout)["memory_top_k"]["value"] == 12
    described = json.loads(run_cli(dict(with_env, MEMORY_TOP_K="13"), "config", "--json").stdout)
    assert described["memory_top_k"] == {"value": 13, "source": "env", "origin": "MEMORY_TOP_K"}


def test_a_config_file_that_never_ends_or_a_fifo_without_a_writer_never_hangs_the_start(
    env: Env, tmp_path: Path
) -> None:
    """`--config` (or STRAYLIGHT_CONFIG, or the platform path) naming a FIFO nobody writes
    to blocked every command at start for good, and `/dev/zero` was read until memory ran
    out. A FIFO without a writer reads as empty now, and more than 1 MiB (no config.toml
    is that big) is refused in one line, exit 2. `/dev/null` stays an empty config."""
    fifo = tmp_path / "config.fifo"
    os.mkfifo(fifo)
    started = time.monotonic()
    proc = run_cli_process(env, "--config", str(fifo), "config", "--json")
    assert json.loads(proc.stdout)["memory_top_k"]["source"] == "default", proc.stderr
    assert time.monotonic() - started < TIMEOUT / 2
    proc = run_cli_process(dict(env, STRAYLIGHT_CONFIG="/dev/zero"), "status")
    assert_one_line(proc, 2, "config file /dev/zero is over 1 MiB")
    assert_quiet(run_cli(env, "--config", os.devnull, "config"))


# --------------------------------------------------------------------------- history


def test_history_json_after_asks(env: Env, standin: OllamaStandIn) -> None:
    standin.script_reply("first answer")
    standin.script_reply("second answer")
    assert_quiet(run_cli(env, "ask", "first question"))
    assert_quiet(run_cli(env, "ask", "second question"))

    messages = history_json(env)
    assert [(m["role"], m["content"]) for m in messages] == [
        ("user", "first question"),
        ("assistant", "first answer"),
        ("user", "second question"),
        ("assistant", "second answer"),
    ]
    for message in messages:
        assert {"role", "content", "conversation_id", "time", "model", "status", "reason"} <= set(
            message
        )
        assert message["time"] == NOW
        assert message["status"] == "complete"
        assert message["reason"] is None
    first, second = messages[0]["conversation_id"], messages[2]["conversation_id"]
    assert first != second  # each plain `ask` starts a new conversation
    assert messages[1]["conversation_id"] == first and messages[3]["conversation_id"] == second

    assert history_json(env, "--date", DAY) == messages
    assert history_json(env, "--date", "2031-02-04") == []
    only = history_json(env, "--conversation", second)
    assert [m["content"] for m in only] == ["second question", "second answer"]


def test_history_text_marks_cut_off_replies(env: Env, standin: OllamaStandIn) -> None:
    standin.script_reply(REPLY)
    standin.fail_next("drop", after=2, path="/api/chat")
    assert_one_line(run_cli(env, "ask", "hello"), 5)
    proc = run_cli(env, "history")
    assert_quiet(proc)
    assert "hello" in proc.stdout
    assert PARTIAL.strip() in proc.stdout
    assert "cut off" in proc.stdout


@pytest.mark.parametrize(
    ("now", "day", "stamp"),
    [
        ("2031-02-03T23:30:00-05:00", "2031-02-04", "2031-02-04T04:30:00Z"),
        ("2029-12-31T23:59:59", "2029-12-31", "2029-12-31T23:59:59Z"),
    ],
)
def test_straylight_now_names_log_file_and_time(
    cli_env: Callable[..., Env], standin: OllamaStandIn, home: Path, now: str, day: str, stamp: str
) -> None:
    fixed = cli_env(OLLAMA_HOST=standin.host, STRAYLIGHT_NOW=now)
    assert_quiet(run_cli(fixed, "ask", "what time is it?"))
    assert sorted(p.name for p in (home / "conversation").iterdir()) == [f"{day}.md"]
    messages = history_json(fixed)  # "today" is the frozen day
    assert [m["time"] for m in messages] == [stamp, stamp]
    compact = stamp[:19].replace("-", "").replace(":", "").replace("T", "-")
    assert messages[0]["conversation_id"].startswith(compact)


def test_history_of_an_unknown_conversation_is_not_found(env: Env, home: Path) -> None:
    """A conversation the logs do not hold is named, exit 1 (an unknown id, as `reflect`
    and `forget` say it); one held on another day is an empty answer naming its last day;
    a value `ask --conversation` would refuse is a usage error (exit 2, not repeated)."""
    write_day(home, "2031-02-01", log_block("user", "older", "project-x", "2031-02-01T09:00:00Z"))
    for args in (("history",), ("history", "--json"), ("history", "--date", DAY)):
        proc = run_cli(env, *args, "--conversation", "no-such-thing")
        assert_one_line(proc, 1, "no conversation 'no-such-thing'", "straylight conversations")
        assert proc.stdout == ""
    elsewhere = run_cli(env, "history", "--conversation", "project-x")
    assert (elsewhere.returncode, elsewhere.stdout) == (0, "")  # stdout stays the messages
    assert "project-x" in elsewhere.stderr and "2031-02-01" in elsewhere.stderr
    assert history_json(env, "--conversation", "project-x", "--date", "2031-02-01") != []
    as_json = run_cli(env, "history", "--conversation", "project-x", "--json")
    assert (as_json.returncode, json.loads(as_json.stdout)) == (0, [])  # and the same note
    assert "project-x" in as_json.stderr and "2031-02-01" in as_json.stderr
    line = assert_one_line(run_cli(env, "history", "--conversation", "Bad Name"), 2)
    assert "--conversation wants" in line and "Bad Name" not in line


def test_history_of_a_conversation_without_data_dir(env: Env, home: Path) -> None:
    proc = run_cli(env, "history", "--conversation", "project-x")
    assert_one_line(proc, 1, "no conversation 'project-x'", f"no data dir at {home}")
    assert not home.exists()


def test_history_of_a_day_without_log(env: Env, home: Path) -> None:
    home.mkdir(parents=True)  # a data dir without that day's log (none at all: a hint, below)
    assert history_json(env, "--date", "2001-01-01") == []
    proc = run_cli(env, "history", "--date", "2001-01-01")
    assert (proc.returncode, proc.stdout) == (0, "")
    assert "no messages on 2001-01-01" in proc.stderr


def test_history_without_data_dir_says_so_once(env: Env, home: Path) -> None:
    proc = run_cli(env, "history")
    line = assert_one_line(proc, 0, f"no data dir at {home}")
    assert "no messages on" not in line and proc.stdout == ""
    assert not home.exists()


# --------------------------------------------------------------------------- conversations


def test_conversation_option_sends_history_and_longterm(
    env: Env, standin: OllamaStandIn, home: Path
) -> None:
    home.mkdir(parents=True)
    (home / "longterm.md").write_text(
        "<!-- private note: do not send SECRET-COMMENT -->\n"
        "My name is Ada.\n<!--\nmulti-line HIDDEN-TOO\n-->\nI prefer tea.\n",
        encoding="utf-8",
    )
    standin.script_reply("Hi Ada.")
    standin.script_reply("You said hello.")
    standin.script_reply("Who?")
    assert_quiet(run_cli(env, "ask", "hello"))
    conversation = history_json(env)[0]["conversation_id"]

    assert_quiet(run_cli(env, "ask", "--conversation", conversation, "what did I say?"))
    messages = standin.chat_requests()[-1]["messages"]
    assert [(m["role"], m["content"]) for m in messages[1:]] == [
        ("user", "hello"),
        ("assistant", "Hi Ada."),
        ("user", "what did I say?"),
    ]
    system = messages[0]
    assert system["role"] == "system"
    assert "My name is Ada." in system["content"]
    assert "I prefer tea." in system["content"]
    assert "SECRET-COMMENT" not in system["content"]
    assert "HIDDEN-TOO" not in system["content"]
    assert "<!--" not in system["content"]

    # A new conversation carries no history, but the same long-term memory.
    assert_quiet(run_cli(env, "ask", "-c", "fresh-one", "who am I?"))
    fresh = standin.chat_requests()[-1]["messages"]
    assert [m["role"] for m in fresh] == ["system", "user"]
    assert "My name is Ada." in fresh[0]["content"]
    logged = history_json(env, "--conversation", conversation)
    assert [m["content"] for m in logged] == [
        "hello",
        "Hi Ada.",
        "what did I say?",
        "You said hello.",
    ]


@pytest.mark.parametrize(("turns", "kept"), [(None, 20), ("3", 3), ("0", 0)])
def test_history_turns_limits_the_prompt(
    env: Env, standin: OllamaStandIn, home: Path, turns: str | None, kept: int
) -> None:
    past: list[tuple[str, str]] = []
    for number in range(12):
        past += [("user", f"question {number}"), ("assistant", f"answer {number}")]
    write_day(
        home,
        DAY,
        log_block("user", "other conversation", "other", "2031-02-03T01:00:00Z")
        + "".join(
            log_block(role, text, "long", f"2031-02-03T02:{index:02d}:00Z")
            for index, (role, text) in enumerate(past)
        ),
    )
    run_env = env if turns is None else dict(env, STRAYLIGHT_HISTORY_TURNS=turns)
    assert_quiet(run_cli(run_env, "ask", "-c", "long", "and now?"))
    messages = standin.chat_requests()[-1]["messages"]
    assert messages[0]["role"] == "system"
    assert messages[-1] == {"role": "user", "content": "and now?"}
    sent = [(m["role"], m["content"]) for m in messages[1:-1]]
    assert sent == (past[-kept:] if kept else [])


# --------------------------------------------------------------------------- --home everywhere


@pytest.mark.parametrize("command", ["ask", "history", "status", "config"])
def test_home_option_works_before_and_after_every_command(
    env: Env, standin: OllamaStandIn, home: Path, tmp_path: Path, command: str
) -> None:
    tail = {"ask": ["hello"], "history": ["--json"], "status": ["--json"], "config": ["--json"]}
    others = {position: tmp_path / f"home {position}" for position in ("before", "after")}
    calls = []
    for position, other in others.items():
        write_day(other, DAY, log_block("user", f"kept {position}", "c1", NOW))
        option = ["--home", str(other)]
        args = [*option, command] if position == "before" else [command, *option]
        calls.append((env, [*args, *tail[command]], None))
    for (position, other), proc in zip(others.items(), run_each(calls), strict=True):
        assert proc.returncode == 0, (position, proc.stderr)
        assert proc.stderr == "", position
        if command == "ask":
            contents = (other / "conversation" / f"{DAY}.md").read_text(encoding="utf-8")
            assert f"kept {position}" in contents and "hello" in contents
            assert (other / "longterm.md").is_file()
        elif command == "history":
            assert [m["content"] for m in json.loads(proc.stdout)] == [f"kept {position}"]
        elif command == "status":
            report = json.loads(proc.stdout)
            assert report["home"] == str(other)
            assert report["longterm"]["path"] == str(other / "longterm.md")
            assert report["log"]["messages_today"] == 1
        else:
            assert json.loads(proc.stdout)["home"] == {
                "value": str(other),
                "source": "flag",
                "origin": "--home",
            }
    assert not home.exists()  # STRAYLIGHT_HOME was not touched


# --------------------------------------------------------------------------- status


def test_status_reports_reachable_ollama_and_pulled_model(
    env: Env, standin: OllamaStandIn, home: Path
) -> None:
    assert_quiet(run_cli(env, "ask", "hello"))
    report = status_json(env)
    assert report["ollama"]["reachable"] is True
    assert report["ollama"]["model_pulled"] is True
    assert report["ollama"]["host"] == standin.url
    longterm = report["longterm"]
    assert longterm["size_bytes"] == (home / "longterm.md").stat().st_size
    assert longterm["budget_bytes"] == 8192
    assert longterm["over_budget"] is False
    assert longterm["warning"] is None
    assert report["log"] == {"today": DAY, "messages_today": 2}

    missing = status_json(env, "--model", "not-here")
    assert missing["ollama"]["model_pulled"] is False


def test_status_reports_unreachable_ollama(env: Env, standin: OllamaStandIn) -> None:
    standin.stop()
    report = status_json(env)
    assert report["ollama"]["reachable"] is False
    assert report["ollama"]["model_pulled"] is None
    assert str(standin.port) in report["ollama"]["error"]
    text = run_cli(env, "status")
    assert "Traceback" not in text.stderr
    assert "offline" in text.stdout


def test_status_names_a_failing_ollama_apart_from_an_offline_one(
    env: Env, standin: OllamaStandIn
) -> None:
    """An HTTP 500 on /api/tags is a server that is up and broken: "error", with its
    message; it read "offline", which sent the user to start a server that runs."""
    standin.fail_next("status", count=None, path="/api/tags", message="runner terminated")
    report = status_json(env)
    assert report["ollama"]["reachable"] is False
    assert "runner terminated" in report["ollama"]["error"]
    line = next(x for x in run_cli(env, "status").stdout.splitlines() if x.startswith("ollama"))
    assert "(error: Ollama answered HTTP 500: runner terminated)" in line, line
    assert report["ollama"]["version"] is not None  # it answered /api/version: said


def test_status_calls_a_server_whose_list_is_slow_an_error_not_offline(
    env: Env, standin: OllamaStandIn
) -> None:
    """/api/version answered at once, /api/tags not within the limit: it read "offline"
    and dropped the version, though a server had answered."""
    standin.fail_next("delay", count=None, path="/api/tags", seconds=3.0)
    slow = dict(env, STRAYLIGHT_CONNECT_TIMEOUT_SECONDS="0.5")
    report = status_json(slow)["ollama"]
    line = next(x for x in run_cli(slow, "status").stdout.splitlines() if x.startswith("ollama"))
    standin.clear_faults()
    assert report["reachable"] is False and report["version"] is not None
    assert "0.5 s" in report["error"]
    assert "(error: " in line and "offline" not in line, line


@pytest.mark.parametrize(("size", "over"), [(8192, False), (8193, True)])
def test_status_longterm_budget(env: Env, home: Path, size: int, over: bool) -> None:
    home.mkdir(parents=True)
    body = "My name is Ada.\n"
    (home / "longterm.md").write_text(body + "x" * (size - len(body)), encoding="utf-8")
    report = status_json(env)["longterm"]
    assert report["size_bytes"] == size
    assert report["over_budget"] is over
    assert (report["warning"] is not None) is over
    if over:
        assert "budget" in report["warning"]
        proc = run_cli(env, "status")
        assert "warning" in proc.stdout


def test_longterm_budget_setting_moves_the_threshold(env: Env, home: Path) -> None:
    home.mkdir(parents=True)
    (home / "longterm.md").write_text("y" * 100, encoding="utf-8")
    report = status_json(dict(env, STRAYLIGHT_LONGTERM_BUDGET_BYTES="99"))["longterm"]
    assert (report["budget_bytes"], report["over_budget"]) == (99, True)


def test_an_over_budget_longterm_that_the_window_cuts_is_not_called_sent_whole(
    env: Env, standin: OllamaStandIn, home: Path
) -> None:
    """ask said "every turn sends all of it" of an over-budget longterm.md, and the context
    line beneath said its paragraphs were left out: both are now true together."""
    home.mkdir(parents=True)
    paragraphs = [f"Paragraph {n}: " + "the staging deploy notes go on " * 40 for n in range(60)]
    (home / "longterm.md").write_text("\n\n".join(paragraphs) + "\n", encoding="utf-8")
    proc = run_cli(dict(env, STRAYLIGHT_NUM_CTX="2048"), "ask", "hello")
    assert proc.returncode == 0, proc.stderr
    assert "over its budget" in proc.stderr and "all of it" not in proc.stderr, proc.stderr
    assert "as much of it as the context window holds" in proc.stderr
    assert "long-term memory:" in proc.stderr and "left out" in proc.stderr, proc.stderr


def test_non_utf8_longterm_warns_but_ask_still_works(
    env: Env, standin: OllamaStandIn, home: Path
) -> None:
    home.mkdir(parents=True)
    (home / "longterm.md").write_bytes(b"My name is Ad\xe9 NON-UTF8-MARKER\n")
    report = status_json(env)["longterm"]
    assert report["warning"] and "UTF-8" in report["warning"]

    standin.script_reply(REPLY)
    proc = run_cli(env, "ask", "hello")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == REPLY + "\n"
    warning = assert_one_line(proc, 0, "warning")
    assert "UTF-8" in warning
    assert "NON-UTF8-MARKER" not in standin.chat_requests()[-1]["messages"][0]["content"]
    # The user's file is left as it was.
    assert (home / "longterm.md").read_bytes() == b"My name is Ad\xe9 NON-UTF8-MARKER\n"


# --------------------------------------------------------------------------- file modes


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_files_are_private_even_with_a_permissive_umask(env: Env, home: Path) -> None:
    assert_quiet(run_cli(env, "ask", "secret", umask=0))
    assert _mode(home) == 0o700
    assert _mode(home / "conversation") == 0o700
    assert _mode(home / "conversation" / f"{DAY}.md") == 0o600
    assert _mode(home / "longterm.md") == 0o600
    assert _mode(home / "straylight.log") == 0o600


def test_parent_folders_made_for_the_data_dir_are_private_too(env: Env, tmp_path: Path) -> None:
    """`--home` under folders that do not exist yet: the data dir was 0700, the folders
    made on the way to it 0755 (Python's `mkdir(parents=True)` takes the umask for them)."""
    shared = tmp_path / "shared"
    shared.mkdir()
    os.chmod(shared, 0o755)
    nested = shared / "made" / "on-the-way" / "data"
    assert_quiet(run_cli(env, "--home", str(nested), "ask", "secret", umask=0o022))
    made = (nested, nested.parent, nested.parent.parent)
    assert [_mode(folder) for folder in made] == [0o700] * 3
    assert _mode(shared) == 0o755  # a folder that existed keeps its mode


def test_existing_open_conversation_dir_is_tightened(env: Env, home: Path) -> None:
    (home / "conversation").mkdir(parents=True)
    os.chmod(home / "conversation", 0o755)
    assert_quiet(run_cli(env, "ask", "secret"))
    assert _mode(home / "conversation") == 0o700
    assert _mode(home / "conversation" / f"{DAY}.md") == 0o600


# --------------------------------------------------------------------------- edges


def test_history_date_must_be_exactly_yyyy_mm_dd(env: Env) -> None:
    for bad in ("20311203", "2031-W05-1"):
        assert_one_line(run_cli(env, "history", "--date", bad), 2, "YYYY-MM-DD", label=bad)


def test_options_are_not_abbreviated(env: Env) -> None:
    assert_one_line(run_cli(env, "history", "--dat", "2026-11-29"), 2, "--dat")


def test_an_empty_variable_counts_as_unset(env: Env, tmp_path: Path) -> None:
    env = {**env, "STRAYLIGHT_HOME": "", "XDG_DATA_HOME": str(tmp_path / "platform-data")}
    proc = run_cli(env, "config", "--json")
    assert proc.returncode == 0, proc.stderr
    home = json.loads(proc.stdout)["home"]
    assert home["source"] == "default"
    assert home["value"] == str(tmp_path / "platform-data" / "straylight")


def test_config_shows_the_workspace_the_facts_would_use(env: Env, tmp_path: Path) -> None:
    """`config` is every effective setting: a derived workspace is shown as what it is here
    (the git root of the current directory), not as null; a given one as given."""
    sub = tmp_path / "repo" / "src"
    (tmp_path / "repo" / ".git").mkdir(parents=True)
    sub.mkdir()
    derived = json.loads(run_cli(env, "config", "--json", cwd=sub).stdout)["workspace"]
    assert derived == {"value": str(tmp_path / "repo"), "source": "default", "origin": None}
    [line] = [x for x in run_cli(env, "config", cwd=sub).stdout.splitlines() if "workspace" in x]
    assert line.split(" = ", 1)[1] == f'"{tmp_path / "repo"}"  # default'
    given = run_cli(env, "--workspace", "blyck", "config", "--json", cwd=sub)
    assert json.loads(given.stdout)["workspace"]["value"] == "blyck"


@pytest.mark.parametrize("args", [["status"], ["remember", "a note"], ["config"]])
def test_a_deleted_current_directory_is_one_line(env: Env, tmp_path: Path, args: list[str]) -> None:
    """A shell still sitting in a folder that was deleted: `os.getcwd()` raised, and a
    traceback reached the screen (`status`, `remember`) or "unexpected error" (`config`)."""
    gone = tmp_path / "gone"
    gone.mkdir()
    script = 'cd "$1" && rmdir "$1" && shift && exec "$@"'
    proc = subprocess.run(
        ["sh", "-c", script, "sh", str(gone), *cli_command(*args)],
        env=env,
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
    )
    assert (proc.returncode, proc.stdout) == (2, ""), proc.stderr
    assert proc.stderr == "straylight: the current directory no longer exists: cd to another one\n"


def test_config_does_not_create_the_data_dir(env: Env, home: Path) -> None:
    proc = run_cli(env, "config")
    assert proc.returncode == 0 and not home.exists()


def test_the_log_file_stays_private_after_rotation(tmp_path: Path) -> None:
    import logging

    from tui.logging_setup import PrivateRotatingFileHandler

    old_umask = os.umask(0o022)
    try:
        path = tmp_path / "straylight.log"
        handler = PrivateRotatingFileHandler(path, maxBytes=200, backupCount=2)
        record = logging.LogRecord("t", logging.INFO, __file__, 1, "x" * 150, None, None)
        for _ in range(4):
            handler.emit(record)
        handler.close()
    finally:
        os.umask(old_umask)
    assert (tmp_path / "straylight.log.1").exists()
    for name in ("straylight.log", "straylight.log.1"):
        assert stat.S_IMODE((tmp_path / name).stat().st_mode) == 0o600, name


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (("ask", ""), "ask needs a non-empty TEXT"),
        (("remember", "  "), "remember needs a non-empty TEXT"),
        (("facts", "set", "", "--type", "fact", "--body", "x"), "empty fact key"),
        (("facts", "set", "k", "--type", "fact", "--body", ""), "a fact needs a body"),
        (("candidates", "propose", ":", "--type", "fact", "--body", "x"), "empty fact key"),
        (("ask", "-"), "ask needs a non-empty TEXT"),  # nothing but blanks on stdin
        (("facts", "set", "k", "--type", "fact", "--body", "-"), "a fact needs a body"),
    ],
)
def test_an_empty_text_is_refused_before_the_data_dir_is_made(
    env: Env, home: Path, args: tuple[str, ...], said: str
) -> None:
    assert_one_line(run_cli(env, *args, stdin=" \n"), 2, said)
    assert not home.exists()


@pytest.mark.parametrize("args", [("remember", "-"), ("ask", "-")])
def test_endless_standard_input_is_refused_in_one_line(
    env: Env, home: Path, args: tuple[str, ...]
) -> None:
    """`remember - < /dev/zero` read for ever (and ran out of memory with a traceback): more
    than 16 MiB of standard input is refused, exit 2, before the data dir is made."""
    with open("/dev/zero", "rb") as zeros:
        proc = subprocess.run(
            cli_command(*args),
            env=env,
            cwd=REPO_ROOT,
            stdin=zeros,
            capture_output=True,
            text=True,
            timeout=60,
        )
    assert proc.returncode == 2 and proc.stderr == (
        "straylight: standard input is over 16 MiB: not read\n"
    ), proc.stderr
    assert not home.exists()
