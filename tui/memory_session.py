"""Open layer 3 for one process: the data-dir lock, the database, the embedder.

Used by the headless commands and by the TUI (which opens it in a worker after the first
frame). Errors are one line: `DataDirLocked` (another process owns the data dir) and
`store.database.DatabaseError` (a damaged or too-new database, named with a hint).

One store per data dir and process: a session opened while this process has the memory of
that data dir open already (a command the owner runs for another process, a `CommandRunner`
run beside the MCP server's own) BORROWS the open store, with its own fact drawer (its
workspace) and embedder. The store is closed, and the lock the first session took released,
when the last session using it closes (`open_store` finds it meanwhile).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from agent.ollama_gateway import OllamaGateway
from agent.settings import Settings
from agent.workspace import resolve_workspace
from memory.embed_failure import EmbeddingFailed
from memory.fact_drawer import FactDrawer
from memory.memory_store import MemoryStore
from memory.turn_memory import TurnMemory
from store.data_dir_lock import DataDirLock, held_here
from tui.cli_output import one_line


@dataclass
class _OpenStore:
    store: MemoryStore
    lock: DataDirLock | None
    users: int = 1


_open_stores: dict[str, _OpenStore] = {}  # real path of a data dir -> its store, open here
_open_guard = threading.RLock()  # one opening or closing at a time


def open_store(home: Path) -> MemoryStore | None:
    """The memory this process has open for `home` (it owns the data dir), if any."""
    with _open_guard:
        entry = _open_stores.get(os.path.realpath(home))
        return entry.store if entry is not None else None


def embedder_for(gateway: OllamaGateway, model: str):  # noqa: ANN201 - an EmbedFn
    """The `EmbedFn` of a memory: `gateway.embed` with `model`, every failure named for the
    notes (`EmbeddingFailed`): a model not pulled, a refused connection, a connect timeout,
    and a request that timed out (with the model, the host and the setting to raise)."""

    async def embed(texts: Sequence[str]) -> list[list[float]]:
        from agent.gateway_errors import GatewayError, ModelTimeout, OllamaUnreachable

        try:
            return await gateway.embed(model, texts)
        except ModelTimeout as slow:
            raise EmbeddingFailed(
                f"embedding with {model} at {gateway.host} timed out after {slow.seconds:g} s "
                "(raise STRAYLIGHT_HTTP_TIMEOUT_SECONDS if it is just slow)"
            ) from slow
        except GatewayError as named:  # a model not pulled, Ollama down…: its own line
            reached = not isinstance(named, OllamaUnreachable)
            # Ollama's own words, repeated by every note: one line, no ESC sequence
            raise EmbeddingFailed(one_line(str(named)), reached=reached) from named

    return embed


@dataclass
class MemorySession:
    """`with MemorySession(settings, gateway) as memory:` — a `TurnMemory`, cleaned up after."""

    settings: Settings
    gateway: OllamaGateway
    take_lock: bool = True
    read_only: bool = False  # a reading command: no lock file, nothing written (issue 15 §5)
    channel: str = "tui"  # the points' channel: "cli" for a command, run here or by an owner
    store: MemoryStore | None = field(default=None, init=False)

    def open(self) -> TurnMemory:
        key = os.path.realpath(self.settings.home)
        with _open_guard:
            entry = _open_stores.get(key)
            if entry is not None:
                entry.users += 1
                self.store = entry.store
            elif self.read_only and not held_here(self.settings.home):  # its own read-only
                # store, never shared with a writer (an owner's reading session opens as above)
                # (whether another process owns the data dir was asked before, without
                # writing: tui/owner_client.py; DuckDB's own lock covers the rest)
                self.store = MemoryStore.open(
                    self.settings.home,
                    self.settings.memory,
                    clock=self.settings.clock,
                    read_only=True,
                )
            else:
                lock = DataDirLock(self.settings.home).acquire() if self.take_lock else None
                try:
                    store = MemoryStore.open(
                        self.settings.home, self.settings.memory, clock=self.settings.clock
                    )
                except BaseException:
                    if lock is not None:
                        lock.release()
                    raise
                entry = _open_stores[key] = _OpenStore(store, lock)
                self.store = entry.store
        facts = FactDrawer(
            self.store.db,
            resolve_workspace(self.settings.workspace),
            self.settings.facts,
        )
        return TurnMemory(
            self.store,
            # the store's model: a borrowed store keeps the owner's, and a vector of another
            # model (a client's STRAYLIGHT_EMBED_MODEL) would be filed as one of it
            embedder_for(self.gateway, self.store.config.embed_model),
            facts,
            channel=self.channel,
        )

    def close(self) -> None:
        if self.store is None:
            return
        store, self.store = self.store, None
        with _open_guard:
            key = os.path.realpath(self.settings.home)
            entry = _open_stores.get(key)
            if entry is None or entry.store is not store:  # (not registered: just close)
                store.close()
                return
            entry.users -= 1
            if entry.users > 0:
                return
            del _open_stores[key]
            try:
                store.close()
            finally:
                if entry.lock is not None:
                    entry.lock.release()

    def __enter__(self) -> TurnMemory:
        return self.open()

    def __exit__(self, *_exc: object) -> None:
        self.close()
