"""Layer 3 before its database exists: a fresh store's answers without DuckDB (issue 18).

On a data dir with no `straylight.duckdb` the TUI does not import DuckDB, numpy or usearch
after its first frame, nor create the database (~78 MB of an idle app's RSS): a
`DeferredMemory` stands in for `TurnMemory`, its `store` for `MemoryStore` and its `facts`
for `FactDrawer`. The reads an idle app makes — the sidebar's point count, RAM line, fact
and card counts, `/memstatus`, the candidates' check — answer as a fresh store would (zero
points, no facts, no cards). Anything else — a turn (its embedding count is a write), a
save, a pin, an ingest, a memory screen, a job — opens the real memory once, through the
caller's `opener`, and goes to it from then on: a coroutine method opens it in a worker
thread, another method when it is called (the app calls the store in workers), an attribute
(`store.db`, `store.points`) when it is read. A database that appears meanwhile (another
client's write, served by this process) is opened by the next read, so the answers stay true.

Nothing heavy is imported here: the types are the real ones' only for the type checker.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Callable, Sequence
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from memory.headroom import headroom, ram_estimate_bytes
from memory.settings_models import FactsConfig, MemoryConfig

if TYPE_CHECKING:
    from memory.fact_drawer import FactDrawer
    from memory.hypotheses import Hypotheses
    from memory.memory_store import MemoryStore
    from memory.recall_block import RecallResult
    from memory.turn_memory import TurnMemory

log = logging.getLogger("straylight.memory")

# = store.database.DATABASE_FILENAME (that module imports DuckDB; a test keeps them equal)
DATABASE_FILE = "straylight.duckdb"

# TurnMemory's coroutine methods: called before the open, they open it in a worker thread
# first (a test keeps this list complete).
OPENING_COROUTINES = frozenset(
    {
        "embed_texts",
        "embed_one",
        "embed_query",
        "recall_for_turn",
        "save_turn",
        "saved_points",
        "count_turn",
        "remember",
        "backfill",
        "ingest_doc",
    }
)


def database_exists(home: Path) -> bool:
    """Whether the data dir has its memory database (a stat; nothing imported or created)."""
    return (home / DATABASE_FILE).exists()


def empty_status(config: MemoryConfig) -> dict[str, Any]:
    """`MemoryStore.status()` of a store with no points (its fixed RAM estimate too)."""
    keys = ("total", "user", "assistant", "doc", "pinned", "without_vector")
    ram = ram_estimate_bytes(vectors=0, dim=0)
    return {
        "points": dict.fromkeys(keys, 0),
        "skips": {},
        "embed_requests": 0,
        "recall_failures": 0,
        "index": {"state": "in_sync", "size": 0},
        "embedding": {
            "model": config.embed_model,
            "dim": None,
            "changed_from": None,
            "to_embed": 0,
        },
        "ram_estimate_bytes": ram,
        "headroom": headroom(ram, config.ram_warn_bytes, config.ram_crit_bytes),
    }


def _on_event_loop() -> bool:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True


class MemoryOpening:
    """The real memory of one data dir, opened once, by the first caller that needs it."""

    def __init__(self, home: Path, opener: Callable[[], TurnMemory]) -> None:
        self.home = home
        self._opener = opener  # blocks (DuckDB's import, the schema); raises DatabaseError
        self._lock = threading.Lock()
        self._memory: TurnMemory | None = None

    @property
    def opened(self) -> bool:
        return self._memory is not None

    def reads_real(self) -> bool:
        """Reads go to the real store once it is open or its database exists."""
        return self._memory is not None or database_exists(self.home)

    def get(self) -> TurnMemory:
        """The real memory, opened now if it is not yet (concurrent callers wait for it)."""
        with self._lock:
            if self._memory is None:
                if _on_event_loop():  # a path that should have used a worker
                    log.warning("the deferred memory is being opened on the event loop")
                self._memory = self._opener()
            return self._memory


class _StandIn:
    """Answers its own reads; every other attribute is the real object's. A value (a name in
    `VALUES`) opens the memory when it is read; a method when it is called, so that
    `asyncio.to_thread(stand_in.method, …)` opens it in the worker, not on the event loop."""

    VALUES: frozenset[str] = frozenset()  # the real object's attributes that are not methods

    def __init__(self, opening: MemoryOpening) -> None:
        self._opening = opening

    def _real(self) -> Any:
        raise NotImplementedError

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__") or name == "_opening":  # copy/pickle probes, half-built
            raise AttributeError(name)
        if self._opening.opened or name in self.VALUES or name.startswith("_"):
            return getattr(self._real(), name)

        def opened_then(*args: Any, **kwargs: Any) -> Any:
            return getattr(self._real(), name)(*args, **kwargs)

        return opened_then


class DeferredStore(_StandIn):
    """`MemoryStore`'s reads as a fresh store answers them, until the real one is there."""

    VALUES = frozenset(
        {
            "db",
            "points",
            "filter",
            "lexical",
            "lexical_ready",
            "vectors",
            "pins",
            "space",
            "side",
            "rows",
            "ingesting",
        }
    )

    def __init__(self, opening: MemoryOpening, config: MemoryConfig) -> None:
        super().__init__(opening)
        self.home = opening.home
        self.config = config
        self.read_only = False

    def _real(self) -> MemoryStore:
        return self._opening.get().store

    @property
    def embed_dim(self) -> int | None:
        return self._real().embed_dim if self._opening.reads_real() else None

    def status(self) -> dict[str, Any]:
        return self._real().status() if self._opening.reads_real() else empty_status(self.config)

    def recall(self, query: str, **options: Any) -> RecallResult:
        if self._opening.reads_real():
            return self._real().recall(query, **options)
        from memory.recall_block import RecallResult

        return RecallResult([], "")

    def texts_of(self, ids: Sequence[int]) -> dict[int, str]:
        return self._real().texts_of(ids) if self._opening.reads_real() else {}

    def ids_to_embed(self) -> list[int]:
        return self._real().ids_to_embed() if self._opening.reads_real() else []

    def wait_until_ready(self, timeout: float | None = None) -> None:
        if self._opening.opened:
            self._real().wait_until_ready(timeout)


class DeferredFacts(_StandIn):
    """`FactDrawer`'s counts and pending candidates as an empty drawer answers them."""

    VALUES = frozenset({"db", "store", "ranking"})

    def __init__(self, opening: MemoryOpening, workspace: str, config: FactsConfig) -> None:
        super().__init__(opening)
        self.workspace = workspace
        self.config = config

    def _real(self) -> FactDrawer:
        facts = self._opening.get().facts
        if facts is None:  # the opener always gives the memory a drawer
            raise RuntimeError("the opened memory has no fact drawer")
        return facts

    def counts(self) -> dict[str, int]:
        if self._opening.reads_real():
            return self._real().counts()
        return {"active": 0, "stale": 0, "retired": 0}

    def pending(self) -> list[Any]:
        return self._real().pending() if self._opening.reads_real() else []


class _NoCards(_StandIn):
    """`Hypotheses`' counts as an empty data dir answers them."""

    VALUES = frozenset({"db", "drawer", "store", "workspace"})

    def _real(self) -> Hypotheses:
        return self._opening.get().hypotheses

    def counts(self, now: datetime) -> dict[str, int]:
        return self._real().counts(now) if self._opening.reads_real() else {"open": 0, "overdue": 0}


class DeferredMemory(_StandIn):
    """`TurnMemory` on a data dir with no database yet (see the module's docstring)."""

    VALUES = frozenset({"channel", "embed", "job_runs"})

    def __init__(
        self,
        home: Path,
        config: MemoryConfig,
        workspace: str,
        facts_config: FactsConfig,
        opener: Callable[[], TurnMemory],
    ) -> None:
        super().__init__(MemoryOpening(home, opener))
        self.store = DeferredStore(self._opening, config)
        self.facts = DeferredFacts(self._opening, workspace, facts_config)
        self.opening_started = False  # someone asked for it ahead (the app, as typing starts)

    def _real(self) -> TurnMemory:
        return self._opening.get()

    @property
    def opened(self) -> bool:
        return self._opening.opened

    def open(self) -> TurnMemory:
        """The real memory, opened now if it is not yet (blocks: call it in a worker)."""
        return self._opening.get()

    def as_turn_memory(self) -> TurnMemory:
        """This stand-in where a `TurnMemory` is expected (it has its API)."""
        return cast("TurnMemory", self)

    @property
    def hypotheses(self) -> Hypotheses:
        if self._opening.reads_real():
            return self._real().hypotheses
        return cast("Hypotheses", _NoCards(self._opening))

    @property
    def embed_problem(self) -> str | None:
        return self._real().embed_problem if self._opening.opened else None

    def __getattr__(self, name: str) -> Any:
        if name in OPENING_COROUTINES and not self._opening.opened:
            opening = self._opening

            async def opened_first(*args: Any, **kwargs: Any) -> Any:
                memory = await asyncio.to_thread(opening.get)
                return await getattr(memory, name)(*args, **kwargs)

            return opened_first
        return super().__getattr__(name)


async def opened_memory(memory: TurnMemory) -> TurnMemory:
    """The real memory behind `memory` (a stand-in is opened in a worker thread first)."""
    if isinstance(memory, DeferredMemory):
        return await asyncio.to_thread(memory.open)
    return memory
