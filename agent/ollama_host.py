"""Parse OLLAMA_HOST exactly like the official ollama client does (`ollama._client._parse_host`).

Kept here, dependency-free, so reading settings does not import the client (start-up time);
a test checks it against the client's own parser.
"""

from __future__ import annotations

import ipaddress
import urllib.parse

DEFAULT_PORT = 11434


def parse_ollama_host(host: str | None) -> str:
    """`None`/'' → http://127.0.0.1:11434; 'h' → http://h:11434; 'https://h' → https://h:443.
    Blanks and quotes around the value are dropped first, as Ollama's own `envconfig` drops
    them (`OLLAMA_HOST="127.0.0.1:11434"` from a unit or .env file)."""
    host, port = (host or "").strip().strip("\"'").strip(), DEFAULT_PORT
    scheme, _, hostport = host.partition("://")
    if not hostport:
        scheme, hostport = "http", host
    elif scheme == "http":
        port = 80
    elif scheme == "https":
        port = 443

    split = urllib.parse.urlsplit(f"{scheme}://{hostport}")
    host = split.hostname or "127.0.0.1"
    port = split.port or port

    try:
        if isinstance(ipaddress.ip_address(host), ipaddress.IPv6Address):
            host = f"[{host}]"
    except ValueError:
        pass

    if path := split.path.strip("/"):
        return f"{scheme}://{host}:{port}/{path}"
    return f"{scheme}://{host}:{port}"


def is_loopback_host(host: str | None) -> bool:
    """Whether OLLAMA_HOST names this machine: 127.0.0.0/8, ::1, localhost (or 0.0.0.0 / ::,
    which connect to this machine too). Such a host is never reached through a proxy."""
    hostname = urllib.parse.urlsplit(parse_ollama_host(host)).hostname or ""
    if hostname.rstrip(".").lower() in {"localhost", "localhost.localdomain"}:
        return True
    if hostname.rstrip(".").lower().endswith(".localhost"):
        return True
    try:
        address = ipaddress.ip_address(hostname)
    except ValueError:
        return False
    return address.is_loopback or address.is_unspecified


def is_plain_loopback(host: str | None) -> bool:
    """Whether OLLAMA_HOST is this machine over plain HTTP: no TLS and no proxy on the way,
    so the client needs no certificate store (`OllamaGateway` skips loading it)."""
    return parse_ollama_host(host).startswith("http://") and is_loopback_host(host)
