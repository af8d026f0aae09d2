"""`import ollama` in one place, because the package builds a default client at import time
(which Straylight never uses) and that client reads the environment's proxies and
`OLLAMA_HOST`."""

from __future__ import annotations

import os
import sys
import threading
from typing import Any

# what the package's default client reads at import; a value it cannot parse stops the import
_HIDDEN_AT_IMPORT = frozenset({"all_proxy", "http_proxy", "https_proxy", "ollama_host"})
_import_guard = threading.Lock()


def import_ollama() -> Any:
    """`import ollama`, with the environment's proxies and `OLLAMA_HOST` hidden while it runs:
    the package builds a default client at import (which Straylight never uses) that reads
    them, and one it cannot build stopped every command, a local Ollama (reached directly)
    included: `ALL_PROXY=socks5://…` without the optional socksio package,
    `HTTPS_PROXY=ftp://…` ("Unknown scheme for proxy URL"), `OLLAMA_HOST="127.0.0.1:11434"`
    with its quotes (Straylight's settings drop them, as Ollama's envconfig does; the
    package's parser read the port as `11434"`). Straylight's own clients read them as before
    (a remote Ollama honours the proxies). Nothing is hidden when no such variable is set."""
    with _import_guard:
        if "ollama" in sys.modules:
            return sys.modules["ollama"]
        hidden = {
            name: value for name, value in os.environ.items() if name.lower() in _HIDDEN_AT_IMPORT
        }
        for name in hidden:
            del os.environ[name]
        try:
            import ollama
        finally:
            os.environ.update(hidden)
        return ollama
