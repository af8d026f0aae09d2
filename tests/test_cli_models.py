"""`straylight models` and `straylight pull` against the real-HTTP Ollama stand-in: the JSON
contract, the table, the progress output on a pipe and on a terminal, exit codes (in-process
through tests/support/cli.py), and Ctrl+C during a pull (a real process)."""

from __future__ import annotations

import io
import os
import pty
import signal
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import ollama
import pytest

from agent.model_changes import PullProgress
from tests.support.cli import (
    REPO_ROOT,
    TIMEOUT,
    Env,
    assert_one_line,
    assert_quiet,
    cli_command,
    printed_json,
    run_cli,
)
from tests.support.ollama_standin import OllamaStandIn
from tui.cli_models import PipeProgress, TerminalProgress, human_bytes

FIELDS = [
    "name",
    "size",
    "family",
    "parameter_size",
    "quantization",
    "capabilities",
    "context_length",
    "loaded",
    "embedding",
]
MODELS = ("llama3.2", "qwen3:8b", "llava", "nomic-embed-text")


def models_json(env: Env, *args: str) -> list[dict[str, Any]]:
    result = run_cli(env, "models", "--json", *args)
    entries: list[dict[str, Any]] = printed_json(result, quiet=True)
    return entries


@pytest.fixture
def env(cli_env: Callable[..., Env], standin: OllamaStandIn) -> Env:
    standin.set_models(MODELS)
    return cli_env(OLLAMA_HOST=standin.host)


# ------------------------------------------------------------------------------ models


def test_models_json_is_one_entry_per_pulled_model(env: Env) -> None:
    entries = models_json(env)
    assert all(list(entry) == FIELDS for entry in entries)
    by_name = {entry["name"]: entry for entry in entries}
    assert set(by_name) == {
        "llama3.2:latest",
        "qwen3:8b",
        "llava:latest",
        "nomic-embed-text:latest",
    }
    assert by_name["llama3.2:latest"] == {
        "name": "llama3.2:latest",
        "size": 2_019_393_189,
        "family": "llama",
        "parameter_size": "3.2B",
        "quantization": "Q4_K_M",
        "capabilities": ["completion", "tools"],
        "context_length": 131_072,
        "loaded": False,
        "embedding": False,
    }


def test_models_reports_capabilities(env: Env) -> None:
    by_name = {entry["name"]: entry for entry in models_json(env)}
    assert by_name["qwen3:8b"]["capabilities"] == ["completion", "tools", "thinking"]
    assert by_name["llava:latest"]["capabilities"] == ["completion", "vision"]
    embed = by_name["nomic-embed-text:latest"]
    assert (embed["capabilities"], embed["embedding"]) == (["embedding"], True)
    assert embed["context_length"] == 2048


def test_loaded_follows_api_ps(env: Env, standin: OllamaStandIn) -> None:
    ollama.Client(host=standin.url).chat("qwen3:8b", [{"role": "user", "content": "hi"}])
    loaded = {entry["name"]: entry["loaded"] for entry in models_json(env)}
    assert loaded == {
        "llama3.2:latest": False,
        "qwen3:8b": True,
        "llava:latest": False,
        "nomic-embed-text:latest": False,
    }
    standin.unload()
    assert not any(entry["loaded"] for entry in models_json(env))


def test_models_prints_a_table_without_json(env: Env) -> None:
    proc = run_cli(env, "models")
    assert_quiet(proc)
    header, *rows = proc.stdout.splitlines()
    assert header.split() == [
        "NAME",
        "SIZE",
        "PARAMS",
        "QUANT",
        "CAPABILITIES",
        "CONTEXT",
        "LOADED",
    ]
    row = next(line for line in rows if line.startswith("qwen3:8b"))
    assert row.split() == [
        *("qwen3:8b", "5.2", "GB", "8.2B", "Q4_K_M"),
        *("completion,tools,thinking", "40960", "no"),
    ]


def test_no_models_pulled_says_how_to_pull(env: Env, standin: OllamaStandIn) -> None:
    standin.set_models([])
    assert models_json(env) == []
    proc = run_cli(env, "models")
    assert (proc.returncode, proc.stdout) == (0, "")  # stdout is the table: empty
    assert "straylight pull" in proc.stderr


def test_ollama_down_is_the_same_line_and_code_as_other_commands(
    cli_env: Callable[..., Env], standin: OllamaStandIn
) -> None:
    host = standin.host
    standin.stop()
    env = cli_env(OLLAMA_HOST=host)
    ask = run_cli(env, "ask", "hello")
    line = assert_one_line(ask, 3, "not reachable")
    assert assert_one_line(run_cli(env, "models"), 3, "not reachable") == line
    assert assert_one_line(run_cli(env, "models", "--json"), 3, "not reachable") == line
    assert assert_one_line(run_cli(env, "pull", "mistral"), 3, "not reachable") == line


def test_models_waits_for_the_list_as_long_as_connect_timeout_seconds_says(
    env: Env, standin: OllamaStandIn
) -> None:
    """The README makes `connect_timeout_seconds` the limit of the metadata calls; `models`
    waited a fixed 10 s for /api/tags whatever it said."""
    standin.fail_next("delay", path="/api/tags", seconds=3.0)
    proc = run_cli({**env, "STRAYLIGHT_CONNECT_TIMEOUT_SECONDS": "0.5"}, "models")
    assert proc.returncode == 5, proc.stderr
    assert "did not list its models within 0.5 s" in proc.stderr
    assert "STRAYLIGHT_CONNECT_TIMEOUT_SECONDS" in proc.stderr


def test_common_options_work(
    cli_env: Callable[..., Env], standin: OllamaStandIn, tmp_path: Path
) -> None:
    env = cli_env()  # no OLLAMA_HOST: the flag must carry it
    missing_home = tmp_path / "nowhere"
    entries = models_json(env, "--ollama-host", standin.host, "--home", str(missing_home))
    assert [entry["name"] for entry in entries] == standin.models
    assert not missing_home.exists()  # a read-only command creates no data dir
    proc = run_cli(env, "pull", "--ollama-host", standin.host, "mistral")
    assert proc.returncode == 0, proc.stderr
    assert_one_line(run_cli(env, "pull", " "), 2, "pull needs a model NAME")


# -------------------------------------------------------------------------------- pull


def test_pull_on_a_pipe_prints_one_line_per_status(env: Env, standin: OllamaStandIn) -> None:
    proc = run_cli(env, "pull", "mistral")
    assert_quiet(proc)
    lines = proc.stdout.splitlines()
    assert lines[0] == "pulling manifest"
    assert lines[1].startswith("pulling ") and lines[1].endswith("(2.0 GB)")
    assert lines[2].endswith("(1.4 kB)") and lines[3].endswith("(96 B)")
    assert lines[4:] == ["verifying sha256 digest", "writing manifest", "success"]
    assert "\r" not in proc.stdout
    assert "mistral:latest" in standin.models
    assert "mistral:latest" in [entry["name"] for entry in models_json(env)]


def test_pulling_an_unknown_model_exits_1_with_ollamas_message(env: Env) -> None:
    proc = run_cli(env, "pull", "no-such-model")
    line = assert_one_line(proc, 1, "pull model manifest: file does not exist")
    assert line == "straylight: pull model manifest: file does not exist"
    assert proc.stdout == "pulling manifest\n"


def test_pulling_a_name_ollama_cannot_parse_exits_2_saying_what_a_name_looks_like(
    env: Env,
) -> None:
    proc = run_cli(env, "pull", "llama 3.2")
    assert_one_line(proc, 2, "'llama 3.2' is an invalid model name", "qwen3:8b")
    assert proc.stdout == ""


def test_a_pull_failing_midway_exits_1_with_the_message(env: Env, standin: OllamaStandIn) -> None:
    standin.fail_next("error_line", path="/api/pull", after=3, message="connection reset by peer")
    proc = run_cli(env, "pull", "mistral")
    assert assert_one_line(proc, 1) == "straylight: connection reset by peer"
    assert "mistral:latest" not in standin.models


def test_a_pull_answered_404_with_an_empty_body_is_exit_5_as_for_ask(
    env: Env, standin: OllamaStandIn
) -> None:
    """README: a 404 from a server that is not Ollama is a 5; `ask` and `models` gave 5 and
    `pull` 1 for the same server."""
    standin.fail_next("status", path="/api/pull", status=404, body="")
    line = assert_one_line(run_cli(env, "pull", "mistral"), 5, "HTTP 404 with an empty body")
    assert "is" in line and "an Ollama server?" in line


def test_a_pull_refused_with_a_page_of_html_is_one_line(env: Env, standin: OllamaStandIn) -> None:
    # A proxy or another web server at OLLAMA_HOST answers with its error page.
    page = "<html>\n<head><title>502 Bad Gateway</title></head>\n<body>nginx</body>\n</html>"
    standin.fail_next("status", path="/api/pull", status=502, message=page)
    proc = run_cli(env, "pull", "mistral")
    line = assert_one_line(proc, 1, "502 Bad Gateway")
    assert line == (
        "straylight: 502 Bad Gateway (an HTML page: a proxy between Straylight and Ollama?)"
    )


def test_a_server_without_api_tags_is_not_a_model_named_nothing(
    env: Env, standin: OllamaStandIn
) -> None:
    # A web server that is not Ollama (or a proxy in front of it) answers 404 to /api/tags.
    standin.fail_next("status", path="/api/tags", status=404, message="404 page not found")
    proc = run_cli(env, "models")
    line = assert_one_line(proc, 5, "HTTP 404")
    assert "model ''" not in line and "pull `" not in line
    assert line == "straylight: Ollama answered HTTP 404: 404 page not found"


def test_pull_on_a_terminal_draws_a_progress_bar(env: Env, standin: OllamaStandIn) -> None:
    standin.token_delay = 0.12  # slower than the bar's redraw interval: every step is drawn
    leader, follower = pty.openpty()
    try:
        process = subprocess.Popen(
            cli_command("pull", "gemma3"),
            env={**env, "COLUMNS": "100"},
            cwd=REPO_ROOT,
            stdin=subprocess.DEVNULL,
            stdout=follower,
            stderr=subprocess.PIPE,
        )
        os.close(follower)
        output = b""
        while True:
            try:
                chunk = os.read(leader, 4096)
            except OSError:  # the terminal closed: the process is done
                break
            if not chunk:
                break
            output += chunk
        _, err = process.communicate(timeout=TIMEOUT)
    finally:
        os.close(leader)
    text = output.decode()
    assert process.returncode == 0, err
    assert "\rpulling " in text  # redrawn in place
    assert "100%" in text and "3.3 GB / 3.3 GB" in text
    assert " 50%" in text and "1.7 GB / 3.3 GB" in text
    assert text.replace("\r\n", "\n").endswith("success\n")


def test_ctrl_c_stops_a_pull_cleanly(env: Env, standin: OllamaStandIn) -> None:
    standin.fail_next("stall", path="/api/pull", after=2, seconds=30)
    process = subprocess.Popen(
        cli_command("pull", "mistral"),
        env=env,
        cwd=REPO_ROOT,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stdout is not None
        assert process.stdout.readline() == "pulling manifest\n"
        assert process.stdout.readline().startswith("pulling ")
        process.send_signal(signal.SIGINT)  # while the stream stalls
        out, err = process.communicate(timeout=TIMEOUT)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait(timeout=TIMEOUT)
    assert process.returncode == 130, (out, err)
    assert err == "straylight: pull of mistral interrupted\n"
    assert out == ""


# ----------------------------------------------------------------------- progress output


def test_terminal_progress_shows_bytes_percent_and_rate() -> None:
    times = iter([0.0, 1.0, 2.0])
    out = io.StringIO()
    bar = TerminalProgress(out, clock=lambda: next(times))
    for done in (0, 250_000_000, 500_000_000):
        bar.update(PullProgress("pulling abc", "sha256:abc", 1_000_000_000, done or None))
    bar.close()
    last = out.getvalue().split("\r")[-1]
    assert "50%" in last and "500 MB / 1 GB" in last and "250 MB/s" in last
    assert out.getvalue().endswith("\n")


@pytest.mark.parametrize("columns", [80, 56])
def test_terminal_progress_keeps_the_rate_on_a_narrow_terminal(
    monkeypatch: pytest.MonkeyPatch, columns: int
) -> None:
    """An 80-column terminal sees the whole line, rate included: the bar gets shorter (on 56
    columns it goes), not the numbers."""
    monkeypatch.setenv("COLUMNS", str(columns))
    times = iter([0.0, 1.0, 2.0])
    out = io.StringIO()
    bar = TerminalProgress(out, clock=lambda: next(times))
    status = "pulling 1c95740fff95"  # Ollama's status for a layer: 12 hex digits
    for done in (0, 123_400_000, 852_300_000):
        bar.update(PullProgress(status, "sha256:1c95740fff95", 4_733_363_377, done or None))
    last = out.getvalue().split("\r")[-1]
    assert len(last) <= columns - 1
    assert "18%" in last and "852 MB / 4.7 GB" in last and "426 MB/s" in last
    assert ("░" in last) is (columns >= 80)  # the bar, where it fits


def test_pipe_progress_prints_each_status_once() -> None:
    out = io.StringIO()
    lines = PipeProgress(out)
    for progress in (
        PullProgress("pulling manifest"),
        PullProgress("pulling abc", "sha256:abc", 2000, None),
        PullProgress("pulling abc", "sha256:abc", 2000, 1000),
        PullProgress("success"),
    ):
        lines.update(progress)
    assert out.getvalue() == "pulling manifest\npulling abc (2 kB)\nsuccess\n"


def test_human_bytes_uses_decimal_units_as_ollama_list_does() -> None:
    """One decimal below 10 of a unit, none from 10 on (`ollama list`: `274 MB`, `2.0 GB`);
    it said `274.3 MB`, two columns more in the models screen's table."""
    sizes = (96, 1_429, 274_302_450, 350_000_000, 2_019_393_189, 2 * 10**9, 12_300_000_000)
    assert [human_bytes(n) for n in sizes] == [
        "96 B",
        "1.4 kB",
        "274 MB",
        "350 MB",
        "2.0 GB",
        "2 GB",
        "12 GB",
    ]


@pytest.mark.parametrize("body", ["[1, 2, 3]", '"ok"', "null"])
def test_a_reply_that_is_json_but_not_an_object_is_a_malformed_reply(
    env: Env, standin: OllamaStandIn, body: str
) -> None:
    """A proxy or a broken server answering /api/tags with `[1, 2, 3]`: the client passes
    the reply as keyword arguments and raises TypeError, which `models` showed as
    "unexpected error talking to Ollama: TypeError"."""
    standin.fail_next("status", path="/api/tags", status=200, body=body)
    proc = run_cli(env, "models")
    assert assert_one_line(proc, 5) == "straylight: Ollama sent a malformed reply"
