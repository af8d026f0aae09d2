"""The vocabulary of layer 4, the fact drawer: fact types, scopes, statuses, sources, and a
proposal (a would-be fact on its way to the approval gate).

A fact is judged by its exact key (`deploy:blyck`), not by similarity. Keys are lower-case
`part:part…` words; `normalise_key` makes one from what a user or a model typed.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Literal, get_args

FactType = Literal["capability", "decision", "rule", "procedure", "fact"]
Scope = Literal["workspace", "global"]
FactStatus = Literal["active", "stale", "retired"]
FactSource = Literal[
    "user", "incident", "user-feedback", "inference", "external", "generated-hypothesis"
]
# Where a candidate came from: the model's memory_write call, the success-event classifier,
# the end-of-session reflection pass, a validated hypothesis card.
Origin = Literal["tool", "promotion", "reflection", "hypothesis"]

FACT_TYPES: tuple[str, ...] = get_args(FactType)
SCOPES: tuple[str, ...] = get_args(Scope)
FACT_STATUSES: tuple[str, ...] = get_args(FactStatus)

# Types that never decay (seed 002: a verified capability must not vanish unused).
NON_DECAYING: frozenset[str] = frozenset({"capability", "rule", "procedure"})

KEY_MAX_CHARS = 80
BODY_MAX_CHARS = 2000
PROOF_MAX_CHARS = 500

_KEY_PART = re.compile(r"[^\w.+-]+", re.UNICODE)
_KEY_VALID = re.compile(r"^[\w.+-]+(?::[\w.+-]+)*$", re.UNICODE)


class FactError(ValueError):
    """A fact or proposal that cannot be stored; the message is one line for the user."""


EMPTY_BODY = "a fact needs a body"
"""The one line for a fact or proposal without a body (the drawer's check, and the CLI's
before the data dir is touched)."""


def normalise_key(raw: str) -> str:
    """`Deploy: Blyck App` → `deploy:blyck-app`: lower case, parts split on ':', spaces and
    other punctuation inside a part become '-'. Raises FactError for an empty key."""
    parts = []
    for part in raw.strip().lower().split(":"):
        cleaned = _KEY_PART.sub("-", part.strip()).strip("-")
        if cleaned:
            parts.append(cleaned)
    key = ":".join(parts)
    if not key:
        raise FactError(f"empty fact key {raw!r}: use words like deploy:blyck")
    if len(key) > KEY_MAX_CHARS:
        raise FactError(f"fact key is {len(key):,} characters; at most {KEY_MAX_CHARS:,}")
    return key


def is_valid_key(key: str) -> bool:
    return bool(_KEY_VALID.match(key)) and len(key) <= KEY_MAX_CHARS and key == key.lower()


def key_parts(key: str) -> list[str]:
    """The words of a key, for exact matching: `deploy:blyck-app` → deploy, blyck, app."""
    return [word for word in re.split(r"[:\-_.+]+", key) if word]


def check_type(value: str) -> FactType:
    if value not in FACT_TYPES:
        raise FactError(f"unknown fact type {value!r}; one of {', '.join(FACT_TYPES)}")
    return value  # type: ignore[return-value]


def check_scope(value: str) -> Scope:
    if value not in SCOPES:
        raise FactError(f"unknown scope {value!r}; one of {', '.join(SCOPES)}")
    return value  # type: ignore[return-value]


def check_status(value: str) -> FactStatus:
    if value not in FACT_STATUSES:
        raise FactError(f"unknown status {value!r}; one of {', '.join(FACT_STATUSES)}")
    return value  # type: ignore[return-value]


@dataclass(frozen=True, slots=True)
class FactProposal:
    """A would-be fact: what the classifier, the reflection pass or a `memory_write` call
    suggests. It becomes a candidate at the gate, and a fact only when approved.

    `proof` is the evidence (for a promotion: the sentence it came from). `requires` lists
    the keys a procedure depends on."""

    type: FactType
    key: str
    body: str
    proof: str = ""
    scope: Scope = "workspace"
    confidence: float = 0.8
    source: FactSource = "inference"
    requires: tuple[str, ...] = field(default=())
