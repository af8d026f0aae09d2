"""A port on 127.0.0.1 where nothing listens, for tests of a refused connection."""

from __future__ import annotations

import socket


def closed_port() -> int:
    """A port on 127.0.0.1 nothing listens on (bound, then let go)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])
