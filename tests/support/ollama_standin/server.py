"""`OllamaStandIn`: the public face of the stand-in, a real HTTP server run from a daemon thread,
with thread-safe setters for models, scripted replies and faults, and a log of what it received.
"""

from __future__ import annotations

import hashlib
import threading
from collections import deque
from collections.abc import Iterable, Mapping, Sequence
from types import TracebackType
from typing import Any, Final, Self

from .embeddings import Embedder
from .faults import FAULT_KINDS, FAULT_PARAMS, Fault, FaultKind
from .handler import StandInHTTPServer
from .models import (
    DEFAULT_MODELS,
    MODIFIED_AT,
    default_capabilities,
    model_details,
    normalize_model_name,
)
from .replies import ScriptedReply, default_reply, normalize_tool_call, split_tokens
from .routes import ROUTES
from .wire import JsonObject, RecordedRequest

__all__ = ["LOCALHOST", "OllamaStandIn"]

LOCALHOST: Final = "127.0.0.1"
_POLL_INTERVAL: Final = 0.05


class OllamaStandIn:
    """A real Ollama-compatible HTTP server on 127.0.0.1, run from a daemon thread.

    Use as a context manager (``with OllamaStandIn(port=0) as srv: ...``) or
    call `start` / `stop` directly. All setters are thread-safe and take effect
    for the next request.
    """

    def __init__(
        self,
        models: Iterable[str] = DEFAULT_MODELS,
        *,
        port: int = 0,
        embed_dim: int = 768,
        token_delay: float = 0.0,
        capabilities: Mapping[str, Sequence[str]] | None = None,
        embedder: Embedder | None = None,
    ) -> None:
        """``embedder``, when given, computes /api/embed(dings) vectors instead of the
        hashed `embed_text` (their size is then the embedder's, not ``embed_dim``;
        ``embed_dim`` faults still return hashed vectors of the faulty size)."""
        if embed_dim < 1:
            raise ValueError(f"embed_dim must be >= 1, got {embed_dim}")
        self._lock = threading.Lock()
        self._lifecycle_lock = threading.Lock()
        self._port = port
        self._embed_dim = embed_dim
        self._token_delay = token_delay
        self._embedder = embedder
        self._models: list[str] = []
        self._capability_overrides: dict[str, tuple[str, ...]] = {}
        self._replies: deque[ScriptedReply] = deque()
        self._faults: list[Fault] = []
        self._requests: list[RecordedRequest] = []
        self._server: StandInHTTPServer | None = None
        self._thread: threading.Thread | None = None
        self.set_models(models, capabilities=capabilities)

    # ---- lifecycle

    def start(self) -> Self:
        """Bind 127.0.0.1 (same port as before after a `stop`) and serve. Idempotent."""
        with self._lifecycle_lock:
            if self._server is not None:
                return self
            server = StandInHTTPServer((LOCALHOST, self._port), self, ROUTES)
            self._port = server.server_address[1]
            thread = threading.Thread(
                target=server.serve_forever,
                kwargs={"poll_interval": _POLL_INTERVAL},
                name=f"ollama-standin:{self._port}",
                daemon=True,
            )
            thread.start()
            self._server, self._thread = server, thread
        return self

    def stop(self) -> None:
        """Close the listening socket and cut open connections. Idempotent."""
        with self._lifecycle_lock:
            server, thread = self._server, self._thread
            self._server, self._thread = None, None
            if server is None:
                return
            server.stop_event.set()
            server.shutdown()
            server.server_close()
            server.cut_connections()
            if thread is not None:
                thread.join(timeout=5)

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    @property
    def running(self) -> bool:
        return self._server is not None

    @property
    def port(self) -> int:
        if self._port == 0:
            raise RuntimeError("port is not known until the stand-in has been started")
        return self._port

    @property
    def host(self) -> str:
        """``"127.0.0.1:PORT"``, the form OLLAMA_HOST accepts."""
        return f"{LOCALHOST}:{self.port}"

    @property
    def url(self) -> str:
        return f"http://{self.host}"

    # ---- configuration

    @property
    def embed_dim(self) -> int:
        with self._lock:
            return self._embed_dim

    @embed_dim.setter
    def embed_dim(self, value: int) -> None:
        if value < 1:
            raise ValueError(f"embed_dim must be >= 1, got {value}")
        with self._lock:
            self._embed_dim = value

    @property
    def embedder(self) -> Embedder | None:
        """Callable computing embeddings for a batch of texts; None: hashed `embed_text`."""
        with self._lock:
            return self._embedder

    @embedder.setter
    def embedder(self, value: Embedder | None) -> None:
        with self._lock:
            self._embedder = value

    @property
    def token_delay(self) -> float:
        """Seconds between streamed chunks (default 0)."""
        with self._lock:
            return self._token_delay

    @token_delay.setter
    def token_delay(self, value: float) -> None:
        with self._lock:
            self._token_delay = max(0.0, value)

    @property
    def models(self) -> list[str]:
        """Configured model names, normalised with a tag (``name:latest``)."""
        with self._lock:
            return list(self._models)

    def set_models(
        self,
        models: Iterable[str],
        *,
        capabilities: Mapping[str, Sequence[str]] | None = None,
    ) -> None:
        """Replace the set of installed models; ``capabilities`` adds per-model overrides."""
        names = list(dict.fromkeys(normalize_model_name(name) for name in models))
        overrides = {
            normalize_model_name(name): tuple(caps) for name, caps in (capabilities or {}).items()
        }
        with self._lock:
            self._models = names
            self._capability_overrides.update(overrides)

    # ---- scripted replies

    def script_reply(
        self,
        text: str,
        *,
        tokens: Sequence[str] | None = None,
        tool_calls: Sequence[Mapping[str, Any]] | None = None,
    ) -> None:
        """Queue a chat reply (FIFO, one per /api/chat request).

        ``tokens`` overrides the default whitespace-keeping split of ``text`` and
        must concatenate to ``text``. ``tool_calls`` items are
        ``{"function": {"name", "arguments"}}`` (or the shorthand
        ``{"name", "arguments"}``) and are sent in a chunk after the text.
        """
        chunks = split_tokens(text) if tokens is None else list(tokens)
        if "".join(chunks) != text:
            raise ValueError("tokens must concatenate to text")
        calls = tuple(normalize_tool_call(call) for call in tool_calls or ())
        with self._lock:
            self._replies.append(ScriptedReply(tuple(chunks), calls))

    @property
    def pending_replies(self) -> int:
        with self._lock:
            return len(self._replies)

    def clear_replies(self) -> None:
        with self._lock:
            self._replies.clear()

    # ---- faults

    def fail_next(
        self,
        kind: FaultKind,
        *,
        count: int | None = 1,
        path: str | None = None,
        **params: Any,
    ) -> None:
        """Inject a fault for the next ``count`` matching requests (None: until cleared).

        ``path`` restricts the fault to one endpoint (e.g. ``"/api/chat"``).
        Kinds and their parameters (defaults in brackets):

        * ``status``: ``status`` [500], ``message`` -> HTTP error with ``{"error": message}``
          (any endpoint).
        * ``delay``: ``seconds`` [1.0] -> sleep before the headers (any endpoint).
        * ``stall``: ``after`` [1], ``seconds`` [1.0] -> streaming chat pauses after
          ``after`` chunks for ``seconds``, then carries on.
        * ``drop``: ``after`` [1] -> streaming chat closes the socket after ``after``
          chunks without the terminating zero-length chunk.
        * ``malformed``: ``after`` [1], ``line`` ["{not json"] -> non-JSON line, then end.
        * ``error_line``: ``after`` [1], ``message`` -> ``{"error": message}`` line, then end.
        * ``embed_dim``: ``dim`` [3] -> /api/embed(dings) vectors of the wrong size.
        """
        if kind not in FAULT_KINDS:
            raise ValueError(f"unknown fault kind {kind!r}; expected one of {sorted(FAULT_KINDS)}")
        unexpected = set(params) - FAULT_PARAMS[kind]
        if unexpected:
            raise TypeError(f"fault {kind!r} does not take {sorted(unexpected)}")
        if count is not None and count < 1:
            raise ValueError(f"count must be >= 1 or None, got {count}")
        fault = Fault(kind=kind, remaining=count, path=path, **params)
        with self._lock:
            self._faults.append(fault)

    def clear_faults(self) -> None:
        with self._lock:
            self._faults.clear()

    @property
    def pending_faults(self) -> list[Fault]:
        with self._lock:
            return list(self._faults)

    # ---- request log

    @property
    def requests(self) -> list[RecordedRequest]:
        """Snapshot of every request received, oldest first."""
        with self._lock:
            return list(self._requests)

    def chat_requests(self) -> list[JsonObject]:
        """JSON bodies of the /api/chat requests received, oldest first."""
        return [
            r.body
            for r in self.requests
            if r.path == "/api/chat" and r.method == "POST" and isinstance(r.body, dict)
        ]

    def clear_requests(self) -> None:
        with self._lock:
            self._requests.clear()

    # ---- used by the request handler (any thread)

    def _record(self, request: RecordedRequest) -> None:
        with self._lock:
            self._requests.append(request)

    def _take_fault(self, path: str, kinds: frozenset[str]) -> Fault | None:
        with self._lock:
            for fault in self._faults:
                if not fault.matches(path, kinds):
                    continue
                if fault.remaining is not None:
                    fault.remaining -= 1
                    if fault.remaining <= 0:
                        self._faults.remove(fault)
                return fault
        return None

    def _next_reply(self, messages: list[JsonObject]) -> ScriptedReply:
        with self._lock:
            if self._replies:
                return self._replies.popleft()
        return default_reply(messages)

    def _capabilities_of(self, name: str) -> tuple[str, ...] | None:
        """Capabilities of an installed model, or None when it is not installed."""
        if not name:
            return None
        normalized = normalize_model_name(name)
        with self._lock:
            if normalized not in self._models:
                return None
            override = self._capability_overrides.get(normalized)
        return override if override is not None else default_capabilities(normalized)

    def _tag_entries(self) -> list[JsonObject]:
        entries: list[JsonObject] = []
        for name in self.models:
            capabilities = self._capabilities_of(name) or default_capabilities(name)
            entries.append(
                {
                    "name": name,
                    "model": name,
                    "modified_at": MODIFIED_AT,
                    "size": 274_302_450 if "completion" not in capabilities else 2_019_393_189,
                    "digest": "sha256:" + hashlib.sha256(name.encode()).hexdigest(),
                    "details": model_details(capabilities),
                }
            )
        return entries
