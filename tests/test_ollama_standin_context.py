"""The stand-in's context window and token counting, driven by the real `ollama` client."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import ollama
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.support.ollama_standin import (
    DEFAULT_REPLY_PREFIX,
    ModelSpec,
    OllamaStandIn,
    estimate_tokens,
    prompt_tokens,
)

CHAT_MODEL = "llama3.2"
REPO_ROOT = Path(__file__).resolve().parents[1]
SYSTEM = {"role": "system", "content": "You are a helpful assistant."}
PARAGRAPH = (
    "The harvest festival filled the village square with music, bread and long tables. "
    "Everyone brought something to share, and the children ran between the stalls. "
) * 3


def conversation(turns: int) -> list[dict[str, str]]:
    """A system message and ``turns`` long user/assistant pairs, then a short question."""
    messages = [SYSTEM]
    for turn in range(turns):
        messages.append({"role": "user", "content": f"Turn {turn}: {PARAGRAPH}"})
        messages.append({"role": "assistant", "content": f"Answer {turn}: {PARAGRAPH}"})
    messages.append({"role": "user", "content": "What did we talk about?"})
    return messages


@pytest.fixture
def srv() -> Iterator[OllamaStandIn]:
    with OllamaStandIn(models=(CHAT_MODEL,), port=0) as server:
        yield server


# ------------------------------------------------------------------ tokens


def test_token_estimate_is_roughly_a_real_tokenizer() -> None:
    english = "The quick brown fox jumps over the lazy dog while the farmer watches."
    german = "Die Straßenbahnhaltestelle liegt gegenüber dem Rathaus, sagte die Übersetzerin."
    code = "def total(items: list[int]) -> int:\n    return sum(i * 2 for i in items)\n"
    assert 3.5 <= len(english) / estimate_tokens(english) <= 5.0
    assert len(german) / estimate_tokens(german) < len(english) / estimate_tokens(english)
    assert 2.0 <= len(code) / estimate_tokens(code) <= 3.5
    assert estimate_tokens("") == 0
    assert estimate_tokens("   ") == 1  # indentation is a token
    assert prompt_tokens([{"role": "user", "content": "hello there"}]) == 5 + 4 + 2


@settings(max_examples=60, deadline=None)
@given(text=st.text(max_size=200))
def test_token_estimate_is_deterministic_and_bounded(text: str) -> None:
    tokens = estimate_tokens(text)
    assert tokens == estimate_tokens(text)
    assert 0 <= tokens <= len(text.encode())
    if text.strip():
        assert tokens > 0


@pytest.mark.asyncio
async def test_prompt_and_eval_counts_follow_the_estimate(
    srv: OllamaStandIn, client: ollama.AsyncClient
) -> None:
    messages = conversation(2)
    srv.script_reply("One two three.")
    response = await client.chat(CHAT_MODEL, messages)
    assert response.prompt_eval_count == prompt_tokens(messages)
    assert response.eval_count == 3  # one chunk a token
    (outcome,) = srv.chat_outcomes()
    assert outcome.window == 4096
    assert outcome.full_prompt_tokens == outcome.prompt_tokens == prompt_tokens(messages)
    assert outcome.dropped_messages == 0


# ----------------------------------------------------------------- unlimited


@pytest.mark.asyncio
async def test_the_default_mode_cuts_like_ollama_and_unlimited_accepts_any_prompt_whole(
    srv: OllamaStandIn, client: ollama.AsyncClient
) -> None:
    """Like real Ollama, by default: an over-long prompt loses its oldest messages silently
    (HTTP 200), so a test that forgets to look cannot pass on a prompt Ollama would cut."""
    messages = conversation(20)
    assert prompt_tokens(messages) > 4096
    assert srv.context_mode == "truncate"
    response = await client.chat(CHAT_MODEL, messages)
    assert response.prompt_eval_count < prompt_tokens(messages)
    assert srv.chat_outcomes()[0].dropped_messages > 0
    srv.context_mode = "unlimited"
    response = await client.chat(CHAT_MODEL, messages)
    assert response.prompt_eval_count == prompt_tokens(messages)
    assert srv.chat_outcomes()[1].kept_messages == len(messages)


# ---------------------------------------------------------------- truncate


@pytest.mark.asyncio
async def test_truncate_drops_oldest_non_system_messages_silently(
    srv: OllamaStandIn, client: ollama.AsyncClient
) -> None:
    srv.context_mode = "truncate"
    messages = conversation(20)
    response = await client.chat(CHAT_MODEL, messages)

    assert response.done and response.done_reason == "stop"
    assert response.message.content == DEFAULT_REPLY_PREFIX + "What did we talk about?"
    (outcome,) = srv.chat_outcomes()
    assert outcome.window == 4096
    assert outcome.dropped_messages > 0
    assert outcome.kept_messages == len(messages) - outcome.dropped_messages
    kept = [SYSTEM, *messages[1 + outcome.dropped_messages :]]
    assert response.prompt_eval_count == outcome.prompt_tokens == prompt_tokens(kept)
    assert prompt_tokens(kept) <= 4096
    longer = [SYSTEM, *messages[outcome.dropped_messages :]]
    assert prompt_tokens(longer) > 4096  # one message more would not have fitted
    assert outcome.full_prompt_tokens == prompt_tokens(messages)


@pytest.mark.asyncio
async def test_num_ctx_is_honoured_and_capped_at_the_models_maximum(
    srv: OllamaStandIn, client: ollama.AsyncClient
) -> None:
    srv.context_mode = "truncate"
    messages = conversation(20)
    wide = await client.chat(CHAT_MODEL, messages, options={"num_ctx": 32768})
    assert wide.prompt_eval_count == prompt_tokens(messages)

    srv.configure_model(CHAT_MODEL, context_length=2048)
    capped = await client.chat(CHAT_MODEL, messages, options={"num_ctx": 32768})
    assert capped.prompt_eval_count is not None and capped.prompt_eval_count <= 2048
    assert [o.window for o in srv.chat_outcomes()] == [32768, 2048]


@pytest.mark.asyncio
async def test_model_and_server_defaults_choose_the_window(
    srv: OllamaStandIn, client: ollama.AsyncClient
) -> None:
    srv.default_num_ctx = 2048
    await client.chat(CHAT_MODEL, conversation(1))
    srv.configure_model(CHAT_MODEL, num_ctx=8192)
    await client.chat(CHAT_MODEL, conversation(1))
    await client.chat(CHAT_MODEL, conversation(1), options={"num_ctx": 1024})
    assert [o.window for o in srv.chat_outcomes()] == [2048, 8192, 1024]
    assert "num_ctx 8192" in ((await client.show(CHAT_MODEL)).parameters or "")
    with pytest.raises(ValueError):
        srv.default_num_ctx = 0


@pytest.mark.asyncio
async def test_a_last_message_too_long_alone_is_cut_by_the_runner(
    srv: OllamaStandIn, client: ollama.AsyncClient
) -> None:
    srv.context_mode = "truncate"
    huge = [SYSTEM, {"role": "user", "content": PARAGRAPH * 40}]
    response = await client.chat(CHAT_MODEL, huge)
    # Ollama keeps num_keep (4) + BOS tokens and cuts the front to 4096 - (4096 - 5) // 2.
    assert response.prompt_eval_count == 2051
    assert srv.chat_outcomes()[0].runner_truncated


# ------------------------------------------------------------------- error


@pytest.mark.asyncio
async def test_error_mode_answers_400_naming_the_window(
    srv: OllamaStandIn, client: ollama.AsyncClient
) -> None:
    srv.context_mode = "error"
    srv.script_reply("never sent")
    messages = conversation(20)
    with pytest.raises(ollama.ResponseError) as info:
        await client.chat(CHAT_MODEL, messages)
    assert info.value.status_code == 400
    assert "exceeds the available context size (4096 tokens)" in info.value.error
    detail = json.loads(info.value.error)["error"]
    assert detail["type"] == "exceed_context_size_error"
    assert detail["n_prompt_tokens"] == prompt_tokens(messages)
    assert detail["n_ctx"] == 4096
    assert srv.pending_replies == 1
    assert srv.chat_outcomes()[0].error == info.value.error

    with pytest.raises(ollama.ResponseError):
        async for _ in await client.chat(CHAT_MODEL, messages, stream=True):
            pass
    assert (await client.chat(CHAT_MODEL, conversation(1))).message.content == "never sent"


@pytest.mark.asyncio
async def test_truncate_false_in_the_request_gets_the_error(srv: OllamaStandIn) -> None:
    srv.context_mode = "truncate"
    body = {"model": CHAT_MODEL, "messages": conversation(20), "truncate": False}
    async with httpx.AsyncClient() as raw:
        response = await raw.post(f"{srv.url}/api/chat", json={**body, "stream": False})
    assert response.status_code == 400
    assert "exceed_context_size_error" in response.json()["error"]


@pytest.mark.asyncio
async def test_one_model_can_error_while_the_server_truncates() -> None:
    specs = {"strict": ModelSpec(context_mode="error")}
    with OllamaStandIn(["llama3.2", "strict"], specs=specs, context_mode="truncate") as server:
        async_client = ollama.AsyncClient(host=server.url)
        try:
            assert (await async_client.chat("llama3.2", conversation(20))).done
            with pytest.raises(ollama.ResponseError) as info:
                await async_client.chat("strict", conversation(20))
        finally:
            await async_client.close()
    assert info.value.status_code == 400


def test_context_mode_is_checked() -> None:
    with pytest.raises(ValueError):
        OllamaStandIn(context_mode="sometimes")  # type: ignore[arg-type]


def test_command_line_sets_mode_and_window() -> None:
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    command = [sys.executable, "-m", "tests.support.ollama_standin", "--port", "0"]
    command += ["--context-mode", "truncate", "--num-ctx", "1024"]
    command += ["--context-length", "llama3.2=131072"]
    process = subprocess.Popen(
        command, cwd=REPO_ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        assert process.stdout is not None
        url = process.stdout.readline().strip().rsplit(" ", 1)[-1]
        response = ollama.Client(host=url).chat(CHAT_MODEL, conversation(20))
        assert response.prompt_eval_count is not None and response.prompt_eval_count <= 1024
    finally:
        process.terminate()
        process.communicate(timeout=5)
