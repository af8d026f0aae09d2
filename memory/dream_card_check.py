"""Checking the one card the dream's model drafts: the hard anti-bullshit constraints
(falsifiable prediction, concrete measurement, known sources, nothing hostile) and duplicates.
Never raises; the reason a card is refused is one line. The rules in full: docs/dream.md.
"""

from __future__ import annotations

import json
import re
from collections.abc import Collection, Iterable
from dataclasses import dataclass
from typing import Any

from memory import dream_card_words as w
from memory.hostile_text import bad_character, hostile_reason
from memory.secret_masking import mask_secrets
from memory.text.markdown import unwrap_fenced_reply
from memory.text.words import one_line
from store.hypothesis_store import Hypothesis

STATEMENT_MIN_WORDS = 4
PREDICTION_MIN_WORDS = 6
MEASUREMENT_MIN_WORDS = 5
STATEMENT_MAX_CHARS = 600
PREDICTION_MAX_CHARS = 500
MEASUREMENT_MAX_CHARS = 500
SOURCE_IDS_MAX = 20

_WORD = re.compile(r"\w+", re.UNICODE)
_ID_SPACES = re.compile(r"\s*:\s*")


@dataclass(frozen=True, slots=True)
class CardDraft:
    """A reply that passed every check: what a new card will hold."""

    statement: str
    source_ids: tuple[str, ...]
    prediction: str
    measurement: str


def _word_count(text: str) -> int:
    return len(_WORD.findall(text))


def prediction_problem(prediction: str) -> str | None:
    """Why `prediction` is not a falsifiable, observable outcome, or None (docs/dream.md)."""
    words = _word_count(prediction)
    if words < PREDICTION_MIN_WORDS:
        return f"{words} words; at least {PREDICTION_MIN_WORDS}"
    if (hedge := w.HEDGES.search(prediction)) is not None:
        return f"hedged or tautological ({hedge.group(0)!r})"
    number = w.NUMBER.search(prediction) is not None
    anchored = (
        number
        or w.COMPARISON.search(prediction) is not None
        or w.TIME.search(prediction) is not None
        or w.DEFINITE.search(prediction) is not None
    )
    if not anchored:
        return "no observable outcome (no number, comparison, time bound or 'will')"
    if not number and (vague := w.VAGUE_OUTCOME.search(prediction)) is not None:
        return f"vague outcome ({vague.group(0)!r}) without a number"
    return None


def measurement_problem(measurement: str) -> str | None:
    """Why `measurement` does not say what to measure and how, or None (docs/dream.md)."""
    words = _word_count(measurement)
    if words < MEASUREMENT_MIN_WORDS:
        return f"{words} words; at least {MEASUREMENT_MIN_WORDS}"
    if (placeholder := w.PLACEHOLDERS.search(measurement)) is not None:
        return f"a placeholder, not a measurement ({placeholder.group(0)!r})"
    if w.MEASURE_WHAT.search(measurement) is None:
        return "does not say what to count, measure or check"
    concrete = (
        w.NUMBER.search(measurement) is not None
        or w.MEASURE_HOW.search(measurement) is not None
        or w.CODE_LIKE.search(measurement) is not None
    )
    if not concrete:
        return "does not say how, where or over which period"
    return None


def _load(raw: str) -> Any:
    return json.loads(unwrap_fenced_reply(raw))


def _normalise_id(raw: str) -> str:
    return _ID_SPACES.sub(":", raw.strip().lower())


_LIMITS = {
    "statement": STATEMENT_MAX_CHARS,
    "prediction": PREDICTION_MAX_CHARS,
    "measurement": MEASUREMENT_MAX_CHARS,
}


def check_card(raw: str, known_ids: Collection[str]) -> CardDraft | str:
    """The card in the model's reply, or why there is none (docs/dream.md).

    `known_ids`: the ids of the memories shown to the model. Never raises."""
    try:
        data = _load(raw)
    except (ValueError, RecursionError) as error:
        detail = error.msg if isinstance(error, json.JSONDecodeError) else type(error).__name__
        return f"not JSON: {detail}"
    if isinstance(data, list):
        return f"wrong shape: a list of {len(data)} items, expected one card object"
    if not isinstance(data, dict):
        return f"wrong shape: a JSON {type(data).__name__}, expected one card object"
    texts: dict[str, str] = {}
    for name, limit in _LIMITS.items():
        value = data.get(name)
        if not isinstance(value, str):
            what = "missing" if value is None else "not a string"
            return f"wrong shape: field '{name}' is {what}"
        value = value.replace("\r\n", "\n").strip()
        if len(value) > limit:
            return f"wrong shape: {name} is {len(value):,} characters; at most {limit:,}"
        texts[name] = value
    ids = data.get("source_ids")
    if not isinstance(ids, list) or not all(isinstance(i, str) for i in ids):
        what = "missing" if ids is None else "not a list of strings"
        return f"wrong shape: field 'source_ids' is {what}"
    if len(ids) > SOURCE_IDS_MAX:
        return f"wrong shape: {len(ids)} source ids; at most {SOURCE_IDS_MAX}"
    if not texts["statement"]:
        return "no hypothesis: the model offered none"
    for name, text in texts.items():
        if (char := bad_character(text, allow_newlines=True)) is not None:
            return f"hostile: control or invisible character {char!r} in the {name}"
        if (reason := hostile_reason(text)) is not None:
            return f"hostile: {name} {reason}"
    if (words := _word_count(texts["statement"])) < STATEMENT_MIN_WORDS:
        return f"statement too short: {words} words; at least {STATEMENT_MIN_WORDS}"
    distinct = tuple(dict.fromkeys(_normalise_id(i) for i in ids if i.strip()))
    if len(distinct) < 2:
        return f"fewer than 2 distinct sources (got {len(distinct)})"
    known = set(known_ids)
    unknown = [i for i in distinct if i not in known]
    if unknown:
        return f"unknown source id: {', '.join(unknown)}"
    if (problem := prediction_problem(texts["prediction"])) is not None:
        return f"prediction not falsifiable: {problem}"
    if (problem := measurement_problem(texts["measurement"])) is not None:
        return f"no concrete measurement: {problem}"
    return CardDraft(
        statement=one_line(mask_secrets(texts["statement"])),
        source_ids=distinct,
        prediction=one_line(mask_secrets(texts["prediction"])),
        measurement=one_line(mask_secrets(texts["measurement"])),
    )


def _same_text(text: str) -> str:
    return " ".join(_WORD.findall(text.casefold()))


def duplicate_of(draft: CardDraft, cards: Iterable[Hypothesis]) -> Hypothesis | None:
    """An existing card (any status: a refuted or deleted one is not proposed again) with the
    same statement, compared by its words case-insensitively."""
    wanted = _same_text(draft.statement)
    for card in cards:
        if _same_text(card.statement) == wanted:
            return card
    return None
