"""The JSON shapes of a fact and a candidate, as `straylight facts`, `candidates` and
`memory_read` print them; kept apart from the drawer so a printer needs only the records."""

from __future__ import annotations

from typing import Any

from store.clock import format_instant
from store.fact_records import Candidate, Fact


def fact_json(fact: Fact) -> dict[str, Any]:
    """The JSON shape of `straylight facts list/get --json`."""
    return {
        "key": fact.key,
        "type": fact.type,
        "scope": fact.scope,
        "workspace": fact.workspace,
        "body": fact.body,
        "confidence": round(fact.confidence, 4),
        "proof": fact.proof,
        "status": fact.status,
        "source": fact.source,
        "last_seen": format_instant(fact.last_seen),
        "id": fact.id,
        "requires": list(fact.requires),
        "last_verified": format_instant(fact.last_verified) if fact.last_verified else None,
        "updated_at": format_instant(fact.updated_at),
    }


def candidate_json(candidate: Candidate) -> dict[str, Any]:
    """The JSON shape of `straylight candidates list --json`."""
    return {
        "id": candidate.id,
        "key": candidate.key,
        "type": candidate.type,
        "scope": candidate.scope,
        "body": candidate.body,
        "proof": candidate.proof,
        "origin": candidate.origin,
        "status": candidate.status,
        "confidence": round(candidate.confidence, 4),
        "workspace": candidate.workspace,
        "created_at": format_instant(candidate.created_at),
    }


def with_replaces(data: dict[str, Any], old: Fact | None) -> dict[str, Any]:
    """A candidate's JSON with `replaces`: the body an approval would overwrite, or null
    (`candidates list --json`, `candidates propose --json`)."""
    return {**data, "replaces": old.body if old is not None else None}
