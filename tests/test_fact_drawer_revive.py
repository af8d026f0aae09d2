"""`FactDrawer.revive` (a retired or stale fact becomes active again, audited, decay starts
over), `retire`/`revive` by scope, and `history_of` one fact, on a real DuckDB file."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from memory.fact_drawer import FactDrawer
from store.clock import Clock
from store.database import open_database

T0 = datetime(2026, 6, 1, 12, 0, tzinfo=UTC)
WS = "/home/me/blyck"


def drawer_at(db_file: Path, when: datetime, workspace: str = WS) -> FactDrawer:
    return FactDrawer(open_database(db_file, clock=Clock(when)), workspace)


@pytest.fixture
def drawer(db_file: Path) -> Iterator[FactDrawer]:
    d = drawer_at(db_file, T0)
    yield d
    d.db.close()


def test_revive_makes_a_retired_fact_active_and_audits_it(drawer: FactDrawer) -> None:
    drawer.set("db:staging", "fact", "Staging runs Postgres 16.")
    drawer.retire("db:staging")
    [revived] = drawer.revive("db:staging")
    assert (revived.key, revived.status) == ("db:staging", "active")
    assert [f.status for f in drawer.list_facts()] == ["active"]
    last = drawer.history("db:staging")[-1]
    assert (last.event, last.reason) == ("fact_status", "revived by the user")
    assert (last.fact["status"], (last.previous or {})["status"]) == ("active", "retired")


def test_revive_of_a_stale_fact_restarts_decay(db_file: Path) -> None:
    early = drawer_at(db_file, T0)
    early.set("db:staging", "decision", "Staging runs Postgres 16.")
    early.db.close()
    later = drawer_at(db_file, T0 + timedelta(days=100))
    assert later.decay().stale == ["db:staging"]
    [revived] = later.revive("db:staging")
    assert revived.status == "active" and revived.last_seen == T0 + timedelta(days=100)
    assert later.decay().stale == []  # seen now: 90 days to go again
    later.db.close()


def test_revive_does_nothing_to_an_active_or_unknown_fact(drawer: FactDrawer) -> None:
    drawer.set("db:staging", "fact", "Staging runs Postgres 16.")
    before = len(drawer.history("db:staging"))
    assert drawer.revive("db:staging") == []
    assert drawer.revive("no:such") == []
    assert len(drawer.history("db:staging")) == before


def test_revive_is_not_a_write_so_undo_skips_it(drawer: FactDrawer) -> None:
    drawer.set("db:staging", "fact", "Staging runs Postgres 15.")
    drawer.set("db:staging", "fact", "Staging runs Postgres 16.")
    drawer.retire("db:staging")
    drawer.revive("db:staging")
    restored = drawer.undo("db:staging")
    assert restored is not None and restored.body == "Staging runs Postgres 15."


def test_undo_right_after_a_retire_brings_the_fact_back(drawer: FactDrawer) -> None:
    """A retire by mistake, then undo: the fact is active again with its body (before: the
    undo took back the last *write*, and a fact written once was deleted)."""
    drawer.set("db:staging", "fact", "Staging runs Postgres 16.")
    drawer.retire("db:staging")
    restored = drawer.undo("db:staging")
    assert restored is not None
    assert (restored.status, restored.body) == ("active", "Staging runs Postgres 16.")
    assert [f.status for f in drawer.get("db:staging")] == ["active"]
    assert drawer.history("db:staging")[-1].reason == "undo of the retirement"
    # the next undo is the write before, as always: a first write is removed
    assert drawer.undo("db:staging") is None and drawer.get("db:staging") == []


def test_scope_picks_the_global_fact_behind_a_workspace_one(drawer: FactDrawer) -> None:
    drawer.set("editor", "rule", "Use vim here.")
    drawer.set("editor", "rule", "Use any editor.", scope="global")
    [retired] = drawer.retire("editor", scope="global")
    assert (retired.scope, retired.status) == ("global", "retired")
    statuses = {(f.scope, f.status) for f in drawer.list_facts()}
    assert statuses == {("workspace", "active"), ("global", "retired")}
    assert drawer.revive("editor", scope="workspace") == []  # that one is active
    [revived] = drawer.revive("editor", scope="global")
    assert (revived.scope, revived.status) == ("global", "active")


def test_history_of_one_fact_leaves_out_its_namesakes(drawer: FactDrawer) -> None:
    local = drawer.set("editor", "rule", "Use vim here.")
    drawer.set("editor", "rule", "Use any editor.", scope="global")
    drawer.set("editor", "rule", "Use vim or nano here.")
    versions = drawer.history_of(local)
    assert [v.fact["body"] for v in versions] == ["Use vim here.", "Use vim or nano here."]
