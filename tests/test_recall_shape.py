"""Recall's two shape rules (`memory.text.shape`): the length prior puts a point that says
something before chit-chat inside the top hits, and a question asking for a list ranks with
the list questions' vector weight."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path

from memory.memory_store import MemoryConfig, MemoryStore
from memory.recall import TUNING
from memory.text.shape import CONTENT_CHARS, content_words, is_list_question
from store.clock import Clock

WHEN = datetime(2024, 3, 15, 12, tzinfo=UTC)


def test_list_questions_are_what_which_plural_some_and_both() -> None:
    for question in (
        "What activities does Melanie partake in?",
        "Which European countries has Maria been to?",
        "What kind of pets does Melanie have?",
        "What LGBTQ+ events has Caroline participated in?",
        "What are Caroline's plans for the summer?",
        "What do Jon and Gina both have in common?",
        "which books did I read",
    ):
        assert is_list_question(question), question
    for question in (
        "What did Caroline research?",
        "What is Caroline's relationship status?",
        "When did Melanie go camping?",
        "What does Melanie do to destress?",
        "What was Bob's address?",
        "I bought some books and both were good",  # no question
        "",
    ):
        assert not is_list_question(question), question


def test_content_words_count_distinct_words_without_stopwords() -> None:
    assert content_words("Wow, that's great!") == 2  # "wow", "great"
    assert content_words("We went sailing on the lake, the lake!") == 3
    assert content_words("Ja, das ist so.") == 0  # German stopwords
    assert content_words("") == 0
    long = " ".join(f"word{i}" for i in range(1000))  # 7.9k characters
    assert content_words(long) == len(set(long[:CONTENT_CHARS].split()))  # the start only


def _store(home: Path) -> MemoryStore:
    store = MemoryStore.open(home, MemoryConfig(min_score=0.0), clock=Clock())
    store.wait_until_ready(timeout=30)
    return store


def _save(store: MemoryStore, text: str, vector: list[float]) -> int:
    point_id = store.save(
        "user", text, conversation_id="c", vector=vector, created_at=WHEN, use_filter=False
    ).point_id
    assert point_id is not None
    return point_id


def _unit(i: int, dim: int = 8) -> list[float]:
    return [1.0 if j == i else 0.0 for j in range(dim)]


def test_the_length_prior_puts_a_statement_before_chit_chat(tmp_path: Path) -> None:
    store = _store(tmp_path)
    try:
        short = _save(store, "Sailing!", _unit(0))
        long = _save(store, "We went sailing on the lake with my brother and his dog", _unit(1))
        query = ("sailing", _unit(0))
        before = store.recall(query[0], vector=query[1], tuning=replace(TUNING, length_prior=0))
        assert [hit.id for hit in before.hits] == [short, long]
        after = store.recall(query[0], vector=query[1])
        assert [hit.id for hit in after.hits] == [long, short]
        assert store.recall(query[0], vector=query[1], k=1).hits[0].id == long
    finally:
        store.close()


def test_a_list_question_ranks_with_the_list_vector_weight(tmp_path: Path) -> None:
    store = _store(tmp_path)
    try:
        by_vector = _save(store, "Dune and Emma were on my nightstand all winter", _unit(0))
        by_words = _save(store, "I read books about books and reading books", _unit(1))
        # one candidate from each ranking: the vector's at weight w scores w / 11, the
        # words' 1 / 11, so the vector's comes first only at a weight above 1
        tuning = replace(TUNING, candidates=1, list_vector_weight=2.0, length_prior=0)
        listing = store.recall("What books did I read?", vector=_unit(0), tuning=tuning)
        assert [hit.id for hit in listing.hits] == [by_vector, by_words]
        single = store.recall("When did I read books?", vector=_unit(0), tuning=tuning)
        assert [hit.id for hit in single.hits] == [by_words, by_vector]
    finally:
        store.close()
