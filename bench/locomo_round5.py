"""Issue 17, fifth round: a prior on a point's length, the question's shape, the
neighbours' fused scores, a second vector query of the question's content words, and three
no-model-call ideas from the retrieval literature — each measured leave-one-conversation-out.

    python -m bench.locomo_round5 /work/shared/data/locomo/locomo-dev.json [--json] [--only FAMILY]

Each conversation is replayed once through the real save path with the product's word
context (`bench.locomo_round2.replay`, "two back"). A variant ranks each question
(`bench/locomo_round5_rankers.py`): "product" is `MemoryStore.recall` itself; the others
("proto: …") start from the product's own two rankings and change one thing. Every family
holds a variant at the product's values ("= product"), which must rank exactly as
`recall` (`run` counts the questions where it does not: `prototype_mismatches`, 0). A
family is scored with `bench.locomo_loo.leave_one_out` (choose on four conversations by
recall@10, score the fifth). `in_block` is the top 5 (`MEMORY_TOP_K`). MiniLM vectors come
from the disk cache of `bench/locomo.py` (`--cache-dir`).
"""

from __future__ import annotations

import argparse
import math
import shutil
import time
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from bench.locomo_cache import CachedEmbedder, default_cache_dir
from bench.locomo_data import Conversation, load_locomo, score_question
from bench.locomo_loo import (
    KS,
    Scored,
    family_results,
    leave_one_out,
    print_results,
    progress,
)
from bench.locomo_round2 import ctx_wide, replay
from bench.locomo_round5_rankers import (
    BEFORE,
    DATED,
    ROUND5,
    Conv,
    Ranker,
    agreement,
    coverage,
    dated_prior,
    dedupe_ranker,
    list_same_day,
    list_weights,
    neighbour_evidence,
    prior_floor,
    prior_multiplier,
    prior_tie_break,
    product_ranker,
    proximity,
    same_as_product,
    third_vector,
)
from bench.locomo_texts import unit_rows, vector_query_text
from memory.recall import TURN_TUNING, RecallTuning
from memory.text.shape import content_words, is_list_question

BLOCK = 5  # MEMORY_TOP_K
SAME = "proto: = product"
PRIORS = (1, 2, 4, 8, 16, 32, math.inf)
"""The length prior's c in n / (n + c); inf: the fused score times n."""


def _prior(c: float) -> str:
    return "n" if math.isinf(c) else f"n/(n+{c})"


@dataclass(frozen=True)
class Variant:
    """One way to rank, named (the name is its identity)."""

    label: str
    ranker: Ranker = field(compare=False, hash=False)


def families() -> dict[str, list[Variant]]:
    """Each idea alone: the product first, then the prototype at the product's values."""
    base = Variant("product", product_ranker())  # before this round
    same = Variant(SAME, same_as_product())

    def family(*variants: Variant) -> list[Variant]:
        return [base, same, *variants]

    return {
        "1a. length prior, multiplier": family(
            *(Variant(f"proto: x n/(n+{c})", prior_multiplier(c)) for c in (0.5, 1, 2, 4, 8))
        ),
        "1d. length prior inside the top 10 (on @10, then @5)": family(
            *(
                Variant(f"proto: top 10 x {_prior(c)}", prior_multiplier(c, depth=10))
                for c in PRIORS
            )
        ),
        "1e. length prior, what is counted": family(
            *(
                Variant(f"proto: x n/(n+4) of the {w}", prior_multiplier(4, words=w))
                for w in ("text", "bare")
            ),
            *(
                Variant(
                    f"proto: top 10 x n/(n+4) of the {w}", prior_multiplier(4, depth=10, words=w)
                )
                for w in ("text", "bare")
            ),
        ),
        "1b. length prior, floor": family(
            *(Variant(f"proto: drop < {m} content words", prior_floor(m)) for m in (1, 2, 3, 4))
        ),
        "1c. length prior, tie-break": family(Variant("proto: ties by length", prior_tie_break())),
        "2a. list questions, vector weight": family(
            *(
                Variant(f"proto: lists at vector weight {w}", list_weights(w))
                for w in (0, 0.25, 0.75, 1)
            )
        ),
        "2b. list questions, near-duplicates last": family(
            *(
                Variant(f"proto: lists, duplicates >= {t} last", dedupe_ranker(t, lists_only=True))
                for t in (0.95, 0.9, 0.85, 0.8)
            )
        ),
        "2c. list questions, other days": family(
            *(Variant(f"proto: lists, same day x{f}", list_same_day(f)) for f in (0.9, 0.7, 0.5))
        ),
        "3a. neighbours' fused scores": family(
            *(
                Variant(f"proto: + {w} x {how} of +-{n}", neighbour_evidence(w, n, how))
                for w in (0.1, 0.25, 0.5)
                for n in (1, 2)
                for how in ("max", "sum")
            )
        ),
        "3b. neighbours' fused scores, pulled in": family(
            *(
                Variant(
                    f"proto: + {w} x max of +-1, pulled in",
                    neighbour_evidence(w, 1, "max", pull_in=True),
                )
                for w in (0.25, 0.5)
            )
        ),
        "3c. the session's fused scores": family(
            *(
                Variant(f"proto: + {w} x the session's sum", neighbour_evidence(w, 0, "sum"))
                for w in (0.05, 0.1, 0.25)
            )
        ),
        "4. content-word vector, third ranking": family(
            *(
                Variant(f"proto: {form} vector at {w}", third_vector(form, w))
                for form in ("content", "stripped")
                for w in (0.1, 0.25, 0.5)
            )
        ),
        "5a. agreement (CombMNZ)": family(
            *(Variant(f"proto: both rankings x{1 + b}", agreement(b)) for b in (0.25, 0.5, 1.0))
        ),
        "5b. query-term coverage": family(
            *(Variant(f"proto: coverage gain {g}", coverage(g)) for g in (0.25, 0.5, 1.0))
        ),
        "5c. term proximity": family(
            *(Variant(f"proto: proximity gain {g}", proximity(g)) for g in (0.25, 0.5, 1.0))
        ),
        "6. lists at 0.75 + length prior inside the top 10 (on @10, then @5)": family(
            Variant("proto: lists at vector weight 0.75", list_weights(0.75)),
            *(
                Variant(
                    f"proto: lists at 0.75, top 10 x {_prior(c)}",
                    prior_multiplier(c, depth=10, lists_at=0.75),
                )
                for c in PRIORS
            ),
            Variant("the product of round 5 (ROUND5)", product_ranker(ROUND5)),
        ),
        "7. the date boost, then the length prior (on @10, then @5)": family(
            Variant("the product of round 5 (ROUND5)", product_ranker(ROUND5)),
            *(
                Variant(f"proto: date boost x{1 + b}, then the prior", dated_prior(b))
                for b in (0.25, 0.5, 1.0, 2.0, 4.0)
            ),
        ),
        "5d. near-duplicates last, every question": family(
            *(
                Variant(f"proto: duplicates >= {t} last", dedupe_ranker(t, lists_only=False))
                for t in (0.95, 0.9, 0.85)
            )
        ),
    }


QUERY_FORMS = ("question", "content", "stripped")


def environment(conversation: Conversation, cache: CachedEmbedder) -> tuple[Conv, Path]:
    """The conversation replayed with the product's word context, and what the
    prototypes need of its points and questions."""
    turns = conversation.turns
    texts = [f"{t.speaker}: {t.text}" for t in turns]
    vectors = cache(texts)
    store, to_turn, home = replay(conversation, vectors, ctx_wide)
    index_of = {turn.dia_id: i for i, turn in enumerate(turns)}
    units = unit_rows(vectors)
    analyzer = store.lexical.analyzer
    own = {pid: analyzer.terms(turns[index_of[dia]].text) for pid, dia in to_turn.items()}
    sources = {
        "content": lambda t: f"{t.speaker}: {t.text}",  # what the store holds
        "text": lambda t: t.text,
        "bare": lambda t: t.text.partition(" [image:")[0],
    }
    questions = [q.question for q in conversation.questions]
    conv = Conv(
        memory=store,
        to_turn=to_turn,
        session={pid: turns[index_of[dia]].session for pid, dia in to_turn.items()},
        content_words={
            name: {pid: content_words(source(turns[index_of[dia]])) for pid, dia in to_turn.items()}
            for name, source in sources.items()
        },
        own_terms=own,
        unit={pid: units[index_of[dia]] for pid, dia in to_turn.items()},
        when={pid: turns[index_of[dia]].date for pid, dia in to_turn.items()},
        question_vectors={
            form: cache(
                [q if form == "question" else vector_query_text(q, form) for q in questions]
            )  # type: ignore[arg-type]
            for form in QUERY_FORMS
        },
    )
    return conv, home


def _scores(conv: Conv, conversation: Conversation, ranker: Ranker) -> list[Scored]:
    rows: list[Scored] = []
    for i, question in enumerate(conversation.questions):
        ranked = [conv.to_turn[p] for p in ranker(conv, i, question) if p in conv.to_turn]
        evidence = set(question.evidence)
        in_block = len(evidence & set(ranked[:BLOCK])) / len(evidence)
        rows.append(Scored(score_question(ranked, question, KS), in_block))
    return rows


TURNS = {
    "before": replace(BEFORE, neighbour_window=3, neighbour_anchors=5),
    "now": replace(TURN_TUNING, date_boost=ROUND5.date_boost, answer_boost=ROUND5.answer_boost),
}
"""The turn's block before this round and now (`TURN_TUNING`: 5 hits, then the turns
around them while `MEMORY_MAX_CHARS` has room)."""


def _block_scores(conv: Conv, conversation: Conversation, tuning: RecallTuning) -> list[Scored]:
    """Each question's evidence in the block the turn builds with `tuning` (`in_block`),
    beside the recall@k of the same tuning's top 10."""
    rows: list[Scored] = []
    for i, question in enumerate(conversation.questions):
        vector = conv.question_vectors["question"][i]
        block = conv.memory.recall(question.question, vector=vector, tuning=tuning)
        top = product_ranker(replace(tuning, neighbour_window=0))(conv, i, question)
        held = {conv.to_turn[h.id] for h in block.in_block() if h.id in conv.to_turn}
        evidence = set(question.evidence)
        ranked = [conv.to_turn[p] for p in top if p in conv.to_turn]
        rows.append(
            Scored(score_question(ranked, question, KS), len(evidence & held) / len(evidence))
        )
    return rows


Table = dict[Variant, dict[str, list[Scored]]]
Blocks = dict[str, dict[str, list[Scored]]]


def measure(
    conversations: Sequence[Conversation],
    cache: CachedEmbedder,
    variants: Sequence[Variant],
    turns: Mapping[str, RecallTuning],
    pairs: Sequence[tuple[Ranker, Ranker]],
    make: Callable[[Conversation, CachedEmbedder], tuple[Conv, Path]] = environment,
) -> tuple[Table, Blocks, int]:
    """Every variant's scores, each turn tuning's block, and how many questions a pair
    (product, prototype) ranked differently, conversation by conversation (`make` replays
    each into a store, removed after)."""
    table: Table = {v: {} for v in variants}
    blocks: Blocks = {name: {} for name in turns}
    mismatches = 0
    started = time.perf_counter()
    try:
        for conversation in conversations:
            conv, home = make(conversation, cache)
            try:
                for i, question in enumerate(conversation.questions):
                    for product, proto in pairs:
                        mismatches += product(conv, i, question) != proto(conv, i, question)
                for variant in variants:
                    table[variant][conversation.sample_id] = _scores(
                        conv, conversation, variant.ranker
                    )
                for name, tuning in turns.items():
                    blocks[name][conversation.sample_id] = _block_scores(conv, conversation, tuning)
            finally:
                conv.memory.close()
                shutil.rmtree(home, ignore_errors=True)
            progress(conversation.sample_id, started)
    finally:
        cache.save()
    return table, blocks, mismatches


def list_questions(conversations: Sequence[Conversation]) -> dict[str, int]:
    """How many questions the list rule flags, per category."""
    counts: Counter[str] = Counter()
    for conversation in conversations:
        for q in conversation.questions:
            counts[f"{q.category}/all"] += 1
            counts[f"{q.category}/list"] += is_list_question(q.question)
    return dict(sorted(counts.items()))


def run(path: Path, cache_dir: Path, only: Sequence[str] = ()) -> dict[str, Any]:
    from bench.minilm_embedder import load_minilm

    conversations = [c for c in load_locomo(path) if c.questions]
    cache = CachedEmbedder(cache_dir / "minilm.npz", load_minilm)
    fams, variants = chosen(families(), only)
    table, blocks, mismatches = measure(conversations, cache, variants, TURNS, PAIRS)
    order = [c.sample_id for c in conversations]
    results = family_results(table, fams, order, name=_label, train=_criterion)
    results["turn_block"] = {
        name: leave_one_out({name: rows}, order, name=str) for name, rows in blocks.items()
    }
    results["prototype_mismatches"] = mismatches
    results["list_questions"] = list_questions(conversations)
    return results


PAIRS = (
    (product_ranker(), same_as_product()),
    (product_ranker(ROUND5), prior_multiplier(8, depth=10, lists_at=0.75)),
    (product_ranker(ROUND5), dated_prior(0.0)),
    (product_ranker(DATED), dated_prior(DATED.date_boost)),
)
"""(the product, its prototype): the product before this round and its prototype path; the
product this round shipped and the prototype of what it ships; the sixth round's first step
(`DATED`: the date boost, then the prior) and family 7 at its value. Each pair must rank
every question alike."""


def _criterion(family: str) -> Callable[[Scored], float]:
    """recall@10, as every round; families marked "(on @10, then @5)" break its ties by
    recall@5 (the top 5 is what the block holds at `MEMORY_TOP_K`)."""
    if "then @5" in family:
        return lambda r: r.score.recall[10] + 1e-4 * r.score.recall[5]
    return lambda r: r.score.recall[10]


def _label(variant: Variant) -> str:
    return variant.label


def chosen(
    all_families: dict[str, list[Variant]], only: Sequence[str]
) -> tuple[dict[str, list[Variant]], list[Variant]]:
    """The families named by `--only` (all without it) and their variants, each once."""
    fams = {n: f for n, f in all_families.items() if not only or any(n.startswith(o) for o in only)}
    return fams, list(dict.fromkeys(v for family in fams.values() for v in family))


def round_main(
    doc: str,
    run_round: Callable[[Path, Path, Sequence[str]], dict[str, Any]],
    printed: Sequence[str],
    argv: Sequence[str] | None,
) -> int:
    """A round bench's command line: FILE [--json] [--cache-dir DIR] [--only N ...]; without
    --json the `printed` entries go first, then the table."""
    parser = argparse.ArgumentParser(description=doc.splitlines()[0])
    parser.add_argument("path", type=Path)
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--cache-dir", type=Path, default=default_cache_dir())
    parser.add_argument(
        "--only", action="append", default=[], help="a family's number (repeatable)"
    )
    args = parser.parse_args(argv)
    results = run_round(args.path, args.cache_dir, args.only)
    if not args.json:
        for key in printed:
            print(f"{key}: {results.pop(key)}")
    print_results(results, as_json=args.json)
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    return round_main(
        __doc__ or "", run, ("prototype_mismatches", "list_questions", "turn_block"), argv
    )


if __name__ == "__main__":
    raise SystemExit(main())
