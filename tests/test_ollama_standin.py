"""Tests of the Ollama stand-in, driven by the real `ollama` client over real HTTP."""

from __future__ import annotations

import asyncio
import json
import math
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import httpx
import ollama
import pytest
import pytest_asyncio
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.support.ollama_standin import (
    OllamaStandIn,
    cosine_similarity,
    embed_text,
    normalize_model_name,
    split_tokens,
)

CHAT_MODEL = "llama3.2"
EMBED_MODEL = "nomic-embed-text"
USER = [{"role": "user", "content": "hello there"}]
SHORT_TIMEOUT = httpx.Timeout(0.3, connect=1.0)
REPO_ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def srv() -> Iterator[OllamaStandIn]:
    with OllamaStandIn(models=(CHAT_MODEL, EMBED_MODEL), port=0, embed_dim=64) as server:
        yield server


@pytest_asyncio.fixture
async def short_client(srv: OllamaStandIn) -> AsyncIterator[ollama.AsyncClient]:
    async_client = ollama.AsyncClient(host=srv.url, timeout=SHORT_TIMEOUT)
    yield async_client
    await async_client.close()


async def collect_until_error(
    stream: AsyncIterator[ollama.ChatResponse], received: list[str]
) -> None:
    async for part in stream:
        received.append(part.message.content or "")


def norm(vector: list[float]) -> float:
    return math.sqrt(sum(x * x for x in vector))


# ----------------------------------------------------------------- basics


def test_url_host_and_port_are_consistent(srv: OllamaStandIn) -> None:
    assert srv.port > 0
    assert srv.host == f"127.0.0.1:{srv.port}"
    assert srv.url == f"http://127.0.0.1:{srv.port}"
    response = httpx.get(f"{srv.url}/api/version")
    assert response.json() == {"version": "0.12.0-standin"}
    assert int(response.headers["content-length"]) == len(response.content)


def test_fixed_port_is_used() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        free_port = probe.getsockname()[1]
    with OllamaStandIn(port=free_port) as server:
        assert server.port == free_port
        assert httpx.get(f"{server.url}/api/version").status_code == 200


def test_split_tokens_keeps_whitespace_and_round_trips() -> None:
    assert split_tokens("Hello  brave\nworld ") == ["Hello  ", "brave\n", "world "]
    assert split_tokens("  lead") == ["  ", "lead"]
    assert normalize_model_name("llama3.2") == "llama3.2:latest"
    assert normalize_model_name("qwen3:8b") == "qwen3:8b"
    assert normalize_model_name("localhost:5000/m") == "localhost:5000/m:latest"


# ------------------------------------------------------------------- chat


@pytest.mark.asyncio
async def test_streaming_chat_returns_scripted_tokens_then_done(
    srv: OllamaStandIn, client: ollama.AsyncClient
) -> None:
    srv.script_reply("Hello brave new world")
    parts = [p async for p in await client.chat(model=CHAT_MODEL, messages=USER, stream=True)]

    assert [p.message.content for p in parts[:-1]] == ["Hello ", "brave ", "new ", "world"]
    assert not any(p.done for p in parts[:-1])
    final = parts[-1]
    assert final.done is True
    assert final.done_reason == "stop"
    assert final.eval_count == 4
    assert final.prompt_eval_count == 5 + 4 + 2  # template + one message + "hello there"
    assert final.message.content == ""
    assert final.total_duration and final.eval_duration


@pytest.mark.asyncio
async def test_stream_is_chunked_ndjson(srv: OllamaStandIn) -> None:
    srv.script_reply("one two")
    async with (
        httpx.AsyncClient() as raw,
        raw.stream(
            "POST", f"{srv.url}/api/chat", json={"model": CHAT_MODEL, "messages": USER}
        ) as response,
    ):
        assert response.headers["content-type"] == "application/x-ndjson"
        assert response.headers["transfer-encoding"] == "chunked"
        lines = [json.loads(line) async for line in response.aiter_lines()]
    assert [line["done"] for line in lines] == [False, False, True]


@pytest.mark.asyncio
async def test_explicit_tokens_and_fifo_order(
    srv: OllamaStandIn, client: ollama.AsyncClient
) -> None:
    srv.script_reply("Bonjour!", tokens=["Bon", "jour", "!"])
    srv.script_reply("second")
    assert srv.pending_replies == 2

    first = [p.message.content async for p in await client.chat(CHAT_MODEL, USER, stream=True)]
    second = await client.chat(CHAT_MODEL, USER)

    assert first[:-1] == ["Bon", "jour", "!"]
    assert second.message.content == "second"
    assert srv.pending_replies == 0
    with pytest.raises(ValueError):
        srv.script_reply("abc", tokens=["a", "b"])


def test_non_streamed_chat_with_sync_client(srv: OllamaStandIn) -> None:
    srv.script_reply("The whole answer at once.")
    sync_client = ollama.Client(host=srv.url)
    try:
        response = sync_client.chat(model=CHAT_MODEL, messages=USER, stream=False)
    finally:
        sync_client.close()
    assert response.done is True
    assert response.message.role == "assistant"
    assert response.message.content == "The whole answer at once."
    assert response.eval_count == 5


@pytest.mark.asyncio
async def test_default_reply_echoes_last_user_message(client: ollama.AsyncClient) -> None:
    messages = [
        {"role": "user", "content": "first question"},
        {"role": "assistant", "content": "an answer"},
        {"role": "user", "content": "x" * 300},
    ]
    response = await client.chat(model=f"{CHAT_MODEL}:latest", messages=messages)
    assert response.message.content == "Stand-in reply to: " + "x" * 200


@pytest.mark.asyncio
async def test_tool_calls_are_streamed(srv: OllamaStandIn, client: ollama.AsyncClient) -> None:
    call = {"function": {"name": "remember", "arguments": {"fact": "likes tea"}}}
    srv.script_reply("Saving.", tool_calls=[call])

    parts = [p async for p in await client.chat(CHAT_MODEL, USER, stream=True)]
    calls = [c for p in parts for c in (p.message.tool_calls or [])]
    assert len(calls) == 1
    assert calls[0].function.name == "remember"
    assert calls[0].function.arguments == {"fact": "likes tea"}

    srv.script_reply("", tool_calls=[{"name": "recall", "arguments": {"q": "tea"}}])
    whole = await client.chat(CHAT_MODEL, USER)
    assert whole.message.tool_calls is not None
    assert whole.message.tool_calls[0].function.name == "recall"


@pytest.mark.asyncio
async def test_token_delay_spreads_chunks_over_time(
    srv: OllamaStandIn, client: ollama.AsyncClient
) -> None:
    srv.token_delay = 0.05
    srv.script_reply("a b c d e")
    arrivals: list[float] = []
    async for _ in await client.chat(CHAT_MODEL, USER, stream=True):
        arrivals.append(time.monotonic())
    assert len(arrivals) == 6
    assert arrivals[-1] - arrivals[0] >= 0.2


# ------------------------------------------------------- models and show


@pytest.mark.asyncio
async def test_list_shows_configured_models_and_set_models_changes_them(
    srv: OllamaStandIn, client: ollama.AsyncClient
) -> None:
    listed = await client.list()
    assert [m.model for m in listed.models] == ["llama3.2:latest", "nomic-embed-text:latest"]
    assert all(m.digest and m.digest.startswith("sha256:") for m in listed.models)

    with pytest.raises(ollama.ResponseError):
        await client.chat(model="qwen3:8b", messages=USER)
    srv.set_models([CHAT_MODEL, EMBED_MODEL, "qwen3:8b"])
    assert "qwen3:8b" in [m.model for m in (await client.list()).models]
    assert (await client.chat(model="qwen3:8b", messages=USER)).done
    assert [m.model for m in (await client.ps()).models] == ["qwen3:8b"]


@pytest.mark.asyncio
async def test_show_reports_capabilities(srv: OllamaStandIn, client: ollama.AsyncClient) -> None:
    assert (await client.show(CHAT_MODEL)).capabilities == ["completion", "tools"]
    assert (await client.show(EMBED_MODEL)).capabilities == ["embedding"]

    srv.set_models(["tiny"], capabilities={"tiny": ["completion"]})
    shown = await client.show("tiny:latest")
    assert shown.capabilities == ["completion"]
    assert shown.details is not None and shown.details.family == "llama"

    with pytest.raises(ollama.ResponseError) as info:
        await client.show("missing")
    assert info.value.status_code == 404
    assert info.value.error == "model 'missing' not found"


@pytest.mark.asyncio
async def test_chat_with_embedding_model_is_rejected(client: ollama.AsyncClient) -> None:
    with pytest.raises(ollama.ResponseError) as info:
        await client.chat(model=EMBED_MODEL, messages=USER)
    assert info.value.status_code == 400


# ------------------------------------------------------------- embeddings


@pytest.mark.asyncio
async def test_embed_returns_unit_vectors_where_shared_words_are_closer(
    client: ollama.AsyncClient,
) -> None:
    texts = [
        "My cat Whiskers sleeps on the red sofa",
        "Whiskers the cat loves the sofa",
        "Quarterly tax filing deadline is in April",
    ]
    response = await client.embed(model=EMBED_MODEL, input=texts)
    vectors = [list(v) for v in response.embeddings]

    assert len(vectors) == 3
    assert all(len(v) == 64 for v in vectors)
    assert all(abs(norm(v) - 1.0) < 1e-9 for v in vectors)
    related = cosine_similarity(vectors[0], vectors[1])
    unrelated = cosine_similarity(vectors[0], vectors[2])
    assert related > unrelated + 0.3

    again = await client.embed(model=EMBED_MODEL, input=texts[0])
    assert list(again.embeddings[0]) == vectors[0]


@pytest.mark.asyncio
async def test_embed_default_dimension_and_legacy_endpoint() -> None:
    with OllamaStandIn() as server:
        async_client = ollama.AsyncClient(host=server.url)
        try:
            embedded = await async_client.embed(model=EMBED_MODEL, input="hello")
            legacy = await async_client.embeddings(model=EMBED_MODEL, prompt="hello")
        finally:
            await async_client.close()
    assert len(embedded.embeddings[0]) == 768
    assert list(legacy.embedding) == list(embedded.embeddings[0])


@settings(max_examples=40, deadline=None)
@given(text=st.text(max_size=80), dim=st.integers(min_value=1, max_value=96))
def test_embed_text_is_deterministic_and_normalised(text: str, dim: int) -> None:
    vector = embed_text(text, dim)
    assert len(vector) == dim
    assert abs(norm(vector) - 1.0) < 1e-9
    assert embed_text(text, dim) == vector


# ----------------------------------------------------------------- errors


@pytest.mark.asyncio
async def test_unknown_model_is_404_for_streamed_chat_and_embed(
    client: ollama.AsyncClient,
) -> None:
    with pytest.raises(ollama.ResponseError) as chat_info:
        async for _ in await client.chat(model="nope", messages=USER, stream=True):
            pass
    assert chat_info.value.status_code == 404
    assert chat_info.value.error == 'model "nope" not found, try pulling it first'

    with pytest.raises(ollama.ResponseError) as embed_info:
        await client.embed(model="nope", input="x")
    assert embed_info.value.status_code == 404


@pytest.mark.asyncio
async def test_status_fault_is_a_response_error_once(
    srv: OllamaStandIn, client: ollama.AsyncClient
) -> None:
    srv.fail_next("status", status=500, message="boom")
    with pytest.raises(ollama.ResponseError) as info:
        await client.chat(model=CHAT_MODEL, messages=USER)
    assert info.value.status_code == 500
    assert info.value.error == "boom"

    srv.fail_next("status", status=503)
    with pytest.raises(ollama.ResponseError) as stream_info:
        async for _ in await client.chat(model=CHAT_MODEL, messages=USER, stream=True):
            pass
    assert stream_info.value.status_code == 503

    assert (await client.chat(model=CHAT_MODEL, messages=USER)).done


@pytest.mark.asyncio
async def test_persistent_fault_limited_to_a_path_until_cleared(
    srv: OllamaStandIn, client: ollama.AsyncClient
) -> None:
    srv.fail_next("status", status=502, count=None, path="/api/chat")
    assert len((await client.list()).models) == 2
    for _ in range(2):
        with pytest.raises(ollama.ResponseError):
            await client.chat(model=CHAT_MODEL, messages=USER)
    assert len(srv.pending_faults) == 1
    srv.clear_faults()
    assert (await client.chat(model=CHAT_MODEL, messages=USER)).done


def test_fail_next_rejects_unknown_kinds_and_params(srv: OllamaStandIn) -> None:
    with pytest.raises(ValueError):
        srv.fail_next("explode")  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        srv.fail_next("drop", seconds=1.0)
    with pytest.raises(ValueError):
        srv.fail_next("drop", count=0)


@pytest.mark.asyncio
async def test_stopped_server_refuses_and_restarts_on_same_port(
    srv: OllamaStandIn, client: ollama.AsyncClient
) -> None:
    assert (await client.chat(model=CHAT_MODEL, messages=USER)).done  # keep-alive conn open
    port = srv.port
    srv.stop()
    assert not srv.running

    with pytest.raises(ConnectionRefusedError):
        socket.create_connection(("127.0.0.1", port), timeout=1).close()
    with pytest.raises(ConnectionError):
        await client.chat(model=CHAT_MODEL, messages=USER)
    with pytest.raises(httpx.ConnectError):
        async for _ in await client.chat(model=CHAT_MODEL, messages=USER, stream=True):
            pass

    srv.start()
    assert srv.port == port
    srv.script_reply("back again")
    assert (await client.chat(model=CHAT_MODEL, messages=USER)).message.content == "back again"


@pytest.mark.asyncio
async def test_delay_beyond_client_timeout_is_read_timeout(
    srv: OllamaStandIn, short_client: ollama.AsyncClient
) -> None:
    srv.fail_next("delay", seconds=2.0)
    with pytest.raises(httpx.ReadTimeout):
        await short_client.chat(model=CHAT_MODEL, messages=USER)
    srv.fail_next("delay", seconds=0.05)
    assert (await short_client.chat(model=CHAT_MODEL, messages=USER)).done


@pytest.mark.asyncio
async def test_stall_mid_stream_is_read_timeout_after_first_tokens(
    srv: OllamaStandIn, short_client: ollama.AsyncClient
) -> None:
    srv.script_reply("alpha beta gamma delta")
    srv.fail_next("stall", after=2, seconds=2.0)
    received: list[str] = []
    stream = await short_client.chat(model=CHAT_MODEL, messages=USER, stream=True)
    with pytest.raises(httpx.ReadTimeout):
        await collect_until_error(stream, received)
    assert received == ["alpha ", "beta "]


@pytest.mark.asyncio
async def test_short_stall_then_stream_completes(
    srv: OllamaStandIn, client: ollama.AsyncClient
) -> None:
    srv.script_reply("alpha beta gamma")
    srv.fail_next("stall", after=1, seconds=0.1)
    started = time.monotonic()
    parts = [p async for p in await client.chat(model=CHAT_MODEL, messages=USER, stream=True)]
    assert time.monotonic() - started >= 0.1
    assert "".join(p.message.content or "" for p in parts) == "alpha beta gamma"
    assert parts[-1].done


@pytest.mark.asyncio
async def test_drop_mid_stream_is_transport_error_after_first_tokens(
    srv: OllamaStandIn, client: ollama.AsyncClient
) -> None:
    srv.script_reply("alpha beta gamma delta")
    srv.fail_next("drop", after=3)
    received: list[str] = []
    stream = await client.chat(model=CHAT_MODEL, messages=USER, stream=True)
    with pytest.raises((httpx.RemoteProtocolError, httpx.ReadError)):
        await collect_until_error(stream, received)
    assert received == ["alpha ", "beta ", "gamma "]
    assert (await client.chat(model=CHAT_MODEL, messages=USER)).done  # fresh connection works


@pytest.mark.asyncio
async def test_malformed_line_is_json_decode_error_after_first_tokens(
    srv: OllamaStandIn, client: ollama.AsyncClient
) -> None:
    srv.script_reply("alpha beta gamma")
    srv.fail_next("malformed", after=1)
    received: list[str] = []
    stream = await client.chat(model=CHAT_MODEL, messages=USER, stream=True)
    with pytest.raises(json.JSONDecodeError):
        await collect_until_error(stream, received)
    assert received == ["alpha "]


@pytest.mark.asyncio
async def test_error_line_is_response_error(srv: OllamaStandIn, client: ollama.AsyncClient) -> None:
    srv.script_reply("alpha beta gamma")
    srv.fail_next("error_line", after=2, message="model runner crashed")
    received: list[str] = []
    stream = await client.chat(model=CHAT_MODEL, messages=USER, stream=True)
    with pytest.raises(ollama.ResponseError) as info:
        await collect_until_error(stream, received)
    assert info.value.status_code == -1
    assert info.value.error == "model runner crashed"
    assert received == ["alpha ", "beta "]


@pytest.mark.asyncio
async def test_stream_faults_wait_for_a_streaming_chat(
    srv: OllamaStandIn, client: ollama.AsyncClient
) -> None:
    srv.fail_next("drop", after=0)
    assert (await client.chat(model=CHAT_MODEL, messages=USER)).done  # not streamed: untouched
    await client.embed(model=EMBED_MODEL, input="x")
    with pytest.raises((httpx.RemoteProtocolError, httpx.ReadError)):
        async for _ in await client.chat(model=CHAT_MODEL, messages=USER, stream=True):
            pass


@pytest.mark.asyncio
async def test_embed_dim_fault_returns_wrong_dimension_once(
    srv: OllamaStandIn, client: ollama.AsyncClient
) -> None:
    srv.fail_next("embed_dim", dim=5)
    wrong = await client.embed(model=EMBED_MODEL, input=["a", "b"])
    right = await client.embed(model=EMBED_MODEL, input=["a", "b"])
    assert [len(v) for v in wrong.embeddings] == [5, 5]
    assert [len(v) for v in right.embeddings] == [64, 64]


# ------------------------------------------------------ recording, quiet


@pytest.mark.asyncio
async def test_requests_are_recorded(srv: OllamaStandIn, client: ollama.AsyncClient) -> None:
    await client.chat(model=CHAT_MODEL, messages=USER, options={"temperature": 0})
    await client.list()
    async for _ in await client.chat(model=CHAT_MODEL, messages=USER, stream=True):
        pass

    assert [(r.method, r.path) for r in srv.requests] == [
        ("POST", "/api/chat"),
        ("GET", "/api/tags"),
        ("POST", "/api/chat"),
    ]
    bodies = srv.chat_requests()
    assert bodies[0]["messages"] == USER
    assert bodies[0]["stream"] is False
    assert bodies[0]["options"] == {"temperature": 0}
    assert bodies[1]["stream"] is True
    srv.clear_requests()
    assert srv.requests == []
    assert srv.chat_requests() == []


@pytest.mark.asyncio
async def test_client_disconnect_mid_stream_is_quiet(
    srv: OllamaStandIn, capfd: pytest.CaptureFixture[str]
) -> None:
    srv.token_delay = 0.02
    srv.script_reply(" ".join(f"w{i}" for i in range(50)))
    async_client = ollama.AsyncClient(host=srv.url)
    stream = await async_client.chat(model=CHAT_MODEL, messages=USER, stream=True)
    async for _ in stream:
        break
    await stream.aclose()
    await async_client.close()
    deadline = time.monotonic() + 10
    while srv.open_connections and time.monotonic() < deadline:  # the server writes into
        await asyncio.sleep(0.01)  # the closed socket, fails, and ends the request
    assert srv.open_connections == 0
    srv.stop()
    assert capfd.readouterr().err == ""


def test_runs_standalone_until_interrupted() -> None:
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    process = subprocess.Popen(
        [sys.executable, "-m", "tests.support.ollama_standin", "--port", "0", "--embed-dim", "8"],
        cwd=REPO_ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stdout is not None
        line = process.stdout.readline()
        url = line.strip().rsplit(" ", 1)[-1]
        assert url.startswith("http://127.0.0.1:")
        embedded = ollama.Client(host=url).embed(model=EMBED_MODEL, input="hi")
        assert len(embedded.embeddings[0]) == 8
        process.send_signal(signal.SIGINT)
        _, stderr = process.communicate(timeout=5)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    assert process.returncode == 0
    assert "Traceback" not in stderr
