"""A connection that fails says why: a TLS failure (an https:// host whose certificate is not
trusted here, or one that serves plain HTTP) and a host name that does not resolve were both
"Ollama is not reachable …: start it with `ollama serve`", of a server that was running or a
name with a typo. An Ollama over HTTPS still has its certificate checked; only this machine
over plain HTTP skips loading the certificate store (agent/ollama_gateway.py: 20-40 ms of
every command's start), which no TLS could use there.

Real parts: the real `ollama` client through `OllamaGateway`, against a stdlib HTTPS server on
127.0.0.1 with a self-signed certificate (tests/support/tls) answering like Ollama.
"""

from __future__ import annotations

import errno
import http.client
import json
import ssl
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from agent.gateway_errors import EXIT_UNREACHABLE, classify
from agent.gateway_values import OllamaStatus
from agent.ollama_gateway import OllamaGateway
from agent.ollama_host import is_plain_loopback
from tests.support.cli import assert_one_line, run_cli
from tests.support.ollama_standin import OllamaStandIn
from tests.support.ports import closed_port

TLS = Path(__file__).parent / "support" / "tls"
PROXY_VARIABLES = [
    *(f"{kind}_PROXY" for kind in ("HTTP", "HTTPS", "ALL", "NO")),
    *(f"{kind}_proxy" for kind in ("http", "https", "all", "no")),
]


async def checked(host: str) -> OllamaStatus:
    """What `OllamaGateway.check` says of `host` (the status line of `status` and the TUI)."""
    gateway = OllamaGateway(host, connect_timeout=5.0)
    try:
        return await gateway.check()
    finally:
        await gateway.aclose()


class _Ollamaish(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        body = {"/api/version": {"version": "0.12.0"}, "/api/tags": {"models": []}}.get(self.path)
        data = json.dumps(body or {"error": "not found"}).encode()
        self.send_response(200 if body is not None else 404)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args: object) -> None:
        pass


@contextmanager
def https_ollama() -> Iterator[int]:
    """An Ollama-like HTTPS server on 127.0.0.1 with a certificate nobody signed; its port."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(TLS / "selfsigned-127.0.0.1.crt", TLS / "selfsigned-127.0.0.1.key")
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Ollamaish)
    server.socket = context.wrap_socket(server.socket, server_side=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server.server_address[1]
    finally:
        server.shutdown()
        server.server_close()


def _version_unverified(port: int) -> dict[str, str]:
    """What the server answers to a client that trusts anything (the server works)."""
    insecure = ssl._create_unverified_context()
    connection = http.client.HTTPSConnection("127.0.0.1", port, context=insecure, timeout=5)
    try:
        connection.request("GET", "/api/version")
        return json.loads(connection.getresponse().read())
    finally:
        connection.close()


async def test_an_https_ollama_with_a_certificate_nobody_signed_is_refused() -> None:
    with https_ollama() as port:
        assert _version_unverified(port) == {"version": "0.12.0"}
        status = await checked(f"https://127.0.0.1:{port}")
    assert not status.reachable and status.error_kind == "unreachable"
    assert status.error == (
        f"Ollama at https://127.0.0.1:{port} failed the TLS check (self-signed certificate): "
        "its certificate is not one this machine trusts"
    )


async def test_https_to_an_ollama_that_serves_plain_http_says_to_use_http(
    standin: OllamaStandIn,
) -> None:
    status = await checked(f"https://{standin.host}")
    assert not status.reachable and status.error is not None
    assert status.error.startswith(f"Ollama at https://{standin.host} does not speak TLS ("), (
        status.error
    )
    assert "use http:// for it" in status.error and "ollama serve" not in status.error


@pytest.mark.parametrize(
    ("host", "plain"),
    [
        ("", True),
        ("127.0.0.1:11434", True),
        ("http://localhost:11434", True),
        ("[::1]:11434", True),
        ("https://127.0.0.1:11434", False),
        ("HTTP://127.0.0.1:11434", False),  # not the client's "http": left to verify
        ("192.168.1.20:11434", False),  # another machine: a proxy may be on the way
        ("https://ollama.example.com", False),
    ],
)
def test_only_this_machine_over_plain_http_skips_the_certificate_store(
    host: str, plain: bool
) -> None:
    assert is_plain_loopback(host) is plain


async def test_plain_http_on_this_machine_still_talks_to_ollama(standin: OllamaStandIn) -> None:
    gateway = OllamaGateway(standin.url)
    try:
        assert (await gateway.check()).reachable
        assert len(await gateway.embed("nomic-embed-text", ["a note"])) == 1
    finally:
        await gateway.aclose()


def test_a_host_name_that_does_not_resolve_is_named(
    cli_env: Callable[..., dict[str, str]],
) -> None:
    """`.invalid` never resolves (RFC 2606)."""
    env = cli_env(OLLAMA_HOST="http://ollama.invalid:11434")
    line = assert_one_line(run_cli(env, "ask", "hello"), EXIT_UNREACHABLE)
    assert line.startswith("straylight: Ollama's host name ollama.invalid does not resolve ("), line
    assert "check --ollama-host / OLLAMA_HOST" in line and "ollama serve" not in line


async def test_a_proxy_that_is_down_is_named_not_the_remote_ollama(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A remote Ollama goes through the environment's proxy (README, "Security"); when that
    proxy is down, the proxy is what failed."""
    closed = closed_port()
    for name in PROXY_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HTTP_PROXY", f"http://127.0.0.1:{closed}")
    status = await checked("http://ollama.invalid:11434")
    assert not status.reachable and status.error_kind == "unreachable"
    assert status.error == (
        f"the proxy http://127.0.0.1:{closed} on the way to Ollama at "
        "http://ollama.invalid:11434 failed (Connection refused): check HTTP_PROXY / "
        "HTTPS_PROXY / ALL_PROXY and NO_PROXY"
    )


@pytest.mark.parametrize(
    ("variable", "proxy", "reason"),
    [
        (
            "ALL_PROXY",
            "socks5://127.0.0.1:9",
            "SOCKS needs the socksio package: pip install socksio",
        ),
        ("HTTP_PROXY", "ftp://127.0.0.1:9", "Unknown scheme for proxy URL"),
    ],
)
def test_a_proxy_the_client_cannot_use_is_named_by_status_and_ask(
    cli_env: Callable[..., dict[str, str]], variable: str, proxy: str, reason: str
) -> None:
    """SOCKS without socksio, or a scheme httpx has no transport for: the client could not
    be made, and `status` and `ask` ended in "unexpected error: ImportError", exit 1."""
    env = cli_env(OLLAMA_HOST="http://ollama.invalid:11434")
    for name in PROXY_VARIABLES:
        env.pop(name, None)
    env[variable] = proxy
    status = run_cli(env, "status", "--json")
    assert status.returncode == 0, status.stderr
    ollama = json.loads(status.stdout)["ollama"]
    assert ollama["reachable"] is False and f"the proxy {proxy} on the way" in ollama["error"]
    assert reason in ollama["error"]
    line = assert_one_line(run_cli(env, "ask", "hello"), EXIT_UNREACHABLE)
    assert f"the proxy {proxy} on the way to Ollama at http://ollama.invalid:11434" in line


@pytest.mark.parametrize(
    ("cause", "expected"),
    [
        (
            ConnectionRefusedError(errno.ECONNREFUSED, "Connection refused"),
            "nothing accepts connections at http://192.168.1.50:11434 (Connection refused): "
            "Ollama on another machine listens on that machine only unless started there with "
            "OLLAMA_HOST=0.0.0.0, or a firewall blocks the port; check --ollama-host / "
            "OLLAMA_HOST",
        ),
        (
            OSError(errno.EHOSTUNREACH, "No route to host"),
            "cannot reach http://192.168.1.50:11434 (No route to host): check that the "
            "machine is up and on this network, and --ollama-host / OLLAMA_HOST",
        ),
    ],
    ids=["refused", "no-route"],
)
def test_another_machine_that_refuses_or_is_out_of_reach_is_not_told_to_start_ollama(
    monkeypatch: pytest.MonkeyPatch, cause: OSError, expected: str
) -> None:
    """As httpx raises it (its ConnectError from httpcore's, from the socket's): Ollama on a
    LAN machine listens on 127.0.0.1 there by default, so it refuses while it runs."""
    import httpcore
    import httpx

    for name in PROXY_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    inner = httpcore.ConnectError(str(cause))
    inner.__cause__ = cause
    outer = httpx.ConnectError(str(cause))
    outer.__cause__ = inner
    named = classify(
        outer, host="http://192.168.1.50:11434", model="llama3.2", timeout=5.0, streamed=False
    )
    assert str(named) == expected and named.exit_code == EXIT_UNREACHABLE
    here = classify(outer, host="http://127.0.0.1:11434", model="m", timeout=5.0, streamed=False)
    assert "start it with `ollama serve`" in str(here)  # this machine: nothing listens
