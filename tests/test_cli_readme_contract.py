"""What the README promises of the headless commands, as a new user reads it: an empty
argument is refused before the data dir exists; an option given before its command names
where it goes; a server's failure is named with its own words; `candidates propose --json`
is a candidate as `candidates list` shows it; `conversation/` is 0700 whichever command
takes the data dir; an empty embedding model name in config.toml is refused."""

from __future__ import annotations

import stat
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.support.cli import Env, printed_json, run_cli
from tests.support.ollama_standin import OllamaStandIn


@pytest.fixture
def env(cli_env: Callable[..., Env], standin: OllamaStandIn) -> Env:
    return cli_env(OLLAMA_HOST=standin.host)


@pytest.mark.parametrize(
    "command",
    [
        ["facts", "retire", ""],
        ["facts", "undo", " "],
        ["facts", "get", ""],
        ["candidates", "approve", "1", "--body", ""],
        ["candidates", "approve", "1", "--key", ""],
        ["conversations", "rename", "abc", ""],
        ["import-doc", ""],
        ["recall", " "],
    ],
)
def test_an_empty_argument_is_refused_before_the_data_dir_exists(
    env: Env, home: Path, command: list[str]
) -> None:
    result = run_cli(env, *command)
    assert result.returncode == 2, result
    assert len(result.stderr.strip().splitlines()) == 1, result.stderr
    assert not home.exists()


@pytest.mark.parametrize(
    ("given", "line"),
    [
        (["--k", "3", "recall", "x"], "--k goes after 'recall'"),
        (["--conversation", "abc", "ask", "hi"], "--conversation goes after 'ask'"),
        (["--date", "2026-01-01", "history"], "--date goes after 'history'"),
        (["--think", "high", "ask", "hi"], "--think goes after 'ask'"),
        (["--body", "x", "candidates", "approve", "1"], "--body goes after 'approve'"),
    ],
)
def test_an_option_with_its_value_before_the_command_names_where_it_goes(
    env: Env, home: Path, given: list[str], line: str
) -> None:
    result = run_cli(env, *given)
    assert result.returncode == 2
    assert line in result.stderr and "invalid choice" not in result.stderr, result.stderr
    assert not home.exists()


def test_status_names_what_a_failing_server_said(env: Env, standin: OllamaStandIn) -> None:
    standin.fail_next("status", status=500, message="boom internal", count=None)
    shown = run_cli(env, "status")
    assert "HTTP 500" in shown.stdout and "boom internal" in shown.stdout, shown.stdout
    ollama = printed_json(run_cli(env, "status", "--json"))["ollama"]
    assert "boom internal" in ollama["error"], ollama


def test_a_server_answering_404_with_nothing_is_named_by_models_and_pull(
    env: Env, standin: OllamaStandIn
) -> None:
    standin.fail_next("status", status=404, body="", count=None)
    for command in (["models"], ["pull", "qwen3"]):
        result = run_cli(env, *command)
        assert result.returncode != 0
        assert "HTTP 404 with an empty body" in result.stderr, (command, result.stderr)
        assert "an Ollama server?" in result.stderr


def test_a_proposed_candidate_in_json_says_what_it_replaces(env: Env) -> None:
    set_fact = ["facts", "set", "deploy:host", "--type", "fact", "--body", "ferret-7"]
    assert run_cli(env, *set_fact).returncode == 0
    proposed = printed_json(
        run_cli(
            env,
            "candidates",
            "propose",
            "deploy:host",
            "--type",
            "fact",
            "--body",
            "stoat-3",
            "--json",
        )
    )
    listed = printed_json(run_cli(env, "candidates", "list", "--json"))
    assert proposed["replaces"] == "ferret-7"
    assert proposed == listed[0]


def test_an_existing_conversation_folder_is_tightened_by_any_writer(env: Env, home: Path) -> None:
    logs = home / "conversation"
    logs.mkdir(parents=True)
    logs.chmod(0o755)
    assert run_cli(env, "remember", "The staging host is called ferret-7.").returncode == 0
    assert stat.S_IMODE(logs.stat().st_mode) == 0o700


def test_an_empty_embedding_model_in_the_config_file_is_refused(
    env: Env, home: Path, tmp_path: Path
) -> None:
    config = tmp_path / "empty-embed.toml"
    config.write_text('embed_model = ""\n', encoding="utf-8")
    result = run_cli(env, "--config", str(config), "remember", "a thing to keep")
    assert result.returncode == 2
    assert "embed_model" in result.stderr and "empty" in result.stderr, result.stderr
    assert not home.exists()


@pytest.mark.parametrize(
    "command",
    [["recall", "-"], ["conversations", "rename", "no-such-one", "-"]],
)
def test_a_dash_is_stdin_only_where_a_text_reads_it(env: Env, command: list[str]) -> None:
    """`-` reads stdin for `ask`, `remember` and a fact's body; elsewhere it is the word: a
    query or a title of `-` was refused as empty (and read, or waited for, stdin)."""
    assert run_cli(env, "remember", "A dash - is a line too.").returncode == 0
    result = run_cli(env, *command)
    assert "empty" not in result.stderr and "non-empty" not in result.stderr, result.stderr


@pytest.mark.parametrize("flag", ["--help", "-h"])
def test_help_before_a_command_is_the_top_levels_help(env: Env, flag: str) -> None:
    result = run_cli(env, flag, "recall")
    assert result.returncode == 0, result.stderr
    assert "goes after" not in result.stderr and "usage: straylight" in result.stdout


def test_a_window_learnt_under_another_spelling_is_found(tmp_path: Path) -> None:
    """Windows learnt before names matched as Ollama's (`Qwen3:8B`) keep counting."""
    from memory.context_meta import load_learnt_windows, save_turn_context
    from store.clock import Clock
    from store.database import open_database

    db = open_database(tmp_path / "straylight.duckdb", clock=Clock())
    try:
        save_turn_context(db, None, None, {"Qwen3:8B": 2048, "library/llama3.2:latest": 4096})
        assert load_learnt_windows(db) == {"qwen3:8b": 2048, "llama3.2:latest": 4096}
    finally:
        db.close()
