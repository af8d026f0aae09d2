"""The DuckDB schema of `straylight.duckdb`, as numbered migration steps.

Each step upgrades the database by exactly one version and never changes once released:
a new need is a new step appended at the end. `schema_version` holds one row per applied
step. Tests open an empty file and a file at every earlier version and upgrade it.
"""

from __future__ import annotations

from collections.abc import Sequence

MIGRATIONS: Sequence[tuple[str, ...]] = (
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
)

SCHEMA_VERSION = len(MIGRATIONS)

VERSION_TABLE = (
    "CREATE TABLE IF NOT EXISTS schema_version "
    "(version INTEGER PRIMARY KEY, applied_at TIMESTAMPTZ NOT NULL)"
)
