"""Recall's answer boost (`TUNING.answer_boost`, `memory.text.answers`): a question that asks
"when", "how many", "where" or "who" ranks the points holding a time, a number, a place or a
name up among the first 30, before the length prior; other messages rank as without it."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path

import pytest

from memory.memory_store import MemoryConfig, MemoryStore
from memory.recall import TUNING, TURN_TUNING, RecallTuning
from memory.text.answers import answer_types, holds_answer, question_names
from store.clock import Clock
from tests.support.ollama_standin import embed_text

DIM = 64
WHEN = datetime(2023, 5, 8, 12, tzinfo=UTC)
UNBOOSTED = replace(TUNING, answer_boost=0.0)


@pytest.mark.parametrize(
    ("question", "kinds"),
    [
        ("When did Melanie go camping?", {"when"}),
        ("What year did Jon start dancing?", {"when"}),
        ("How many children does Melanie have?", {"number"}),
        ("How long has Caroline had her dog?", {"number"}),
        ("Where did Bob go sailing?", {"where"}),
        ("Who gave Gina the necklace?", {"who"}),
        ("Whose idea was the trip, and where did it go?", {"who", "where"}),
        ("What did Ann's dog learn?", set()),
        ("the man who sold me the car was nice", set()),  # no question
        ("I remember where we parked.", set()),
        ("", set()),
    ],
)
def test_what_a_question_asks_for(question: str, kinds: set[str]) -> None:
    assert answer_types(question) == kinds


def test_what_a_text_holds() -> None:
    when = frozenset({"when"})
    assert holds_answer("I went there yesterday", when, frozenset())
    assert holds_answer("It was in July 2023, I think.", when, frozenset())
    assert not holds_answer("I went there with my sister", when, frozenset())
    number = frozenset({"number"})
    assert holds_answer("We have 3 kids", number, frozenset())
    assert holds_answer("We have three kids", number, frozenset())
    assert not holds_answer("We have kids", number, frozenset())
    where = frozenset({"where"})
    assert holds_answer("We sailed to Sweden last year", where, frozenset())
    assert not holds_answer("We sailed in July", where, frozenset())  # a month is no place
    assert not holds_answer("We sailed on the lake", where, frozenset())
    who = frozenset({"who"})
    asked = question_names("Who gave Gina the necklace?")
    assert asked == {"who", "gina"}
    assert holds_answer("Yes, my aunt Rosa gave it to her", who, asked)
    assert not holds_answer("Gina loves the necklace", who, asked)  # Gina opens the sentence
    assert not holds_answer("It was for Gina, you know", who, asked)  # the question's own name
    assert not holds_answer("It came on Monday", who, asked)  # a weekday is no name


@pytest.fixture
def store(tmp_path: Path) -> Iterator[MemoryStore]:
    opened = MemoryStore.open(tmp_path / "home", MemoryConfig(min_score=0.0), clock=Clock())
    opened.wait_until_ready(timeout=30)
    yield opened
    opened.close()


def save(store: MemoryStore, text: str) -> int:
    point_id = store.save(
        "user",
        text,
        conversation_id="c",
        vector=embed_text(text, DIM),
        created_at=WHEN,
        use_filter=False,
    ).point_id
    assert point_id is not None
    return point_id


def ids(store: MemoryStore, query: str, tuning: RecallTuning = TUNING) -> list[int]:
    vector = embed_text(query, DIM)
    result = store.recall(query, vector=vector, k=3, mode="lexical", tuning=tuning)
    return [hit.id for hit in result.hits]


def test_the_product_and_the_turn_boost_what_a_question_asks_for() -> None:
    assert TUNING.answer_boost == 1.0  # ×2, chosen by the folds (docs/recall-quality.md)
    assert TURN_TUNING.answer_boost == TUNING.answer_boost


def test_a_point_holding_a_time_ranks_up_for_a_when_question(store: MemoryStore) -> None:
    # The boost alone (no length prior): by words the camping chatter ranks first.
    chatter = save(store, "Camping is fun, camping is great!")
    dated = save(store, "We went camping last weekend")
    boosted, plain = replace(TUNING, length_prior=0.0), replace(UNBOOSTED, length_prior=0.0)
    assert ids(store, "When did Melanie go camping?", plain) == [chatter, dated]
    assert ids(store, "When did Melanie go camping?", boosted) == [dated, chatter]
    # a question that asks for no time ranks as without the boost
    assert ids(store, "Did Melanie go camping?", boosted) == [chatter, dated]


def test_the_length_prior_still_orders_the_boosted_hits(store: MemoryStore) -> None:
    short = save(store, "Sailing 2 boats!")
    long = save(store, "We sailed two boats across the bay with my brother and his friends")
    plain = save(store, "Sailing boats sailing boats sailing boats")
    query = "How many sailing boats?"
    # By words plain, short, long; the prior alone puts the long statement first.
    assert ids(store, query, UNBOOSTED) == [long, plain, short]
    # Both points holding a number go up (short's boosted score is now the highest), and
    # the prior, weighing the boosted scores, keeps the statement before "Sailing 2 boats!".
    assert ids(store, query) == [long, short, plain]
    assert ids(store, query, TURN_TUNING) == [long, short, plain]
    assert ids(store, "Did we go sailing in boats?") == ids(
        store, "Did we go sailing in boats?", UNBOOSTED
    )
