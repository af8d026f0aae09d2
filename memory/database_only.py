"""The database opened alone, without the vector or word index: for the commands that need
only the fact drawer or the conversations' records, quick on a big store. The caller holds
the data-dir lock for a write; `read_only` opens it in DuckDB's read-only mode."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from memory.fact_drawer import FactDrawer
from memory.settings_models import FactsConfig
from store.clock import Clock
from store.conversation_store import ConversationStore
from store.database import database_path, open_database


@contextmanager
def opened_fact_drawer(
    home: Path, clock: Clock, workspace: str, config: FactsConfig, *, read_only: bool = False
) -> Iterator[FactDrawer]:
    """The fact drawer of `workspace` over the data dir's database, closed afterwards."""
    db = open_database(database_path(home), clock=clock, read_only=read_only)
    try:
        yield FactDrawer(db, workspace, config)
    finally:
        db.close()


@contextmanager
def read_conversation_records(home: Path, clock: Clock) -> Iterator[ConversationStore]:
    """The conversations' records (titles, system prompts) for reading (`get`, `all`), the
    database opened read-only: no lock file, nothing written."""
    db = open_database(database_path(home), clock=clock, read_only=True)
    try:
        yield ConversationStore(db)
    finally:
        db.close()
