"""Issue 17, sixth round: the date boost shipped (round 5's family 7), and priors from what
a question asks for — measured leave-one-conversation-out on top of the product now.

    python -m bench.locomo_round6 /work/shared/data/locomo/locomo-dev.json [--json] [--only 6a]

Each conversation is replayed once through the real save path with the product's word
context (`bench.locomo_round5.environment`). "product" is `MemoryStore.recall` with the
round's starting point (`DATED`: round 5's product with the date boost on); every
"proto: …" variant is `bench.locomo_round6_rankers.shaped` with one multiplier, and every
family holds `shaped` with none ("proto: = product"). Two pairs must rank every question
alike (`prototype_mismatches`, 0): `recall` with `DATED` and `shaped()`, and `recall` with
`TUNING` (the answer boost shipped) and its prototype. Families are chosen on recall@10
with ties broken by recall@5 (`bench.locomo_round5._criterion`), scored on the held-out
conversation. `products` gives each product on its own (per conversation and category);
`turn_block` the evidence in the block the turn builds (`TURN_TUNING` and before).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from bench.locomo_cache import CachedEmbedder
from bench.locomo_data import Conversation, load_locomo
from bench.locomo_loo import family_results, leave_one_out
from bench.locomo_round5 import (
    SAME,
    Variant,
    _criterion,
    _label,
    chosen,
    environment,
    measure,
    round_main,
)
from bench.locomo_round5_rankers import DATED, ROUND5, Ranker, product_ranker
from bench.locomo_round6_rankers import Conv6, Texts, answer_type, asking_down, shaped
from memory.recall import TUNING, TURN_TUNING
from memory.text.answers import AnswerType, answer_types
from store import point_reads

STRENGTHS = (0.1, 0.25, 0.5, 1.0, 2.0, 4.0)
DEPTHS = (10, 30)
ALL_TYPES: frozenset[AnswerType] = frozenset({"when", "number", "where", "who"})
TYPES: dict[str, frozenset[AnswerType]] = {
    "6a. when -> points holding a time": frozenset({"when"}),
    "6b. how many / much / long -> points holding a number": frozenset({"number"}),
    "6c. where -> points holding a place": frozenset({"where"}),
    "6d. who -> points holding a name": frozenset({"who"}),
    "6e. all four answer types": ALL_TYPES,
}


def families() -> dict[str, list[Variant]]:
    """Each idea alone on the product now: the product, its prototype, the variants."""
    product = Variant("product", product_ranker(DATED))
    same = Variant(SAME, shaped())

    def family(*variants: Variant) -> list[Variant]:
        return [product, same, *variants]

    found: dict[str, list[Variant]] = {
        "0. round 5's product -> the date boost, then the prior (on @10, then @5)": [
            Variant("round 5's product (ROUND5)", product_ranker(ROUND5)),
            product,
        ],
        "0b. the product now: the answer boost shipped (on @10, then @5)": [
            product,
            Variant("the product now (TUNING)", product_ranker(TUNING)),
        ],
    }
    for name, kinds in TYPES.items():
        found[f"{name} (on @10, then @5)"] = family(
            *(
                Variant(
                    f"proto: {'+'.join(sorted(kinds))} x{1 + s} over the top {d}",
                    shaped(answer_type(kinds, s), depth=d),
                )
                for d in DEPTHS
                for s in STRENGTHS
            )
        )
    found["6f. a point that asks goes down (on @10, then @5)"] = family(
        *(
            Variant(
                f"proto: {'only asks' if only else 'ends asking'} x{1 - s} over the top {d}",
                shaped(asking_down(s, only=only), depth=d),
            )
            for only in (True, False)
            for d in DEPTHS
            for s in (0.1, 0.25, 0.5)
        )
    )
    return found


def environment6(conversation: Conversation, cache: CachedEmbedder) -> tuple[Conv6, Path]:
    """`bench.locomo_round5.environment`, and each point's stored text."""
    conv, home = environment(conversation, cache)
    rows = point_reads.hit_rows(conv.memory.db, sorted(conv.to_turn))
    texts = Texts({pid: row.content for pid, row in rows.items()})
    fields = {name: getattr(conv, name) for name in conv.__dataclass_fields__}
    return Conv6(**fields, texts=texts), home


TURNS = {
    "round 5": replace(TURN_TUNING, date_boost=ROUND5.date_boost, answer_boost=0.0),
    "dated": replace(TURN_TUNING, answer_boost=0.0),
    "now": TURN_TUNING,
}
"""The turn's block at round 5's product, with the date boost, and now (the answer boost)."""


def question_types(conversations: Sequence[Conversation]) -> dict[str, int]:
    """How many questions of each category ask for each answer type."""
    counts: Counter[str] = Counter()
    for conversation in conversations:
        for q in conversation.questions:
            for kind in answer_types(q.question) or {"none"}:
                counts[f"{q.category}/{kind}"] += 1
    return dict(sorted(counts.items()))


def run(path: Path, cache_dir: Path, only: Sequence[str] = ()) -> dict[str, Any]:
    from bench.minilm_embedder import load_minilm

    conversations = [c for c in load_locomo(path) if c.questions]
    cache = CachedEmbedder(cache_dir / "minilm.npz", load_minilm)
    fams, variants = chosen(families(), only)
    pairs: list[tuple[Ranker, Ranker]] = [
        (product_ranker(DATED), shaped()),
        (product_ranker(TUNING), shaped(answer_type(ALL_TYPES, TUNING.answer_boost), depth=30)),
    ]
    table, blocks, mismatches = measure(
        conversations, cache, variants, TURNS, pairs, make=environment6
    )
    order = [c.sample_id for c in conversations]
    results = family_results(table, fams, order, name=_label, train=_criterion)
    results["products"] = {
        v.label: leave_one_out({v: table[v]}, order, name=_label)
        for v in variants
        if not v.label.startswith("proto")
    }
    results["turn_block"] = {
        name: leave_one_out({name: rows}, order, name=str) for name, rows in blocks.items()
    }
    results["prototype_mismatches"] = mismatches
    results["question_types"] = question_types(conversations)
    return results


def main(argv: Sequence[str] | None = None) -> int:
    printed = ("prototype_mismatches", "question_types", "turn_block", "products")
    return round_main(__doc__ or "", run, printed, argv)


if __name__ == "__main__":
    raise SystemExit(main())
