"""Parse OLLAMA_HOST exactly like the official ollama client does (`ollama._client._parse_host`).

Kept here, dependency-free, so reading settings does not import the client (start-up time);
a test checks it against the client's own parser.
"""

from __future__ import annotations

import ipaddress
import socket
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
    """Whether OLLAMA_HOST names this machine: 127.0.0.0/8 in any form the resolver takes
    (`127.1`, `0x7f000001`, `2130706433`, `::ffff:127.0.0.1`), ::1, localhost, this
    machine's own name (or 0.0.0.0 / ::, which connect to this machine too). Such a host is
    never reached through a proxy: a proxy must not see the prompts."""
    hostname = urllib.parse.urlsplit(parse_ollama_host(host)).hostname or ""
    name = hostname.rstrip(".").lower()
    if name in {"localhost", "localhost.localdomain"} or name.endswith(".localhost"):
        return True
    if name and name == socket.gethostname().lower():
        return True
    address = _address(hostname)
    if address is None:
        return False
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        address = address.ipv4_mapped
    return address.is_loopback or address.is_unspecified


def _address(hostname: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    """The address `hostname` writes, also in the short and numeric IPv4 forms the resolver
    accepts (`127.1`, `0x7f000001`, `2130706433`); None for a name."""
    try:
        return ipaddress.ip_address(hostname)
    except ValueError:
        pass
    if not hostname or not all(c in "0123456789abcdefxABCDEFX." for c in hostname):
        return None
    try:
        return ipaddress.IPv4Address(socket.inet_aton(hostname))
    except OSError:
        return None


def invalid_ipv4(hostname: str) -> bool:
    """Four dotted numbers that are no IPv4 address (`999.1.1.1`, `127.000.000.001`): the
    HTTP client refuses them (each command stopped with "unexpected error")."""
    parts = hostname.split(".")
    if len(parts) != 4 or not all(part.isdigit() for part in parts):
        return False
    try:
        ipaddress.IPv4Address(hostname)
    except ValueError:
        return True
    return False


def is_plain_loopback(host: str | None) -> bool:
    """Whether OLLAMA_HOST is this machine over plain HTTP: no TLS and no proxy on the way,
    so the client needs no certificate store (`OllamaGateway` skips loading it)."""
    return parse_ollama_host(host).startswith("http://") and is_loopback_host(host)
