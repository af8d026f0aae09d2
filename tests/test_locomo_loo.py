"""The leave-one-conversation-out harness of `bench/locomo.py --loo` and its vector cache."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench.locomo_cache import CachedEmbedder
from bench.locomo_data import QuestionScore
from bench.locomo_loo import Scored, describe, family_results, ideas, leave_one_out
from memory.recall import TUNING, RecallTuning

OTHER = RecallTuning(rrf_k=60)


def scored(recall10: float, category: int = 4) -> Scored:
    return Scored(QuestionScore(category, {5: recall10, 10: recall10}, recall10), recall10)


def test_each_fold_is_scored_with_the_choice_made_on_the_other_conversations() -> None:
    # Holding out a (or b), the product wins on the other two (0.7 vs 0.45); holding out
    # c, OTHER wins on a and b (0.8 vs 0.5), is chosen, and scores c's 0.1.
    table = {
        TUNING: {"a": [scored(0.5)], "b": [scored(0.5)], "c": [scored(0.9)]},
        OTHER: {"a": [scored(0.8)], "b": [scored(0.8)], "c": [scored(0.1)]},
    }
    result = leave_one_out(table, ["a", "b", "c"])
    assert result["chosen"] == {"a": "product", "b": "product", "c": "rrf_k=60"}
    assert result["per_conversation"]["c"]["recall@10"] == 0.1
    assert result["mean"]["recall@10"] == round((0.5 + 0.5 + 0.1) / 3, 3)
    assert result["worst"]["recall@10"] == 0.1
    assert result["worst"]["by_category"]["4"]["in_block"] == 0.1


def test_every_idea_starts_from_the_products_tuning() -> None:
    for family in ideas().values():
        assert family[0] == TUNING
        assert len(set(family)) == len(family) > 1
    assert describe(TUNING) == "product"


def test_vectors_are_embedded_once_and_kept_on_disk(tmp_path: Path) -> None:
    calls: list[list[str]] = []

    def embed(texts: list[str]) -> list[list[float]]:
        calls.append(list(texts))
        return [[float(len(text)), 1.0] for text in texts]

    path = tmp_path / "cache" / "minilm.npz"
    first = CachedEmbedder(path, lambda: embed)
    assert first(["ab", "abc", "ab"]) == [[2.0, 1.0], [3.0, 1.0], [2.0, 1.0]]
    first.save()
    again = CachedEmbedder(path, lambda: embed)
    assert again(["abc"]) == [[3.0, 1.0]]
    assert calls == [["ab", "abc"]]


def _conversation(sample_id: str, pet: str) -> dict[str, object]:
    return {
        "sample_id": sample_id,
        "conversation": {
            "speaker_a": "Ann",
            "speaker_b": "Bob",
            "session_1_date_time": "1:56 pm on 8 May, 2023",
            "session_1": [
                {"speaker": "Ann", "dia_id": "D1:1", "text": f"My {pet} learned a new trick."},
                {"speaker": "Bob", "dia_id": "D1:2", "text": "We went sailing on the lake."},
            ],
            "session_2_date_time": "10:00 am on 3 June, 2023",
            "session_2": [
                {"speaker": "Ann", "dia_id": "D2:1", "text": "The garden is full of tomatoes."}
            ],
        },
        "qa": [
            {"question": f"What did Ann's {pet} learn?", "evidence": ["D1:1"], "category": 4},
            {"question": "Where did Bob go sailing?", "evidence": ["D1:2"], "category": 1},
        ],
    }


def test_the_json_report_keeps_its_fields_and_adds_the_new_ones(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from bench import locomo

    data = tmp_path / "two.json"
    data.write_text(
        json.dumps([_conversation("conv-a", "dog"), _conversation("conv-b", "parrot")]),
        encoding="utf-8",
    )
    argv = [str(data), "--json", "--loo", "--embedder", "hash", "--cache-dir", str(tmp_path)]
    assert locomo.main(argv) == 0
    report = json.loads(capsys.readouterr().out)
    for key in ("questions", "filter_off", "filter_on", "embedder", "embed_seconds", "by_category"):
        assert key in report
    assert report["questions"] == 4
    assert set(report["per_conversation"]) == {"conv-a", "conv-b"}
    assert set(report["per_conversation"]["conv-a"]) == {"hybrid", "vector", "lexical"}
    assert set(report["in_block"]["filter_off"]) == {"hybrid", "vector", "lexical"}
    assert 0.0 <= report["in_block"]["filter_off"]["hybrid"] <= 1.0
    loo = report["loo"]["product"]
    assert set(loo) == {"mean", "worst", "per_conversation", "chosen"}
    assert loo["mean"]["n"] == 4 and set(loo["chosen"]) == {"conv-a", "conv-b"}
    assert set(report["loo"]) == {"product", *ideas()}


def test_family_results_score_each_family_and_keep_every_variants_own_numbers() -> None:
    table = {
        TUNING: {"a": [scored(0.5)], "b": [scored(0.5)], "c": [scored(0.9)]},
        OTHER: {"a": [scored(0.8)], "b": [scored(0.8)], "c": [scored(0.1)]},
    }
    results = family_results(table, {"k": [TUNING, OTHER]}, ["a", "b", "c"], name=describe)
    row = results["k"]
    assert row["chosen"] == {"a": "product", "b": "product", "c": "rrf_k=60"}
    assert row["variants"]["rrf_k=60"]["recall@10"] == round(1.7 / 3, 3)
    assert row["variants_per_conversation"]["product"]["c"] == [0.9, 0.9]
