"""The stand-in's model management: /api/show, /api/ps, /api/pull, /api/delete, images, options."""

from __future__ import annotations

import base64
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import ollama
import pytest

from tests.support.ollama_standin import ModelSpec, OllamaStandIn, prompt_tokens

CHAT_MODEL = "llama3.2"
EMBED_MODEL = "nomic-embed-text"
VISION_MODEL = "llava"
USER = [{"role": "user", "content": "hello there"}]
PIXEL = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="
)


@pytest.fixture
def srv() -> Iterator[OllamaStandIn]:
    with OllamaStandIn(models=(CHAT_MODEL, EMBED_MODEL, VISION_MODEL), embed_dim=8) as server:
        yield server


# -------------------------------------------------------------------- show


@pytest.mark.asyncio
async def test_show_reports_model_info_details_and_parameters(client: ollama.AsyncClient) -> None:
    shown = await client.show(CHAT_MODEL)
    assert shown.modelinfo is not None
    assert shown.modelinfo["general.architecture"] == "llama"
    assert shown.modelinfo["llama.context_length"] == 131072
    assert shown.details is not None
    assert (shown.details.family, shown.details.parameter_size) == ("llama", "3.2B")
    assert shown.details.quantization_level == "Q4_K_M"
    assert shown.parameters == ""

    embed = await client.show(EMBED_MODEL)
    assert embed.capabilities == ["embedding"]
    assert embed.modelinfo is not None and embed.modelinfo["nomic-bert.context_length"] == 2048
    assert (await client.show(VISION_MODEL)).capabilities == ["completion", "vision"]


@pytest.mark.asyncio
async def test_show_follows_a_configured_spec() -> None:
    spec = ModelSpec(
        architecture="qwen3",
        context_length=40960,
        num_ctx=8192,
        parameters="temperature 0.6\nstop <|im_end|>",
        parameter_size="8.2B",
        quantization_level="Q8_0",
    )
    with OllamaStandIn(["custom:8b"], specs={"custom:8b": spec}) as server:
        async_client = ollama.AsyncClient(host=server.url)
        try:
            shown = await async_client.show("custom:8b")
        finally:
            await async_client.close()
    assert shown.modelinfo is not None and shown.modelinfo["qwen3.context_length"] == 40960
    assert shown.parameters == "temperature 0.6\nstop <|im_end|>\nnum_ctx 8192"
    assert shown.modelfile is not None and "PARAMETER num_ctx 8192" in shown.modelfile
    assert shown.details is not None and shown.details.quantization_level == "Q8_0"


# ---------------------------------------------------------------------- ps


@pytest.mark.asyncio
async def test_serving_a_request_loads_the_model(
    srv: OllamaStandIn, client: ollama.AsyncClient
) -> None:
    assert (await client.ps()).models == []
    await client.chat(CHAT_MODEL, USER)
    await client.embed(EMBED_MODEL, input="hi")
    loaded = {m.model: m for m in (await client.ps()).models}
    assert set(loaded) == {"llama3.2:latest", "nomic-embed-text:latest"}
    chat = loaded["llama3.2:latest"]
    assert chat.context_length == 4096
    assert chat.size is not None and chat.size > 2_019_393_189  # weights + KV cache
    assert chat.size_vram == chat.size
    assert chat.expires_at is not None
    assert abs(chat.expires_at - (datetime.now(UTC) + timedelta(minutes=5))) < timedelta(seconds=30)
    assert loaded["nomic-embed-text:latest"].context_length == 2048  # its maximum

    await client.chat(CHAT_MODEL, USER, options={"num_ctx": 8192})
    assert (await client.ps()).models[0].context_length == 8192
    assert srv.loaded_models()[0].model.name == "llama3.2:latest"


@pytest.mark.asyncio
async def test_keep_alive_sets_expiry_and_zero_unloads(
    srv: OllamaStandIn, client: ollama.AsyncClient
) -> None:
    await client.chat(CHAT_MODEL, USER, keep_alive="1h")
    (model,) = (await client.ps()).models
    assert model.expires_at is not None
    assert model.expires_at - datetime.now(UTC) > timedelta(minutes=59)

    await client.chat(CHAT_MODEL, USER, keep_alive=-1)
    (forever,) = (await client.ps()).models
    assert forever.expires_at is not None and forever.expires_at.year > 2100

    await client.chat(CHAT_MODEL, USER, keep_alive=0)
    assert (await client.ps()).models == []
    assert [r.keep_alive for r in srv.requests if r.path == "/api/chat"] == ["1h", -1, 0]


@pytest.mark.asyncio
async def test_chat_without_messages_loads_or_unloads(client: ollama.AsyncClient) -> None:
    loaded = await client.chat(CHAT_MODEL, [])
    assert (loaded.done, loaded.done_reason) == (True, "load")
    assert len((await client.ps()).models) == 1
    unloaded = await client.chat(CHAT_MODEL, [], keep_alive=0)
    assert unloaded.done_reason == "unload"
    assert (await client.ps()).models == []
    with pytest.raises(ollama.ResponseError) as info:
        await client.chat(CHAT_MODEL, USER, keep_alive="soon")
    assert info.value.status_code == 400
    assert info.value.error == 'time: invalid duration "soon"'


# -------------------------------------------------------------------- pull


@pytest.mark.asyncio
async def test_pull_streams_progress_then_the_model_is_listed(
    srv: OllamaStandIn, client: ollama.AsyncClient
) -> None:
    srv.pull_steps = 4
    records = [r async for r in await client.pull("qwen3:8b", stream=True)]
    statuses = [r.status for r in records]
    assert statuses[0] == "pulling manifest"
    assert statuses[-3:] == ["verifying sha256 digest", "writing manifest", "success"]
    digest = records[1].digest or ""
    weights = [r for r in records if r.digest == digest]
    assert len(weights) == 4
    assert weights[0].status == f"pulling {digest[7:19]}"
    assert weights[0].completed is None  # Go omits a zero
    assert [r.completed for r in weights[1:]] == sorted(r.completed or 0 for r in weights[1:])
    assert weights[-1].completed == weights[-1].total
    assert len({r.digest for r in records if r.digest}) == 3
    assert "qwen3:8b" in [m.model for m in (await client.list()).models]
    assert "thinking" in ((await client.show("qwen3:8b")).capabilities or [])

    whole = await client.pull("gemma3")
    assert whole.status == "success"
    assert "gemma3:latest" in srv.models


@pytest.mark.asyncio
async def test_pulling_an_unknown_model_is_ollamas_manifest_error(
    srv: OllamaStandIn, client: ollama.AsyncClient
) -> None:
    seen: list[str | None] = []
    with pytest.raises(ollama.ResponseError) as info:
        async for record in await client.pull("no-such-model", stream=True):
            seen.append(record.status)
    assert seen == ["pulling manifest"]
    assert info.value.error == "pull model manifest: file does not exist"
    with pytest.raises(ollama.ResponseError) as whole:
        await client.pull("no-such-model")
    assert whole.value.status_code == 500

    srv.set_registry(["no-such-model"])
    assert (await client.pull("no-such-model")).status == "success"


@pytest.mark.asyncio
@pytest.mark.parametrize("name", ["bad name", "-x", "a/b/c/d", "model:" + "t" * 81, "ns.x/m"])
async def test_a_name_ollama_cannot_parse_is_http_400_before_anything_streams(
    srv: OllamaStandIn, client: ollama.AsyncClient, name: str
) -> None:
    srv.set_registry([name])  # even a registry that knew it: the name is checked first
    with pytest.raises(ollama.ResponseError) as info:
        async for _record in await client.pull(name, stream=True):
            pytest.fail("a record streamed for an invalid name")
    assert (info.value.status_code, info.value.error) == (400, "invalid model name")


@pytest.mark.parametrize(
    "name", ["llama3.2", "qwen3:0.6b", "registry.local:5000/team/model:v1", "hf.co/u/r:Q4_K_M"]
)
def test_names_ollama_takes_are_valid(name: str) -> None:
    from tests.support.ollama_standin.model_name import is_valid_name

    assert is_valid_name(name)


@pytest.mark.asyncio
async def test_a_pull_failing_midway_installs_nothing(
    srv: OllamaStandIn, client: ollama.AsyncClient
) -> None:
    srv.fail_next("error_line", path="/api/pull", after=3, message="connection reset by peer")
    srv.fail_next("drop", after=0)  # a chat fault: the pull must not take it
    seen: list[str | None] = []
    with pytest.raises(ollama.ResponseError) as info:
        async for record in await client.pull("mistral", stream=True):
            seen.append(record.status)
    assert len(seen) == 3
    assert info.value.error == "connection reset by peer"
    assert "mistral:latest" not in srv.models
    assert [f.kind for f in srv.pending_faults] == ["drop"]


@pytest.mark.asyncio
async def test_delete_removes_and_then_answers_404(
    srv: OllamaStandIn, client: ollama.AsyncClient
) -> None:
    await client.chat(CHAT_MODEL, USER)
    assert (await client.delete(CHAT_MODEL)).status == "success"
    assert "llama3.2:latest" not in [m.model for m in (await client.list()).models]
    assert (await client.ps()).models == []
    with pytest.raises(ollama.ResponseError) as info:
        await client.delete(CHAT_MODEL)
    assert info.value.status_code == 404
    assert info.value.error == "model 'llama3.2' not found"


# ------------------------------------------------------------------ images


@pytest.mark.asyncio
async def test_images_go_to_vision_models_only(
    srv: OllamaStandIn, client: ollama.AsyncClient
) -> None:
    message = {"role": "user", "content": "What is this?", "images": [PIXEL]}
    response = await client.chat(VISION_MODEL, [message])
    (outcome,) = srv.chat_outcomes()
    assert outcome.images == 1
    sent = srv.chat_requests()[0]["messages"][0]
    assert base64.b64decode(sent["images"][0]) == PIXEL
    assert response.prompt_eval_count == prompt_tokens([sent]) >= 768

    with pytest.raises(ollama.ResponseError) as info:
        await client.chat(CHAT_MODEL, [message])
    assert info.value.status_code == 400
    assert info.value.error == "registry.ollama.ai/library/llama3.2 does not support vision"


# ----------------------------------------------------------------- options


@pytest.mark.asyncio
async def test_options_are_recorded_and_num_predict_and_stop_apply(
    srv: OllamaStandIn, client: ollama.AsyncClient
) -> None:
    options = {"temperature": 0.2, "seed": 7, "top_k": 20, "num_predict": 2}
    srv.script_reply("Hello brave new world")
    parts = [p async for p in await client.chat(CHAT_MODEL, USER, stream=True, options=options)]
    assert [p.message.content for p in parts[:-1]] == ["Hello ", "brave "]
    assert (parts[-1].done_reason, parts[-1].eval_count) == ("length", 2)
    assert srv.requests[-1].options == options

    srv.script_reply("Hello brave new world")
    stopped = await client.chat(CHAT_MODEL, USER, options={"stop": ["new"]})
    assert (stopped.message.content, stopped.done_reason) == ("Hello brave ", "stop")
    assert srv.requests[-1].options == {"stop": ["new"]}
