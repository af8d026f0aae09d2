"""Open layer 3 for one process: the data-dir lock, the database, the embedder.

Used by the headless commands and by the TUI (which opens it in a worker after the first
frame). Errors are one line: `DataDirLocked` (another process owns the data dir) and
`store.database.DatabaseError` (a damaged or too-new database, named with a hint).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from agent.ollama_gateway import OllamaGateway
from agent.settings import Settings
from agent.workspace import resolve_workspace
from memory.fact_drawer import FactDrawer
from memory.memory_store import MemoryStore
from memory.turn_memory import TurnMemory
from store.data_dir_check import check_not_in_use
from store.data_dir_lock import DataDirLock


def embedder_for(gateway: OllamaGateway, model: str):  # noqa: ANN201 - an EmbedFn
    async def embed(texts: Sequence[str]) -> list[list[float]]:
        return await gateway.embed(model, texts)

    return embed


@dataclass
class MemorySession:
    """`with MemorySession(settings, gateway) as memory:` — a `TurnMemory`, cleaned up after."""

    settings: Settings
    gateway: OllamaGateway
    take_lock: bool = True
    read_only: bool = False  # a reading command: no lock file, nothing written (issue 15 §5)
    lock: DataDirLock | None = field(default=None, init=False)
    store: MemoryStore | None = field(default=None, init=False)

    def open(self) -> TurnMemory:
        if self.take_lock and self.read_only:  # in use? asked without writing the lock file
            check_not_in_use(self.settings.home)
        elif self.take_lock:
            self.lock = DataDirLock(self.settings.home).acquire()
        try:
            self.store = MemoryStore.open(
                self.settings.home,
                self.settings.memory,
                clock=self.settings.clock,
                read_only=self.read_only,
            )
        except BaseException:
            self.close()
            raise
        facts = FactDrawer(
            self.store.db,
            resolve_workspace(self.settings.workspace),
            self.settings.facts,
        )
        return TurnMemory(
            self.store, embedder_for(self.gateway, self.settings.memory.embed_model), facts
        )

    def close(self) -> None:
        if self.store is not None:
            store, self.store = self.store, None
            store.close()
        if self.lock is not None:
            lock, self.lock = self.lock, None
            lock.release()

    def __enter__(self) -> TurnMemory:
        return self.open()

    def __exit__(self, *_exc: object) -> None:
        self.close()
