"""The speaker trait (issue 17, tenth round; memory/text/speakers.py, store/point_traits.py):
the "Name: " a point's content starts with, kept as a hash beside the other traits through
save, re-index, delete and reopen, filled by the open of a schema-7 store, and the re-rank
that takes a question's named speakers into account (`RecallTuning.speaker`) on a real
store — ranking as without it when the knob is off, the question asks "when", names no
speaker, or a speaker is not known."""

from __future__ import annotations

from collections import Counter
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

import duckdb
import numpy as np
import pytest

from memory.memory_store import MemoryConfig, MemoryStore
from memory.point_traits import point_traits
from memory.recall import TUNING, TURN_TUNING, RecallTuning
from memory.recall_models import MOOD_MODEL, SPEAKER_MODEL
from memory.recall_rerank import (
    FEATURES,
    SPEAKER_FEATURES,
    LinearModel,
    speaker_column,
)
from memory.text.speakers import named_speakers, speaker_hash, speaker_name, speaker_of
from store import lexical_file, lexical_index
from store.clock import Clock
from store.database import database_path
from store.lexical_file import LEXICAL_FILENAME
from store.point_traits import MISSING_SPEAKER, NO_SPEAKER
from store.text_terms import default_analyzer
from tests.support.ollama_standin import embed_text
from tests.test_database import build_at_version
from tests.test_point_traits import mirror_traits, reopened_traits, table_traits

DIM = 64
WHEN = datetime(2023, 5, 8, 10, tzinfo=UTC)
MELANIE = "Melanie: My kids like the dinosaur exhibit at the museum best."
NOTE = "Note: the kids' dinosaur exhibit closes at six."
QUERY = "What do Melanie's kids like about dinosaurs?"
OTHERS = [f"Caroline: Melanie's kids like dinosaurs, like story {n}." for n in range(14)]


def weights(names: tuple[str, ...], **named: float) -> LinearModel:
    """A model over `names` weighing only the named features (standardised by nothing)."""
    n = len(names)
    return LinearModel((0.0,) * n, (1.0,) * n, tuple(named.get(f, 0.0) for f in names))


PLAIN = weights(FEATURES, fused=1.0)
WHO = weights(SPEAKER_FEATURES, fused=1.0, speaker=10.0)
LENGTHY = weights(SPEAKER_FEATURES, length=10.0)  # ranks otherwise than PLAIN
OFF = replace(TUNING, learned=PLAIN, speaker=None)
ON = replace(TUNING, learned=PLAIN, speaker=WHO)


def open_store(home: Path, *, read_only: bool = False) -> MemoryStore:
    store = MemoryStore.open(home, MemoryConfig(min_score=0.0), clock=Clock(), read_only=read_only)
    store.wait_until_ready(timeout=30)
    return store


def save(store: MemoryStore, text: str, when: datetime = WHEN) -> int:
    point = store.save(
        "user", text, vector=embed_text(text, DIM), created_at=when, use_filter=False
    )
    assert point.point_id is not None
    return point.point_id


def fill(store: MemoryStore) -> int:
    """Caroline's turns about Melanie's kids, then Melanie's own (its id returned)."""
    for i, text in enumerate(OTHERS):
        save(store, text, WHEN + timedelta(minutes=i))
    return save(store, MELANIE, WHEN + timedelta(hours=1))


def ids(store: MemoryStore, tuning: RecallTuning, query: str = QUERY, k: int = 5) -> list[int]:
    result = store.recall(query, vector=embed_text(query, DIM), k=k, tuning=tuning)
    return [hit.id for hit in result.hits]


def test_a_speaker_is_one_capitalised_word_and_a_colon_and_no_label() -> None:
    assert speaker_name(MELANIE) == "melanie"
    assert speaker_name("José: hola") == "josé" and speaker_name("O'Brien: hi") == "o'brien"
    for text in (
        NOTE,
        "TODO: call the bank",
        "Update: the flight moved",
        "Error: disk full",
        "FYI: nothing",
        "Monday: gym",
        "Mary Ann: two words",
        "melanie: lower case",
        "Melanie:no space",
        " Melanie: not at the start",
        "We said: nothing",
    ):
        assert speaker_name(text) == "", text
        assert speaker_of(text) == NO_SPEAKER
    assert speaker_of(MELANIE) == speaker_hash("melanie") not in (NO_SPEAKER, MISSING_SPEAKER)
    assert point_traits(MELANIE, WHEN).speaker == speaker_hash("melanie")


@pytest.mark.parametrize(
    "text",
    [
        "When: Tuesday 3pm",
        "Where: room 4",
        "What: team lunch",
        "Who: Anna and Bob",
        "Why: the budget",
        "How: by train",
        "Which: the blue one",
        "Nb: bring a coat",
        "Fyi: the door code changed",
        "Btw: the cat is fine",
        "Tldr: no",
        "Recap: we agreed",
        "Attendees: Anna, Bob",
        "Venue: the old mill",
        "Lunch: pasta",
        "Weekend: hiking",
        "Sept: school starts",
        "Wed: dentist",
    ],
)
def test_a_common_label_is_no_speaker_and_no_question_favours_it(text: str) -> None:
    """A note's label ("Who: …") is not a speaker: else every question that starts with the
    same word, capitalised ("Who is coming?"), would rank the line as the named
    person's own."""
    assert speaker_name(text) == "", text
    label = text.split(":")[0]
    column = speaker_column(
        np.array([speaker_of(text), speaker_hash("bob")], np.uint16),
        named_speakers(f"{label} did Bob say it was?"),
    )
    assert column is not None and column.tolist() == [0.0, 1.0]
    assert speaker_name("Jan: hi") == "jan" and speaker_name("Bob: can you call?") == "bob"


def test_a_question_names_its_capitalised_words_a_possessive_without_its_s() -> None:
    named = named_speakers(QUERY)
    assert speaker_hash("melanie") in named and speaker_hash("what") in named
    assert speaker_hash("kids") not in named
    assert named_speakers("what do the kids like?") == frozenset()


def test_the_column_needs_speakers_and_every_one_known() -> None:
    melanie = speaker_hash("melanie")
    speakers = np.array([melanie, NO_SPEAKER, speaker_hash("caroline")], np.uint16)
    column = speaker_column(speakers, frozenset({melanie}))
    assert column is not None and column.tolist() == [1.0, 0.0, 0.0]
    missing = np.array([melanie, MISSING_SPEAKER], np.uint16)
    assert speaker_column(missing, frozenset({melanie})) is None
    nobody = np.array([NO_SPEAKER, NO_SPEAKER], np.uint16)  # a chat's own messages
    assert speaker_column(nobody, frozenset({melanie})) is None


def test_the_speaker_survives_save_edit_delete_and_reopen(home: Path) -> None:
    store = open_store(home)
    melanie, note = save(store, MELANIE), save(store, NOTE)
    want = [point_traits(MELANIE, WHEN).as_row(), point_traits(NOTE, WHEN).as_row()]
    assert want[0][3] == speaker_hash("melanie") and want[1][3] == NO_SPEAKER
    assert [table_traits(store)[i] for i in (melanie, note)] == want
    assert mirror_traits(store, [melanie, note]) == want
    with store.db.transaction() as cur:  # an edit: the point indexed again with new text
        edited = point_traits("Caroline: it was me", WHEN)
        lexical_index.index_point(cur, note, "it was me", cache=store.lexical, traits=edited)
    store.recall("dinosaur", k=2)  # the search syncs the staged write
    assert mirror_traits(store, [note]) == [edited.as_row()]
    assert table_traits(store)[note][3] == speaker_hash("caroline")
    assert store.forget(note)
    store.recall("dinosaur", k=2)
    assert mirror_traits(store, [melanie, note]) is None
    store.close()
    assert reopened_traits(home, [melanie], "file") == want[:1]
    (home / LEXICAL_FILENAME).unlink()
    assert reopened_traits(home, [melanie], "tables") == want[:1]


def test_a_schema_7_store_gets_the_column_and_only_its_speakers_at_open(home: Path) -> None:
    home.mkdir(parents=True)
    path = database_path(home)
    build_at_version(path, 7)  # plain DuckDB, as round 8's code indexed: traits, no speaker
    analyzer = default_analyzer()
    con = duckdb.connect(str(path))
    try:
        for pid, text in ((1, MELANIE), (2, NOTE)):
            counts = Counter(analyzer.terms(text))
            con.execute(
                "INSERT INTO points (id, role, content, source, content_hash, created_at) "
                "VALUES (?, 'user', ?, 'turn', ?, ?)",
                [pid, text, f"h{pid}", WHEN],
            )
            # words 3: not what point_traits gives — the fill must leave it alone
            con.execute(
                "INSERT INTO lexical_docs VALUES (?, ?, 3, ?, 0)",
                [pid, sum(counts.values()), point_traits(text, WHEN).day],
            )
            for term, tf in counts.items():
                con.execute("INSERT INTO lexical_postings VALUES (?, ?, ?)", [term, pid, tf])
        con.execute("SELECT setval('point_id_seq', 2)")
        con.execute("INSERT INTO meta VALUES (?, ?)", [lexical_index.ANALYZER_KEY, analyzer.name])
    finally:
        con.close()
    read_only = open_store(home, read_only=True)  # at 7 a read-only open cannot migrate
    read_only.close()
    store = open_store(home)
    try:
        day = point_traits(MELANIE, WHEN).day
        assert table_traits(store) == {
            1: (3, day, 0, speaker_hash("melanie")),
            2: (3, day, 0, NO_SPEAKER),
        }
        assert mirror_traits(store, [1, 2]) == [
            (3, day, 0, speaker_hash("melanie")),
            (3, day, 0, NO_SPEAKER),
        ]
        with store.db.cursor() as cur:
            assert not lexical_index.traits_missing(cur)
    finally:
        store.close()


def test_a_question_naming_melanie_brings_her_own_turn_into_the_five(home: Path) -> None:
    store = open_store(home)
    try:
        melanie = fill(store)
        today = ids(store, OFF)
        assert melanie not in today  # Caroline's turns hold the question's words
        assert TUNING.speaker is MOOD_MODEL and TURN_TUNING.learned is None
        for k in (5, 10):  # the shipped models, with the speaker and without
            assert melanie in ids(store, TUNING, k=k)
            assert melanie not in ids(store, replace(TUNING, speaker=None), k=k)
        on = ids(store, ON)
        assert melanie in on and len(on) == 5
        assert set(on) - {melanie} <= set(ids(store, OFF, k=10))
        when = "When did Melanie's kids like dinosaurs?"  # "when": the column is 0
        assert ids(store, ON, when) == ids(store, OFF, when)  # (WHO weighs it and fused)
        nobody = "what do the kids like about dinosaurs?"  # names no speaker
        assert ids(store, ON, nobody) == ids(store, OFF, nobody)
        assert ids(store, replace(ON, learned=None)) == ids(store, replace(OFF, learned=None))
    finally:
        store.close()


def test_a_chat_without_speakers_ranks_with_the_model_before(home: Path) -> None:
    store = open_store(home)
    try:
        for i, text in enumerate([*OTHERS, MELANIE]):
            save(store, text.partition(": ")[2], WHEN + timedelta(minutes=i))  # no "Name: "
        query = "What do the kids like about the dinosaur exhibit at the museum?"
        other = replace(ON, speaker=LENGTHY)
        with_speakers = home.parent / "with"
        assert ids(store, other, query) == ids(store, OFF, query)
    finally:
        store.close()
    store = open_store(with_speakers)  # the same turns with their speakers: LENGTHY ranks
    try:
        fill(store)
        assert ids(store, other, query) != ids(store, OFF, query)
    finally:
        store.close()


def test_a_store_whose_speakers_are_not_known_ranks_as_without_them(home: Path) -> None:
    store = open_store(home)
    fill(store)
    today = ids(store, OFF)
    with store.db.transaction() as cur:
        cur.execute("UPDATE lexical_docs SET speaker = NULL")  # as indexed at schema 7
    store.close()
    (home / LEXICAL_FILENAME).unlink()
    read_only = open_store(home, read_only=True)  # cannot fill them
    try:
        traits = read_only.lexical.traits_of([1, 2])
        assert traits is not None and set(traits[3].tolist()) == {MISSING_SPEAKER}
        assert ids(read_only, ON) == today
    finally:
        read_only.close()


def test_a_file_of_format_3_is_rebuilt_with_the_speakers(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = open_store(home)
    melanie = save(store, MELANIE)
    want = mirror_traits(store, [melanie])
    store.close()
    path = home / LEXICAL_FILENAME
    mapped = lexical_file.read_unbound(path)  # the file as written, rewritten in v3's layout
    arrays = {name: np.array(array) for name, array in mapped.arrays.items()}
    arrays["terms"] = lexical_file.encode_terms(mapped.terms)
    layout = tuple(s for s in lexical_file.SECTIONS if s != "speakers")
    monkeypatch.setattr(lexical_file, "VERSION", 3)  # the layout before the speaker
    monkeypatch.setattr(lexical_file, "SECTIONS", layout)
    lexical_file.write_file(path, mapped.state, arrays)
    monkeypatch.undo()
    assert reopened_traits(home, [melanie], "tables") == want  # refused as stale
    assert reopened_traits(home, [melanie], "file") == want  # written again in the current format


def test_the_shipped_speaker_model_has_a_weight_for_every_column() -> None:
    model = SPEAKER_MODEL
    assert len(model.weight) == len(model.mean) == len(model.scale) == len(SPEAKER_FEATURES)
    assert all(s > 0 for s in model.scale) and model.weight[-1] > 0  # a named speaker: up
