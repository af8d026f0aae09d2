"""Why the product's vector-only recall trails a plain cosine: `bench/locomo.py --vectors`.

Plain exact cosines over one conversation's turns, each changing one thing against the
product's vector path (usearch HNSW, f16 storage, a point's vector = "Speaker: text"):

- `exact_f32`: the same vectors, exact float32 cosine (what HNSW and f16 cost);
- `exact_f16`: the vectors rounded to float16 first (what f16 alone costs);
- `no_speaker`: the turn's text alone embedded;
- `date_speaker`: the README reference's document, "(1:56 pm on 8 May, 2023) Speaker: text".
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from bench.locomo_data import Conversation, QuestionScore, aggregate, document_text, score_question

Embed = Callable[[list[str]], list[list[float]]]


def _ranked(ids: Sequence[str], docs: np.ndarray, query: np.ndarray) -> list[str]:
    docs = docs / np.maximum(np.linalg.norm(docs, axis=1, keepdims=True), 1e-12)
    order = np.argsort(-(docs @ (query / max(np.linalg.norm(query), 1e-12))), kind="stable")
    return [ids[i] for i in order[:10]]


def vector_diagnostics(
    conversations: Sequence[Conversation],
    embed: Embed,
    turn_vectors: Mapping[str, Mapping[str, list[float]]],
    question_vectors: Mapping[str, list[list[float]]],
) -> dict[str, Any]:
    """recall@5/@10 of each plain-cosine variant (see the module docstring)."""
    scores: dict[str, list[QuestionScore]] = {
        name: [] for name in ("exact_f32", "exact_f16", "no_speaker", "date_speaker")
    }
    for conversation in conversations:
        ids = [turn.dia_id for turn in conversation.turns]
        own = np.asarray([turn_vectors[conversation.sample_id][i] for i in ids], np.float32)
        matrices = {
            "exact_f32": own,
            "exact_f16": own.astype(np.float16).astype(np.float32),
            "no_speaker": np.asarray(embed([t.text for t in conversation.turns]), np.float32),
            "date_speaker": np.asarray(
                embed([document_text(t) for t in conversation.turns]), np.float32
            ),
        }
        for question, vector in zip(
            conversation.questions, question_vectors[conversation.sample_id], strict=True
        ):
            query = np.asarray(vector, np.float32)
            rounded = query.astype(np.float16).astype(np.float32)
            for name, matrix in matrices.items():
                asked = rounded if name == "exact_f16" else query
                scores[name].append(score_question(_ranked(ids, matrix, asked), question))
    return {
        name: {
            "recall@5": round(report.overall.recall[5], 3),
            "recall@10": round(report.overall.recall[10], 3),
        }
        for name, report in ((name, aggregate(rows)) for name, rows in scores.items())
    }
