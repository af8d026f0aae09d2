"""A request line holding a lone UTF-16 surrogate (`"\\ud800"`) is answered, not dropped.

JSON allows the escape; pydantic's parser refuses it, so the SDK's stdio reader handed the
session an exception without the request's id and the client waited for an answer that
never came. Here the reader's parse falls back to Python's `json` (which accepts the escape),
turns each lone surrogate into U+FFFD, and validates the result: the tool runs (a note stored
with "\\ufffd" in place of the broken character) or answers with its usual error.

The SDK offers no hook for this, so `install` swaps the message adapter that
`mcp.server.stdio` reads through for one that only adds the fallback; every other use of
`mcp_types` is untouched.
"""

from __future__ import annotations

import json
import re
import types
from typing import Any

import mcp_types
from mcp.server import stdio as sdk_stdio
from pydantic import ValidationError

_SURROGATE = re.compile("[\ud800-\udfff]")


def without_lone_surrogates(value: Any) -> Any:
    """`value` (parsed JSON) with every surrogate code point in its strings replaced."""
    if isinstance(value, str):
        return _SURROGATE.sub("\ufffd", value)
    if isinstance(value, list):
        return [without_lone_surrogates(item) for item in value]
    if isinstance(value, dict):
        return {
            without_lone_surrogates(key): without_lone_surrogates(item)
            for key, item in value.items()
        }
    return value


def _repaired(data: str | bytes) -> Any | None:
    """`data` parsed by Python's `json` with its lone surrogates replaced, or None when it
    is no JSON or holds none (then pydantic's refusal stands)."""
    try:
        parsed = json.loads(data)
    except (ValueError, RecursionError):
        return None
    repaired = without_lone_surrogates(parsed)
    return None if repaired == parsed else repaired


class _RepairingAdapter:
    """The SDK's `jsonrpc_message_adapter`, whose `validate_json` retries a line that holds
    a lone surrogate escape through Python's parser."""

    def __init__(self, adapter: Any) -> None:
        self._adapter = adapter

    def validate_json(self, data: str | bytes, **options: Any) -> Any:
        try:
            return self._adapter.validate_json(data, **options)
        except ValidationError as refused:
            repaired = _repaired(data)
            if repaired is None:
                raise refused from None
            return self._adapter.validate_python(repaired, **options)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._adapter, name)


def install() -> None:
    """Make `mcp.server.stdio`'s reader take lines with lone surrogates (idempotent)."""
    if isinstance(sdk_stdio.types.jsonrpc_message_adapter, _RepairingAdapter):
        return
    view = types.ModuleType(mcp_types.__name__)
    view.__dict__.update(vars(mcp_types))
    repairing = _RepairingAdapter(mcp_types.jsonrpc_message_adapter)
    setattr(view, "jsonrpc_message_adapter", repairing)  # noqa: B010 - a module object
    sdk_stdio.types = view
