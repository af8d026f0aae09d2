"""What Straylight knows about the models on an Ollama server: list and show (pulling and
deleting one is agent/model_changes.py).

Each model becomes a typed `ModelRecord` built from three Ollama answers: `/api/tags` (name,
size, details), `/api/show` (capabilities, `model_info` with `<architecture>.context_length`,
the Modelfile `parameters` that may set `num_ctx`) and `/api/ps` (what is loaded, with its
memory and window). The functions take an `ollama.AsyncClient` (`OllamaGateway.client()`),
raise named `GatewayError`s, and import `ollama`/`httpx` only when called.

`/api/show` answers are cached per client, and each `OllamaGateway` has one client: its
`show` (the chat's capabilities and context window) and `show_model` here read the same
cache, so the TUI asks once per model whoever asks first. A model's capabilities and window do
not change unless it is pulled again: a new digest, a pull or a delete drops the entry.
"""

from __future__ import annotations

import asyncio
import logging
import weakref
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any, ClassVar, Literal

from agent.context_window import model_context_length, modelfile_num_ctx
from agent.gateway_errors import GatewayError, ModelError, classify
from agent.gateway_values import can_chat, is_embedding
from memory.model_names import normalise_name

if TYPE_CHECKING:
    import ollama

log = logging.getLogger("straylight.models")

SHOW_TIMEOUT_SECONDS = 5.0
"""How long one /api/show may take while listing: a slow answer must not stall the list."""
SHOW_CONCURRENCY = 8
LIST_TIMEOUT_SECONDS = 10.0
"""How long /api/tags and /api/ps may take unless the caller gives the settings' limit
(`connect_timeout_seconds`): a hung server must not hold `models` for the chat's long read
timeout."""


@dataclass(frozen=True, slots=True)
class ShownModel:
    """What `/api/show` says about one model (None: Ollama did not say)."""

    capabilities: tuple[str, ...] | None = None
    context_length: int | None = None
    """The model's trained maximum window, `model_info["<architecture>.context_length"]`."""
    num_ctx: int | None = None
    """A `PARAMETER num_ctx` of the Modelfile: the window the model asks for by default."""
    family: str | None = None
    parameter_size: str | None = None
    quantization: str | None = None


@dataclass(frozen=True, slots=True)
class RunningModel:
    """A model loaded in memory (`/api/ps`)."""

    size: int | None
    """Bytes in memory (weights + KV cache)."""
    size_vram: int | None
    context_length: int | None
    """The window it was loaded with."""
    expires_at: datetime | None


@dataclass(frozen=True, slots=True)
class ModelRecord:
    """One pulled model, as far as Ollama told us. Unknown parts are None: a model whose
    /api/show failed is still listed with what /api/tags said."""

    JSON_FIELDS: ClassVar[tuple[str, ...]] = (
        "name",
        "size",
        "family",
        "parameter_size",
        "quantization",
        "capabilities",
        "context_length",
        "loaded",
        "embedding",
    )

    name: str
    size: int | None
    family: str | None
    parameter_size: str | None
    quantization: str | None
    capabilities: tuple[str, ...] | None
    context_length: int | None
    num_ctx: int | None
    loaded: bool | None
    """From /api/ps; None when /api/ps could not be read."""
    running: RunningModel | None = None

    @property
    def embedding(self) -> bool | None:
        """An embedding model (capabilities contain "embedding"); None when unknown (none
        listed)."""
        return is_embedding(self.capabilities)

    @property
    def chat_capable(self) -> bool | None:
        """Can chat (`can_chat`: capabilities contain "completion"); None when unknown."""
        return can_chat(self.capabilities)

    def to_json(self) -> dict[str, Any]:
        """The `straylight models --json` entry: exactly `JSON_FIELDS`."""
        return {
            "name": self.name,
            "size": self.size,
            "family": self.family,
            "parameter_size": self.parameter_size,
            "quantization": self.quantization,
            "capabilities": list(self.capabilities) if self.capabilities is not None else None,
            "context_length": self.context_length,
            "loaded": self.loaded,
            "embedding": self.embedding,
        }


@dataclass(frozen=True, slots=True)
class MissingModel:
    """A configured model Ollama does not have: the chat model or the embedding model."""

    role: Literal["chat", "embedding"]
    name: str

    @property
    def fixes(self) -> tuple[str, str]:
        """The two commands that pull it."""
        return (f"ollama pull {self.name}", f"straylight pull {self.name}")

    @property
    def effect(self) -> str:
        """What is missing without it."""
        if self.role == "chat":
            return "the chat cannot reply"
        return "memories are saved without a vector and recalled by their words only"

    def line(self) -> str:
        """`The embedding model nomic-embed-text is not pulled (…): run `ollama pull …` or
        `straylight pull …`.`"""
        ollama_fix, own_fix = self.fixes
        return (
            f"The {self.role} model {self.name} is not pulled ({self.effect}): "
            f"run `{ollama_fix}` or `{own_fix}`."
        )

    def to_json(self) -> dict[str, Any]:
        return {"role": self.role, "model": self.name, "fix": list(self.fixes)}


def missing_models(
    pulled: Iterable[str], *, chat_model: str, embed_model: str
) -> tuple[MissingModel, ...]:
    """The chat and embedding models that are not among `pulled` (`llama3.2` is
    `llama3.2:latest`), chat first."""
    have = {normalise_name(name) for name in pulled}
    wanted: list[MissingModel] = [
        MissingModel("chat", chat_model),
        MissingModel("embedding", embed_model),
    ]
    return tuple(m for m in wanted if m.name and normalise_name(m.name) not in have)


# per client: normalised name -> (digest the answer belongs to, the raw /api/show answer)
_show_caches: weakref.WeakKeyDictionary[Any, dict[str, tuple[str | None, Any]]] = (
    weakref.WeakKeyDictionary()
)


def host_of(client: ollama.AsyncClient) -> str:
    """The address the client talks to, for error messages and the cache key."""
    return str(client._client.base_url).rstrip("/")


def _read_timeout(client: ollama.AsyncClient) -> float:
    return float(client._client.timeout.read or 0.0)


def _connect_timeout(client: ollama.AsyncClient) -> float | None:
    return float(client._client.timeout.connect or 0.0) or None


def named(client: ollama.AsyncClient, error: BaseException, model: str = "") -> GatewayError:
    """`classify` for a call on `client` that streams no reply: its host and timeouts."""
    return classify(
        error,
        host=host_of(client),
        model=model,
        timeout=_read_timeout(client),
        streamed=False,
        connect_timeout=_connect_timeout(client),
    )


def _shown_from(response: Any) -> ShownModel:
    capabilities = getattr(response, "capabilities", None)
    details = getattr(response, "details", None)
    return ShownModel(
        capabilities=tuple(str(c) for c in capabilities) if capabilities is not None else None,
        context_length=model_context_length(response),
        num_ctx=modelfile_num_ctx(response),
        family=getattr(details, "family", None) or None,
        parameter_size=getattr(details, "parameter_size", None) or None,
        quantization=getattr(details, "quantization_level", None) or None,
    )


def _cache_of(client: ollama.AsyncClient) -> dict[str, tuple[str | None, Any]]:
    return _show_caches.setdefault(client, {})


def cached_show(client: ollama.AsyncClient, name: str) -> Any | None:
    """The cached raw /api/show answer of `name`, without asking Ollama; None when not kept."""
    cached = _cache_of(client).get(normalise_name(name))
    return cached[1] if cached is not None else None


async def fetch_show(
    client: ollama.AsyncClient,
    name: str,
    *,
    digest: str | None = None,
    refresh: bool = False,
    timeout: float | None = None,
) -> Any:
    """The raw /api/show answer (the client's ShowResponse), from the cache when it is of the
    same pull (`digest` from /api/tags; a different one refetches). `timeout` (seconds)
    replaces the client's read timeout for this request.

    Raises a named `GatewayError` (`ModelNotPulled` for a model Ollama does not have); a
    failure is not cached."""
    import ollama

    key = normalise_name(name)
    cache = _cache_of(client)
    cached = cache.get(key)
    if cached is not None and not refresh:
        known, answer = cached
        if digest is None or known is None or known == digest:  # same pull of the model
            cache[key] = (digest or known, answer)
            return answer
    try:
        if timeout is None:
            answer = await client.show(name)
        else:
            answer = await client._request(
                ollama.ShowResponse, "POST", "/api/show", json={"model": name}, timeout=timeout
            )
    except Exception as error:  # classified and re-raised
        seconds = timeout if timeout is not None else _read_timeout(client)
        raise classify(  # with its own `timeout`, a metadata call: the line names that limit
            error,
            host=host_of(client),
            model=name,
            timeout=seconds,
            streamed=False,
            metadata=timeout is not None,
        ) from error
    cache[key] = (digest, answer)
    return answer


async def show_model(
    client: ollama.AsyncClient, name: str, *, digest: str | None = None, refresh: bool = False
) -> ShownModel:
    """What /api/show says about one model, from the shared cache (`fetch_show`).

    Raises a named `GatewayError` (`ModelNotPulled` for a model Ollama does not have)."""
    return _shown_from(await fetch_show(client, name, digest=digest, refresh=refresh))


def forget_shown(client: ollama.AsyncClient, name: str) -> None:
    """Drop the cached /api/show answer of one model (after a pull or a delete)."""
    _cache_of(client).pop(normalise_name(name), None)


def clear_show_cache() -> None:
    """Forget every cached /api/show answer of every client (tests; a replaced server)."""
    _show_caches.clear()


async def running_models(client: ollama.AsyncClient) -> dict[str, RunningModel]:
    """`/api/ps`: the loaded models by normalised name. Raises a named `GatewayError`."""
    try:
        response = await client.ps()
    except Exception as error:  # classified and re-raised
        raise named(client, error) from error
    running: dict[str, RunningModel] = {}
    for model in response.models:
        name = model.model or model.name
        if name:
            running[normalise_name(name)] = RunningModel(
                size=model.size,
                size_vram=model.size_vram,
                context_length=model.context_length,
                expires_at=model.expires_at,
            )
    return running


async def _show_or_none(
    client: ollama.AsyncClient,
    name: str,
    digest: str | None,
    gate: asyncio.Semaphore,
    timeout: float,
) -> ShownModel | None:
    async with gate:
        try:
            return await asyncio.wait_for(show_model(client, name, digest=digest), timeout)
        except (GatewayError, TimeoutError) as error:
            log.info("could not show %s while listing: %r", name, error)
            return None


async def list_models(
    client: ollama.AsyncClient, *, timeout: float = LIST_TIMEOUT_SECONDS
) -> list[ModelRecord]:
    """Every pulled model in Ollama's order, with what /api/show and /api/ps add.

    /api/tags failing raises a named `GatewayError` (`OllamaUnreachable` when Ollama is
    down, `ModelError` when it takes longer than `timeout`: the settings' metadata limit,
    `connect_timeout_seconds`); a failing or slow /api/show (each at most `timeout`, and
    `SHOW_TIMEOUT_SECONDS`) only leaves that model's details unknown, a failing /api/ps
    `loaded`."""
    try:
        tags = await asyncio.wait_for(client.list(), timeout)
    except TimeoutError as error:
        raise ModelError(
            f"Ollama did not list its models within {timeout:g} s; raise "
            "STRAYLIGHT_CONNECT_TIMEOUT_SECONDS if Ollama is just slow"
        ) from error
    except Exception as error:  # classified and re-raised
        raise named(client, error) from error
    pulled = [model for model in tags.models if model.model]
    gate = asyncio.Semaphore(SHOW_CONCURRENCY)
    show_timeout = min(timeout, SHOW_TIMEOUT_SECONDS)
    shows = [_show_or_none(client, str(m.model), m.digest, gate, show_timeout) for m in pulled]
    running_or_none = _running_or_none(client, timeout)
    shown, running = await asyncio.gather(asyncio.gather(*shows), running_or_none)
    return [_record(model, facts, running) for model, facts in zip(pulled, shown, strict=True)]


async def _running_or_none(
    client: ollama.AsyncClient, timeout: float
) -> dict[str, RunningModel] | None:
    try:
        return await asyncio.wait_for(running_models(client), timeout)
    except (GatewayError, TimeoutError) as error:
        log.info("could not read /api/ps: %s", error)
        return None


def _record(
    model: Any, shown: ShownModel | None, running: dict[str, RunningModel] | None
) -> ModelRecord:
    name = str(model.model)
    details = model.details
    facts = shown or ShownModel()
    now_running = running.get(normalise_name(name)) if running is not None else None
    return ModelRecord(
        name=name,
        size=model.size,
        family=(getattr(details, "family", None) or None) or facts.family,
        parameter_size=(getattr(details, "parameter_size", None) or None) or facts.parameter_size,
        quantization=(getattr(details, "quantization_level", None) or None) or facts.quantization,
        capabilities=facts.capabilities,
        context_length=facts.context_length,
        num_ctx=facts.num_ctx,
        loaded=None if running is None else now_running is not None,
        running=now_running,
    )


def chat_models(records: Iterable[ModelRecord]) -> list[ModelRecord]:
    """The models that can chat, by capabilities (unknown capabilities are kept)."""
    return [record for record in records if record.chat_capable is not False]


def cannot_chat(name: str, capabilities: tuple[str, ...] | None) -> str | None:
    """`NAME cannot chat (capabilities: …)` when Ollama says the model has no "completion"
    (an embedding model); None when it can, or when nobody knows (an old server, a server
    that lists no capabilities, a model not pulled, Ollama down: the chat request then names
    the problem). The one rule of `/model` and `straylight ask --model`, checked before
    anything is logged."""
    if capabilities is None or can_chat(capabilities) is not False:
        return None
    return f"{name} cannot chat (capabilities: {', '.join(capabilities)})"
