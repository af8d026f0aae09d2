"""The structured calls (the reflection, the dream) carry the same `options.num_ctx` as the
chat and the model options of config.toml: without the window Ollama's default cuts their
prompt, and another window would reload the model."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from agent.ollama_gateway import OllamaGateway
from tests.support.cli import Env, assert_quiet, printed_json, run_cli
from tests.support.ollama_standin import OllamaStandIn

SCHEMA: dict[str, Any] = {"type": "object", "properties": {}}


@pytest.fixture
def srv() -> Iterator[OllamaStandIn]:
    with OllamaStandIn(models=("llama3.2", "qwen3:8b", "nomic-embed-text"), embed_dim=8) as s:
        yield s


async def test_chat_structured_sends_the_window_and_the_model_options(
    srv: OllamaStandIn,
) -> None:
    gateway = OllamaGateway(
        srv.url,
        model_options={"temperature": 0.1, "qwen3:8b": {"seed": 3}},
        num_ctx=None,
    )
    try:
        srv.script_reply("{}")
        await gateway.chat_structured("llama3.2", [{"role": "user", "content": "hi"}], SCHEMA)
        srv.script_reply("{}")
        await gateway.chat_structured("qwen3:8b", [{"role": "user", "content": "hi"}], SCHEMA)
    finally:
        await gateway.aclose()
    first, second = (r.options for r in srv.requests if r.path == "/api/chat")
    # llama3.2's maximum (131,072) capped at 16,384; qwen3's 40,960 capped too
    assert first == {"temperature": 0.1, "num_ctx": 16_384}
    assert second == {"temperature": 0.1, "seed": 3, "num_ctx": 16_384}


async def test_the_num_ctx_setting_is_the_structured_window_too(srv: OllamaStandIn) -> None:
    gateway = OllamaGateway(srv.url, num_ctx=8192)
    try:
        srv.script_reply("{}")
        await gateway.chat_structured("llama3.2", [{"role": "user", "content": "hi"}], SCHEMA)
        assert (await gateway.context_window("llama3.2")).window == 8192
    finally:
        await gateway.aclose()
    [request] = [r for r in srv.requests if r.path == "/api/chat"]
    assert request.options == {"num_ctx": 8192}


def test_ask_then_reflect_send_the_same_window(
    cli_env: Callable[..., Env], srv: OllamaStandIn, tmp_path: Path
) -> None:
    config = tmp_path / "xdg-config" / "straylight" / "config.toml"
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text("num_ctx = 6144\n[model_options]\ntemperature = 0.3\n")
    env = cli_env(OLLAMA_HOST=srv.host)
    assert_quiet(run_cli(env, "ask", "we deploy blyck with npm run dist"))
    srv.script_reply(json.dumps({"facts": []}))
    printed_json(run_cli(env, "reflect", "--json"))
    chat, reflection = (r for r in srv.requests if r.path == "/api/chat")
    assert reflection.body["format"] and reflection.body["stream"] is False
    assert chat.options == reflection.options == {"temperature": 0.3, "num_ctx": 6144}


def test_a_long_session_is_reflected_on_in_the_window_it_sends(
    cli_env: Callable[..., Env], srv: OllamaStandIn
) -> None:
    """num_ctx 2,048 (a small machine's setting): the chat's prompts are budgeted, but the
    reflection sent up to 12,000 characters of transcript whole, over the window, and Ollama
    cut the front of its prompt — its instructions — without a word. The transcript now
    keeps its newest messages that fit; the request fits the window it sends."""
    srv.context_mode = "truncate"  # Ollama's silent cut
    env = cli_env(OLLAMA_HOST=srv.host, STRAYLIGHT_NUM_CTX="2048")
    words = "we compared the deploy scripts: staging pins the node version and restarts it. "
    for number in range(8):
        srv.script_reply(f"Answer {number}: {words * 4}")
        asked = run_cli(env, "ask", "-c", "long-one", f"Question {number}: {words * 4}")
        assert asked.returncode == 0, asked.stderr  # (the chat's history is cut and named)
    srv.script_reply(json.dumps({"facts": []}))
    printed_json(run_cli(env, "reflect", "--conversation", "long-one", "--json"))
    reflection = srv.chat_outcomes()[-1]
    assert srv.chat_requests()[-1]["format"] and reflection.window == 2048
    assert not reflection.runner_truncated and reflection.dropped_messages == 0, reflection
    user = srv.chat_requests()[-1]["messages"][-1]["content"]
    assert "Question 7" in user and "Question 0" not in user  # the newest messages stay
    assert "left out for length" in user
