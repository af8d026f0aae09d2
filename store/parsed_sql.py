"""SQL parsed once per process: DuckDB runs a parsed `Statement` again with new parameters.

`cursor.execute(text, params)` parses the text on every call; `cursor.execute(statement,
params)` runs a copy of an already parsed one (binding and planning still happen each time:
a SQL `PREPARE` cannot take Python's parameters). For the save's one statement (the point,
its audit row and its ~50 word rows, `store.point_store`) the parse was ~0.5 ms of ~3 ms of
DuckDB's CPU at 100k points (docs/save-latency.md, "Twelfth session").
"""

from __future__ import annotations

import duckdb

__all__ = ["parsed"]

_parsed: dict[str, duckdb.Statement] = {}


def parsed(cur: duckdb.DuckDBPyConnection, sql: str) -> duckdb.Statement:
    """`sql` (one statement) parsed, from the process's cache after the first call; a
    statement holds no connection, so any cursor may run it."""
    statement = _parsed.get(sql)
    if statement is None:
        [statement] = cur.extract_statements(sql)
        _parsed[sql] = statement  # (two threads parsing it at once store equal statements)
    return statement
