"""What the context budget keeps across processes, in the `meta` table.

Three JSON values: the token estimator's calibration per model (`tokens.calibration`, written
by the turn after each reply, read when the next process starts a turn), the last turn's
context report (`context.last_turn`: window, tokens, what was cut), which `straylight status`
reads because it is a separate process from the chat, and the windows Ollama showed it really
runs for models whose /api/show did not tell (`context.learnt_windows`), so the next `ask`
budgets against them instead of guessing again. Unreadable JSON reads as nothing: the
calibration starts afresh and `status` reports nulls.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Final

from store import meta

if TYPE_CHECKING:
    from store.database import Database

CALIBRATION_KEY: Final = "tokens.calibration"
CONTEXT_REPORT_KEY: Final = "context.last_turn"
LEARNT_WINDOWS_KEY: Final = "context.learnt_windows"


def _read(db: Database, key: str) -> dict[str, Any] | None:
    with db.cursor() as cur:
        raw = meta.get(cur, key)
    if raw is None:
        return None
    try:
        data = json.loads(raw)
    except (ValueError, RecursionError):
        return None
    return data if isinstance(data, dict) else None


def load_calibration(db: Database) -> dict[str, Any] | None:
    """The estimator's state (`TokenEstimator.to_json`), None when none was saved."""
    return _read(db, CALIBRATION_KEY)


def load_context_report(db: Database) -> dict[str, Any] | None:
    """The last turn's context report as saved, None before the first budgeted turn."""
    return _read(db, CONTEXT_REPORT_KEY)


def load_learnt_windows(db: Database) -> dict[str, int]:
    """The windows Ollama showed it really runs, per model (normalised name), for models whose
    /api/show did not tell their maximum; {} when none was learnt."""
    from memory.model_names import normalise_name

    data = _read(db, LEARNT_WINDOWS_KEY) or {}
    return {  # (a key saved before names matched as Ollama's do: `Qwen3:8B`, `library/…`)
        normalise_name(str(model)): window
        for model, window in data.items()
        if isinstance(window, int) and not isinstance(window, bool) and window > 0
    }


def save_turn_context(
    db: Database,
    calibration: Mapping[str, Any] | None,
    report: Mapping[str, Any] | None,
    learnt_windows: Mapping[str, int] | None = None,
) -> None:
    """Write what a turn learnt (any may be None: left as it was), in one transaction."""
    with db.transaction() as cur:
        if calibration is not None:
            meta.put(cur, CALIBRATION_KEY, json.dumps(calibration, sort_keys=True))
        if report is not None:
            meta.put(cur, CONTEXT_REPORT_KEY, json.dumps(report, ensure_ascii=False))
        if learnt_windows is not None:
            meta.put(cur, LEARNT_WINDOWS_KEY, json.dumps(dict(learnt_windows), sort_keys=True))


CONTEXT_FIELDS: Final = (
    "model",
    "window",
    "model_max",
    "last_prompt_tokens",
    "reply_reserve",
    "cut",
    "headroom",
)
"""`status --json`'s `context`, in order."""


def context_status(report: Mapping[str, Any] | None) -> dict[str, Any]:
    """`status --json`'s `context` from a saved report: exactly `CONTEXT_FIELDS`; nulls and an
    empty `cut` before the first budgeted turn."""
    report = report or {}
    status = {name: report.get(name) for name in CONTEXT_FIELDS}
    cut = report.get("cut")
    status["cut"] = (
        {str(k): v for k, v in cut.items() if isinstance(v, int)}
        if isinstance(cut, Mapping)
        else {}
    )
    return status
