"""Wire-level helpers shared by the stand-in's modules: JSON bodies, NDJSON lines, timestamps."""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

__all__ = ["JsonObject", "RecordedRequest", "ndjson", "now", "parse_json"]

JsonObject = dict[str, Any]


@dataclass(frozen=True)
class RecordedRequest:
    """One request as the stand-in received it."""

    method: str
    path: str
    body: Any
    """Parsed JSON body, or ``None`` when the body was empty or not JSON."""
    headers: dict[str, str]


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
