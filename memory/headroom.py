"""What the memory costs in RAM, and whether that leaves headroom (`ok`, `warn`, `critical`).

The estimate is fitted on measured RSS growth (bench/memory_scale.py); `memory.memstatus_notice`
tells the user when the headroom gets worse.
"""

from __future__ import annotations

from typing import Literal

from store.vector_index import estimate_index_bytes

Headroom = Literal["ok", "warn", "critical"]

ENGINE_BYTES = 35 * 2**20  # DuckDB and usearch once loaded (measured: bench/memory_scale.py)
# The word index's flat-array mirror plus what DuckDB keeps after loading it and after reads
# of the tables (docs/memory-scale.md): fitted at 1k, 10k and 100k points, within 12 %.
LEXICAL_BASE_BYTES = 17 * 2**20
LEXICAL_DOC_BYTES = 560
LEXICAL_POSTING_BYTES = 16  # 10 in the mirror's arrays + DuckDB's share


def ram_estimate_bytes(
    *,
    vectors: int,
    dim: int,
    payload_bytes: int,
    lexical_docs: int = 0,
    lexical_postings: int = 0,
) -> int:
    """What the memory costs in RAM, fitted on measured RSS growth (bench/memory_scale.py):

    engine (35 MiB) + the usearch index (`estimate_index_bytes`: vectors × (dim × 2 + 16 ×
    2 × 4 + 140) + 512 KiB) + the word index (its in-memory mirror and DuckDB's cache of
    its tables: 17 MiB + 560 B a document + 16 B a posting) + the stored text (payload).
    Measured: 1.11 of the RSS growth at 1k points, 0.88 at 10k, 1.04–1.12 at 100k.
    """
    index = estimate_index_bytes(vectors, dim) if vectors and dim else 0
    lexical = 0
    if lexical_docs:
        lexical = (
            LEXICAL_BASE_BYTES
            + LEXICAL_DOC_BYTES * lexical_docs
            + LEXICAL_POSTING_BYTES * lexical_postings
        )
    engine = ENGINE_BYTES if vectors or lexical_docs else 0
    return engine + index + lexical + payload_bytes


def headroom(ram: int, warn: int, critical: int) -> Headroom:
    if ram >= critical:
        return "critical"
    if ram >= warn:
        return "warn"
    return "ok"
