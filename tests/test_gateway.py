"""The Ollama gateway names every failure, through the real client, over real HTTP."""

from __future__ import annotations

import time

import pytest

from agent.gateway_errors import (
    EXIT_MODEL_ERROR,
    EXIT_MODEL_MISSING,
    EXIT_UNREACHABLE,
    ModelError,
    ModelNotPulled,
    ModelTimeout,
    OllamaUnreachable,
    StreamCutOff,
)
from agent.gateway_values import ChatDelta, ChatDone
from agent.ollama_gateway import OllamaGateway
from tests.support.ollama_standin import OllamaStandIn
from tests.support.ports import closed_port

MESSAGES = [{"role": "user", "content": "hello"}]


async def collect(gateway: OllamaGateway, model: str = "llama3.2") -> tuple[str, list[object]]:
    text, events = "", []
    async for event in gateway.stream_chat(model, MESSAGES):
        events.append(event)
        if isinstance(event, ChatDelta):
            text += event.text
    return text, events


async def test_streams_the_reply_and_a_final_chunk(standin: OllamaStandIn) -> None:
    standin.script_reply("Hello from the stand-in, in several tokens.")
    gateway = OllamaGateway(standin.url)
    text, events = await collect(gateway)
    await gateway.aclose()
    assert text == "Hello from the stand-in, in several tokens."
    assert isinstance(events[-1], ChatDone) and events[-1].eval_count == len(events) - 1
    assert standin.chat_requests()[-1]["messages"] == MESSAGES


async def test_unreachable_names_the_host_and_how_to_start_it() -> None:
    host = f"http://127.0.0.1:{closed_port()}"
    gateway = OllamaGateway(host, connect_timeout=1.0)
    with pytest.raises(OllamaUnreachable) as caught:
        await collect(gateway)
    assert host in str(caught.value) and "ollama serve" in str(caught.value)
    assert caught.value.exit_code == EXIT_UNREACHABLE
    status = await gateway.check()
    assert not status.reachable and host in (status.error or "")


async def test_missing_model_says_ollama_pull(standin: OllamaStandIn) -> None:
    gateway = OllamaGateway(standin.url)
    with pytest.raises(ModelNotPulled) as caught:
        await collect(gateway, model="mistral")
    assert "ollama pull mistral" in str(caught.value)
    assert caught.value.exit_code == EXIT_MODEL_MISSING


@pytest.mark.parametrize("body", ["", "404 page not found", "<h1>Not Found</h1>"])
async def test_a_404_that_is_not_ollamas_model_not_found_is_not_a_missing_model(
    standin: OllamaStandIn, body: str
) -> None:
    """A server at OLLAMA_HOST that is not Ollama (another web app on the port, a proxy's
    catch-all) answers 404 to every path: that is not "model 'llama3.2' is not pulled",
    whose `ollama pull` fix would change nothing."""
    standin.fail_next("status", status=404, body=body, count=None)
    gateway = OllamaGateway(standin.url)
    with pytest.raises(ModelError) as caught:
        await collect(gateway)
    assert not isinstance(caught.value, ModelNotPulled)
    assert "HTTP 404" in str(caught.value) and "pull" not in str(caught.value)
    assert f"is {standin.url} an Ollama server?" in str(caught.value)
    assert caught.value.exit_code == EXIT_MODEL_ERROR


@pytest.mark.parametrize(
    "message",
    [
        'model "mistral" not found, try pulling it first',  # Ollama's /api/chat
        "model 'mistral' not found",  # its /api/show and newer versions
        '{"detail":"Model not found"}',  # an Ollama-compatible proxy's own words
    ],
)
async def test_ollamas_own_model_not_found_is_a_missing_model(
    standin: OllamaStandIn, message: str
) -> None:
    standin.fail_next("status", status=404, message=message, count=None)
    gateway = OllamaGateway(standin.url)
    with pytest.raises(ModelNotPulled):
        await collect(gateway, model="mistral")


async def test_server_error_is_a_model_error(standin: OllamaStandIn) -> None:
    standin.fail_next("status", status=500, message="out of memory", path="/api/chat")
    gateway = OllamaGateway(standin.url)
    with pytest.raises(ModelError) as caught:
        await collect(gateway)
    assert "500" in str(caught.value) and "out of memory" in str(caught.value)
    assert caught.value.exit_code == EXIT_MODEL_ERROR


async def test_an_html_error_page_from_a_proxy_is_named_by_its_title(
    standin: OllamaStandIn,
) -> None:
    """A reverse proxy in front of Ollama answers a dead backend with an HTML page: the line
    gives its title, not the page's markup squashed onto one line."""
    page = (
        "<html>\r\n<head><title>502 Bad Gateway</title></head>\r\n<body>\r\n"
        "<center><h1>502 Bad Gateway</h1></center>\r\n<hr><center>nginx/1.24.0</center>\r\n"
        "</body>\r\n</html>\r\n"
    )
    standin.fail_next("status", status=502, body=page, path="/api/chat")
    gateway = OllamaGateway(standin.url)
    with pytest.raises(ModelError) as caught:
        await collect(gateway)
    assert str(caught.value) == (
        "Ollama answered HTTP 502: 502 Bad Gateway (an HTML page: a proxy between Straylight "
        "and Ollama?)"
    )


async def test_a_stall_beyond_the_read_timeout_is_a_named_timeout(standin: OllamaStandIn) -> None:
    standin.fail_next("delay", seconds=2.0, path="/api/chat")
    gateway = OllamaGateway(standin.url, read_timeout=0.3)
    with pytest.raises(ModelTimeout) as caught:
        await collect(gateway)
    assert "0.3 s" in str(caught.value)  # never the empty str() of httpx.ReadTimeout


@pytest.mark.parametrize(
    ("kind", "params", "needle"),
    [
        ("drop", {"after": 2}, "dropped"),
        ("malformed", {"after": 2}, "malformed"),
        ("error_line", {"after": 2, "message": "GPU fell over"}, "GPU fell over"),
    ],
)
async def test_faults_mid_stream_are_cut_offs(
    standin: OllamaStandIn, kind: str, params: dict[str, object], needle: str
) -> None:
    standin.script_reply("one two three four five six")
    standin.fail_next(kind, **params)
    gateway = OllamaGateway(standin.url)
    received = ""
    with pytest.raises(StreamCutOff) as caught:
        async for event in gateway.stream_chat("llama3.2", MESSAGES):
            if isinstance(event, ChatDelta):
                received += event.text
    assert received == "one two "
    assert needle in str(caught.value)


async def test_check_names_the_status_a_server_that_is_not_ollama_answers(
    standin: OllamaStandIn,
) -> None:
    # Another web server (or a proxy) at OLLAMA_HOST: the sidebar and `status` say what it
    # answered, not an exception's class name.
    standin.fail_next("status", path="/api/version", status=404, message="404 page not found")
    gateway = OllamaGateway(standin.url)
    status = await gateway.check()
    assert not status.reachable
    assert status.error == "Ollama answered HTTP 404 to /api/version: 404 page not found"
    await gateway.aclose()


async def test_check_reports_version_and_models(standin: OllamaStandIn) -> None:
    gateway = OllamaGateway(standin.url)
    status = await gateway.check()
    assert status.reachable and status.version
    assert status.has_model("llama3.2") and status.has_model("llama3.2:latest")
    assert not status.has_model("mistral")
    standin.stop()
    assert not (await gateway.check()).reachable
    standin.start()
    assert (await gateway.check()).reachable
    await gateway.aclose()


# ------------------------------------------------- metadata calls (issue 15 §8)


def show_requests(standin: OllamaStandIn) -> int:
    return sum(1 for request in standin.requests if request.path == "/api/show")


async def test_capabilities_are_asked_once_per_model(standin: OllamaStandIn) -> None:
    gateway = OllamaGateway(standin.url)
    try:
        first = await gateway.capabilities("llama3.2")
        assert await gateway.capabilities("llama3.2:latest") == first
        assert first is not None and "tools" in first
        assert show_requests(standin) == 1
        await gateway.capabilities("nomic-embed-text")
        assert show_requests(standin) == 2
    finally:
        await gateway.aclose()


@pytest.mark.parametrize("path", ["/api/show", "/api/tags", "/api/version"])
async def test_a_slow_metadata_call_gives_up_at_the_connect_timeout(
    standin: OllamaStandIn, path: str
) -> None:
    """A slow /api/show delayed every ask by its full duration: metadata calls have the
    short (connect) timeout, not the read timeout meant for a model's reply."""
    standin.fail_next("delay", seconds=5.0, path=path)
    gateway = OllamaGateway(standin.url, read_timeout=60.0, connect_timeout=0.5)
    started = time.monotonic()
    try:
        if path == "/api/show":
            assert await gateway.capabilities("llama3.2") is None
        else:
            assert not (await gateway.check()).reachable
    finally:
        await gateway.aclose()
    assert time.monotonic() - started < 3.0  # 0.5 s expected; not the 5 s delay, nor 60 s


@pytest.mark.parametrize(
    ("read", "connect", "setting"),
    [
        (60.0, 0.5, "STRAYLIGHT_CONNECT_TIMEOUT_SECONDS"),  # the TUI's gateway
        (0.5, 0.5, "STRAYLIGHT_CONNECT_TIMEOUT_SECONDS"),  # `status` reads with the connect one
        (0.5, 5.0, "STRAYLIGHT_HTTP_TIMEOUT_SECONDS"),  # a read timeout below the connect one
    ],
)
async def test_a_slow_check_names_the_setting_that_limits_it(
    standin: OllamaStandIn, read: float, connect: float, setting: str
) -> None:
    """`status` and the sidebar said "raise STRAYLIGHT_HTTP_TIMEOUT_SECONDS" for a slow
    /api/version, but metadata calls wait `min(connect, read)`: raising the read timeout
    changed nothing. The line names the setting the limit came from."""
    standin.fail_next("delay", seconds=3.0, path="/api/version")
    gateway = OllamaGateway(standin.url, read_timeout=read, connect_timeout=connect)
    try:
        status = await gateway.check()
    finally:
        await gateway.aclose()
    assert not status.reachable
    assert f"within 0.5 s (raise {setting} " in (status.error or ""), status.error


async def test_after_a_timeout_metadata_is_not_waited_for(standin: OllamaStandIn) -> None:
    """A hung Ollama: the stall is not reported after the timeout of every call before the
    chat (the recall embedding, then /api/show, then the chat: 2 s reported at 7 s)."""
    standin.fail_next("delay", seconds=5.0, count=None)
    gateway = OllamaGateway(standin.url, read_timeout=0.5, connect_timeout=0.5)
    try:
        with pytest.raises(ModelTimeout):
            await gateway.embed("nomic-embed-text", ["hello"])
        assert await gateway.capabilities("llama3.2") is None
        assert show_requests(standin) == 0  # not asked, so not waited for
        standin.clear_faults()
        assert (await gateway.check()).reachable  # an answer ends the stall
        assert await gateway.capabilities("llama3.2") is not None
    finally:
        await gateway.aclose()
