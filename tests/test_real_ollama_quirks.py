"""What a real Ollama does that a literal stand-in did not: it matches model names without
regard to case or its default registry and namespace; (before 0.31) its `prompt_eval_count`
leaves out the prompt's front its prompt cache held; it words a prompt too long for models
that cannot shift the window its own way; it answers 403 with an empty body to a Host header
it does not trust; and it reads OLLAMA_HOST with quotes and blanks around it."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from tests.support.cli import NOW, Env, printed_json, run_cli, run_cli_process
from tests.support.ollama_standin import OllamaStandIn

PARAGRAPH = (
    "We compared the two deploy scripts line by line: the staging one pins the node version, "
    "copies the build into /srv/app and restarts the service with systemctl. "
)


@pytest.fixture
def env(cli_env: Callable[..., Env], standin: OllamaStandIn) -> Env:
    return cli_env(OLLAMA_HOST=standin.host, STRAYLIGHT_NOW=NOW)


@pytest.mark.parametrize(
    "name", ["Llama3.2", "library/llama3.2", "registry.ollama.ai/library/LLAMA3.2:latest"]
)
def test_a_model_named_as_ollama_takes_it_is_pulled(
    env: Env, standin: OllamaStandIn, name: str
) -> None:
    standin.set_models(["llama3.2", "nomic-embed-text"])
    asked = run_cli(env, "--model", name, "ask", "say hi please")
    assert asked.returncode == 0, asked.stderr
    status = printed_json(run_cli(env, "--model", name, "status", "--json"))
    assert status["ollama"]["model_pulled"] is True, status["ollama"]
    assert not status["ollama"].get("missing_models"), status["ollama"]


def test_the_embedding_model_in_other_letters_is_the_same_model(
    env: Env, standin: OllamaStandIn
) -> None:
    for text in ("The staging host is called ferret-7.", "Deploys run from the ci box."):
        assert run_cli(env, "remember", text).returncode == 0
    env = {**env, "STRAYLIGHT_EMBED_MODEL": "Nomic-Embed-Text"}
    status = printed_json(run_cli(env, "status", "--json"))
    assert status["ollama"]["embed_model_pulled"] is True, status["ollama"]
    assert status["embedding"]["changed_from"] is None, status["embedding"]
    assert status["embedding"]["to_embed"] == 0, status["embedding"]
    assert run_cli(env, "remember", "The backup window is at 03:00 UTC.").returncode == 0
    status = printed_json(run_cli(env, "status", "--json"))
    assert status["points"]["without_vector"] == 0, status["points"]
    assert status["index"] == {"state": "in_sync", "size": 3}


def test_a_cached_prompt_counted_short_is_not_called_a_cut(
    env: Env, standin: OllamaStandIn
) -> None:
    """Ollama before 0.31 counts only the tokens its cache did not hold: a long paste into a
    conversation reads as far fewer tokens than the prompt. Not a cut: no warning, and
    the estimate is not raised until a message no longer fits."""
    standin.count_cached_prompt = False
    standin.configure_model("llama3.2", context_length=4096)
    turns = []
    for number, size in enumerate([16, 46, 1, 46, 1, 46]):
        standin.script_reply(f"Answer {number}.")
        turns.append(run_cli(env, "ask", "-c", "pasted", f"Turn {number}: {PARAGRAPH * size}"))
    assert all(turn.returncode == 0 for turn in turns), [t.stderr for t in turns]
    assert not any("Ollama cut the prompt" in turn.stderr for turn in turns)


def test_ollamas_own_too_long_prompt_error_is_named_with_the_fix(
    env: Env, standin: OllamaStandIn
) -> None:
    standin.fail_next(
        "status",
        status=400,
        path="/api/chat",
        message=(
            "the prompt is longer than the context length currently available to the model; "
            "shorten the prompt, adjust the context length in settings, or use a model with a "
            "longer context length"
        ),
    )
    asked = run_cli(env, "ask", "hello context")
    assert asked.returncode == 5
    lines = [line for line in asked.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and "window" in lines[0] and "Ollama answered HTTP" not in lines[0]


def test_a_403_with_an_empty_body_names_the_host_check(env: Env, standin: OllamaStandIn) -> None:
    standin.fail_next("status", status=403, body="", path="/api/chat")
    asked = run_cli(env, "ask", "hello")
    assert asked.returncode == 5
    assert "HTTP 403 with an empty body" in asked.stderr and "Host" in asked.stderr
    standin.fail_next("status", status=403, body="", path="/api/pull")
    pulled = run_cli(env, "pull", "qwen3")
    assert pulled.returncode != 0 and "HTTP 403" in pulled.stderr, pulled.stderr


@pytest.mark.parametrize("written", ['"{host}"', "'{host}'", " {host} ", '"{bare}"', " {bare} "])
def test_ollama_host_with_quotes_or_blanks_around_it_is_read(
    env: Env, standin: OllamaStandIn, written: str
) -> None:
    """Also without a scheme (`"127.0.0.1:11434"`), which the ollama package's own default
    client, built at its import, could not parse: every command stopped with exit 1."""
    bare = standin.host.removeprefix("http://")
    env = {**env, "OLLAMA_HOST": written.format(host=standin.host, bare=bare)}
    status = printed_json(run_cli_process(env, "status", "--json"))  # a fresh `import ollama`
    assert status["ollama"]["reachable"] is True, status["ollama"]
    assert run_cli(env, "history").returncode == 0


def test_an_ollama_whose_think_is_a_boolean_only_is_asked_again_with_true(
    env: Env, standin: OllamaStandIn
) -> None:
    """Ollama 0.9–0.10 took `think` as a boolean only: a level is HTTP 400 `json: cannot
    unmarshal string into Go struct field ChatRequest.think of type bool`, and every turn
    with `--think high` failed with that raw line (exit 5)."""
    standin.set_models(["qwen3:8b", "nomic-embed-text"])
    standin.configure_model("qwen3:8b", think_is_bool=True)
    standin.script_reply("Paris.", thinking="The capital of France.")
    asked = run_cli(env, "ask", "--model", "qwen3:8b", "--think", "high", "capital of France?")
    assert asked.returncode == 0, asked.stderr
    assert asked.stdout == "Paris.\n"
    assert "takes no thinking level" in asked.stderr and "think true" in asked.stderr
    assert [r["think"] for r in standin.chat_requests()] == ["high", True]


def test_a_slow_show_is_waited_for_once_a_turn_and_names_the_right_setting(
    env: Env, standin: OllamaStandIn, home: Path
) -> None:
    """/api/show that does not answer: the turn waited its 5 s for the model's capabilities,
    and again after the reply for its window (the chat's answer had ended the stall), and
    the log named STRAYLIGHT_HTTP_TIMEOUT_SECONDS where the limit is the connect timeout."""
    standin.fail_next("delay", seconds=8.0, path="/api/show", count=None)
    asked = run_cli(env, "ask", "hello there")
    standin.clear_faults()
    assert asked.returncode == 0, asked.stderr
    shows = [r for r in standin.requests if r.path == "/api/show" and r.body["model"] == "llama3.2"]
    (chat,) = [r for r in standin.requests if r.path == "/api/chat"]
    assert shows and all(r.received < chat.received for r in shows)  # none after the reply
    logged = (home / "straylight.log").read_text(encoding="utf-8")
    assert "raise STRAYLIGHT_CONNECT_TIMEOUT_SECONDS" in logged
    assert "STRAYLIGHT_HTTP_TIMEOUT_SECONDS" not in logged
