"""The DuckDB schema of `straylight.duckdb`, as numbered migration steps.

Each step upgrades the database by exactly one version and never changes once released:
a new need is a new step appended at the end. `schema_version` holds one row per applied
step. Tests open an empty file and a file at every earlier version and upgrade it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import duckdb
import numpy as np

Statement = str | Callable[[duckdb.DuckDBPyConnection], None]
"""One statement of a step: SQL, or a function for what SQL cannot say (data conversion)."""

VECTOR_COPY_BATCH = 5_000


def _vectors_to_blobs(con: duckdb.DuckDBPyConnection) -> None:
    """v2: copy every `FLOAT[]` embedding into the new BLOB column as float32 bytes."""
    after = -1
    while True:
        columns = con.execute(
            "SELECT id, embedding FROM points WHERE embedding IS NOT NULL AND id > ? "
            "ORDER BY id LIMIT ?",
            [after, VECTOR_COPY_BATCH],
        ).fetchnumpy()
        ids = np.asarray(columns["id"], dtype=np.int64)
        if not len(ids):
            return
        blobs = np.empty(len(ids), dtype=object)
        for row, values in enumerate(columns["embedding"]):
            blobs[row] = np.asarray(values, dtype=np.float32).tobytes()
        con.register("straylight_blobs", {"id": ids, "blob": blobs})
        try:
            con.execute(
                "UPDATE points SET vector_blob = b.blob FROM straylight_blobs AS b "
                "WHERE points.id = b.id"
            )
        finally:
            con.unregister("straylight_blobs")
        after = int(ids[-1])


def run_statement(con: duckdb.DuckDBPyConnection, statement: Statement) -> None:
    """Execute one statement of a migration step on `con` (inside the step's transaction)."""
    if isinstance(statement, str):
        con.execute(statement)
    else:
        statement(con)


MIGRATIONS: Sequence[tuple[Statement, ...]] = (
    # 1 — layer 3: points with their vectors, the audit trail, the lexical index, key/value meta.
    (
        "CREATE SEQUENCE point_id_seq START 1",
        """
        CREATE TABLE points (
            id BIGINT PRIMARY KEY DEFAULT nextval('point_id_seq'),
            role VARCHAR NOT NULL CHECK (role IN ('user', 'assistant', 'doc')),
            content VARCHAR NOT NULL,
            conversation_id VARCHAR NOT NULL DEFAULT '',
            channel VARCHAR NOT NULL DEFAULT 'tui',
            pinned BOOLEAN NOT NULL DEFAULT FALSE,
            tags VARCHAR[] NOT NULL DEFAULT [],
            source VARCHAR NOT NULL,
            content_hash VARCHAR NOT NULL,
            created_at TIMESTAMPTZ NOT NULL,
            embedding FLOAT[],
            embed_model VARCHAR
        )
        """,
        "CREATE INDEX points_source_idx ON points (source)",
        "CREATE SEQUENCE audit_id_seq START 1",
        """
        CREATE TABLE audit (
            id BIGINT PRIMARY KEY DEFAULT nextval('audit_id_seq'),
            "at" TIMESTAMPTZ NOT NULL,  -- quoted: AT is a reserved word in DuckDB 2.0
            event VARCHAR NOT NULL,
            point_id BIGINT,
            rule VARCHAR,
            reason VARCHAR,
            detail VARCHAR
        )
        """,
        """
        CREATE TABLE lexical_postings (
            term VARCHAR NOT NULL,
            point_id BIGINT NOT NULL,
            tf INTEGER NOT NULL,
            PRIMARY KEY (term, point_id)
        )
        """,
        "CREATE TABLE lexical_docs (point_id BIGINT PRIMARY KEY, length INTEGER NOT NULL)",
        "CREATE TABLE meta (key VARCHAR PRIMARY KEY, value VARCHAR NOT NULL)",
    ),
    # 2 — a cheaper save (bench/memory_scale.py, 100k points: save p95 8.9 ms before).
    # * Embeddings as BLOB (little-endian float32 bytes) instead of FLOAT[]: DuckDB 2.0.1
    #   writes a commit record that grows with every earlier commit for a variable-length
    #   list column; a BLOB does not.
    # * No index on points.source: the only query on it is `starts_with`, which no ART
    #   index serves, so it only cost every insert.
    # * No primary key on lexical_postings: DuckDB uses no index for `term = ?` on it, and
    #   (term, point_id) is unique by construction (one row per distinct term of a point);
    #   the key cost every save an ART insert per term and ~27 MB of RAM at 100k points.
    (
        "DROP INDEX points_source_idx",
        "ALTER TABLE points ADD COLUMN vector_blob BLOB",
        _vectors_to_blobs,
        "ALTER TABLE points DROP COLUMN embedding",
        "ALTER TABLE points RENAME COLUMN vector_blob TO embedding",
        """
        CREATE TABLE lexical_postings_v2 (
            term VARCHAR NOT NULL,
            point_id BIGINT NOT NULL,
            tf INTEGER NOT NULL
        )
        """,
        "INSERT INTO lexical_postings_v2 SELECT term, point_id, tf FROM lexical_postings",
        "DROP TABLE lexical_postings",
        "ALTER TABLE lexical_postings_v2 RENAME TO lexical_postings",
    ),
    # 3 — layer 4, the fact drawer: facts (unique per scope, workspace and key) and the
    # candidates waiting at the approval gate. Every version of a fact is an audit row
    # (`fact_key` + the whole version as JSON in `detail`).
    (
        "CREATE SEQUENCE fact_id_seq START 1",
        """
        CREATE TABLE facts (
            id BIGINT PRIMARY KEY DEFAULT nextval('fact_id_seq'),
            type VARCHAR NOT NULL
                CHECK (type IN ('capability', 'decision', 'rule', 'procedure', 'fact')),
            scope VARCHAR NOT NULL CHECK (scope IN ('workspace', 'global')),
            workspace VARCHAR NOT NULL DEFAULT '',
            key VARCHAR NOT NULL,
            body VARCHAR NOT NULL,
            confidence DOUBLE NOT NULL CHECK (confidence >= 0 AND confidence <= 1),
            proof VARCHAR NOT NULL DEFAULT '',
            status VARCHAR NOT NULL CHECK (status IN ('active', 'stale', 'retired')),
            source VARCHAR NOT NULL,
            created_at TIMESTAMPTZ NOT NULL,
            updated_at TIMESTAMPTZ NOT NULL,
            last_seen TIMESTAMPTZ NOT NULL,
            last_verified TIMESTAMPTZ,
            requires VARCHAR[] NOT NULL DEFAULT [],
            embedding BLOB,
            embed_model VARCHAR,
            UNIQUE (scope, workspace, key)
        )
        """,
        "CREATE SEQUENCE candidate_id_seq START 1",
        """
        CREATE TABLE candidates (
            id BIGINT PRIMARY KEY DEFAULT nextval('candidate_id_seq'),
            type VARCHAR NOT NULL,
            scope VARCHAR NOT NULL,
            workspace VARCHAR NOT NULL DEFAULT '',
            key VARCHAR NOT NULL,
            body VARCHAR NOT NULL,
            proof VARCHAR NOT NULL DEFAULT '',
            confidence DOUBLE NOT NULL,
            source VARCHAR NOT NULL,
            origin VARCHAR NOT NULL CHECK (origin IN ('tool', 'promotion', 'reflection')),
            requires VARCHAR[] NOT NULL DEFAULT [],
            status VARCHAR NOT NULL DEFAULT 'pending'
                CHECK (status IN ('pending', 'approved', 'rejected')),
            conversation_id VARCHAR NOT NULL DEFAULT '',
            created_at TIMESTAMPTZ NOT NULL,
            decided_at TIMESTAMPTZ
        )
        """,
        "ALTER TABLE audit ADD COLUMN fact_key VARCHAR",
    ),
    # 4 — background jobs: each job's last run (catch-up after downtime), hypothesis cards of
    # the dream run, and seed 003's confidence bookkeeping (how many 30-day periods without
    # verification were already charged) for facts and pinned points.
    (
        """
        CREATE TABLE job_runs (
            name VARCHAR PRIMARY KEY,
            last_run TIMESTAMPTZ NOT NULL,
            status VARCHAR NOT NULL CHECK (status IN ('ok', 'error', 'skipped')),
            result VARCHAR NOT NULL DEFAULT ''
        )
        """,
        "CREATE SEQUENCE hypothesis_id_seq START 1",
        """
        CREATE TABLE hypotheses (
            id BIGINT PRIMARY KEY DEFAULT nextval('hypothesis_id_seq'),
            statement VARCHAR NOT NULL,
            source_ids VARCHAR[] NOT NULL,
            prediction VARCHAR NOT NULL,
            measurement VARCHAR NOT NULL,
            confidence DOUBLE NOT NULL,
            source VARCHAR NOT NULL DEFAULT 'generated-hypothesis',
            status VARCHAR NOT NULL DEFAULT 'open'
                CHECK (status IN ('open', 'validated', 'refuted', 'deleted')),
            workspace VARCHAR NOT NULL DEFAULT '',
            created_at TIMESTAMPTZ NOT NULL,
            due_at TIMESTAMPTZ NOT NULL,
            decided_at TIMESTAMPTZ,
            last_alerted DATE
        )
        """,
        "ALTER TABLE facts ADD COLUMN decay_periods INTEGER DEFAULT 0",
        # a validated hypothesis proposes a fact: one more candidate origin
        """
        CREATE TABLE candidates_v4 (
            id BIGINT PRIMARY KEY DEFAULT nextval('candidate_id_seq'),
            type VARCHAR NOT NULL,
            scope VARCHAR NOT NULL,
            workspace VARCHAR NOT NULL DEFAULT '',
            key VARCHAR NOT NULL,
            body VARCHAR NOT NULL,
            proof VARCHAR NOT NULL DEFAULT '',
            confidence DOUBLE NOT NULL,
            source VARCHAR NOT NULL,
            origin VARCHAR NOT NULL
                CHECK (origin IN ('tool', 'promotion', 'reflection', 'hypothesis')),
            requires VARCHAR[] NOT NULL DEFAULT [],
            status VARCHAR NOT NULL DEFAULT 'pending'
                CHECK (status IN ('pending', 'approved', 'rejected')),
            conversation_id VARCHAR NOT NULL DEFAULT '',
            created_at TIMESTAMPTZ NOT NULL,
            decided_at TIMESTAMPTZ
        )
        """,
        "INSERT INTO candidates_v4 SELECT * FROM candidates",
        "DROP TABLE candidates",
        "ALTER TABLE candidates_v4 RENAME TO candidates",
        """
        CREATE TABLE point_confidence (
            point_id BIGINT PRIMARY KEY,
            confidence DOUBLE NOT NULL,
            last_verified TIMESTAMPTZ NOT NULL,
            decay_periods INTEGER NOT NULL DEFAULT 0
        )
        """,
    ),
    # 5 — conversations you manage (issue 16): a title and a system prompt per conversation id.
    # The daily logs stay the source of the messages; this holds only what a user sets.
    (
        """
        CREATE TABLE conversations (
            id VARCHAR PRIMARY KEY,
            title VARCHAR,
            system_prompt VARCHAR,
            updated_at TIMESTAMPTZ NOT NULL
        )
        """,
    ),
    # 6 — other clients propose facts too: a candidate's origin names any proposer
    # (`mcp:claude-code` from `straylight mcp`, `cli` or `--origin` from `candidates propose`),
    # not only Straylight's own four; it stays a non-empty label.
    (
        """
        CREATE TABLE candidates_v6 (
            id BIGINT PRIMARY KEY DEFAULT nextval('candidate_id_seq'),
            type VARCHAR NOT NULL,
            scope VARCHAR NOT NULL,
            workspace VARCHAR NOT NULL DEFAULT '',
            key VARCHAR NOT NULL,
            body VARCHAR NOT NULL,
            proof VARCHAR NOT NULL DEFAULT '',
            confidence DOUBLE NOT NULL,
            source VARCHAR NOT NULL,
            origin VARCHAR NOT NULL CHECK (length(origin) > 0),
            requires VARCHAR[] NOT NULL DEFAULT [],
            status VARCHAR NOT NULL DEFAULT 'pending'
                CHECK (status IN ('pending', 'approved', 'rejected')),
            conversation_id VARCHAR NOT NULL DEFAULT '',
            created_at TIMESTAMPTZ NOT NULL,
            decided_at TIMESTAMPTZ
        )
        """,
        "INSERT INTO candidates_v6 SELECT * FROM candidates",
        "DROP TABLE candidates",
        "ALTER TABLE candidates_v6 RENAME TO candidates",
    ),
    # 7 — the learned re-rank's traits of a point beside its length (issue 17, eighth round;
    # `store.point_traits`): its content words, its day, the kinds of answer it holds. NULL
    # for the points indexed before: the store's open fills them (`MemoryStore` re-indexes).
    (
        "ALTER TABLE lexical_docs ADD COLUMN words USMALLINT",
        "ALTER TABLE lexical_docs ADD COLUMN day INTEGER",
        "ALTER TABLE lexical_docs ADD COLUMN answers UTINYINT",
    ),
    # 8 — who speaks a point, a trait of the learned re-rank beside the others (issue 17,
    # tenth round; `store.point_traits`): a 16-bit hash of the "Name: " its content starts
    # with, 0 for none. NULL for the points indexed before: the store's open fills them.
    ("ALTER TABLE lexical_docs ADD COLUMN speaker USMALLINT",),
)

SCHEMA_VERSION = len(MIGRATIONS)

VERSION_TABLE = (
    "CREATE TABLE IF NOT EXISTS schema_version "
    "(version INTEGER PRIMARY KEY, applied_at TIMESTAMPTZ NOT NULL)"
)
