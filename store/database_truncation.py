"""A database file cut short: DuckDB opens it without complaint and fails only when a query
reaches a missing block, so `open_database` compares the file's size with what its header
declares (3 header blocks of 4 KiB + `total_blocks` × `block_size`), and when the file is
shorter (DuckDB drops trailing free blocks), checks that the blocks known to be in use lie
inside it."""

from __future__ import annotations

from pathlib import Path

import duckdb

from store.database_errors import CorruptDatabase, file_size

_HEADER_BYTES = 3 * 4096


def _block_counts(con: duckdb.DuckDBPyConnection) -> tuple[int, int, int]:
    """(block size, blocks the header counts, of which free)."""
    rows = con.execute(
        "SELECT block_size, total_blocks, free_blocks FROM pragma_database_size() "
        "WHERE database_name = current_database()"
    ).fetchall()
    block_size, total_blocks, free_blocks = (int(value) for value in rows[0])
    return block_size, total_blocks, free_blocks


def _highest_used_block(con: duckdb.DuckDBPyConnection) -> int:
    """The highest block id any table segment or metadata block lives in (-1 if none)."""
    tables = con.execute(
        "SELECT schema_name, table_name FROM duckdb_tables() "
        "WHERE database_name = current_database()"
    ).fetchall()
    highest = con.execute("SELECT coalesce(max(block_id), -1) FROM pragma_metadata_info()")
    result = int(highest.fetchall()[0][0])
    for schema, table in tables:
        qualified = '"{}"."{}"'.format(schema.replace('"', '""'), table.replace('"', '""'))
        rows = con.execute(
            "SELECT max(greatest(block_id, list_max(additional_block_ids))) "
            "FROM pragma_storage_info(?) WHERE persistent",
            [qualified],
        ).fetchall()
        if rows[0][0] is not None:
            result = max(result, int(rows[0][0]))
    return result


def check_complete(con: duckdb.DuckDBPyConnection, path: Path) -> None:
    """Refuse a file cut short: every block in use must lie inside the file.

    DuckDB drops trailing free blocks from the file, so a healthy file may be shorter than
    its header's block count. Only then is a lower bound of the blocks needed worked out:
    the highest block a table segment or metadata uses (index blocks are not listed), and
    the number of used blocks (they all lie inside a healthy file).
    """
    block_size, total_blocks, free_blocks = _block_counts(con)
    actual = file_size(path)
    if actual >= _HEADER_BYTES + block_size * total_blocks:
        return
    blocks = max(_highest_used_block(con) + 1, total_blocks - free_blocks)
    needed = _HEADER_BYTES + block_size * blocks
    if actual < needed:
        raise CorruptDatabase(path, f"truncated: {actual} bytes, blocks in use need {needed}")
