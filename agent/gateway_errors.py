"""Every way a model call can fail, named for the user in one line, with its exit code.

The ollama client raises different things depending on the path: `ResponseError` (404 for a
model that is not pulled, -1 for an error line inside a stream), builtin `ConnectionError`
when not streaming, raw `httpx` errors while streaming (ConnectError, ReadTimeout — whose
str() is empty —, RemoteProtocolError), and `json`/pydantic errors (or AttributeError, for a
line that is JSON but not an object) for malformed lines.
`classify` maps all of them onto the classes below.
"""

from __future__ import annotations

import html
import json
import re
from typing import TYPE_CHECKING, ClassVar

from memory.secret_masking import mask_secrets

if TYPE_CHECKING:
    import ssl  # (imported where needed: a command that never connects does not load it)

    import httpx

EXIT_OK = 0
EXIT_NOT_FOUND = 1  # an unknown id: a point, fact, candidate, hypothesis, conversation
EXIT_USAGE = 2
EXIT_UNREACHABLE = 3
EXIT_MODEL_MISSING = 4
EXIT_MODEL_ERROR = 5


class GatewayError(Exception):
    """A classified model-call failure; `str()` is the one-line message for the user."""

    kind: ClassVar[str] = "model_error"
    exit_code: ClassVar[int] = EXIT_MODEL_ERROR


class OllamaUnreachable(GatewayError):
    """No connection: refused (nothing listens there), or not accepted in time
    (`connect_timed_out`: a host that drops packets or is swamped), named apart; `cause`
    when `connect_failure` knows better (TLS, a name, another machine, a proxy)."""

    kind = "unreachable"
    exit_code = EXIT_UNREACHABLE

    def __init__(
        self, host: str, *, connect_timed_out: float | None = None, cause: str | None = None
    ) -> None:
        if cause is not None:
            message = cause
        elif connect_timed_out is None:
            message = (
                f"Ollama is not reachable at {host}: start it with `ollama serve` "
                "(or the Ollama app), or point --ollama-host / OLLAMA_HOST at it"
            )
        else:
            message = (
                f"Ollama at {host} did not accept the connection within "
                f"{connect_timed_out:g} s (timed out): check the host and the network, or "
                "raise STRAYLIGHT_CONNECT_TIMEOUT_SECONDS"
            )
        super().__init__(message)
        self.host = host
        self.connect_timed_out = connect_timed_out


def _tls_failed(host: str, failure: ssl.SSLError) -> str:
    """An https:// host was reached but TLS failed: its certificate is not trusted here
    (self-signed, expired, another name), or it does not speak TLS at all (Ollama serves
    plain HTTP). Said as such, not as "start it with `ollama serve`": it is running."""
    import ssl

    reason = _ssl_reason(failure)
    if isinstance(failure, ssl.SSLCertVerificationError):
        return (
            f"Ollama at {host} failed the TLS check ({reason}): its certificate is not one "
            "this machine trusts"
        )
    if reason in _NOT_TLS:
        return (
            f"Ollama at {host} does not speak TLS ({reason}): use http:// for it "
            "(Ollama serves plain HTTP unless something in front of it adds TLS)"
        )
    return f"the TLS connection to Ollama at {host} failed ({reason})"


_NOT_TLS = frozenset({"wrong version number", "packet length too long", "record layer failure"})
"""What OpenSSL says when the other side answers TLS with plain HTTP."""


def _ssl_reason(failure: ssl.SSLError) -> str:
    """OpenSSL's words without their codes: "[SSL: X] wrong version number (_ssl.c:1006)" →
    "wrong version number"; a certificate's "self-signed certificate", "certificate has
    expired", "Hostname mismatch, …"."""
    verified = getattr(failure, "verify_message", None)
    if isinstance(verified, str) and verified:
        return one_line(verified)
    text = str(failure)
    found = re.search(r"\]\s*(.*?)\s*\(_ssl\.c:\d+\)", text)
    return one_line(found.group(1) if found else text) or "unknown reason"


def _name_unresolved(host: str, failure: OSError) -> str:
    """The host's name does not resolve (a typo, or no network for a remote host)."""
    import urllib.parse

    name = urllib.parse.urlsplit(host).hostname or host
    reason = one_line(failure.strerror or str(failure)) or "unknown reason"
    return (
        f"Ollama's host name {name} does not resolve ({reason}): check --ollama-host / "
        "OLLAMA_HOST, and the network for a remote host"
    )


def connect_failure(host: str, error: BaseException) -> OllamaUnreachable:
    """What a failed connection was (httpx wraps the socket's or TLS error twice): a TLS
    failure, the environment's proxy failing (a remote host only: this machine is never
    proxied), a name that does not resolve, another machine refusing or out of reach, or
    nothing listening here."""
    import errno
    import os
    import socket
    import ssl

    from agent.ollama_host import is_loopback_host

    causes: list[BaseException] = []
    current: BaseException | None = error
    while current is not None and all(current is not seen for seen in causes):
        causes.append(current)
        current = current.__cause__ or current.__context__
    tls = next((c for c in causes if isinstance(c, ssl.SSLError)), None)
    if tls is not None:
        return OllamaUnreachable(host, cause=_tls_failed(host, tls))
    system = next((c for c in causes if isinstance(c, OSError) and c.strerror), None)
    reason = ""
    if system is not None:  # asyncio's own words name the address: the errno's are plainer
        code = system.errno or 0
        plain = not isinstance(system, socket.gaierror) and code > 0
        reason = one_line(os.strerror(code) if plain else str(system.strerror))
    if (proxy := environment_proxy(host)) is not None:
        return proxy_failed(host, proxy, reason or one_line(str(error)))
    if isinstance(system, socket.gaierror):
        return OllamaUnreachable(host, cause=_name_unresolved(host, system))
    if system is None or is_loopback_host(host):
        return OllamaUnreachable(host)
    if system.errno == errno.ECONNREFUSED:
        return OllamaUnreachable(
            host,
            cause=f"nothing accepts connections at {host} ({reason}): Ollama on another machine "
            "listens on that machine only unless started there with OLLAMA_HOST=0.0.0.0, or "
            "a firewall blocks the port; check --ollama-host / OLLAMA_HOST",
        )
    if system.errno in (errno.EHOSTUNREACH, errno.ENETUNREACH):
        return OllamaUnreachable(
            host,
            cause=f"cannot reach {host} ({reason}): check that the machine is up and on this "
            "network, and --ollama-host / OLLAMA_HOST",
        )
    return OllamaUnreachable(host)


def proxy_failed(host: str, proxy: str, reason: str) -> OllamaUnreachable:
    """The environment's proxy on the way to a remote Ollama failed (down, its name does
    not resolve, it refused the request): said, with where proxies are set."""
    return OllamaUnreachable(
        host,
        cause=f"the proxy {mask_secrets(proxy)} on the way to Ollama at {host} failed ({reason}): "
        "check HTTP_PROXY / HTTPS_PROXY / ALL_PROXY and NO_PROXY",
    )


def proxy_unusable(host: str, error: ImportError | ValueError) -> GatewayError:
    """The environment names a proxy httpx cannot use to reach a remote Ollama (SOCKS
    without the `socksio` package, a scheme such as `ftp://`): the client could not even be
    made, which ended every command in "unexpected error: ImportError". Ollama is as good
    as unreachable: said with the fix. Anything else stays the error it is."""
    from agent.ollama_host import parse_ollama_host

    proxy = environment_proxy(host)
    if proxy is None:
        raise error
    if isinstance(error, ImportError):
        reason = "SOCKS needs the socksio package: pip install socksio"
    else:
        reason = one_line(str(error))
    return proxy_failed(parse_ollama_host(host), proxy, reason)


def environment_proxy(host: str) -> str | None:
    """The proxy the client takes to `host` from the environment (HTTP_PROXY, HTTPS_PROXY or
    ALL_PROXY, minus NO_PROXY), as httpx picks it; None for this machine (never proxied:
    agent/ollama_gateway.py) or when none applies."""
    import urllib.parse
    import urllib.request

    from agent.ollama_host import is_loopback_host, parse_ollama_host

    if is_loopback_host(host):
        return None
    split = urllib.parse.urlsplit(parse_ollama_host(host))
    proxies = urllib.request.getproxies_environment()
    if urllib.request.proxy_bypass(split.hostname or ""):  # NO_PROXY
        return None
    return proxies.get(split.scheme.lower()) or proxies.get("all")


class OllamaRedirected(GatewayError):
    """The host answered with a redirect: Straylight never follows one (the prompt would be
    sent on to wherever the redirect points)."""

    kind = "redirect"
    exit_code = EXIT_UNREACHABLE

    def __init__(self, host: str, location: str | None) -> None:
        target = one_line(mask_secrets(location), 120) if location else "an unnamed address"
        super().__init__(
            f"Ollama at {host} answered with a redirect to {target}; Straylight does not "
            "follow redirects: point --ollama-host / OLLAMA_HOST at the address Ollama serves on"
        )
        self.host = host
        self.location = location


class ModelNotPulled(GatewayError):
    kind = "model_missing"
    exit_code = EXIT_MODEL_MISSING

    def __init__(self, model: str) -> None:
        super().__init__(
            f"model '{model}' is not pulled: run `ollama pull {model}` or `straylight pull {model}`"
        )
        self.model = model


class ModelTimeout(GatewayError):
    """No answer within `seconds`. `metadata`: a metadata call (`/api/version`, `/api/tags`,
    `/api/show`), whose limit is the connect timeout, so the line names that setting."""

    kind = "timeout"

    def __init__(self, seconds: float, *, metadata: bool = False, mid_reply: bool = False) -> None:
        fix = (
            "raise STRAYLIGHT_CONNECT_TIMEOUT_SECONDS if Ollama is just slow"
            if metadata
            else "raise STRAYLIGHT_HTTP_TIMEOUT_SECONDS if the model is just slow"
        )
        what = (
            f"sent nothing more for {seconds:g} s in the middle of the reply"
            if mid_reply
            else f"did not answer within {seconds:g} s"
        )
        super().__init__(f"Ollama {what} ({fix})")
        self.seconds = seconds


class StreamCutOff(GatewayError):
    kind = "cut_off"

    def __init__(self, detail: str) -> None:
        super().__init__(f"the reply was cut off mid-stream: {detail}")
        self.detail = detail


class ModelError(GatewayError):
    kind = "model_error"


class ToolsNotSupported(ModelError):
    """The model refused a request with tools (HTTP 400 "… does not support tools")."""

    kind = "tools_not_supported"


class ChatNotSupported(ModelError):
    """The model refused a chat (HTTP 400 `"nomic-embed-text" does not support chat`: an
    embedding model), found out by the request because /api/show did not answer first. The
    same mistake as `ask --model` with an embedding model: exit 2."""

    kind = "chat_not_supported"
    exit_code = EXIT_USAGE


def _refuses_think_level(detail: str) -> bool:
    """HTTP 400's text for a `think` level: the model's (`think value "high" is not supported
    for this model`), or an Ollama whose `think` is a boolean only (0.9–0.10: `json: cannot
    unmarshal string into Go struct field ChatRequest.think of type bool`)."""
    return detail.startswith("think value") or (
        "ChatRequest.think" in detail and "of type bool" in detail
    )


class ThinkLevelRefused(ModelError):
    """The model takes `think` true or false but no level: HTTP 400 `think value "high" is
    not supported for this model` (Ollama answers so for qwen3 and others in some releases)."""

    kind = "think_level_refused"


class ContextOverflow(ModelError):
    """The prompt does not fit the model's window: not sent (Straylight's budget), or refused
    by Ollama (HTTP 400 naming the context). The message names the fix."""

    kind = "context_overflow"


def classify(
    error: BaseException,
    *,
    host: str,
    model: str,
    timeout: float,
    streamed: bool,
    connect_timeout: float | None = None,
    metadata: bool = False,
) -> GatewayError:
    """Name a raw client error. `streamed` says whether some reply text already arrived;
    `connect_timeout` is the limit a connect timeout is named with; `metadata` says the
    request was a metadata call, limited by the connect timeout (see `ModelTimeout`)."""
    import httpx
    import pydantic

    from agent.ollama_import import import_ollama

    ollama = import_ollama()

    if isinstance(error, GatewayError):
        return error
    if isinstance(error, ollama.ResponseError):
        raw = str(error.error or "").strip()
        if error.status_code == 404 and model and _model_not_found(raw):
            return ModelNotPulled(model)  # without a model (/api/tags): not Ollama's
        # The server's own words end up in the daily log's `reason` and in straylight.log:
        # masked like every other text that is kept.
        detail = mask_secrets(raw) or "unknown error"
        said = f": {one_line(detail)}" if raw else " with an empty body"
        if error.status_code == 404 and (model or not raw):
            return ModelError(f"Ollama answered HTTP 404{said} (is {host} an Ollama server?)")
        if error.status_code == 403:  # Ollama's answer to a Host header it does not trust
            return ModelError(
                f"Ollama at {host} answered HTTP 403{said}: Ollama listening on its own "
                "machine only refuses a request whose Host header is not that machine's, as "
                "a proxy in front of it sends; have the proxy send Host: localhost, or start "
                "Ollama with OLLAMA_HOST=0.0.0.0"
            )
        if error.status_code == -1:
            return (
                StreamCutOff(f"Ollama reported: {detail}")
                if streamed
                else ModelError(f"Ollama reported an error: {detail}")
            )
        if error.status_code == 400 and "does not support chat" in detail:
            return ChatNotSupported(
                f"{model} cannot chat (Ollama: {one_line(detail)}); `straylight models` "
                "lists the pulled models that can"
            )
        if error.status_code == 400 and "does not support tools" in detail:
            return ToolsNotSupported(f"{model} does not support tools")
        if error.status_code == 400 and _refuses_think_level(detail):
            return ThinkLevelRefused(f"{model} takes no thinking level ({one_line(detail)})")
        return ModelError(f"Ollama answered HTTP {error.status_code}: {one_line(detail)}")
    if isinstance(error, httpx.ConnectTimeout):
        return OllamaUnreachable(host, connect_timed_out=connect_timeout or timeout)
    if isinstance(error, ConnectionError | httpx.ConnectError):
        return connect_failure(host, error)
    if isinstance(error, httpx.ProxyError):  # the proxy answered, but not with a tunnel
        proxy = environment_proxy(host) or "in the environment"
        return proxy_failed(host, proxy, one_line(str(error)))
    if isinstance(error, httpx.TimeoutException):
        return ModelTimeout(timeout, metadata=metadata, mid_reply=streamed)
    if isinstance(error, httpx.TransportError):
        if streamed:
            return StreamCutOff("the connection to Ollama dropped")
        return ModelError("Ollama closed the connection without answering")
    # A line that is JSON but not an object (`[1]`, `"x"`, `null`): the client calls `.get`
    # on it and raises AttributeError, or passes it as `**reply` (/api/tags, /api/embed) and
    # raises TypeError. Malformed all the same.
    # JSON nested past Python's recursion limit (an error body or a line of `[[[[…`): the
    # client's `json.loads` raises RecursionError.
    not_an_object = isinstance(error, TypeError) and "must be a mapping" in str(error)
    if not_an_object or isinstance(
        error, json.JSONDecodeError | pydantic.ValidationError | AttributeError | RecursionError
    ):
        if streamed:
            return StreamCutOff("Ollama sent a malformed line")
        return ModelError("Ollama sent a malformed reply")
    if isinstance(error, httpx.HTTPStatusError):  # `raise_for_status` (/api/version)
        path = error.request.url.path
        said = _status_body(error.response)
        return ModelError(
            f"Ollama answered HTTP {error.response.status_code} to {path}"
            + (f": {said}" if said else "")
        )
    if isinstance(error, httpx.HTTPError):
        return ModelError(f"HTTP error talking to Ollama: {type(error).__name__}")
    return ModelError(f"unexpected error talking to Ollama: {type(error).__name__}")


def _status_body(response: httpx.Response) -> str:
    """What a failed reply said: its JSON `error`, else its text (a page's title), masked and
    on one line; "" when it said nothing or was not read."""
    import httpx

    try:
        text = response.text
    except (httpx.ResponseNotRead, UnicodeDecodeError, LookupError):  # a streamed body
        return ""
    try:
        parsed = json.loads(text)
    except (ValueError, RecursionError):  # a server's error body, nested deep
        parsed = None
    if isinstance(parsed, dict) and isinstance(parsed.get("error"), str):
        text = parsed["error"]
    return one_line(mask_secrets(text.strip())) if text.strip() else ""


def _model_not_found(detail: str) -> bool:
    """Ollama's own 404 for a model it does not have (`model "x" not found, try pulling it
    first`, `model 'x' not found`; a proxy's `{"detail": "Model not found"}`), not the 404 of
    a server that is not Ollama (an empty body, a router's `404 page not found`, a page)."""
    lowered = detail.lower()
    return "model" in lowered and "not found" in lowered and "page not found" not in lowered


_HTML_RE = re.compile(r"\s*(<!doctype html|<html)", re.IGNORECASE)
_TITLE_RE = re.compile(r"<title[^>]*>(.*?)</title>", re.IGNORECASE | re.DOTALL)
_TAG_RE = re.compile(r"<[^>]*>")


def one_line(text: str, limit: int = 160) -> str:
    """`text` on one line, cut at `limit`. An HTML page (a proxy's error page) is named by
    its title, else by its text without the markup."""
    if _HTML_RE.match(text):
        title = _TITLE_RE.search(text)
        words = title.group(1) if title else _TAG_RE.sub(" ", text)
        page = " ".join(html.unescape(words).split()) or "an empty page"
        text = f"{page} (an HTML page: a proxy between Straylight and Ollama?)"
    line = " ".join(text.split())
    return line if len(line) <= limit else line[: limit - 1] + "…"
