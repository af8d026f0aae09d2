"""Issue 15 §6 and §2: nothing leaves the machine through a proxy or a redirect, and a server's
error text is masked before it is shown, logged or stored.

Real parts only: the real `ollama` client over HTTP to the stand-in, and small stdlib HTTP
servers on 127.0.0.1 playing a proxy (it records what reached it) and a host that redirects.
"""

from __future__ import annotations

import http.client
import json
import socket
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

from agent.gateway_errors import (
    EXIT_MODEL_ERROR,
    EXIT_UNREACHABLE,
    GatewayError,
    OllamaRedirected,
)
from agent.gateway_values import ChatDelta
from agent.ollama_gateway import OllamaGateway
from agent.ollama_host import is_loopback_host
from tests.support.cli import run_cli, run_cli_process
from tests.support.ollama_standin import OllamaStandIn

REPO_ROOT = Path(__file__).resolve().parent.parent
MESSAGES = [{"role": "user", "content": "my private question"}]
GHP = "ghp_aBcDeFgHiJkLmNoPqRsTuVwXyZ0123456789"
PROXY_VARIABLES = ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy")
PROXY_VARIABLES += ("all_proxy",)

Env = dict[str, str]


# ----------------------------------------------------------------------- local servers


@dataclass
class Seen:
    """One request a local server received: the request target as sent, and the body."""

    method: str
    target: str
    body: bytes


@dataclass
class LocalServer:
    """A stdlib HTTP server on 127.0.0.1 whose `answer` decides every reply."""

    answer: Callable[[BaseHTTPRequestHandler, Seen], None]
    seen: list[Seen] = field(default_factory=list)
    _server: ThreadingHTTPServer | None = None

    def __enter__(self) -> LocalServer:
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                pass

            def _any(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                seen = Seen(self.command, self.path, self.rfile.read(length) if length else b"")
                owner.seen.append(seen)
                owner.answer(self, seen)

            do_GET = do_POST = do_HEAD = do_DELETE = _any

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        assert self._server is not None
        self._server.shutdown()
        self._server.server_close()

    @property
    def url(self) -> str:
        assert self._server is not None
        return f"http://127.0.0.1:{self._server.server_address[1]}"


def send(handler: BaseHTTPRequestHandler, status: int, body: bytes, **headers: str) -> None:
    handler.send_response(status)
    for name, value in {"Content-Length": str(len(body)), **headers}.items():
        handler.send_header(name.replace("_", "-"), value)
    handler.end_headers()
    handler.wfile.write(body)


def refusing_proxy(handler: BaseHTTPRequestHandler, _seen: Seen) -> None:
    send(handler, 502, b"the proxy refuses", Content_Type="text/plain")


def forwarding_proxy(upstream: str) -> Callable[[BaseHTTPRequestHandler, Seen], None]:
    """A plain HTTP proxy that sends every request on to `upstream` (the stand-in)."""
    address = urlsplit(upstream)

    def answer(handler: BaseHTTPRequestHandler, seen: Seen) -> None:
        path = urlsplit(seen.target).path
        connection = http.client.HTTPConnection(address.hostname or "", address.port, timeout=10)
        try:
            headers = {"Content-Type": "application/json"} if seen.body else {}
            connection.request(seen.method, path, body=seen.body or None, headers=headers)
            reply = connection.getresponse()
            send(handler, reply.status, reply.read(), Content_Type="application/json")
        finally:
            connection.close()

    return answer


def redirecting_to(other: str, status: int) -> Callable[[BaseHTTPRequestHandler, Seen], None]:
    def answer(handler: BaseHTTPRequestHandler, seen: Seen) -> None:
        send(handler, status, b"", Location=f"{other}{seen.target}")

    return answer


def ok_json(handler: BaseHTTPRequestHandler, _seen: Seen) -> None:
    send(handler, 200, b'{"version": "9.9.9", "models": []}', Content_Type="application/json")


@pytest.fixture
def proxy() -> Iterator[LocalServer]:
    with LocalServer(refusing_proxy) as server:
        yield server


@pytest.fixture
def proxied(monkeypatch: pytest.MonkeyPatch, proxy: LocalServer) -> LocalServer:
    """Every proxy variable of this process points at the recording proxy; no NO_PROXY."""
    for name in PROXY_VARIABLES:
        monkeypatch.setenv(name, proxy.url)
    for name in ("NO_PROXY", "no_proxy"):
        monkeypatch.delenv(name, raising=False)
    return proxy


@pytest.fixture
def other_host() -> Iterator[LocalServer]:
    with LocalServer(ok_json) as server:
        yield server


async def chat_text(gateway: OllamaGateway) -> str:
    text = ""
    async for event in gateway.stream_chat("llama3.2", MESSAGES):
        if isinstance(event, ChatDelta):
            text += event.text
    return text


def everything_written(home: Path) -> str:
    """Every file in the data dir as text (the log, straylight.log, the database bytes)."""
    return "\n".join(
        path.read_bytes().decode("utf-8", "replace") for path in home.rglob("*") if path.is_file()
    )


# ------------------------------------------------------------------------------ proxies


@pytest.mark.parametrize(
    "host",
    [
        "127.0.0.1",
        "127.8.9.10:11434",
        "http://localhost:11434",
        "LOCALHOST",
        "[::1]:11434",
        "http://[::1]",
        "0.0.0.0",
        "",
        # the forms the resolver takes too: each of these sent the prompts to HTTP_PROXY
        "http://127.1:11434",
        "http://[::ffff:127.0.0.1]:11434",
        "http://0x7f000001:11434",
        "http://2130706433:11434",
        f"http://{socket.gethostname()}:11434",
    ],
)
def test_loopback_hosts_are_recognised(host: str) -> None:
    assert is_loopback_host(host)


def test_ask_to_a_loopback_ollama_written_another_way_is_not_proxied(
    cli_env: Callable[..., Env], standin: OllamaStandIn, proxy: LocalServer
) -> None:
    """`127.1` is this machine to the resolver: the prompt went to the proxy."""
    port = standin.host.rsplit(":", 1)[1]
    env = cli_env(OLLAMA_HOST=f"http://127.1:{port}")
    env.update(dict.fromkeys(PROXY_VARIABLES, proxy.url))
    env.pop("NO_PROXY", None)
    env.pop("no_proxy", None)
    proc = run_cli(env, "ask", "my private question")
    assert proc.returncode == 0, proc.stderr
    assert proxy.seen == [] and standin.chat_requests()


@pytest.mark.parametrize("host", ["http://999.1.1.1:11434", "http://127.000.000.001:11434"])
def test_an_address_that_is_no_ipv4_is_refused_in_one_line(
    cli_env: Callable[..., Env], host: str
) -> None:
    """The HTTP client refused them at the first request: "unexpected error", exit 1."""
    proc = run_cli(cli_env(OLLAMA_HOST=host), "status")
    assert proc.returncode == 2 and "is not an IPv4 address" in proc.stderr, proc.stderr


@pytest.mark.parametrize(
    "host", ["192.168.1.20:11434", "https://ollama.example.com", "10.0.0.1", "[fe80::1]:11434"]
)
def test_remote_hosts_are_not_loopback(host: str) -> None:
    assert not is_loopback_host(host)


async def test_a_loopback_ollama_is_never_proxied(
    proxied: LocalServer, standin: OllamaStandIn
) -> None:
    gateway = OllamaGateway(standin.url)
    try:
        assert (await gateway.check()).reachable
        assert "my private question" in await chat_text(gateway)
        assert len(await gateway.embed("nomic-embed-text", ["my private note"])) == 1
        assert await gateway.capabilities("llama3.2") is not None
    finally:
        await gateway.aclose()
    assert proxied.seen == []
    assert standin.chat_requests()[-1]["messages"] == MESSAGES


async def test_a_remote_ollama_goes_through_the_configured_proxy(
    monkeypatch: pytest.MonkeyPatch, standin: OllamaStandIn
) -> None:
    """The environment's proxy is how a user reaches a remote Ollama today: it is honoured."""
    with LocalServer(forwarding_proxy(standin.url)) as proxy:
        monkeypatch.setenv("HTTP_PROXY", proxy.url)
        monkeypatch.delenv("NO_PROXY", raising=False)
        gateway = OllamaGateway("http://ollama.invalid:11434", connect_timeout=5.0)
        try:
            status = await gateway.check()
        finally:
            await gateway.aclose()
    assert status.reachable, status.error
    assert [seen.target for seen in proxy.seen] == [
        "http://ollama.invalid:11434/api/version",
        "http://ollama.invalid:11434/api/tags",
    ]


def test_ask_with_a_proxy_in_the_environment_talks_to_loopback_directly(
    cli_env: Callable[..., Env], standin: OllamaStandIn, proxy: LocalServer, home: Path
) -> None:
    env = cli_env(OLLAMA_HOST=standin.host)
    env.update(dict.fromkeys(PROXY_VARIABLES, proxy.url))
    env.pop("NO_PROXY", None)
    env.pop("no_proxy", None)
    proc = run_cli(env, "ask", "my private question")
    assert proc.returncode == 0, proc.stderr
    assert proxy.seen == []
    assert standin.chat_requests()


@pytest.mark.parametrize(
    ("name", "url"),
    [
        ("ALL_PROXY", "socks5://127.0.0.1:9"),
        ("all_proxy", "socks5h://127.0.0.1:9"),
        ("HTTPS_PROXY", "socks4://127.0.0.1:9"),
        ("HTTPS_PROXY", "ftp://127.0.0.1:9"),
    ],
)
def test_a_proxy_httpx_cannot_use_does_not_stop_a_loopback_ollama(
    cli_env: Callable[..., Env], standin: OllamaStandIn, name: str, url: str
) -> None:
    """`ALL_PROXY=socks5://…` (a common desktop proxy setup) made every command that talks
    to Ollama fail, a local one included: importing `ollama` builds a default client that
    reads the proxies, and a SOCKS one needs the optional socksio package (an `ftp://` one
    is "Unknown scheme for proxy URL"). A process of its own: here `ollama` is imported."""
    env = cli_env(OLLAMA_HOST=standin.host, **{name: url})
    status = run_cli_process(env, "status", "--json")
    assert status.returncode == 0, status.stderr
    assert json.loads(status.stdout)["ollama"]["reachable"] is True
    asked = run_cli_process(env, "ask", "my private question")
    assert (asked.returncode, asked.stderr) == (0, ""), asked.stderr
    assert run_cli_process(env, "models").returncode == 0


# ---------------------------------------------------------------------------- redirects


@pytest.mark.parametrize("status", [301, 302, 303, 307, 308])
async def test_a_redirect_is_named_and_not_followed(status: int, other_host: LocalServer) -> None:
    with LocalServer(redirecting_to(other_host.url, status)) as redirector:
        gateway = OllamaGateway(redirector.url)
        try:
            with pytest.raises(OllamaRedirected) as chat_failure:
                await chat_text(gateway)
            with pytest.raises(OllamaRedirected):
                await gateway.embed("nomic-embed-text", ["my private note"])
            with pytest.raises(OllamaRedirected):
                await gateway.chat_structured("llama3.2", MESSAGES, {"type": "object"})
            status_line = await gateway.check()
        finally:
            await gateway.aclose()
    message = str(chat_failure.value)
    assert redirector.url in message and other_host.url in message and "redirect" in message
    assert "\n" not in message
    assert chat_failure.value.exit_code == EXIT_UNREACHABLE
    assert not status_line.reachable and "redirect" in (status_line.error or "")
    assert other_host.seen == []  # nothing, above all not the prompt, went to the other host


def test_ask_against_a_redirecting_host_exits_3_and_sends_nothing_on(
    cli_env: Callable[..., Env], other_host: LocalServer, home: Path
) -> None:
    with LocalServer(redirecting_to(other_host.url, 308)) as redirector:
        proc = run_cli(cli_env(OLLAMA_HOST=redirector.url), "ask", "my private question")
    assert proc.returncode == EXIT_UNREACHABLE, proc.stderr
    assert "redirect" in proc.stderr and len(proc.stderr.strip().splitlines()) == 1
    assert other_host.seen == []


@pytest.mark.parametrize("command", [["pull", "qwen3:8b"], ["models"], ["models", "--json"]])
def test_pull_and_models_against_a_redirecting_host_exit_3_like_ask(
    cli_env: Callable[..., Env], other_host: LocalServer, home: Path, command: list[str]
) -> None:
    """The exit-code table: 3 is "Ollama unreachable (or it answered with a redirect)";
    `pull` said 1, as if Ollama had refused the pull."""
    with LocalServer(redirecting_to(other_host.url, 307)) as redirector:
        proc = run_cli(cli_env(OLLAMA_HOST=redirector.url), *command)
    assert proc.returncode == EXIT_UNREACHABLE, proc.stderr
    assert "does not follow redirects" in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1
    assert other_host.seen == []


# ------------------------------------------------------------------ server error text


@pytest.mark.parametrize(
    ("fault", "params"),
    [
        ("status", {"status": 500, "message": f"bad credential {GHP}", "path": "/api/chat"}),
        ("error_line", {"after": 2, "message": f"token {GHP} rejected"}),
    ],
    ids=["http-500", "stream-error-line"],
)
async def test_a_server_error_with_a_token_is_masked(
    standin: OllamaStandIn, fault: str, params: dict[str, Any]
) -> None:
    standin.script_reply("one two three four")
    standin.fail_next(fault, **params)  # type: ignore[arg-type]
    gateway = OllamaGateway(standin.url)
    try:
        with pytest.raises(GatewayError) as caught:
            await chat_text(gateway)
    finally:
        await gateway.aclose()
    assert GHP not in str(caught.value)
    assert "[REDACTED:github_token]" in str(caught.value)


@pytest.mark.parametrize(
    ("fault", "params"),
    [
        ("status", {"status": 500, "message": f"upstream said Authorization: Bearer {GHP}"}),
        ("error_line", {"after": 2, "message": f"crashed with {GHP}"}),
    ],
    ids=["http-500", "stream-error-line"],
)
def test_ask_stores_server_error_text_masked(
    cli_env: Callable[..., Env],
    standin: OllamaStandIn,
    home: Path,
    fault: str,
    params: dict[str, Any],
) -> None:
    standin.script_reply("alpha beta gamma delta")
    standin.fail_next(fault, path="/api/chat", **params)  # type: ignore[arg-type]
    proc = run_cli(cli_env(OLLAMA_HOST=standin.host), "ask", "hello")
    assert proc.returncode == EXIT_MODEL_ERROR, proc.stderr
    assert GHP not in proc.stderr and "[REDACTED:" in proc.stderr
    written = everything_written(home)
    assert "straylight.log" in {p.name for p in home.iterdir()}
    assert GHP not in written
    reasons = [
        json.loads(line.split("<!-- straylight ", 1)[1].removesuffix(" -->")).get("reason")
        for line in written.splitlines()
        if line.startswith("<!-- straylight ")
    ]
    assert any(reason and "[REDACTED:" in reason for reason in reasons)
