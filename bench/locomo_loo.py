"""Leave-one-conversation-out tuning of recall on LoCoMo: `bench/locomo.py FILE --loo`.

Each idea is a family of `RecallTuning` variants next to the product's own (`TUNING`). For
every conversation in turn, the variant with the best mean recall@10 on the *other*
conversations is chosen and scored on the held-out one; the held-out scores, pooled, are
what an idea is worth on conversations it was not tuned on. Reported per idea: the mean
(over all questions) and the worst conversation, overall and per category, recall@5/@10,
the evidence inside the injected block (`in_block`), and the variant each fold chose.

The stores are replayed once per conversation; every variant runs through
`MemoryStore.recall` itself (the product's code path), only its `tuning` differs.
"""

from __future__ import annotations

import json
import math
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from bench.locomo_data import CATEGORIES, Conversation, Question, QuestionScore, score_question
from memory.recall import TUNING, RecallTuning

KS = (5, 10)


@dataclass(frozen=True, slots=True)
class Scored:
    """One question's scores under one variant."""

    score: QuestionScore
    in_block: float
    """Share of the evidence among the hits the injected block holds."""


def _grid(base: RecallTuning, **axes: Sequence[Any]) -> list[RecallTuning]:
    variants = [base]
    for name, values in axes.items():
        variants = [replace(v, **{name: value}) for v in variants for value in values]
    return variants


def ideas(base: RecallTuning = TUNING) -> dict[str, list[RecallTuning]]:
    """Each idea alone: its variants, the product's tuning first (a fold may keep it)."""
    families = {
        "rrf_params": _grid(base, rrf_k=(5, 10, 20, 60), vector_weight=(0.25, 0.5, 0.75, 1.0)),
        "candidates": _grid(base, candidates=(20, 50, 100)),
        "score_fusion": _grid(
            base, fusion=("score",), vector_weight=(0.2, 0.3, 0.4, 0.5, 0.6, 0.7)
        ),
        "feedback": _grid(
            base, feedback_seeds=(3, 5), feedback_terms=(4, 8), feedback_weight=(0.25, 0.5)
        ),
        "session_diversity": _grid(base, same_day_factor=(0.9, 0.8, 0.7, 0.5)),
        "neighbour_diversity": _grid(base, neighbour_factor=(0.9, 0.8, 0.7, 0.5, 0.3)),
        "dates": _grid(base, date_boost=(0.0, 0.25, 0.5, 1.0, 2.0)),
    }
    return {
        name: [base, *(v for v in variants if v != base)] for name, variants in families.items()
    }


def describe(tuning: RecallTuning, base: RecallTuning = TUNING) -> str:
    """The fields that differ from `base`, e.g. "rrf_k=20 vector_weight=0.75"; "product"."""
    changed = [
        f"{name}={getattr(tuning, name)}"
        for name in tuning.__dataclass_fields__
        if getattr(tuning, name) != getattr(base, name)
    ]
    return " ".join(changed) or "product"


Recall = Callable[[Conversation, Question, RecallTuning], tuple[list[str], set[str]]]
"""(ranked dia_ids, the dia_ids the injected block holds)."""


def score_variants(
    conversations: Sequence[Conversation], variants: Sequence[RecallTuning], recall: Recall
) -> dict[RecallTuning, dict[str, list[Scored]]]:
    """Every variant's scores, per conversation (sample_id), in question order."""
    table: dict[RecallTuning, dict[str, list[Scored]]] = {}
    for variant in dict.fromkeys(variants):
        table[variant] = {}
        for conversation in conversations:
            rows: list[Scored] = []
            for question in conversation.questions:
                ranked, in_block = recall(conversation, question, variant)
                evidence = set(question.evidence)
                rows.append(
                    Scored(
                        score_question(ranked, question, KS),
                        len(evidence.intersection(in_block)) / len(evidence),
                    )
                )
            table[variant][conversation.sample_id] = rows
    return table


def _mean(values: Sequence[float]) -> float:
    return math.fsum(values) / len(values) if values else 0.0


def summarise(rows: Sequence[Scored]) -> dict[str, Any]:
    """recall@5, recall@10, MRR and in_block over `rows`, and per category."""

    def block(items: Sequence[Scored]) -> dict[str, Any]:
        return {
            "n": len(items),
            "recall@5": round(_mean([r.score.recall[5] for r in items]), 3),
            "recall@10": round(_mean([r.score.recall[10] for r in items]), 3),
            "mrr": round(_mean([r.score.reciprocal_rank for r in items]), 3),
            "in_block": round(_mean([r.in_block for r in items]), 3),
        }

    result = block(rows)
    result["by_category"] = {
        str(c): block([r for r in rows if r.score.category == c])
        for c in CATEGORIES
        if any(r.score.category == c for r in rows)
    }
    return result


def leave_one_out(
    table: Mapping[Any, Mapping[str, Sequence[Scored]]],
    order: Sequence[str],
    name: Callable[[Any], str] = describe,
    train: Callable[[Scored], float] = lambda r: r.score.recall[10],
) -> dict[str, Any]:
    """Choose on four, score the fifth, rotate: the pooled held-out scores, per conversation,
    the worst conversation (overall and per category) and each fold's choice."""
    held_out: list[Scored] = []
    per_conversation: dict[str, Any] = {}
    chosen: dict[str, str] = {}
    for sample_id in order:

        def train_score(variant: Any, held: str = sample_id) -> float:
            rows = [r for other, rs in table[variant].items() if other != held for r in rs]
            return _mean([train(r) for r in rows])

        best = max(table, key=train_score)  # ties: the first, i.e. the product's tuning
        chosen[sample_id] = name(best)
        rows = list(table[best][sample_id])
        held_out += rows
        per_conversation[sample_id] = summarise(rows)
    return {
        "mean": summarise(held_out),
        "worst": _worst(per_conversation),
        "per_conversation": per_conversation,
        "chosen": chosen,
    }


def _worst(per_conversation: Mapping[str, Any]) -> dict[str, Any]:
    """The lowest conversation on each number, overall and per category."""
    keys = ("recall@5", "recall@10", "in_block")
    worst: dict[str, Any] = {
        key: min(row[key] for row in per_conversation.values()) for key in keys
    }
    categories = {c for row in per_conversation.values() for c in row["by_category"]}
    worst["by_category"] = {
        c: {
            key: min(
                row["by_category"][c][key]
                for row in per_conversation.values()
                if c in row["by_category"]
            )
            for key in keys
        }
        for c in sorted(categories)
    }
    return worst


def run_loo(
    conversations: Sequence[Conversation],
    recall: Recall,
    families: Mapping[str, Sequence[RecallTuning]] | None = None,
) -> dict[str, Any]:
    """`leave_one_out` for the product's tuning alone and for every idea's family."""
    families = ideas() if families is None else families
    order = [c.sample_id for c in conversations if c.questions]
    variants = [TUNING, *(v for family in families.values() for v in family)]
    table = score_variants([c for c in conversations if c.questions], variants, recall)
    results: dict[str, Any] = {"product": leave_one_out({TUNING: table[TUNING]}, order)}
    for name, family in families.items():
        results[name] = leave_one_out({v: table[v] for v in family}, order)
    return results


def print_loo(results: Mapping[str, Any]) -> None:
    print("leave-one-conversation-out (hybrid, filter off): mean over held-out questions / worst")
    header = f"{'idea':<21}{'R@5':>13}{'R@10':>13}{'in_block':>13}   " + "  ".join(
        f"{c}:{CATEGORIES[int(c)][:6]}@10" for c in ("1", "2", "3", "4")
    )
    print(header)
    for name, row in results.items():
        mean, worst = row["mean"], row["worst"]
        cells = [f"{mean[k]:.3f}/{worst[k]:.3f}" for k in ("recall@5", "recall@10", "in_block")]
        cats = [
            f"{mean['by_category'][c]['recall@10']:.3f}/{worst['by_category'][c]['recall@10']:.3f}"
            if c in mean["by_category"]
            else f"{'-':^11}"
            for c in ("1", "2", "3", "4")
        ]
        print(f"{name:<21}" + "".join(f"{c:>13}" for c in cells) + "   " + "  ".join(cats))
        choices = sorted(set(row["chosen"].values()))
        if choices != ["product"]:
            print(f"{'':<21}chosen: " + "; ".join(choices))


def print_variants(results: Mapping[str, Any]) -> None:
    """Each family's variants on all conversations (a family's `variants`: label → mean)."""
    for name, row in results.items():
        print(f"\n{name}: each variant on all conversations (R@5 R@10 in_block MRR)")
        for label, mean in row["variants"].items():
            print(
                f"  {label:<40} {mean['recall@5']:.3f} {mean['recall@10']:.3f} "
                f"{mean['in_block']:.3f} {mean['mrr']:.3f}"
            )


def family_results(
    table: Mapping[Any, Mapping[str, Sequence[Scored]]],
    families: Mapping[str, Sequence[Any]],
    order: Sequence[str],
    name: Callable[[Any], str],
    train: Callable[[str], Callable[[Scored], float]] = lambda _family: _recall10,
) -> dict[str, Any]:
    """`leave_one_out` of every family (trained by `train(family name)`), with each
    variant's own scores on all conversations: `variants` (label → mean) and
    `variants_per_conversation` (label → conversation → [recall@5, recall@10])."""
    results: dict[str, Any] = {}
    for family_name, family in families.items():
        row = leave_one_out(
            {v: table[v] for v in family}, order, name=name, train=train(family_name)
        )
        single = {name(v): leave_one_out({v: table[v]}, order, name=name) for v in family}
        row["variants"] = {label: loo["mean"] for label, loo in single.items()}
        row["variants_per_conversation"] = {
            label: {
                sample: [scores["recall@5"], scores["recall@10"]]
                for sample, scores in loo["per_conversation"].items()
            }
            for label, loo in single.items()
        }
        results[family_name] = row
    return results


def _recall10(row: Scored) -> float:
    return row.score.recall[10]


def progress(sample_id: str, started: float) -> None:
    """One line on stderr when a conversation is done."""
    print(f"{sample_id} done ({time.perf_counter() - started:.0f} s)", file=sys.stderr)


def print_results(results: Mapping[str, Any], *, as_json: bool) -> None:
    """The families' results as JSON, or as the held-out table and each variant's means."""
    if as_json:
        print(json.dumps(results, indent=2))
        return
    print_loo(results)
    print_variants(results)
