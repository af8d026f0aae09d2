"""Issue 17, second round: what is indexed and embedded for a point, and the query-side
neighbour window, each measured leave-one-conversation-out on LoCoMo.

    python -m bench.locomo_round2 ../shared/data/locomo/locomo-dev.json [--json]

A *store variant* is what the save path is given for each turn: the context the word index
sees beside the point's text (`MemoryStore.save(context=...)`: document expansion) and the
text its vector is made of. Every variant replays the conversations through the real save
path and ranks through `MemoryStore.recall`; a family of variants is scored with
`bench.locomo_loo.leave_one_out` (choose on four conversations, score the fifth). MiniLM
vectors come from the disk cache of `bench/locomo.py` (`--cache-dir`).
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from bench import locomo
from bench.locomo import speaker_role
from bench.locomo_cache import CachedEmbedder, default_cache_dir
from bench.locomo_data import Conversation, Question, load_locomo, score_question
from bench.locomo_loo import (
    KS,
    Scored,
    family_results,
    print_results,
    progress,
)
from memory.memory_store import MemoryStore
from memory.recall import TUNING, RecallTuning

Context = Callable[[Conversation, int], str]
"""The word index's context of turn `index` (what the save path would pass)."""


def _line(conversation: Conversation, index: int) -> str:
    turn = conversation.turns[index]
    return f"{turn.speaker}: {turn.text}"


def _near(conversation: Conversation, index: int, offsets: Sequence[int]) -> list[str]:
    """The turns at `offsets` from `index` in the same session."""
    turns = conversation.turns
    session = turns[index].session
    return [
        _line(conversation, index + o)
        for o in offsets
        if 0 <= index + o < len(turns) and turns[index + o].session == session
    ]


def _is_user(conversation: Conversation, index: int) -> bool:
    return speaker_role(conversation, conversation.turns[index].speaker) == "user"


def ctx_none(conversation: Conversation, index: int) -> str:
    return ""


def ctx_adjacent(conversation: Conversation, index: int) -> str:
    """What the product indexed before this round: a user message with the reply before
    it and its own reply; a reply with the message it answers."""
    offsets = (-1, 1) if _is_user(conversation, index) else (-1,)
    return "\n".join(_near(conversation, index, offsets))


def ctx_previous(conversation: Conversation, index: int) -> str:
    return "\n".join(_near(conversation, index, (-1,)))


def ctx_both(conversation: Conversation, index: int) -> str:
    """Previous and next turn for every point: a reply would need its words re-indexed
    when the next message arrives (not what the save path does today)."""
    return "\n".join(_near(conversation, index, (-1, 1)))


ctx_wide = locomo.turn_context
"""Two turns back (the turn knows its history), and a user message's reply: what the
product indexes since this round (`TurnMemory.save_turn`)."""


_WORD = re.compile(r"\w+")


def ctx_reduced(conversation: Conversation, index: int) -> str:
    """The adjacent turns at a reduced weight: each of their words once, and none
    the point's own text already has (term frequency 1 instead of its count)."""
    own = {w.lower() for w in _WORD.findall(conversation.turns[index].text)}
    words: dict[str, None] = {}
    for word in _WORD.findall(ctx_adjacent(conversation, index)):
        if word.lower() not in own:
            words.setdefault(word.lower(), None)
    return " ".join(words)


def ctx_own_twice(conversation: Conversation, index: int) -> str:
    """The point's own words counted twice, so the neighbours weigh about half."""
    own = conversation.turns[index].text
    return f"{own}\n{ctx_adjacent(conversation, index)}"


CONTEXTS: dict[str, Context] = {  # "product" was "adjacent" before this round
    "none": ctx_none,
    "product": ctx_wide,
    "adjacent": ctx_adjacent,
    "previous": ctx_previous,
    "reduced": ctx_reduced,
    "own_twice": ctx_own_twice,
    "both": ctx_both,
}

Embedded = Callable[[Conversation, int], str]


def emb_product(conversation: Conversation, index: int) -> str:
    return _line(conversation, index)


def emb_previous(conversation: Conversation, index: int) -> str:
    return "\n".join([*_near(conversation, index, (-1,)), _line(conversation, index)])


def emb_dated(conversation: Conversation, index: int) -> str:
    """The reference's document (`bench.locomo_data.document_text`)."""
    turn = conversation.turns[index]
    return f"({turn.date_text}) {turn.speaker}: {turn.text}"


EMBEDDINGS: dict[str, Embedded] = {
    "product": emb_product,
    "previous": emb_previous,
    "dated": emb_dated,
}


@dataclass(frozen=True, slots=True)
class Variant:
    context: str = "product"
    embedding: str = "product"
    mode: str = "hybrid"
    tuning: RecallTuning = TUNING

    def describe(self) -> str:
        parts = [
            f"context={self.context}" if self.context != "product" else "",
            f"embedding={self.embedding}" if self.embedding != "product" else "",
            f"window={self.tuning.neighbour_window}x{self.tuning.neighbour_anchors}"
            if self.tuning.neighbour_window
            else "",
        ]
        return " ".join(p for p in parts if p) or "product"


def replay(
    conversation: Conversation, vectors: Sequence[list[float]], context: Context
) -> tuple[MemoryStore, dict[int, str], Path]:
    """The conversation through `MemoryStore.save`, filter off, floor 0 (as bench/locomo.py)."""
    by_turn = {
        turn.dia_id: vector for turn, vector in zip(conversation.turns, vectors, strict=True)
    }
    return locomo.replay(
        conversation, by_turn, filter_on=False, min_score=0.0, with_context=True, context=context
    )


def score(
    store: MemoryStore,
    point_to_turn: dict[int, str],
    question: Question,
    vector: list[float],
    variant: Variant,
) -> Scored:
    """recall@5/@10 of the top 10, and the evidence in the block the product would inject
    (a recall of `MEMORY_TOP_K` hits, plus the window's neighbours, cut at
    `MEMORY_MAX_CHARS`)."""
    tuning = variant.tuning
    top = store.recall(
        question.question,
        vector=vector,
        k=10,
        mode=variant.mode,  # type: ignore[arg-type]
        tuning=replace(tuning, neighbour_window=0),
    )
    ranked = [point_to_turn[h.id] for h in top.hits if h.id in point_to_turn]
    block = store.recall(
        question.question,
        vector=vector,
        mode=variant.mode,  # type: ignore[arg-type]
        tuning=tuning,
    )
    in_block = {point_to_turn[h.id] for h in block.in_block()}
    evidence = set(question.evidence)
    return Scored(score_question(ranked, question, KS), len(evidence & in_block) / len(evidence))


def families() -> dict[str, list[Variant]]:
    base = Variant()
    windows = [
        Variant(tuning=replace(TUNING, neighbour_window=w, neighbour_anchors=a))
        for w in (1, 2)
        for a in (1, 3, 5)
    ]
    contexts = [c for c in CONTEXTS if c != "product"]
    return {  # the product's variant first: a fold that finds nothing better keeps it
        "expansion": [base, *(Variant(context=c) for c in contexts if c != "both")],
        "expansion+both": [base, *(Variant(context=c) for c in contexts)],
        "embedding (hybrid)": [Variant(embedding=e) for e in EMBEDDINGS],
        "embedding (vector)": [Variant(embedding=e, mode="vector") for e in EMBEDDINGS],
        "window": [base, *windows],
    }


def _by_recall(row: Scored) -> float:
    return row.score.recall[10]


def _by_block(row: Scored) -> float:
    """The window does not change the top 10, only what the block holds."""
    return row.in_block


def run(path: Path, cache_dir: Path) -> dict[str, Any]:
    from bench.minilm_embedder import load_minilm

    conversations = [c for c in load_locomo(path) if c.questions]
    cache = CachedEmbedder(cache_dir / "minilm.npz", load_minilm)
    fams = families()
    variants = list(dict.fromkeys(v for family in fams.values() for v in family))
    table: dict[Variant, dict[str, list[Scored]]] = {v: {} for v in variants}
    started = time.perf_counter()
    try:
        for conversation in conversations:
            questions = cache([q.question for q in conversation.questions])
            stores = {(v.context, v.embedding) for v in variants}
            for context, embedding in sorted(stores):
                texts = [
                    EMBEDDINGS[embedding](conversation, i) for i in range(len(conversation.turns))
                ]
                store, point_to_turn, home = replay(conversation, cache(texts), CONTEXTS[context])
                try:
                    for variant in variants:
                        if (variant.context, variant.embedding) != (context, embedding):
                            continue
                        table[variant][conversation.sample_id] = [
                            score(store, point_to_turn, q, vec, variant)
                            for q, vec in zip(conversation.questions, questions, strict=True)
                        ]
                finally:
                    store.close()
                    shutil.rmtree(home, ignore_errors=True)
            progress(conversation.sample_id, started)
    finally:
        cache.save()
    order = [c.sample_id for c in conversations]
    return family_results(
        table,
        fams,
        order,
        name=Variant.describe,
        train=lambda family: _by_block if family == "window" else _by_recall,
    )


def block_sizes(path: Path, cache_dir: Path) -> dict[str, dict[str, float]]:
    """The injected block's characters and evidence, mean over the questions, at
    `MEMORY_TOP_K` 5 and 10 and with the neighbour window (the product's store)."""
    from bench.minilm_embedder import load_minilm

    settings = {
        "top_k=5": (5, TUNING),
        "top_k=10": (10, TUNING),
        "top_k=12": (12, TUNING),
        "top_k=15": (15, TUNING),
        **{
            f"top_k=5 window={w}x{a}": (
                5,
                replace(TUNING, neighbour_window=w, neighbour_anchors=a),
            )
            for w, a in ((1, 3), (1, 5), (2, 3), (2, 5))
        },
    }
    sums: dict[str, list[float]] = {name: [0.0, 0.0, 0.0] for name in settings}
    count = 0
    cache = CachedEmbedder(cache_dir / "minilm.npz", load_minilm)
    for conversation in (c for c in load_locomo(path) if c.questions):
        texts = [emb_product(conversation, i) for i in range(len(conversation.turns))]
        store, point_to_turn, home = replay(conversation, cache(texts), ctx_wide)
        try:
            questions = cache([q.question for q in conversation.questions])
            for question, vector in zip(conversation.questions, questions, strict=True):
                count += 1
                evidence = set(question.evidence)
                for name, (k, tuning) in settings.items():
                    result = store.recall(question.question, vector=vector, k=k, tuning=tuning)
                    held = {point_to_turn[h.id] for h in result.in_block()}
                    total = sums[name]
                    total[0] += len(result.block)
                    total[1] += len(result.entries)
                    total[2] += len(evidence & held) / len(evidence)
        finally:
            store.close()
            shutil.rmtree(home, ignore_errors=True)
    return {
        name: {
            "block_chars": round(chars / count),
            "entries": round(entries / count, 2),
            "in_block": round(share / count, 3),
        }
        for name, (chars, entries, share) in sums.items()
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("path", type=Path)
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--cache-dir", type=Path, default=default_cache_dir())
    parser.add_argument(
        "--block-chars", action="store_true", help="only the block's size at top_k 5 and 10"
    )
    args = parser.parse_args(argv)
    if args.block_chars:
        print(json.dumps(block_sizes(args.path, args.cache_dir), indent=2))
        return 0
    results = run(args.path, args.cache_dir)
    print_results(results, as_json=args.json)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
