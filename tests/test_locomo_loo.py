"""The leave-one-conversation-out harness of `bench/locomo.py --loo` and its vector cache."""

from __future__ import annotations

from pathlib import Path

from bench.locomo_cache import CachedEmbedder
from bench.locomo_data import QuestionScore
from bench.locomo_loo import Scored, describe, ideas, leave_one_out
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
