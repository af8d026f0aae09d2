"""`import ollama` in one place, because the package builds a default client at import time
(which Straylight never uses) and that client reads the environment's proxies."""

from __future__ import annotations

import os
import sys
import threading
from typing import Any

_PROXY_VARIABLES = frozenset({"all_proxy", "http_proxy", "https_proxy"})
_import_guard = threading.Lock()


def import_ollama() -> Any:
    """`import ollama`, with the environment's proxies hidden while it runs: the package builds
    a default client at import (which Straylight never uses) that reads them, and one it
    cannot build stopped every command, a local Ollama (reached directly) included:
    `ALL_PROXY=socks5://…` without the optional socksio package, `HTTPS_PROXY=ftp://…`
    ("Unknown scheme for proxy URL"). Straylight's own clients read them as before (a remote
    Ollama honours them). Nothing is hidden when no such variable is set."""
    with _import_guard:
        if "ollama" in sys.modules:
            return sys.modules["ollama"]
        hidden = {
            name: value for name, value in os.environ.items() if name.lower() in _PROXY_VARIABLES
        }
        for name in hidden:
            del os.environ[name]
        try:
            import ollama
        finally:
            os.environ.update(hidden)
        return ollama
