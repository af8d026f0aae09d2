"""The model's two memory tools (Ollama tool calling): `memory_read` and `memory_write`.

* `memory_read(key?, query?)` runs at once; its result goes back to the model as a tool
  message (JSON). A read by key is an explicit read: a stale fact is revived.
* `memory_write(key, body, type, scope)` never writes: it becomes a candidate at the gate,
  and the turn asks the user (the TUI inline: approve, edit or reject; `ask` leaves it
  pending). The model is told what happened.

Unknown tools and invalid arguments get an error result the model can read; nothing is
raised into the turn. Tool calls and their results are never saved as memory points.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, Field

from agent.gateway_values import ToolCall
from memory.fact_types import (
    FactError,
    FactProposal,
    FactType,
    Scope,
    check_scope,
    check_type,
)
from memory.llm_schema import llm_schema

if TYPE_CHECKING:  # the drawer pulls in duckdb and numpy: not before the first frame
    from memory.fact_drawer import FactDrawer

MEMORY_READ = "memory_read"
MEMORY_WRITE = "memory_write"
MAX_ROUNDS = 3  # tool rounds per turn before the model must answer in text


class MemoryReadArguments(BaseModel):
    """`memory_read`'s arguments: a key, or words to search for."""

    key: str = Field("", description="exact fact key")
    query: str = Field("", description="words to search for")


class MemoryWriteArguments(BaseModel):
    """`memory_write`'s arguments (`parse_write` checks them)."""

    key: str = Field(description="e.g. deploy:blyck")
    body: str = Field(description="the fact, one or two sentences")
    type: FactType
    scope: Scope = "workspace"


def _tool(name: str, description: str, arguments: type[BaseModel]) -> dict[str, Any]:
    return {
        "type": "function",
        "function": {"name": name, "description": description, "parameters": llm_schema(arguments)},
    }


TOOL_SPECS: list[dict[str, Any]] = [
    _tool(
        MEMORY_READ,
        "Look up facts in the user's fact drawer: by exact key (e.g. 'deploy:blyck') "
        "or by a query. Use it before claiming you cannot do something.",
        MemoryReadArguments,
    ),
    _tool(
        MEMORY_WRITE,
        "Propose a durable fact for the drawer (the user approves it first). Writing "
        "an existing key replaces it.",
        MemoryWriteArguments,
    ),
]


@dataclass(frozen=True, slots=True)
class ToolOutcome:
    """The result for the model, and a proposal waiting for the user (memory_write)."""

    result: str
    proposal: FactProposal | None = None


def _text(arguments: dict[str, Any], name: str) -> str | None:
    value = arguments.get(name)
    return value.strip() if isinstance(value, str) and value.strip() else None


def _error(message: str) -> ToolOutcome:
    return ToolOutcome(json.dumps({"error": message}))


def run_read(
    drawer: FactDrawer, call: ToolCall, query_vector: list[float] | None = None
) -> ToolOutcome:
    """`memory_read`: facts by key (revives a stale one) or by query."""
    from memory.fact_json import fact_json

    key = _text(call.arguments, "key")
    query = _text(call.arguments, "query")
    if key is None and query is None:
        return _error("memory_read needs a key or a query")
    try:
        facts = drawer.get(key) if key is not None else drawer.search(query or "", query_vector)
    except FactError as error:
        return _error(str(error))
    shown = [
        {k: v for k, v in fact_json(f).items() if k in ("key", "type", "scope", "body", "status")}
        for f in facts
        if f.status != "retired"
    ]
    return ToolOutcome(json.dumps({"facts": shown}, ensure_ascii=False))


def parse_write(call: ToolCall) -> ToolOutcome:
    """`memory_write`: validate the arguments into a proposal (not yet at the gate)."""
    key, body, kind = (_text(call.arguments, name) for name in ("key", "body", "type"))
    if key is None or body is None or kind is None:
        return _error("memory_write needs key, body and type")
    try:
        fact_type = check_type(kind)
        scope = check_scope(_text(call.arguments, "scope") or "workspace")
    except FactError as error:
        return _error(str(error))
    proposal = FactProposal(
        type=fact_type,
        key=key,
        body=body,
        scope=scope,
        proof="proposed by the model with memory_write",
        confidence=0.7,
        source="inference",
    )
    return ToolOutcome("", proposal)


def unknown_tool(call: ToolCall) -> ToolOutcome:
    return _error(f"unknown tool {call.name!r}; available: {MEMORY_READ}, {MEMORY_WRITE}")
