"""The RAM estimate: a fixed cost for an open memory plus a cost per point (issue 16)."""

from __future__ import annotations

from memory.headroom import FIXED_BYTES, crossed_lines_problem, headroom, ram_estimate_bytes

MIB = 2**20


def test_an_empty_store_costs_the_fixed_part_and_one_point_little_more() -> None:
    empty = ram_estimate_bytes(vectors=0, dim=0)
    one = ram_estimate_bytes(vectors=1, dim=768, lexical_docs=1, lexical_postings=20)
    assert empty == FIXED_BYTES and empty > 50 * MIB  # not ~0.0 MiB
    assert 0 < one - empty < 1 * MIB  # not a jump of ~64 MiB at the first point


def test_the_levels_and_crossed_lines() -> None:
    assert headroom(10, 20, 30) == "ok"
    assert headroom(20, 20, 30) == "warn"
    assert headroom(30, 20, 30) == "critical"
    assert headroom(5, 20, 1) == "critical"  # a crit line alone below warn forces critical
    assert crossed_lines_problem(20, 30) is None and crossed_lines_problem(20, 20) is None
    assert "below" in (crossed_lines_problem(30, 20) or "")
