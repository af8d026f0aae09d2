"""agent/model_catalog.py through the real ollama client against the Ollama stand-in:
what a model is (capabilities, window, num_ctx, loaded), pull progress and failures, delete."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator

import pytest
import pytest_asyncio

from agent import model_catalog
from agent.gateway_errors import ModelError, ModelNotPulled, OllamaUnreachable
from agent.model_catalog import ModelRecord, chat_models, list_models, show_model
from agent.model_changes import PullFailed, PullProgress, delete_model, pull_model
from agent.ollama_gateway import OllamaGateway
from tests.support.ollama_standin import ModelSpec, OllamaStandIn

MODELS = ("llama3.2", "qwen3:8b", "llava", "nomic-embed-text")


@pytest.fixture(autouse=True)
def _fresh_cache() -> Iterator[None]:
    model_catalog.clear_show_cache()
    yield
    model_catalog.clear_show_cache()


@pytest.fixture
def srv() -> Iterator[OllamaStandIn]:
    with OllamaStandIn(models=MODELS, embed_dim=8) as server:
        yield server


@pytest_asyncio.fixture
async def gateway(srv: OllamaStandIn) -> AsyncIterator[OllamaGateway]:
    gateway = OllamaGateway(srv.url, read_timeout=10.0, connect_timeout=2.0)
    yield gateway
    await gateway.aclose()


def by_name(records: list[ModelRecord]) -> dict[str, ModelRecord]:
    return {record.name: record for record in records}


def show_requests(srv: OllamaStandIn) -> int:
    return sum(1 for request in srv.requests if request.path == "/api/show")


# ------------------------------------------------------------------------------- list


async def test_list_reports_what_each_model_is(gateway: OllamaGateway) -> None:
    records = await list_models(gateway.client())
    models = by_name(records)
    assert set(models) == {"llama3.2:latest", "qwen3:8b", "llava:latest", "nomic-embed-text:latest"}

    chat = models["llama3.2:latest"]
    assert chat.capabilities == ("completion", "tools")
    assert (chat.family, chat.parameter_size, chat.quantization) == ("llama", "3.2B", "Q4_K_M")
    assert chat.size == 2_019_393_189
    assert chat.context_length == 131_072
    assert chat.num_ctx is None
    assert (chat.loaded, chat.embedding, chat.chat_capable) == (False, False, True)

    assert models["qwen3:8b"].capabilities == ("completion", "tools", "thinking")
    assert models["qwen3:8b"].context_length == 40_960
    assert models["llava:latest"].capabilities == ("completion", "vision")
    embed = models["nomic-embed-text:latest"]
    assert embed.capabilities == ("embedding",)
    assert (embed.embedding, embed.chat_capable, embed.context_length) == (True, False, 2048)

    assert [r.name for r in chat_models(records)] == [
        r.name for r in records if r.name != "nomic-embed-text:latest"
    ]


async def test_json_entry_has_exactly_the_documented_fields(gateway: OllamaGateway) -> None:
    (record, *_) = await list_models(gateway.client())
    entry = record.to_json()
    assert tuple(entry) == ModelRecord.JSON_FIELDS  # the literal contract: test_cli_models
    assert isinstance(entry["capabilities"], list)


async def test_loaded_follows_api_ps(srv: OllamaStandIn, gateway: OllamaGateway) -> None:
    client = gateway.client()
    assert not any(record.loaded for record in await list_models(client))

    await client.chat("qwen3:8b", [{"role": "user", "content": "hi"}], options={"num_ctx": 8192})
    models = by_name(await list_models(client))
    assert models["qwen3:8b"].loaded is True
    running = models["qwen3:8b"].running
    assert running is not None and running.context_length == 8192
    assert running.size is not None and running.size > 0
    assert models["llama3.2:latest"].loaded is False

    srv.unload()
    assert not any(record.loaded for record in await list_models(client))


async def test_num_ctx_and_window_come_from_show() -> None:
    spec = ModelSpec(architecture="qwen3", context_length=40_960, num_ctx=8192)
    with OllamaStandIn(["custom:8b"], specs={"custom:8b": spec}) as server:
        gateway = OllamaGateway(server.url)
        try:
            (record,) = await list_models(gateway.client())
        finally:
            await gateway.aclose()
    assert (record.context_length, record.num_ctx) == (40_960, 8192)


async def test_a_model_whose_show_fails_is_listed_with_what_is_known(
    srv: OllamaStandIn, gateway: OllamaGateway
) -> None:
    srv.set_models(["llama3.2"])
    srv.fail_next("status", path="/api/show", status=500, message="boom")
    (record,) = await list_models(gateway.client())
    assert record.name == "llama3.2:latest"
    assert (record.family, record.size) == ("llama", 2_019_393_189)  # from /api/tags
    assert record.capabilities is None and record.context_length is None
    assert record.embedding is None and record.chat_capable is None
    assert record.to_json()["capabilities"] is None
    assert chat_models([record]) == [record]  # unknown is not ruled out


async def test_a_slow_show_does_not_stall_the_list(
    srv: OllamaStandIn, gateway: OllamaGateway, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(model_catalog, "SHOW_TIMEOUT_SECONDS", 0.3)
    srv.fail_next("delay", path="/api/show", count=None, seconds=3.0)
    records = await list_models(gateway.client())
    srv.clear_faults()
    assert len(records) == len(MODELS)
    assert all(record.capabilities is None for record in records)
    assert all(record.loaded is False for record in records)  # /api/ps still answered


async def test_a_hung_server_fails_the_list_in_time(
    srv: OllamaStandIn, gateway: OllamaGateway
) -> None:
    srv.fail_next("delay", path="/api/ps", seconds=3.0)
    records = await list_models(gateway.client(), timeout=0.3)
    assert all(record.loaded is None for record in records)
    srv.fail_next("delay", path="/api/tags", seconds=3.0)
    with pytest.raises(ModelError, match=r"did not list its models within 0\.3 s; raise STR"):
        await list_models(gateway.client(), timeout=0.3)


async def test_show_is_cached_per_process(srv: OllamaStandIn, gateway: OllamaGateway) -> None:
    client = gateway.client()
    first = await show_model(client, "llama3.2")
    again = await show_model(client, "llama3.2:latest")
    assert first == again and first.capabilities == ("completion", "tools")
    assert show_requests(srv) == 1
    await list_models(client)  # the list asks again only for what it has not seen
    assert show_requests(srv) == len(MODELS)
    await show_model(client, "llama3.2", refresh=True)
    assert show_requests(srv) == len(MODELS) + 1


async def test_show_of_a_missing_model_is_named(gateway: OllamaGateway) -> None:
    with pytest.raises(ModelNotPulled, match="no-such:1b"):
        await show_model(gateway.client(), "no-such:1b")


async def test_ollama_down_is_unreachable(srv: OllamaStandIn, gateway: OllamaGateway) -> None:
    srv.stop()
    with pytest.raises(OllamaUnreachable):
        await list_models(gateway.client())
    with pytest.raises(OllamaUnreachable):
        async for _ in pull_model(gateway.client(), "mistral"):
            pass


# ------------------------------------------------------------------------------- pull


async def test_pull_yields_progress_then_the_model_is_listed(
    srv: OllamaStandIn, gateway: OllamaGateway
) -> None:
    srv.pull_steps = 4
    records = [p async for p in pull_model(gateway.client(), "mistral")]
    assert records[0] == PullProgress("pulling manifest")
    assert records[-1].status == "success"
    weights = [p for p in records if p.total and p.total > 10_000]
    assert [p.fraction for p in weights] == [0.0, pytest.approx(1 / 3), pytest.approx(2 / 3), 1.0]
    models = by_name(await list_models(gateway.client()))
    assert models["mistral:latest"].capabilities == ("completion", "tools")


async def test_pulling_an_unknown_model_fails_with_ollamas_message(
    gateway: OllamaGateway,
) -> None:
    seen: list[str] = []
    with pytest.raises(PullFailed) as info:
        async for progress in pull_model(gateway.client(), "no-such-model"):
            seen.append(progress.status)
    assert str(info.value) == "pull model manifest: file does not exist"
    assert info.value.exit_code == 1
    assert seen == ["pulling manifest"]


async def test_a_pull_broken_off_midway_fails(srv: OllamaStandIn, gateway: OllamaGateway) -> None:
    srv.fail_next("error_line", path="/api/pull", after=3, message="connection reset by peer")
    with pytest.raises(PullFailed, match=r"^connection reset by peer$"):
        async for _ in pull_model(gateway.client(), "mistral"):
            pass
    srv.fail_next("drop", path="/api/pull", after=2)
    with pytest.raises(PullFailed, match="dropped during the pull"):
        async for _ in pull_model(gateway.client(), "mistral"):
            pass
    assert "mistral:latest" not in srv.models


async def test_pull_refreshes_a_cached_show(srv: OllamaStandIn, gateway: OllamaGateway) -> None:
    client = gateway.client()
    srv.configure_model("llama3.2", context_length=8192)
    assert (await show_model(client, "llama3.2")).context_length == 8192
    srv.configure_model("llama3.2", context_length=16_384)
    async for _ in pull_model(client, "llama3.2"):
        pass
    assert (await show_model(client, "llama3.2")).context_length == 16_384


# ----------------------------------------------------------------------------- delete


async def test_delete_removes_the_model(srv: OllamaStandIn, gateway: OllamaGateway) -> None:
    client = gateway.client()
    await delete_model(client, "llava")
    assert "llava:latest" not in by_name(await list_models(client))
    with pytest.raises(ModelNotPulled, match="llava"):
        await delete_model(client, "llava")


# ------------------------------------------------------------- one /api/show cache


async def test_the_gateway_and_the_catalogue_share_one_show_cache(
    srv: OllamaStandIn, gateway: OllamaGateway
) -> None:
    assert await gateway.capabilities("llama3.2") == ("completion", "tools")
    assert show_requests(srv) == 1
    assert (await show_model(gateway.client(), "llama3.2:latest")).context_length == 131_072
    assert show_requests(srv) == 1  # the gateway's answer, read by the catalogue
    await list_models(gateway.client())
    assert show_requests(srv) == len(MODELS)  # only the models not asked yet
    assert await gateway.capabilities("llava") == ("completion", "vision")
    assert (await gateway.context_window("qwen3:8b")).model_max == 40_960
    assert show_requests(srv) == len(MODELS)  # the list's answers, read by the gateway
    srv.configure_model("llama3.2", context_length=8192)
    async for _ in pull_model(gateway.client(), "llama3.2"):
        pass  # a pull drops the entry for both
    shown = await gateway.show("llama3.2")
    assert shown is not None and shown.modelinfo["llama.context_length"] == 8192
    assert show_requests(srv) == len(MODELS) + 1


async def test_another_gateway_asks_again(srv: OllamaStandIn, gateway: OllamaGateway) -> None:
    """The cache belongs to a gateway's client: a new gateway (another `straylight` run, a
    test's fresh server on a reused port) never reads a stale answer."""
    await gateway.capabilities("llama3.2")
    other = OllamaGateway(srv.url)
    try:
        await other.capabilities("llama3.2")
    finally:
        await other.aclose()
    assert show_requests(srv) == 2


@pytest.mark.parametrize("listed", ["empty", "absent"])
async def test_a_server_that_lists_no_capabilities_leaves_chat_allowed_everywhere(
    srv: OllamaStandIn, gateway: OllamaGateway, listed: str
) -> None:
    """One rule: capabilities Ollama does not list (no field, as before Ollama had them, or
    an empty list) are unknown, and unknown is allowed — by the models list and screen
    (`chat_capable`), the chat's model choice (`OllamaStatus.chat_models`) and `/model` /
    `ask --model` (`cannot_chat`); a listed embedding model is still ruled out."""
    from agent.model_catalog import cannot_chat

    srv.set_models(["llama3.2", "nomic-embed-text"])
    srv.configure_model("llama3.2", lists_capabilities=listed)
    records = by_name(await list_models(gateway.client()))
    chat = records["llama3.2:latest"]
    assert chat.capabilities == (() if listed == "empty" else None)
    assert (chat.chat_capable, chat.embedding) == (None, None)
    assert [r.name for r in chat_models(records.values())] == ["llama3.2:latest"]
    status = await gateway.check_with_capabilities()
    assert status.chat_models == ("llama3.2:latest",)
    assert cannot_chat("llama3.2", status.capabilities_of("llama3.2")) is None
    assert cannot_chat("nomic-embed-text", status.capabilities_of("nomic-embed-text"))
