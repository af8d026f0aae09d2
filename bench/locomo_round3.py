"""Issue 17, third round: the query side and what a vector is made of — the query
vector without the question's scaffolding, fusion that adapts to how well the words
matched, own words against neighbour words, query-term weights, feedback seeded by the
vectors, neighbour and sentence vectors — each measured leave-one-conversation-out.

    python -m bench.locomo_round3 /work/shared/data/locomo/locomo-dev.json [--json] [--only FAMILY]

Each conversation is replayed through the real save path (`bench.locomo.replay`) once per
word context a family needs (the product's; own words twice; none). A variant ranks each
question (`bench/locomo_rankers.py`): through `MemoryStore.recall` itself, or — labels
starting "proto:" — as a prototype of what the product cannot express, fused with the
product's RRF. A family is scored with `bench.locomo_loo.leave_one_out` (choose on four
conversations by recall@10, score the fifth). `in_block` is the top 5 (`MEMORY_TOP_K`; five
LoCoMo turns always fit `MEMORY_MAX_CHARS`). MiniLM vectors come from the disk cache of
`bench/locomo.py` (`--cache-dir`); new texts (query forms, sentence pieces) are embedded
once and cached there.
"""

from __future__ import annotations

import argparse
import shutil
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from bench.locomo_cache import CachedEmbedder, default_cache_dir
from bench.locomo_data import Conversation, load_locomo, score_question
from bench.locomo_loo import KS, Scored, family_results, print_results, progress
from bench.locomo_rankers import (
    Env,
    Ranker,
    Store,
    adaptive_ranker,
    cosine_ranker,
    mixed_ranker,
    product_ranker,
    two_lexical_ranker,
    vector_feedback_ranker,
    weighted_ranker,
)
from bench.locomo_round2 import ctx_none, ctx_wide, replay
from bench.locomo_texts import (
    product_pieces,
    sentence_texts,
    unit_rows,
    vector_query_text,
)
from memory.recall import TUNING

BLOCK = 5  # MEMORY_TOP_K
PIECES = {"sent": 0, "sent20": 20, "sent40": 40}
"""Sentence pieces named in every piece: every sentence, or short ones joined with the next."""


def ctx_own_twice_wide(conversation: Conversation, index: int) -> str:
    """The product's word context (two back, a user message's reply) with the point's own
    text once more, so its own words count twice."""
    turn = conversation.turns[index]
    return f"{turn.speaker}: {turn.text}\n{ctx_wide(conversation, index)}"


STORES: dict[str, Callable[[Conversation, int], str]] = {
    "product": ctx_wide,
    "own_twice": ctx_own_twice_wide,
    "none": ctx_none,
}

QUERY_FORMS: dict[str, Callable[[str], str]] = {
    "question": lambda q: q,
    "stripped": lambda q: vector_query_text(q, "stripped"),
    "content": lambda q: vector_query_text(q, "content"),
}


@dataclass(frozen=True)
class Variant:
    """One way to rank, named (the name is its identity)."""

    label: str
    ranker: Ranker = field(compare=False, hash=False)


def families() -> dict[str, list[Variant]]:
    """Each idea alone; the product's variant first where the idea is a change of it."""
    base = Variant("product", product_ranker())
    adaptive = [
        Variant(f"proto: adaptive weak={w} strong={s}", adaptive_ranker(w, s))
        for w in (0.75, 1.0, 1.5, 2.0)
        for s in (0.25, 0.5)
    ]
    vector_feedback = [
        Variant(
            f"proto: vector-seeded feedback seeds={n} terms={t} weight={w}",
            vector_feedback_ranker(n, t, w),
        )
        for n in (3, 5)
        for t in (4, 8)
        for w in (0.25, 0.5)
    ]
    return {
        "vector-seeded feedback": [base, *vector_feedback],
        "query form": [
            base,
            Variant("vector of stripped question", product_ranker(form="stripped")),
            Variant("vector of content words", product_ranker(form="content")),
        ],
        "query mix": [base, *(Variant(f"mix {w}", mixed_ranker(w)) for w in (0.25, 0.5, 0.75))],
        "adaptive fusion": [
            base,
            Variant("proto: adaptive weak=0.5 strong=0.5 (= product)", adaptive_ranker(0.5, 0.5)),
            *adaptive,
        ],
        "own twice": [base, Variant("own words twice", product_ranker(store="own_twice"))],
        "two word rankings": [
            base,
            *(
                Variant(f"proto: own-words ranking {w}", two_lexical_ranker(w))
                for w in (0.25, 0.5, 1.0)
            ),
        ],
        "vector smoothing": [
            base,
            Variant("proto: exact cosine (= product)", cosine_ranker()),
            *(
                Variant(f"proto: neighbour cosine x{b}", cosine_ranker(smooth=b))
                for b in (0.1, 0.25, 0.5)
            ),
        ],
        "sentence vectors": [  # the speaker named in every piece
            base,
            *(
                Variant(f"proto: sentence vectors {m} {p}", cosine_ranker(sentences=m, pieces=p))
                for m in ("max", "mean", "only", "centroid")
                for p in PIECES
            ),
        ],
        "sentence vectors + fusion weights": [
            base,
            *(
                Variant(
                    f"proto: sentence max {p}, rrf_k={k} vector_weight={w}",
                    cosine_ranker(
                        sentences="max",
                        pieces=p,
                        tuning=replace(TUNING, rrf_k=k, vector_weight=w),
                    ),
                )
                for p in ("sent", "sent40")
                for k in (10, 20)
                for w in (0.5, 0.75, 1.0)
            ),
        ],
        "sentence vectors (vector only)": [
            Variant("proto: exact cosine, vector only", cosine_ranker(vector_only=True)),
            *(
                Variant(
                    f"proto: vector only, sentence vectors {m} {p}",
                    cosine_ranker(sentences=m, pieces=p, vector_only=True),
                )
                for p in PIECES
                for m in ("max", "centroid")
            ),
        ],
        "sentence mean, speaker once": [  # a rule for the stored text: "Speaker: text"
            base,
            Variant("proto: sentence mean", cosine_ranker(sentences="centroid", pieces="named")),
            Variant(
                "proto: best of turn and sentence", cosine_ranker(sentences="max", pieces="named")
            ),
        ],
        "sentence mean, speaker once (vector only)": [
            Variant("proto: exact cosine, vector only", cosine_ranker(vector_only=True)),
            Variant(
                "proto: sentence mean, vector only",
                cosine_ranker(sentences="centroid", pieces="named", vector_only=True),
            ),
        ],
        "sentence mean, no speaker": [  # the turn's text alone, as a live message is
            Variant("proto: text alone, whole", cosine_ranker(plain=True)),
            Variant(
                "proto: text alone, sentence mean",
                cosine_ranker(sentences="centroid", pieces="plain", plain=True),
            ),
            Variant(
                "proto: text alone, best of turn and sentence",
                cosine_ranker(sentences="max", pieces="plain", plain=True),
            ),
        ],
        "sentence mean, no speaker (vector only)": [
            Variant(
                "proto: text alone, whole, vector only", cosine_ranker(plain=True, vector_only=True)
            ),
            Variant(
                "proto: text alone, sentence mean, vector only",
                cosine_ranker(sentences="centroid", pieces="plain", plain=True, vector_only=True),
            ),
        ],
        "query-term weights": [
            base,
            Variant("proto: weights 1/1 (= product)", weighted_ranker(1.0, 1.0, 1.0)),
            *(
                Variant(f"proto: names x{nw} common x{cw}", weighted_ranker(nw, cw, 0.3))
                for nw in (1.0, 1.5, 2.0, 3.0)
                for cw in (1.0, 0.5, 0.25)
                if (nw, cw) != (1.0, 1.0)
            ),
        ],
    }


def _pieces(
    conversation: Conversation, cache: CachedEmbedder
) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Every piece set the sentence families use: label → (unit vectors, turn index)."""
    sets = {label: sentence_texts(conversation, shortest) for label, shortest in PIECES.items()}
    sets["named"] = product_pieces(conversation, named=True)
    sets["plain"] = product_pieces(conversation, named=False)
    return {
        label: (unit_rows(cache(texts)), np.asarray(owners, np.int64))
        for label, (texts, owners) in sets.items()
    }


def _environment(
    conversation: Conversation, cache: CachedEmbedder, stores: dict[str, Store], pieces: bool
) -> Env:
    turns = conversation.turns
    return Env(
        stores,
        {
            form: cache([make(q.question) for q in conversation.questions])
            for form, make in QUERY_FORMS.items()
        },
        turns=unit_rows(cache([f"{t.speaker}: {t.text}" for t in turns])),
        plain_turns=unit_rows(cache([t.text for t in turns])),
        sessions=np.asarray([t.session for t in turns]),
        dias=[t.dia_id for t in turns],
        pieces=_pieces(conversation, cache) if pieces else {},
    )


def _scores(env: Env, conversation: Conversation, ranker: Ranker) -> list[Scored]:
    rows: list[Scored] = []
    for i, question in enumerate(conversation.questions):
        ranked = ranker(env, i, question)
        evidence = set(question.evidence)
        in_block = len(evidence & set(ranked[:BLOCK])) / len(evidence)
        rows.append(Scored(score_question(ranked, question, KS), in_block))
    return rows


def run(path: Path, cache_dir: Path, only: Sequence[str] = ()) -> dict[str, Any]:
    from bench.minilm_embedder import load_minilm

    conversations = [c for c in load_locomo(path) if c.questions]
    cache = CachedEmbedder(cache_dir / "minilm.npz", load_minilm)
    fams = {n: f for n, f in families().items() if not only or n in only}
    variants = list(dict.fromkeys(v for family in fams.values() for v in family))
    needed = {"product"} | ({"own_twice"} if "own twice" in fams else set())
    needed |= {"none"} if "two word rankings" in fams else set()
    pieces = any(name.startswith("sentence") for name in fams)
    table: dict[Variant, dict[str, list[Scored]]] = {v: {} for v in variants}
    started = time.perf_counter()
    try:
        for conversation in conversations:
            turn_vectors = cache([f"{t.speaker}: {t.text}" for t in conversation.turns])
            stores: dict[str, Store] = {}
            homes: list[Path] = []
            try:
                for name in sorted(needed):
                    store, to_turn, home = replay(conversation, turn_vectors, STORES[name])
                    stores[name] = (store, to_turn)
                    homes.append(home)
                env = _environment(conversation, cache, stores, pieces)
                for variant in variants:
                    table[variant][conversation.sample_id] = _scores(
                        env, conversation, variant.ranker
                    )
            finally:
                for store, _ in stores.values():
                    store.close()
                for home in homes:
                    shutil.rmtree(home, ignore_errors=True)
            progress(conversation.sample_id, started)
    finally:
        cache.save()
    order = [c.sample_id for c in conversations]
    return family_results(table, fams, order, name=_label)


def _label(variant: Variant) -> str:
    return variant.label


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("path", type=Path)
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--cache-dir", type=Path, default=default_cache_dir())
    parser.add_argument("--only", action="append", default=[], help="a family (repeatable)")
    args = parser.parse_args(argv)
    results = run(args.path, args.cache_dir, args.only)
    print_results(results, as_json=args.json)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
