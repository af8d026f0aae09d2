"""Thinking models in the stand-in: ``message.thinking``, ``think``, inline ``<think>`` tags."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import ollama
import pytest

from tests.support.ollama_standin import DEFAULT_THINKING_PREFIX, ModelSpec, OllamaStandIn

PLAIN = "llama3.2"
THINKER = "qwen3:8b"
LEVELLED = "gpt-oss:20b"
INLINE = "r1-distill"
USER = [{"role": "user", "content": "How many r in strawberry?"}]


@pytest.fixture
def srv() -> Iterator[OllamaStandIn]:
    specs = {INLINE: ModelSpec(capabilities=("completion",), inline_thinking=True)}
    with OllamaStandIn(models=(PLAIN, THINKER, LEVELLED, INLINE), specs=specs) as server:
        yield server


async def stream(
    client: ollama.AsyncClient, model: str, think: bool | str | None = None
) -> list[ollama.ChatResponse]:
    return [part async for part in await client.chat(model, USER, stream=True, think=think)]


@pytest.mark.asyncio
async def test_thinking_capability_follows_the_model_name(client: ollama.AsyncClient) -> None:
    assert "thinking" in ((await client.show(THINKER)).capabilities or [])
    assert "thinking" in ((await client.show(LEVELLED)).capabilities or [])
    assert "thinking" not in ((await client.show(PLAIN)).capabilities or [])
    assert "thinking" not in ((await client.show(INLINE)).capabilities or [])


@pytest.mark.asyncio
async def test_a_thinking_model_streams_thinking_first_then_the_answer(
    srv: OllamaStandIn, client: ollama.AsyncClient
) -> None:
    srv.script_reply("Three.", thinking="Count them: s t r a w b e r r y.")
    parts = await stream(client, THINKER)

    thinking = [p for p in parts[:-1] if p.message.thinking]
    answer = [p for p in parts[:-1] if p.message.content]
    assert parts[: len(thinking)] == thinking  # all thinking comes first
    assert all(p.message.content == "" for p in thinking)
    assert "".join(p.message.thinking or "" for p in thinking) == "Count them: s t r a w b e r r y."
    assert "".join(p.message.content or "" for p in answer) == "Three."
    assert parts[-1].eval_count == len(thinking) + len(answer)
    assert srv.chat_outcomes()[0].thinking is True


@pytest.mark.asyncio
async def test_think_false_turns_thinking_off_and_whole_replies_carry_it(
    srv: OllamaStandIn, client: ollama.AsyncClient
) -> None:
    srv.script_reply("Three.", thinking="Counting.")
    parts = await stream(client, THINKER, think=False)
    assert not any(p.message.thinking for p in parts)
    assert srv.chat_requests()[0]["think"] is False

    srv.script_reply("Three.", thinking="Counting.")
    whole = await client.chat(THINKER, USER, think=True)
    assert whole.message.thinking == "Counting."
    assert whole.message.content == "Three."

    default = await client.chat(THINKER, USER)  # no scripted thinking: a default one
    assert default.message.thinking == DEFAULT_THINKING_PREFIX + USER[0]["content"]
    assert [o.thinking for o in srv.chat_outcomes()] == [False, True, True]


@pytest.mark.asyncio
async def test_levels_are_accepted_and_gpt_oss_cannot_stop_thinking(
    srv: OllamaStandIn, client: ollama.AsyncClient
) -> None:
    assert (await client.chat(THINKER, USER, think="high")).message.thinking
    assert (await client.chat(LEVELLED, USER, think="low")).message.thinking
    assert (await client.chat(LEVELLED, USER, think=False)).message.thinking
    assert [r.think for r in srv.requests] == ["high", "low", False]


@pytest.mark.asyncio
async def test_think_to_a_model_without_thinking_is_refused(client: ollama.AsyncClient) -> None:
    for think in (True, "medium"):
        with pytest.raises(ollama.ResponseError) as info:
            await client.chat(PLAIN, USER, think=think)
        assert info.value.status_code == 400
        assert info.value.error == '"llama3.2" does not support thinking'
    plain = await client.chat(PLAIN, USER, think=False)
    assert plain.message.thinking is None


@pytest.mark.asyncio
async def test_an_invalid_think_value_is_refused(srv: OllamaStandIn) -> None:
    async with httpx.AsyncClient() as raw:
        body = {"model": THINKER, "messages": USER, "stream": False}
        wrong = await raw.post(f"{srv.url}/api/chat", json={**body, "think": "extreme"})
        number = await raw.post(f"{srv.url}/api/chat", json={**body, "think": 2})
    assert wrong.status_code == number.status_code == 400
    assert wrong.json()["error"].startswith('invalid think value: "extreme" (must be "high"')
    assert number.json()["error"].startswith("think must be a boolean or string")


@pytest.mark.asyncio
async def test_inline_thinkers_write_think_tags_into_content(
    srv: OllamaStandIn, client: ollama.AsyncClient
) -> None:
    srv.script_reply("Three.", thinking="Counting letters.")
    parts = await stream(client, INLINE)
    content = "".join(p.message.content or "" for p in parts)
    assert content == "<think>Counting letters.</think>\n\nThree."
    assert not any(p.message.thinking for p in parts)
    with pytest.raises(ollama.ResponseError) as info:
        await client.chat(INLINE, USER, think=True)
    assert info.value.status_code == 400


@pytest.mark.asyncio
async def test_capabilities_table_makes_any_model_a_thinker(srv: OllamaStandIn) -> None:
    srv.set_models(["mythinker"], capabilities={"mythinker": ["completion", "thinking"]})
    async_client = ollama.AsyncClient(host=srv.url)
    try:
        response = await async_client.chat("mythinker", USER)
    finally:
        await async_client.close()
    assert response.message.thinking
