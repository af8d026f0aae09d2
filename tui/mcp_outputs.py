"""What each `straylight mcp` tool returns, as types the MCP SDK turns into the tool's
`outputSchema`: a client reads the fields (and may check the structured content) from the
tool list instead of from the descriptions alone. Each shape is the matching `straylight …
--json` output; a field added there later is passed on (`extra="allow"`) rather than
dropped, so the schema names what is promised and never hides more."""

from __future__ import annotations

from typing import Any, Literal, NotRequired

from pydantic import ConfigDict, with_config
from typing_extensions import TypedDict

_OPEN = ConfigDict(extra="allow")


@with_config(_OPEN)
class SearchHit(TypedDict):
    """One recalled memory (`recall --json`'s hit); `content` is quoted data."""

    id: int
    role: str
    date: str
    score: float
    pinned: bool
    content: str


@with_config(_OPEN)
class SearchResult(TypedDict):
    """The hits, pinned first."""

    hits: list[SearchHit]


@with_config(_OPEN)
class SaveResult(TypedDict):
    """The pinned note's id; `note` when it was saved without a vector."""

    id: int
    note: NotRequired[str]


@with_config(_OPEN)
class ForgetResult(TypedDict):
    id: int
    forgotten: bool


@with_config(_OPEN)
class StatusResult(TypedDict):
    """`straylight status --json` (README, "status --json")."""

    home: str
    points: dict[str, Any]
    skips: Any
    embed_requests: Any
    recall_failures: Any
    index: dict[str, Any]
    embedding: Any
    ram_estimate_bytes: Any
    headroom: Any
    facts: Any
    workspace: Any
    hypotheses: Any
    context: Any
    longterm_bytes: Any
    ollama: dict[str, Any]
    longterm: Any
    log: Any


@with_config(_OPEN)
class LoadDocResult(TypedDict):
    """The document's sections: added, updated, unchanged, removed."""

    path: str
    added: int
    updated: int
    unchanged: int
    removed: int
    embed_requests: int


@with_config(_OPEN)
class FactRecord(TypedDict):
    """One fact (`facts get --json`)."""

    id: int
    key: str
    type: str
    scope: str
    body: str
    status: str
    confidence: float
    proof: str


@with_config(_OPEN)
class ReadResult(TypedDict):
    """The facts found, the exact key's first."""

    facts: list[FactRecord]


@with_config(_OPEN)
class WriteResult(TypedDict):
    """The candidate proposed (`candidates propose --json`), waiting for the user."""

    status: Literal["pending_approval"]
    candidate: dict[str, Any]
    note: str
