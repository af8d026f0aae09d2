"""Injectable faults: what `OllamaStandIn.fail_next` queues and which requests consume them."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final, Literal, get_args

__all__ = [
    "EMBED_FAULTS",
    "FAULT_KINDS",
    "FAULT_PARAMS",
    "REQUEST_FAULTS",
    "STREAM_FAULTS",
    "Fault",
    "FaultKind",
]

FaultKind = Literal["status", "delay", "stall", "drop", "malformed", "error_line", "embed_dim"]
FAULT_KINDS: Final[frozenset[str]] = frozenset(get_args(FaultKind))

# Parameters each fault kind accepts (all optional; defaults live on `Fault`).
FAULT_PARAMS: Final[Mapping[str, frozenset[str]]] = {
    "status": frozenset({"status", "message", "body"}),
    "delay": frozenset({"seconds"}),
    "stall": frozenset({"after", "seconds"}),
    "drop": frozenset({"after"}),
    "malformed": frozenset({"after", "line"}),
    "error_line": frozenset({"after", "message"}),
    "embed_dim": frozenset({"dim"}),
}
# Which requests consume which fault kinds.
REQUEST_FAULTS: Final = frozenset({"status", "delay"})
STREAM_FAULTS: Final = frozenset({"stall", "drop", "malformed", "error_line"})
EMBED_FAULTS: Final = frozenset({"embed_dim"})


@dataclass
class Fault:
    """An injected fault; ``remaining`` is ``None`` for "until cleared"."""

    kind: FaultKind
    remaining: int | None = 1
    path: str | None = None
    status: int = 500
    message: str = "stand-in injected failure"
    seconds: float = 1.0
    after: int = 1
    line: str = "{not json"
    dim: int = 3
    body: str | None = None
    """A `status` fault's whole reply as written (JSON that is not an object, a page…)."""

    def matches(self, path: str, kinds: frozenset[str]) -> bool:
        return self.kind in kinds and (self.path is None or self.path == path)
