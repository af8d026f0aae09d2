"""Seed 003, concept 2: procedures name the facts they depend on; broken bindings are flagged.

A procedure's `requires` lists fact keys. Each must resolve to a fact that exists, is active
and was verified within `limit_days` (default 90). `check_bindings` is pure: it takes the
facts (e.g. `FactDrawer.list_facts()`: a workspace and the global scope) and the time, and returns
one `BindingAlert` per broken binding, worst problem first:

| problem      | the required fact …                                                |
|--------------|--------------------------------------------------------------------|
| `missing`    | does not exist (under that key, in reach of the procedure)          |
| `retired`    | exists, but only retired                                            |
| `stale`      | has status stale (unseen for 90 days, see `FactDrawer.decay`)       |
| `unverified` | was never verified (`last_verified` empty)                          |
| `expired`    | was last verified more than `limit_days` ago                        |

Resolution: a workspace procedure's required key resolves to the fact of its own workspace,
else to the global one; a global procedure's to a global fact only. A retired fact does not
shadow: when the workspace fact is retired the global one is used (as injection does), and
`retired` is reported only when every candidate is retired. Retired procedures are not
checked.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Literal

from store.fact_records import Fact

DEFAULT_LIMIT_DAYS = 90

Problem = Literal["missing", "stale", "retired", "unverified", "expired"]


@dataclass(frozen=True, slots=True)
class BindingAlert:
    """One broken binding; `detail` is one line naming the procedure and the fact."""

    procedure_key: str
    required_key: str
    problem: Problem
    detail: str


def _resolve(
    index: dict[tuple[str, str], Fact], procedure: Fact, key: str
) -> tuple[Fact | None, bool]:
    """(the fact `key` resolves to for `procedure`, whether only retired ones were found)."""
    scopes = [procedure.workspace, ""] if procedure.scope == "workspace" else [""]
    found = [index[(workspace, key)] for workspace in scopes if (workspace, key) in index]
    for fact in found:
        if fact.status != "retired":
            return fact, False
    return None, bool(found)


def _problem(
    fact: Fact | None, only_retired: bool, now: datetime, limit: timedelta
) -> tuple[Problem, str] | None:
    if fact is None:
        if only_retired:
            return "retired", "which is retired"
        return "missing", "which does not exist"
    if fact.status == "stale":
        return "stale", "which is stale"
    if fact.last_verified is None:
        return "unverified", "which was never verified"
    age = now - fact.last_verified
    if age > limit:
        return "expired", (f"which was last verified {age.days} days ago (limit {limit.days})")
    return None


def check_bindings(
    facts: Sequence[Fact], now: datetime, *, limit_days: int = DEFAULT_LIMIT_DAYS
) -> list[BindingAlert]:
    """Every broken binding of the (non-retired) procedures among `facts`, by procedure key
    then in the order of their `requires`; an empty list when all hold."""
    if limit_days < 0:
        raise ValueError(f"limit_days must not be negative, got {limit_days}")
    limit = timedelta(days=limit_days)
    index: dict[tuple[str, str], Fact] = {}
    for fact in facts:
        workspace = fact.workspace if fact.scope == "workspace" else ""
        index[(workspace, fact.key)] = fact
    procedures = sorted(
        (f for f in facts if f.type == "procedure" and f.status != "retired"),
        key=lambda f: (f.key, f.scope, f.workspace),
    )
    alerts: list[BindingAlert] = []
    for procedure in procedures:
        for required in dict.fromkeys(procedure.requires):
            resolved, only_retired = _resolve(index, procedure, required)
            found = _problem(resolved, only_retired, now, limit)
            if found is None:
                continue
            problem, why = found
            detail = f"procedure {procedure.key} needs {required}, {why}"
            alerts.append(BindingAlert(procedure.key, required, problem, detail))
    return alerts
