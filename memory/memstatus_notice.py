"""Memory-headroom notices that never nag.

The `memstatus` job looks at `MemoryStore.status()` every `MEMORY_STATUS_EVERY_N` turns and
every ten minutes. When the headroom is `warn` or `critical` the user hears about it once, in
a dry, short line; the same level is never announced twice in a row. A notice fires when the
level *escalates* past the last one announced (ok → warn, warn → critical, ok → critical), or
when it worsens again after having been back at `ok`:

    ok → warn → warn → critical → warn → critical → ok → warn
         ^warn         ^critical                         ^warn

(`critical → warn → critical` stays quiet: only a return to ok re-arms a notice.)

`next_announcement` is the pure rule; the last announced level survives restarts in the
`meta` table (`memstatus.last_announced`), as does the number of turns since the job last ran
(`memstatus.turns_since`: `count_turn` after each turn, `reset_turns` when the job runs).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Literal, get_args

from store import meta

if TYPE_CHECKING:  # keep duckdb off the import path of the TUI entry
    from store.database import Database

Level = Literal["ok", "warn", "critical"]
LEVELS: tuple[Level, ...] = get_args(Level)
SEVERITY: dict[Level, int] = {"ok": 0, "warn": 1, "critical": 2}

META_LAST_ANNOUNCED = "memstatus.last_announced"
META_TURNS_SINCE = "memstatus.turns_since"

_MIB = 2**20


def next_announcement(last_announced: Level, level: Level) -> tuple[Level | None, Level]:
    """(the level to announce or None, the new last announced level).

    * `level` ok: nothing to say; the last announced level becomes ok (re-arms the notices);
    * `level` more severe than `last_announced`: announce it, and it becomes the last;
    * otherwise (as severe or milder, but not ok): stay quiet, remember the worse one.
    """
    if level == "ok":
        return None, "ok"
    if SEVERITY[level] > SEVERITY[last_announced]:
        return level, level
    return None, last_announced


def format_size(size_bytes: int) -> str:
    """`314572800` → `300 MiB`; below 10 MiB one decimal (`1.5 MiB`), below 1 MiB in KiB,
    below 1 KiB in bytes (tiny thresholds in tests and odd configurations)."""
    if size_bytes < 1024:
        return f"{size_bytes} B"
    if size_bytes < _MIB:
        return f"{size_bytes / 1024:.0f} KiB"
    mib = size_bytes / _MIB
    return f"{mib:.0f} MiB" if mib >= 10 else f"{mib:.1f} MiB"


def notice_text(
    level: Level, status: Mapping[str, Any], *, warn_bytes: int, crit_bytes: int
) -> str:
    """The one-line notice for a warn or critical headroom (`status` is `MemoryStore.status()`,
    of which `ram_estimate_bytes` is read). Raises ValueError for `ok`: there is nothing to say.
    """
    ram = format_size(int(status["ram_estimate_bytes"]))
    if level == "warn":
        return (
            f"Memory is at {ram}, past the warn line ({format_size(warn_bytes)}). "
            "/memstatus (straylight status) shows where it goes."
        )
    if level == "critical":
        return (
            f"Memory is at {ram}, past the critical line ({format_size(crit_bytes)}): "
            "forget or retire what you no longer need."
        )
    raise ValueError(f"no notice for headroom {level!r}")


# ---- persistence in `meta` ----------------------------------------------------------------


def _as_level(value: str | None) -> Level:
    for level in LEVELS:
        if value == level:
            return level
    return "ok"  # missing or unreadable: nothing was announced


def load_last_announced(db: Database) -> Level:
    """The last announced level (ok when none was, or the stored value is unreadable)."""
    with db.cursor() as cur:
        return _as_level(meta.get(cur, META_LAST_ANNOUNCED))


def save_last_announced(db: Database, level: Level) -> None:
    if level not in SEVERITY:
        raise ValueError(f"unknown headroom level {level!r}")
    with db.transaction() as cur:
        meta.put(cur, META_LAST_ANNOUNCED, level)


def count_turn(db: Database) -> int:
    """Count one more turn since the memstatus job last ran; return the new count."""
    with db.transaction() as cur:
        return meta.bump(cur, META_TURNS_SINCE)


def turns_since(db: Database) -> int:
    """Turns counted since the memstatus job last ran (0 when none)."""
    with db.cursor() as cur:
        return meta.get_int(cur, META_TURNS_SINCE) or 0


def reset_turns(db: Database) -> None:
    """The job ran: start counting turns from 0 again."""
    with db.transaction() as cur:
        meta.put(cur, META_TURNS_SINCE, "0")


def announce(
    db: Database,
    level: Level,
    status: Mapping[str, Any],
    *,
    warn_bytes: int,
    crit_bytes: int,
) -> str | None:
    """Decide and remember in one transaction: the notice for `level`, or None to stay quiet."""
    if level not in SEVERITY:
        raise ValueError(f"unknown headroom level {level!r}")
    with db.transaction() as cur:
        stored = meta.get(cur, META_LAST_ANNOUNCED)
        last = _as_level(stored)
        said, remembered = next_announcement(last, level)
        if remembered != last or stored is None:
            meta.put(cur, META_LAST_ANNOUNCED, remembered)
    if said is None:
        return None
    return notice_text(said, status, warn_bytes=warn_bytes, crit_bytes=crit_bytes)
