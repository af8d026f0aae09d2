"""Wire-level helpers shared by the stand-in's modules: JSON bodies, NDJSON lines, timestamps."""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

__all__ = ["ChatOutcome", "JsonObject", "RecordedRequest", "ndjson", "now", "parse_json"]

JsonObject = dict[str, Any]


@dataclass(frozen=True)
class ChatOutcome:
    """What the stand-in did with one /api/chat request that reached the model."""

    window: int
    """The context window the request ran with (num_ctx, model default or server default)."""
    full_prompt_tokens: int
    """Estimated tokens of the prompt as sent."""
    prompt_tokens: int
    """Tokens the model evaluated: the ``prompt_eval_count`` it reported."""
    dropped_messages: int
    """Oldest non-system messages left out to fit the window (mode "truncate")."""
    kept_messages: int
    runner_truncated: bool
    """Even the kept messages did not fit: the prompt's front was cut token-wise."""
    think: Any
    """The ``think`` field as sent (None when absent)."""
    thinking: bool
    """The reply carried thinking (``message.thinking`` or inline ``<think>``)."""
    images: int
    error: str | None = None
    """The HTTP 400 message when the prompt was refused for its length (mode "error")."""


@dataclass(frozen=True)
class RecordedRequest:
    """One request as the stand-in received it."""

    method: str
    path: str
    body: Any
    """Parsed JSON body, or ``None`` when the body was empty or not JSON."""
    headers: dict[str, str]
    chat: ChatOutcome | None = None
    """For /api/chat requests that reached the model: what the model saw and did."""
    received: float = field(default_factory=time.monotonic)
    """When it arrived (`time.monotonic()`): a test times from there, not from its own start."""

    def _field(self, key: str) -> Any:
        return self.body.get(key) if isinstance(self.body, dict) else None

    @property
    def options(self) -> dict[str, Any]:
        """The request's ``options`` (temperature, seed, num_predict, stop, num_ctx, …)."""
        options = self._field("options")
        return dict(options) if isinstance(options, dict) else {}

    @property
    def keep_alive(self) -> Any:
        """The request's ``keep_alive`` as sent (None when absent)."""
        return self._field("keep_alive")

    @property
    def think(self) -> Any:
        """The request's ``think`` as sent (None when absent)."""
        return self._field("think")


def now() -> str:
    """The current UTC time in Ollama's ``created_at`` form."""
    return datetime.now(UTC).isoformat().replace("+00:00", "Z")


def ndjson(obj: JsonObject) -> bytes:
    """One compact NDJSON line."""
    return json.dumps(obj, separators=(",", ":")).encode() + b"\n"


def parse_json(raw: bytes) -> Any:
    """The parsed body, or ``None`` when it is empty or not JSON."""
    if not raw.strip():
        return None
    try:
        return json.loads(raw)
    except (json.JSONDecodeError, UnicodeDecodeError):
        return None
