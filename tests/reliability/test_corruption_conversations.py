"""Issue 7, part 2: a damaged `straylight.duckdb` and the conversations. They live in the
daily logs, which need no database (README: `history` still works), so `conversations` lists
them and `conversations export` writes them out, without what only the database kept (a set
title, a system prompt): one warning line names the damaged file, exit 0, and the file is
left byte for byte with nothing created in its place. Renaming one needs the database: the
damaged line, exit 1."""

from __future__ import annotations

import json
import random
from pathlib import Path

from tests.reliability import corruption_support
from tests.reliability.corruption_support import (
    SEED_QUESTION,
    SEED_REPLY,
    Env,
    data_dir_listing,
    run_cli,
    sha256,
)
from tests.support.cli import assert_one_line

# The shared fixtures: a seeded data dir per test and the env of its commands.
seed_template = corruption_support.seed_template
home = corruption_support.home
env = corruption_support.env


def _damage(home: Path) -> Path:
    database = home / "straylight.duckdb"
    database.write_bytes(random.Random(7).randbytes(database.stat().st_size))
    return database


def test_a_damaged_database_still_lists_and_exports_the_conversations(env: Env, home: Path) -> None:
    database = _damage(home)
    digest, listing = sha256(database), data_dir_listing(home)

    listed = run_cli(env, "conversations", "--json")
    assert_one_line(listed, 0, "warning", str(database), "damaged", "titles")
    [conversation] = json.loads(listed.stdout)
    assert conversation["messages"] == 2
    assert conversation["title"].startswith(SEED_QUESTION[:40])

    exported = run_cli(env, "conversations", "export", conversation["id"])
    assert_one_line(exported, 0, "warning", str(database), "damaged")
    assert SEED_QUESTION in exported.stdout and SEED_REPLY in exported.stdout

    renamed = run_cli(env, "conversations", "rename", conversation["id"], "Beacon")
    assert_one_line(renamed, 1, str(database), "damaged", "left untouched")
    assert sha256(database) == digest
    assert data_dir_listing(home) - {"conversation-index.json"} == listing
