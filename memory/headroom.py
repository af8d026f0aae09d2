"""What the memory costs in RAM, and whether that leaves headroom (`ok`, `warn`, `critical`).

The estimate is fitted on measured RSS growth (bench/memory_scale.py); `memory.memstatus_notice`
tells the user when the headroom gets worse.
"""

from __future__ import annotations

from typing import Literal

Headroom = Literal["ok", "warn", "critical"]

ENGINE_BYTES = 35 * 2**20  # DuckDB and usearch once loaded (measured: bench/memory_scale.py)
# The word index's share: its in-memory mirror plus what DuckDB keeps of the tables after
# loading it and after reads (docs/memory-scale.md, "Refitting the estimate"). Refit these
# three after a change to the word index. A posting: `lexical.idx` holds 6 B of it that
# recalls read (its slot and tf; the rest of the file is handed back after the open's check),
# of which a memory in use keeps only part resident (at 1M, the query words' lists) — hence
# 4 B. Refitted in the sixth session, without the stored text (docs/memory-scale.md,
# "Refit without the text"): the smallest worst error over two `just scaling` runs, after 5
# recalls and in use, at 1k-1M points (13 %); the base lowered by 2 MiB in the seventh, when
# the first open stopped leaving glibc's heap behind (11 %, "Seventh session").
LEXICAL_BASE_BYTES = 21 * 2**20
LEXICAL_DOC_BYTES = 220
LEXICAL_POSTING_BYTES = 4

FIXED_BYTES = ENGINE_BYTES + LEXICAL_BASE_BYTES  # an open memory, before its first point


def ram_estimate_bytes(
    *,
    vectors: int,
    dim: int,
    lexical_docs: int = 0,
    lexical_postings: int = 0,
) -> int:
    """What the memory costs in RAM, fitted on measured RSS growth (bench/memory_scale.py):
    a fixed cost paid by an open memory, empty or not, plus a cost per point.

    Fixed: the engine (DuckDB and usearch, 35 MiB) and the word index's base (its in-memory
    arrays and what DuckDB keeps of its tables, 21 MiB). Per point: the usearch index
    (`estimate_index_bytes`: vectors × (dim × 2 + 16 × 2 × 4 + 140) + 512 KiB), 220 B a
    document + 4 B a posting in the word index. The stored text is not counted: it stays in
    DuckDB's file, and DuckDB keeps only the blocks recalls read (counting all of it read
    ×1.20 at 1M). Against the RSS growth after the open and 5 recalls, and of a memory in
    use (then 200 recalls), in the seventh session's runs: ×1.07–1.11 at 1k points,
    ×1.00–1.04 at 10k, ×0.97–0.99 at 100k, ×0.98–1.10 at 1M (docs/memory-scale.md,
    "Seventh session"). An empty store used to read ~0 and jump by the whole fixed cost at its first
    point (issue 16).
    """
    index = 0
    if vectors and dim:  # numpy: not on the settings' path, nor an empty memory's
        from store.vector_index import estimate_index_bytes

        index = estimate_index_bytes(vectors, dim)
    lexical = LEXICAL_DOC_BYTES * lexical_docs + LEXICAL_POSTING_BYTES * lexical_postings
    return FIXED_BYTES + index + lexical


def crossed_lines_problem(warn_bytes: int, crit_bytes: int) -> str | None:
    """Why a critical line below the warn line makes no sense, or None when it does not."""
    if crit_bytes < warn_bytes:
        return (
            f"memory_ram_crit_bytes ({crit_bytes}) is below memory_ram_warn_bytes "
            f"({warn_bytes}): the critical line must be at or above the warn line"
        )
    return None


def headroom(ram: int, warn: int, critical: int) -> Headroom:
    """The level of `ram` against the two lines; critical wins when both are crossed."""
    if ram >= critical:
        return "critical"
    if ram >= warn:
        return "warn"
    return "ok"
