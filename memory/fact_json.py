"""The JSON shapes of a fact and a candidate, as `straylight facts`, `candidates` and
`memory_read` print them; kept apart from the drawer so a printer needs only the records."""

from __future__ import annotations

from typing import Any

from store.fact_store import Candidate, Fact


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
        "last_seen": fact.last_seen.isoformat(),
        "id": fact.id,
        "requires": list(fact.requires),
        "last_verified": fact.last_verified.isoformat() if fact.last_verified else None,
        "updated_at": fact.updated_at.isoformat(),
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
        "created_at": candidate.created_at.isoformat(),
    }
