"""bench.locomo_data (loader, metrics, BM25/RRF reference) and the stand-in's embedder hook.

No torch: the MiniLM path is replaced by a tiny fake embedder everywhere.
"""

from __future__ import annotations

import json
import math
from datetime import UTC, datetime
from pathlib import Path

import ollama
import pytest

from bench.locomo_data import (
    CATEGORIES,
    BM25Index,
    Conversation,
    Question,
    QuestionScore,
    Turn,
    aggregate,
    bm25_tokens,
    document_text,
    evaluate,
    format_table,
    load_locomo,
    mrr,
    parse_session_datetime,
    recall_at_k,
    reference_baseline,
    rrf_fuse,
    score_question,
)
from tests.support.ollama_standin import OllamaStandIn, embed_text

REPO_ROOT = Path(__file__).resolve().parent.parent
LOCOMO_DEV = REPO_ROOT.parent / "shared" / "data" / "locomo" / "locomo-dev.json"
needs_locomo_dev = pytest.mark.skipif(
    not LOCOMO_DEV.is_file(), reason=f"LoCoMo dev file not found at {LOCOMO_DEV}"
)


def _turn(dia_id: str, text: str = "hello", *, speaker: str = "Ann") -> Turn:
    return Turn(
        dia_id=dia_id,
        session=int(dia_id[1:].split(":")[0]),
        speaker=speaker,
        text=text,
        date=datetime(2023, 5, 8, 13, 56, tzinfo=UTC),
        date_text="1:56 pm on 8 May, 2023",
    )


def _question(evidence: tuple[str, ...], category: int = 4) -> Question:
    return Question(question="q?", answer="a", evidence=evidence, category=category)


# ---------------------------------------------------------------- session dates


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("1:56 pm on 8 May, 2023", datetime(2023, 5, 8, 13, 56, tzinfo=UTC)),
        ("10:37 am on 27 June, 2023", datetime(2023, 6, 27, 10, 37, tzinfo=UTC)),
        ("12:09 am on 13 September, 2023", datetime(2023, 9, 13, 0, 9, tzinfo=UTC)),
        ("12:30 pm on 1 January, 2024", datetime(2024, 1, 1, 12, 30, tzinfo=UTC)),
        ("9:05 AM on 3 Aug 2022", datetime(2022, 8, 3, 9, 5, tzinfo=UTC)),
    ],
)
def test_session_dates_parse_to_aware_utc(text: str, expected: datetime) -> None:
    parsed = parse_session_datetime(text)
    assert parsed == expected
    assert parsed.tzinfo is UTC


@pytest.mark.parametrize(
    "text", ["", "8 May 2023", "13:10 pm on 8 May, 2023", "1:56 pm on 31 June, 2023", "1:56 pm"]
)
def test_bad_session_dates_are_rejected(text: str) -> None:
    with pytest.raises(ValueError, match="session date"):
        parse_session_datetime(text)


# ---------------------------------------------------------------------- loader


def _write(tmp_path: Path, data: object) -> Path:
    path = tmp_path / "mini.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


MINI = [
    {
        "sample_id": "conv-x",
        "conversation": {
            "speaker_a": "Ann",
            "speaker_b": "Bob",
            "session_1_date_time": "1:56 pm on 8 May, 2023",
            "session_1": [
                {"speaker": "Ann", "dia_id": "D1:1", "text": "Hi Bob!"},
                {
                    "speaker": "Bob",
                    "dia_id": "D1:2",
                    "text": "Look at this.",
                    "blip_caption": "a photo of a dog",
                    "img_url": ["http://example.invalid/x.jpg"],
                },
            ],
            "session_2_date_time": "12:09 am on 13 September, 2023",
            "session_2": [{"speaker": "Ann", "dia_id": "D2:1", "text": "Back again."}],
            "session_3_date_time": "1:00 pm on 14 September, 2023",
        },
        "qa": [
            {"question": "Who has a dog?", "answer": "Bob", "evidence": ["D1:2"], "category": 4},
            {"question": "When?", "answer": 2023, "evidence": ["D2:1", "D9:9"], "category": 2},
            {"question": "Bad ids", "answer": "x", "evidence": ["D8:6; D9:17"], "category": 1},
            {"question": "No ids", "answer": "x", "evidence": [], "category": 3},
            {
                "question": "Adversarial",
                "adversarial_answer": "x",
                "evidence": ["D1:1"],
                "category": 5,
            },
        ],
    }
]


def test_loader_builds_turns_with_session_dates_and_captions(tmp_path: Path) -> None:
    [conversation] = load_locomo(_write(tmp_path, MINI))
    assert (conversation.sample_id, conversation.speaker_a, conversation.speaker_b) == (
        "conv-x",
        "Ann",
        "Bob",
    )
    assert [t.dia_id for t in conversation.turns] == ["D1:1", "D1:2", "D2:1"]
    assert [t.session for t in conversation.turns] == [1, 1, 2]
    assert conversation.turns[1].text == "Look at this. [image: a photo of a dog]"
    assert conversation.turns[2].date == datetime(2023, 9, 13, 0, 9, tzinfo=UTC)
    assert conversation.turns[2].date_text == "12:09 am on 13 September, 2023"
    assert document_text(conversation.turns[1]) == (
        "(1:56 pm on 8 May, 2023) Bob: Look at this. [image: a photo of a dog]"
    )


def test_loader_keeps_categories_1_to_4_with_valid_evidence(tmp_path: Path) -> None:
    [conversation] = load_locomo(_write(tmp_path, MINI))
    assert conversation.questions == (
        Question("Who has a dog?", "Bob", ("D1:2",), 4),
        Question("When?", "2023", ("D2:1",), 2),
    )


def test_loader_rejects_an_unparseable_session_date(tmp_path: Path) -> None:
    data = json.loads(json.dumps(MINI))
    data[0]["conversation"]["session_2_date_time"] = "yesterday"
    with pytest.raises(ValueError, match="conv-x session_2"):
        load_locomo(_write(tmp_path, data))


@needs_locomo_dev
def test_dev_file_counts_match_its_readme() -> None:
    conversations = load_locomo(LOCOMO_DEV)
    assert [c.sample_id for c in conversations] == [
        "conv-26",
        "conv-30",
        "conv-41",
        "conv-42",
        "conv-43",
    ]
    assert sum(len(c.turns) for c in conversations) == 2760
    assert sum(len(c.questions) for c in conversations) == 759
    for conversation in conversations:
        ids = {t.dia_id for t in conversation.turns}
        assert len(ids) == len(conversation.turns)
        assert all(set(q.evidence) <= ids for q in conversation.questions)
        dates = [t.date for t in conversation.turns]
        assert dates == sorted(dates)
    assert conversations[0].turns[0].date == datetime(2023, 5, 8, 13, 56, tzinfo=UTC)


# --------------------------------------------------------------------- metrics


def test_recall_at_k_is_the_share_of_evidence_in_the_top_k() -> None:
    ranked = ["D1:1", "D1:2", "D1:3", "D1:4"]
    assert recall_at_k(ranked, ["D1:2", "D1:4"], 1) == 0.0
    assert recall_at_k(ranked, ["D1:2", "D1:4"], 2) == 0.5
    assert recall_at_k(ranked, ["D1:2", "D1:4"], 4) == 1.0
    assert recall_at_k(ranked, ["D1:2", "D1:4"], 10) == 1.0
    assert recall_at_k(ranked, ["D1:2", "D1:2"], 2) == 1.0  # duplicates in evidence count once
    assert recall_at_k(["D1:2", "D1:2", "D1:3"], ["D1:3"], 2) == 0.0
    assert recall_at_k([], ["D1:1"], 5) == 0.0
    with pytest.raises(ValueError):
        recall_at_k(ranked, [], 5)
    with pytest.raises(ValueError):
        recall_at_k(ranked, ["D1:1"], 0)


def test_mrr_is_one_over_the_rank_of_the_first_evidence_hit() -> None:
    assert mrr(["a", "b", "c"], ["a"]) == 1.0
    assert mrr(["a", "b", "c"], ["c", "b"]) == 0.5
    assert mrr(["a", "b", "c", "d"], ["d"]) == 0.25
    assert mrr(["a", "b"], ["z"]) == 0.0
    with pytest.raises(ValueError):
        mrr(["a"], [])


def test_aggregate_means_per_category_and_overall() -> None:
    scores = [
        score_question(["a", "b", "c"], _question(("a",), 1)),  # r5 1, rr 1
        score_question(["b", "a"], _question(("a", "z"), 1)),  # r5 .5, rr .5
        score_question(["x"] * 7 + ["c"], _question(("c",), 4)),  # r5 0, r10 1, rr 1/8
    ]
    assert scores[2] == QuestionScore(category=4, recall={5: 0.0, 10: 1.0}, reciprocal_rank=0.125)
    report = aggregate(scores)
    assert report.overall.n == 3
    assert report.overall.recall == {5: pytest.approx(0.5), 10: pytest.approx(2.5 / 3)}
    assert report.overall.mrr == pytest.approx((1 + 0.5 + 0.125) / 3)
    assert list(report.by_category) == [1, 4]
    assert report.by_category[1].recall == {5: 0.75, 10: 0.75}
    assert report.by_category[1].mrr == 0.75
    assert report.by_category[4].n == 1
    as_json = report.to_json()
    assert as_json["by_category"]["4"] == {"n": 1, "recall": {"5": 0.0, "10": 1.0}, "mrr": 0.125}
    json.dumps(as_json)
    assert "1 multi-hop" in format_table({"method": report})
    assert aggregate([]).overall.n == 0


def test_evaluate_runs_a_ranker_over_every_question() -> None:
    conversation = Conversation(
        sample_id="c",
        speaker_a="Ann",
        speaker_b="Bob",
        turns=(_turn("D1:1"), _turn("D1:2")),
        questions=(_question(("D1:2",), 2), _question(("D1:1",), 3)),
    )
    report = evaluate([conversation], lambda conv, q: [t.dia_id for t in reversed(conv.turns)])
    assert report.by_category[2].mrr == 1.0
    assert report.by_category[3].mrr == 0.5
    assert set(report.by_category) <= set(CATEGORIES)


def test_bm25_prefers_rare_matching_terms_and_ignores_stopwords() -> None:
    assert bm25_tokens("When did Caroline go to the LGBTQ group?") == [
        "caroline",
        "go",
        "lgbtq",
        "group",
    ]
    docs = ["caroline went camping", "melanie went camping", "the the the"]
    index = BM25Index([bm25_tokens(d) for d in docs])
    scores = index.scores(bm25_tokens("Did Caroline go camping?"))
    assert scores[0] > scores[1] > 0.0 == scores[2]
    assert len(index) == 3


def test_rrf_fuses_ranks_with_k_60() -> None:
    fused = rrf_fuse([["a", "b", "c"], ["c", "a"]])
    assert fused == ["a", "c", "b"]
    # 30th in both rankings beats 1st in one only when k > 28: 2 / 90 > 1 / 61 at k = 60
    first = ["a", *(f"f{i}" for i in range(28)), "b"]
    second = [*(f"g{i}" for i in range(29)), "b"]
    assert rrf_fuse([first, second])[0] == "b"
    assert rrf_fuse([first, second], k=10)[0] != "b"


def _bag_embedder(texts: list[str]) -> list[list[float]]:
    return [embed_text(text, 32) for text in texts]


def test_reference_baseline_runs_with_a_fake_embedder(tmp_path: Path) -> None:
    reports = reference_baseline(_write(tmp_path, MINI), embedder=_bag_embedder)
    assert list(reports) == ["minilm", "bm25", "rrf"]
    assert reports["bm25"].overall.n == 2
    assert reports["bm25"].by_category[4].recall[5] == 1.0  # "dog" is in D1:2's caption
    assert list(reference_baseline(_write(tmp_path, MINI), vectors=False)) == ["bm25"]


@needs_locomo_dev
def test_bm25_reference_on_the_dev_file_matches_its_readme() -> None:
    report = reference_baseline(LOCOMO_DEV, vectors=False)["bm25"]
    assert report.overall.n == 759
    assert report.overall.recall[5] == pytest.approx(0.523, abs=0.01)
    assert report.overall.recall[10] == pytest.approx(0.593, abs=0.01)


# ---------------------------------------------------- stand-in embedder hook


def _fake_embedder(texts: list[str]) -> list[list[float]]:
    """Two dimensions: length and vowel share; not normalised (the stand-in passes it on)."""
    return [[float(len(t)), float(sum(c in "aeiou" for c in t))] for t in texts]


def test_standin_serves_embeddings_from_the_given_embedder() -> None:
    calls: list[list[str]] = []

    def embedder(texts: list[str]) -> list[list[float]]:
        calls.append(list(texts))
        return _fake_embedder(texts)

    with OllamaStandIn(embedder=embedder) as server:
        client = ollama.Client(host=server.url)
        reply = client.embed(model="nomic-embed-text", input=["hello", "sky"])
        assert reply.embeddings == [[5.0, 2.0], [3.0, 0.0]]
        legacy = client.embeddings(model="nomic-embed-text", prompt="aaa")
        assert list(legacy.embedding) == [3.0, 3.0]
        assert calls == [["hello", "sky"], ["aaa"]]
        assert server.embedder is embedder


def test_standin_embedder_can_be_swapped_and_embed_dim_faults_still_apply() -> None:
    with OllamaStandIn(embed_dim=16) as server:
        client = ollama.Client(host=server.url)
        assert server.embedder is None
        assert len(client.embed(model="nomic-embed-text", input="hi").embeddings[0]) == 16
        server.embedder = _fake_embedder
        assert client.embed(model="nomic-embed-text", input="hi").embeddings == [[2.0, 1.0]]
        server.fail_next("embed_dim", dim=5)
        faulty = client.embed(model="nomic-embed-text", input="hi").embeddings[0]
        assert len(faulty) == 5
        assert math.isclose(math.fsum(v * v for v in faulty), 1.0)
        assert client.embed(model="nomic-embed-text", input=[]).embeddings == []
        server.embedder = None
        assert client.embed(model="nomic-embed-text", input="hi").embeddings[0] == embed_text(
            "hi", 16
        )


def test_standin_reports_a_failing_embedder_as_a_500() -> None:
    def broken(texts: list[str]) -> list[list[float]]:
        raise RuntimeError("model exploded")

    with OllamaStandIn(embedder=broken) as server:
        client = ollama.Client(host=server.url)
        with pytest.raises(ollama.ResponseError, match="model exploded") as caught:
            client.embed(model="nomic-embed-text", input="hi")
        assert caught.value.status_code == 500
        server.embedder = lambda texts: [[1.0]]  # wrong count for two inputs
        with pytest.raises(ollama.ResponseError, match="1 vectors for 2 inputs"):
            client.embed(model="nomic-embed-text", input=["a", "b"])
