"""`OllamaStandIn`: the public face of the stand-in, a real HTTP server run from a daemon thread,
with thread-safe setters for models, context window, scripted replies and faults, and a log of
what it received (see `script`).
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Mapping, Sequence
from types import TracebackType
from typing import Any, Final, Self, get_args

from .catalog import DEFAULT_REGISTRY, LoadedModel, ModelCatalog
from .context import DEFAULT_NUM_CTX, ContextMode
from .embeddings import Embedder
from .handler import StandInHTTPServer
from .models import DEFAULT_MODELS, ModelSpec, normalize_model_name
from .pull import PULL_STEPS
from .routes import ROUTES
from .script import Script
from .wire import JsonObject

__all__ = ["LOCALHOST", "OllamaStandIn"]

LOCALHOST: Final = "127.0.0.1"
_POLL_INTERVAL: Final = 0.05


def _check_mode(mode: str) -> ContextMode:
    if mode not in get_args(ContextMode):
        raise ValueError(f"context_mode must be one of {get_args(ContextMode)}, got {mode!r}")
    return mode  # type: ignore[return-value]


def _check_window(value: int, what: str) -> int:
    if value < 1:
        raise ValueError(f"{what} must be >= 1, got {value}")
    return value


class OllamaStandIn(Script):
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
        specs: Mapping[str, ModelSpec] | None = None,
        context_mode: ContextMode = "truncate",
        default_num_ctx: int = DEFAULT_NUM_CTX,
        registry: Iterable[str] = DEFAULT_REGISTRY,
        pull_steps: int = PULL_STEPS,
    ) -> None:
        """``embedder``, when given, computes /api/embed(dings) vectors instead of the
        hashed `embed_text` (their size is then the embedder's, not ``embed_dim``;
        ``embed_dim`` faults still return hashed vectors of the faulty size).

        ``capabilities`` and ``specs`` describe models by name (see `ModelSpec`; what they
        leave out follows from the name). ``context_mode`` is "truncate" (Ollama's silent cut
        of the oldest messages, the default), "error" (HTTP 400 naming the window) or
        "unlimited" (every prompt accepted whole); ``default_num_ctx`` is the window of a
        request without ``options.num_ctx`` (Ollama's 4,096). ``registry`` lists the model
        families /api/pull knows; ``pull_steps`` the progress records of a weights layer.
        """
        if embed_dim < 1:
            raise ValueError(f"embed_dim must be >= 1, got {embed_dim}")
        super().__init__()
        self._lifecycle_lock = threading.Lock()
        self._port = port
        self._embed_dim = embed_dim
        self._token_delay = token_delay
        self._embedder = embedder
        self._context_mode = _check_mode(context_mode)
        self._default_num_ctx = _check_window(default_num_ctx, "default_num_ctx")
        self._pull_steps = max(2, pull_steps)
        self.catalog = ModelCatalog(registry)
        """Installed, pullable and loaded models (used by the routes)."""
        self.count_cached_prompt = True
        """False: like Ollama before 0.31, ``prompt_eval_count`` leaves out the prompt's
        front a model had from its previous request (its prompt cache): the messages the
        two requests share from the start. Ollama now counts them (llama_server.go)."""
        self.last_prompts: dict[str, tuple[JsonObject, ...]] = {}
        """Per model, the messages of its last chat request (its prompt cache)."""
        self._server: StandInHTTPServer | None = None
        self._thread: threading.Thread | None = None
        self.set_models(models, capabilities=capabilities, specs=specs)

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
    def open_connections(self) -> int:
        """Client connections being served now: 0 once every handler has finished (a test
        waits for that instead of sleeping while the server writes to a closed socket)."""
        server = self._server
        return 0 if server is None else server.open_connections()

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
    def pull_steps(self) -> int:
        """Progress records /api/pull streams for a model's weights layer."""
        with self._lock:
            return self._pull_steps

    @pull_steps.setter
    def pull_steps(self, value: int) -> None:
        with self._lock:
            self._pull_steps = max(2, value)

    # ---- context window

    @property
    def context_mode(self) -> ContextMode:
        """ "truncate" (default), "error" or "unlimited": what an over-long prompt meets."""
        with self._lock:
            return self._context_mode

    @context_mode.setter
    def context_mode(self, value: ContextMode) -> None:
        checked = _check_mode(value)
        with self._lock:
            self._context_mode = checked

    @property
    def default_num_ctx(self) -> int:
        """The window of a request without ``options.num_ctx`` (capped at the model's max)."""
        with self._lock:
            return self._default_num_ctx

    @default_num_ctx.setter
    def default_num_ctx(self, value: int) -> None:
        checked = _check_window(value, "default_num_ctx")
        with self._lock:
            self._default_num_ctx = checked

    # ---- models

    @property
    def models(self) -> list[str]:
        """Installed model names, normalised with a tag (``name:latest``)."""
        return self.catalog.installed

    def set_models(
        self,
        models: Iterable[str],
        *,
        capabilities: Mapping[str, Sequence[str]] | None = None,
        specs: Mapping[str, ModelSpec] | None = None,
    ) -> None:
        """Replace the set of installed models; ``capabilities`` and ``specs`` add per-model
        overrides (kept for later calls; ``capabilities`` wins over a spec's)."""
        self.catalog.update_specs(specs or {})
        for name, caps in (capabilities or {}).items():
            self.catalog.configure(name, capabilities=tuple(caps))
        self.catalog.set_installed(models)

    def configure_model(self, name: str, **fields: Any) -> ModelSpec:
        """Change some `ModelSpec` fields of one model (installed or not), e.g.
        ``configure_model("qwen3:8b", context_length=8192, num_ctx=2048)``."""
        return self.catalog.configure(name, **fields)

    def model_spec(self, name: str) -> ModelSpec:
        """The spec configured for ``name`` (empty when nothing was configured)."""
        return self.catalog.spec(name)

    def set_registry(self, names: Iterable[str]) -> None:
        """The model families /api/pull can fetch (any tag of them)."""
        self.catalog.set_registry(names)

    def loaded_models(self) -> list[LoadedModel]:
        """Models in memory, as /api/ps lists them."""
        return self.catalog.loaded()

    def unload(self, name: str | None = None) -> None:
        """Unload one model, or every model."""
        names = [name] if name else [loaded.model.name for loaded in self.catalog.loaded()]
        for each in names:
            self.catalog.unload(normalize_model_name(each))
