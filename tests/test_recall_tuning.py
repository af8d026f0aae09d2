"""The knobs of recall's ranking (`RecallTuning`) on real stores, the times a query names
(`memory.text.dates`) and the word index's feedback round."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from memory.memory_store import MemoryConfig, MemoryStore
from memory.recall import TUNING, TURN_TUNING, RecallTuning
from memory.text.dates import DateSpan, date_spans
from store.clock import Clock
from tests.support.ollama_standin import embed_text

DIM = 64
NOW = datetime(2024, 3, 15, 12, tzinfo=UTC)


def vec(text: str) -> list[float]:
    return embed_text(text, DIM)


def open_store(home: Path) -> MemoryStore:
    store = MemoryStore.open(home, MemoryConfig(min_score=0.0), clock=Clock())
    store.wait_until_ready(timeout=30)
    return store


def save(store: MemoryStore, text: str, when: datetime) -> int:
    point_id = store.save(
        "user", text, conversation_id="c", vector=vec(text), created_at=when, use_filter=False
    ).point_id
    assert point_id is not None
    return point_id


def day(year: int, month: int, number: int) -> DateSpan:
    start = datetime(year, month, number, tzinfo=UTC)
    return DateSpan(start, start + timedelta(days=1))


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("What painting did Melanie show on October 13, 2023?", [day(2023, 10, 13)]),
        ("What did Gina find on 1 February, 2023?", [day(2023, 2, 1)]),
        (
            "What did Mel paint in July 2023?",
            [DateSpan(datetime(2023, 7, 1, tzinfo=UTC), datetime(2023, 8, 1, tzinfo=UTC))],
        ),
        (
            "What did I buy in December 2023?",
            [DateSpan(datetime(2023, 12, 1, tzinfo=UTC), datetime(2024, 1, 1, tzinfo=UTC))],
        ),
        ("When did Melanie go camping in June?", [DateSpan(month=6)]),
        (
            "How often did we go to the beach in 2023?",
            [DateSpan(datetime(2023, 1, 1, tzinfo=UTC), datetime(2024, 1, 1, tzinfo=UTC))],
        ),
        ("May I ask what you think?", []),  # "may" the verb names no time
        ("What did we plan?", []),
    ],
)
def test_the_times_a_query_names_are_resolved(query: str, expected: list[DateSpan]) -> None:
    assert date_spans(query, NOW) == expected


def test_relative_times_count_back_from_now() -> None:
    (last_week,) = date_spans("what did I say last week", NOW)
    assert last_week.contains(NOW - timedelta(days=5))
    assert not last_week.contains(NOW - timedelta(days=20))
    (ago,) = date_spans("the bug from three weeks ago", NOW)
    assert ago.contains(NOW - timedelta(days=21))
    assert not ago.contains(NOW - timedelta(days=2))


def test_the_product_runs_the_default_tuning() -> None:
    assert RecallTuning() == TUNING


def test_the_date_boost_lifts_a_point_inside_the_time_the_query_names(home: Path) -> None:
    store = open_store(home)
    now = datetime.now(UTC)
    louder = save(
        store, "The garden party had garden lights and garden music", now - timedelta(days=200)
    )
    recent = save(store, "The garden party was lovely", now - timedelta(days=10))
    query = "What happened at the garden party last month?"
    plain = store.recall(
        query, vector=vec(query), k=2, mode="lexical", tuning=RecallTuning(date_boost=0.0)
    ).hits
    assert plain[0].id == louder  # more of the query's words
    boosted = store.recall(query, vector=vec(query), k=2, mode="lexical").hits  # TUNING's ×2
    assert boosted[0].id == recent
    store.close()


def test_same_day_diversity_brings_in_another_day(home: Path) -> None:
    store = open_store(home)
    first = datetime(2023, 3, 10, tzinfo=UTC)
    for text in (
        "pottery class pottery wheel pottery glaze",
        "pottery class pottery kiln",
        "pottery class with the kids",
    ):
        save(store, text, first)
    other = save(store, "a pottery class in the spring", first + timedelta(days=30))
    query = "pottery class"
    plain = [h.id for h in store.recall(query, vector=vec(query), k=2, mode="lexical").hits]
    assert other not in plain
    diverse = store.recall(
        query, vector=vec(query), k=2, mode="lexical", tuning=RecallTuning(same_day_factor=0.5)
    ).hits
    assert other in [hit.id for hit in diverse]
    assert len({hit.created_at.date() for hit in diverse}) == 2
    store.close()


def test_score_fusion_ranks_by_scaled_scores(home: Path) -> None:
    store = open_store(home)
    when = datetime(2023, 3, 10, tzinfo=UTC)
    target = save(store, "the blue bicycle needs a new chain", when)
    save(store, "a chain of shops opened downtown", when)
    save(store, "we watched birds by the lake", when)
    query = "the blue bicycle needs a new chain"
    hits = store.recall(
        query, vector=vec(query), k=3, tuning=RecallTuning(fusion="score", vector_weight=0.5)
    ).hits
    assert hits[0].id == target
    assert hits[0].score == pytest.approx(1.0, abs=1e-3)  # exact text: cosine 1
    store.close()


def test_the_feedback_round_finds_a_point_through_the_first_rounds_words(home: Path) -> None:
    store = open_store(home)
    when = datetime(2023, 3, 10, tzinfo=UTC)
    save(store, "Caroline joined the rainbow choir in town", when)
    save(store, "the rainbow choir sang at the festival", when)
    linked = save(store, "the choir rehearsal moved to thursday evenings", when)
    for noise in ("we baked bread", "the dog chased a ball", "a long walk by the river"):
        save(store, noise, when)
    query = "what did Caroline join rainbow"
    plain = [h.id for h in store.recall(query, vector=vec(query), k=5, mode="lexical").hits]
    assert linked not in plain
    tuned = RecallTuning(feedback_seeds=2, feedback_terms=4, feedback_weight=1.0)
    fed = store.recall(query, vector=vec(query), k=5, mode="lexical", tuning=tuned).hits
    assert linked in [hit.id for hit in fed]
    store.close()


def test_feedback_search_takes_terms_the_seeds_share_and_the_query_lacks(home: Path) -> None:
    store = open_store(home)
    when = datetime(2023, 3, 10, tzinfo=UTC)
    a = save(store, "violin lessons with grandma on sunday", when)
    b = save(store, "grandma played violin at the wedding", when)
    c = save(store, "grandma baked a cake", when)
    save(store, "the weather was grey", when)
    cache = store.lexical
    with store.db.cursor() as cur:
        cache.search(cur, "violin", 10)  # recall's first round, which syncs the cache
    found = [pid for pid, _ in cache.feedback_search("violin", [a, b], terms=4, k=10)]
    assert c in found  # through "grandma", shared by both seeds; "violin" was asked already
    assert a in found and b in found
    assert cache.feedback_search("violin", [a], terms=4, k=10) == []  # one seed shares nothing
    store.close()


def test_neighbour_diversity_keeps_a_turn_and_its_reply_from_filling_the_hits(home: Path) -> None:
    store = open_store(home)
    when = datetime(2023, 3, 10, tzinfo=UTC)
    first = save(store, "sailing trip sailing boat sailing lessons", when)
    reply = save(store, "sailing trip sailing boat", when)
    save(store, "we had lunch", when)  # keeps the third one's id apart from the pair
    apart = save(store, "a sailing trip", when)
    query = "sailing trip boat"
    unweighed = RecallTuning(length_prior=0.0)  # the fused order, which diversity starts from
    plain = [
        h.id
        for h in store.recall(query, vector=vec(query), k=2, mode="lexical", tuning=unweighed).hits
    ]
    assert set(plain) == {first, reply}
    tuned = RecallTuning(neighbour_factor=0.3)
    hits = store.recall(query, vector=vec(query), k=2, mode="lexical", tuning=tuned).hits
    assert [hit.id for hit in hits] == [plain[0], apart]
    store.close()


def test_the_neighbour_window_brings_the_turns_around_a_hit_into_the_block(home: Path) -> None:
    store = open_store(home)
    when = datetime(2023, 5, 8, tzinfo=UTC)

    def say(text: str, conversation: str) -> int:
        point_id = store.save(
            "user",
            text,
            conversation_id=conversation,
            vector=vec(text),
            created_at=when,
            use_filter=False,
        ).point_id
        assert point_id is not None
        return point_id

    question = say("Did you ever get to the museum you wanted to see?", "trip")
    answer = say("Yes, the one in Paris, it was wonderful", "trip")
    say("Nothing to do with it", "elsewhere")  # next id, another conversation
    query = "museum you wanted to see"
    plain = store.recall(query, vector=vec(query), k=1, mode="lexical")
    assert [hit.id for hit in plain.hits] == [question]
    tuned = RecallTuning(neighbour_window=1, neighbour_anchors=1)
    windowed = store.recall(query, vector=vec(query), k=1, mode="lexical", tuning=tuned)
    assert [hit.id for hit in windowed.hits] == [question]  # k hits, ranked
    assert [hit.id for hit in windowed.around] == [answer]  # the other conversation is not near
    assert [hit.id for hit in windowed.in_block()] == [question, answer]
    assert "the one in Paris" in windowed.block
    tight = store.recall(
        query,
        vector=vec(query),
        k=1,
        mode="lexical",
        tuning=tuned,
        max_chars=len(plain.block) + 10,
    )
    assert [hit.id for hit in tight.in_block()] == [question]
    assert "the one in Paris" not in tight.block  # the budget cuts the neighbour first
    store.close()


def test_the_turns_window_takes_the_nearest_turns_of_the_hits_conversation(home: Path) -> None:
    """`TURN_TUNING`: up to 3 points each side, nearest first (the earlier of two as near),
    only from the hit's conversation; a point without a conversation has none."""
    store = open_store(home)

    def say(text: str, conversation: str) -> int:
        saved = store.save(
            "user", text, conversation_id=conversation, vector=vec(text), use_filter=False
        )
        assert saved.point_id is not None
        return saved.point_id

    before = [say(f"Earlier message number {n} about gardening", "c") for n in range(4)]
    other = say("A message of another conversation in between", "d")
    hit = say("The zeppelin landed on the roof of the aquarium", "c")
    after = [say(f"Later message number {n} about cooking", "c") for n in range(4)]
    result = store.recall(
        "zeppelin aquarium", vector=vec("zeppelin aquarium"), k=1, tuning=TURN_TUNING
    )
    assert [h.id for h in result.hits] == [hit]
    # ids hit-3 … hit+3: before[2], before[3], other (skipped), after[0..2]; nearest first
    assert [h.id for h in result.around] == [after[0], before[3], after[1], before[2], after[2]]
    assert other not in [h.id for h in result.around] and before[1] not in [
        h.id for h in result.around
    ]
    pinned = store.remember("The zeppelin manual lives in the aquarium office")
    alone = store.recall(
        "zeppelin manual office", vector=vec("zeppelin manual office"), k=1, tuning=TURN_TUNING
    )
    assert alone.hits[0].id == pinned  # pins come first; a pin is no anchor
    assert after[3] not in [h.id for h in alone.around]  # next to the pin, 4 from the hit
    store.close()
