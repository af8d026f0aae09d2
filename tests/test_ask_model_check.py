"""`straylight ask --model NAME` refuses a model that cannot chat (an embedding model) before
anything is logged, the way `/model` does in the TUI: one line, exit 2, nothing written."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from tests.support.cli import NOW, Env, assert_one_line, printed_json, run_cli
from tests.support.ollama_standin import OllamaStandIn


def test_ask_refuses_an_embedding_model_before_logging(
    cli_env: Callable[..., Env], standin: OllamaStandIn, home: Path
) -> None:
    env = cli_env(OLLAMA_HOST=standin.host, STRAYLIGHT_NOW=NOW)
    proc = run_cli(env, "ask", "--model", "nomic-embed-text", "hello")
    line = assert_one_line(proc, 2, "nomic-embed-text cannot chat", "embedding")
    assert "does not support chat" not in line
    assert proc.stdout == ""
    assert not list(home.glob("conversation/*.md"))
    history = printed_json(run_cli(env, "history", "--json"), quiet=True)
    assert history == []


def test_an_embedding_model_found_out_by_the_chat_request_is_exit_2(
    cli_env: Callable[..., Env], standin: OllamaStandIn
) -> None:
    """/api/show fails, so nobody knows the model cannot chat until Ollama refuses the chat
    with HTTP 400 "does not support chat": that was exit 5, "Ollama answered HTTP 400"."""
    env = cli_env(OLLAMA_HOST=standin.host, STRAYLIGHT_NOW=NOW)
    standin.fail_next("status", path="/api/show", count=None, status=500, message="boom")
    proc = run_cli(env, "ask", "--model", "nomic-embed-text", "hello")
    line = assert_one_line(proc, 2, "nomic-embed-text cannot chat", "does not support chat")
    assert "straylight models" in line and proc.stdout == ""


def test_ask_still_chats_with_a_chat_model(
    cli_env: Callable[..., Env], standin: OllamaStandIn
) -> None:
    env = cli_env(OLLAMA_HOST=standin.host, STRAYLIGHT_NOW=NOW)
    proc = run_cli(env, "ask", "--model", "llama3.2", "hello")
    assert proc.returncode == 0, proc.stderr


def test_ask_says_when_the_embedding_model_is_not_pulled(
    cli_env: Callable[..., Env], standin: OllamaStandIn
) -> None:
    """The reply comes, but no vector was made for the recall or the save: `ask` said
    nothing, while `remember` and `recall` name the missing model."""
    standin.set_models(["llama3.2"])
    env = cli_env(OLLAMA_HOST=standin.host, STRAYLIGHT_NOW=NOW)
    proc = run_cli(env, "ask", "my staging server is blue-7 and it deploys nightly at six")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip()
    (line,) = [x for x in proc.stderr.splitlines() if x.strip()]
    assert line.startswith("straylight: note: no embedding this turn (model 'nomic-embed-text'")
    assert "straylight pull nomic-embed-text" in line and "backfill" in line
    standin.set_models(["llama3.2", "nomic-embed-text"])
    again = run_cli(env, "ask", "and the production server?")
    assert again.returncode == 0 and "no embedding" not in again.stderr, again.stderr
