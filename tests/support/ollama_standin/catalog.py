"""The stand-in's model store: installed models and their specs, the registry models can be
pulled from, and the models loaded in memory (``/api/ps``) with their ``keep_alive`` expiry.

A model is loaded when it serves a chat or embed request, with the window that request ran
with; it stays ``keep_alive`` (default 5 minutes; negative: forever; 0: unloaded right after the
request) and disappears from ``/api/ps`` once expired. Thread-safe: one lock guards it all.
"""

from __future__ import annotations

import dataclasses
import math
import re
import threading
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Final

from .model_name import full_model_name
from .models import (
    KV_BYTES_PER_TOKEN,
    MODIFIED_AT,
    ModelSpec,
    ResolvedModel,
    base_name,
    normalize_model_name,
    resolve_model,
)
from .wire import JsonObject

__all__ = [
    "DEFAULT_KEEP_ALIVE",
    "DEFAULT_REGISTRY",
    "LoadedModel",
    "ModelCatalog",
    "parse_keep_alive",
]

DEFAULT_KEEP_ALIVE: Final = 300.0
DEFAULT_REGISTRY: Final = (
    "llama3.2",
    "llama3.1",
    "qwen3",
    "qwen3.5",
    "qwen2.5",
    "deepseek-r1",
    "gpt-oss",
    "gemma3",
    "mistral",
    "phi4",
    "qwq",
    "magistral",
    "llava",
    "nomic-embed-text",
    "mxbai-embed-large",
    "all-minilm",
)
"""Families ``/api/pull`` knows (any tag of them pulls); other names are "file does not exist"."""

_FOREVER: Final = datetime(2318, 1, 1, tzinfo=UTC)
_DURATION_RE: Final = re.compile(r"(-?\d+(?:\.\d+)?)(ns|us|µs|ms|s|m|h)")
_UNIT_SECONDS: Final = {
    "ns": 1e-9,
    "us": 1e-6,
    "µs": 1e-6,
    "ms": 1e-3,
    "s": 1.0,
    "m": 60.0,
    "h": 3600.0,
}


def parse_keep_alive(value: Any) -> float | None:
    """Seconds from a ``keep_alive`` (number of seconds, or a Go duration such as ``"5m"``).

    ``None`` when absent; ``math.inf`` for a negative value (keep forever). Raises ValueError
    with Go's wording for a string that is not a duration.
    """
    if value is None:
        return None
    if isinstance(value, bool):
        raise ValueError(f"time: invalid duration {json_quote(str(value).lower())}")
    if isinstance(value, int | float):
        seconds = float(value)
    else:
        text = str(value).strip()
        try:
            seconds = float(text)
        except ValueError:
            seconds = _go_duration(text)
    return math.inf if seconds < 0 else seconds


def json_quote(text: str) -> str:
    return '"' + text.replace('"', '\\"') + '"'


def _go_duration(text: str) -> float:
    sign = -1.0 if text.startswith("-") else 1.0
    body = text.lstrip("+-")
    parts = _DURATION_RE.findall(body)
    if not body or "".join(number + unit for number, unit in parts) != body:
        raise ValueError(f"time: invalid duration {json_quote(text)}")
    return sign * sum(float(number) * _UNIT_SECONDS[unit] for number, unit in parts)


@dataclass(frozen=True)
class LoadedModel:
    """One model in memory, as ``/api/ps`` lists it."""

    model: ResolvedModel
    context_length: int
    expires_at: float
    """Epoch seconds; ``math.inf`` for keep-forever."""

    @property
    def size(self) -> int:
        """Weights plus a KV cache for the window."""
        return self.model.size + self.context_length * KV_BYTES_PER_TOKEN

    def ps_entry(self) -> JsonObject:
        expires = (
            _FOREVER
            if math.isinf(self.expires_at)
            else datetime.fromtimestamp(self.expires_at, UTC)
        )
        return {
            "name": self.model.name,
            "model": self.model.name,
            "size": self.size,
            "digest": self.model.digest,
            "details": self.model.details(),
            "expires_at": expires.isoformat().replace("+00:00", "Z"),
            "size_vram": self.size,
            "context_length": self.context_length,
        }


class ModelCatalog:
    """Installed, pullable and loaded models; every method is thread-safe."""

    def __init__(self, registry: Iterable[str] = DEFAULT_REGISTRY) -> None:
        self._lock = threading.Lock()
        self._installed: list[str] = []
        self._specs: dict[str, ModelSpec] = {}
        self._registry: set[str] = {base_name(name) for name in registry}
        self._loaded: dict[str, LoadedModel] = {}

    # ---- installed models and specs

    @property
    def installed(self) -> list[str]:
        with self._lock:
            return list(self._installed)

    def set_installed(self, names: Iterable[str]) -> None:
        normalized = list(dict.fromkeys(normalize_model_name(name) for name in names))
        with self._lock:
            self._installed = normalized
            self._loaded = {k: v for k, v in self._loaded.items() if k in normalized}

    def update_specs(self, specs: Mapping[str, ModelSpec]) -> None:
        with self._lock:
            for name, spec in specs.items():
                self._specs[normalize_model_name(name)] = spec

    def configure(self, name: str, **fields: Any) -> ModelSpec:
        """Replace some fields of ``name``'s spec (installed or not); returns the new spec."""
        key = normalize_model_name(name)
        with self._lock:
            spec = dataclasses.replace(self._specs.get(key, ModelSpec()), **fields)
            self._specs[key] = spec
        return spec

    def spec(self, name: str) -> ModelSpec:
        with self._lock:
            return self._specs.get(normalize_model_name(name), ModelSpec())

    def _installed_as(self, name: str) -> str | None:
        """The installed name Ollama takes ``name`` for (case and the default registry,
        namespace and tag do not matter), or None. Called with the lock held."""
        wanted = full_model_name(name)
        return next((n for n in self._installed if full_model_name(n) == wanted), None)

    def resolved(self, name: str) -> ResolvedModel | None:
        """The installed model called ``name``, or None when it is not installed."""
        if not name:
            return None
        with self._lock:
            key = self._installed_as(name)
            if key is None:
                return None
            spec = self._specs.get(key)
        return resolve_model(key, spec)

    def tag_entries(self) -> list[JsonObject]:
        entries: list[JsonObject] = []
        for name in self.installed:
            model = resolve_model(name, self.spec(name))
            entries.append(
                {
                    "name": name,
                    "model": name,
                    "modified_at": MODIFIED_AT,
                    "size": model.size,
                    "digest": model.digest,
                    "details": model.details(),
                }
            )
        return entries

    # ---- registry: pull and delete

    def set_registry(self, names: Iterable[str]) -> None:
        with self._lock:
            self._registry = {base_name(name) for name in names}

    def pullable(self, name: str) -> ResolvedModel | None:
        """What pulling ``name`` would install, or None when the registry has no such model."""
        key = normalize_model_name(name)
        with self._lock:
            key = self._installed_as(name) or key
            known = base_name(key) in self._registry or key in self._installed
            spec = self._specs.get(key)
        return resolve_model(key, spec) if known else None

    def install(self, name: str) -> None:
        key = normalize_model_name(name)
        with self._lock:
            if self._installed_as(name) is None:
                self._installed.append(key)

    def remove(self, name: str) -> bool:
        """Delete an installed model (and unload it); False when it was not installed."""
        with self._lock:
            key = self._installed_as(name)
            if key is None:
                return False
            self._installed.remove(key)
            self._loaded.pop(key, None)
            return True

    # ---- loaded models

    def load(self, model: ResolvedModel, context_length: int, keep_alive: float | None) -> None:
        """Mark ``model`` loaded with this window until ``keep_alive`` runs out."""
        seconds = DEFAULT_KEEP_ALIVE if keep_alive is None else keep_alive
        expires = math.inf if math.isinf(seconds) else time.time() + seconds
        with self._lock:
            if seconds <= 0:
                self._loaded.pop(model.name, None)
            else:
                self._loaded[model.name] = LoadedModel(model, context_length, expires)

    def unload(self, name: str) -> None:
        with self._lock:
            self._loaded.pop(normalize_model_name(name), None)

    def loaded(self) -> list[LoadedModel]:
        """Models in memory, longest remaining first (expired ones are dropped)."""
        now = time.time()
        with self._lock:
            self._loaded = {k: v for k, v in self._loaded.items() if v.expires_at > now}
            models = list(self._loaded.values())
        return sorted(models, key=lambda loaded: -loaded.expires_at)

    def ps_entries(self) -> Sequence[JsonObject]:
        return [loaded.ps_entry() for loaded in self.loaded()]
