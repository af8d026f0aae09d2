"""Deterministic embeddings: a hashed bag of words plus a small sha256-seeded component.

Texts that share words are more similar than unrelated texts, and the same text always gives
the same unit-length vector, so memory search can be tested without a model.
"""

from __future__ import annotations

import hashlib
import math
import re
from collections.abc import Callable, Sequence
from typing import Final

__all__ = ["Embedder", "cosine_similarity", "embed_text", "word_count"]

_WORD_RE: Final = re.compile(r"\w+")
_NOISE_WEIGHT: Final = 0.15

Embedder = Callable[[list[str]], list[list[float]]]
"""Computes embeddings for a batch of texts (e.g. `bench.minilm_embedder.load_minilm`)."""


def word_count(text: str) -> int:
    """Number of ``\\w+`` words (what /api/embed reports as ``prompt_eval_count``)."""
    return len(_WORD_RE.findall(text))


def _unit(vector: list[float]) -> list[float]:
    norm = math.sqrt(sum(value * value for value in vector))
    return vector if norm == 0.0 else [value / norm for value in vector]


def _word_vector(text: str, dim: int) -> list[float]:
    vector = [0.0] * dim
    for word in _WORD_RE.findall(text.lower()):
        digest = hashlib.sha256(word.encode()).digest()
        bucket = int.from_bytes(digest[:4], "big") % dim
        vector[bucket] += 1.0 if digest[4] & 1 else -1.0
    return _unit(vector)


def _noise_vector(text: str, dim: int) -> list[float]:
    values: list[float] = []
    counter = 0
    while len(values) < dim:
        digest = hashlib.sha256(f"{counter}:{text}".encode()).digest()
        values.extend(
            int.from_bytes(digest[i : i + 2], "big") / 32767.5 - 1.0 for i in range(0, 32, 2)
        )
        counter += 1
    return _unit(values[:dim])


def embed_text(text: str, dim: int) -> list[float]:
    """Deterministic unit-length embedding: hashed bag of words + sha256 noise."""
    if dim < 1:
        raise ValueError(f"embedding dimension must be >= 1, got {dim}")
    words = _word_vector(text, dim)
    noise = _noise_vector(text, dim)
    return _unit([w + _NOISE_WEIGHT * n for w, n in zip(words, noise, strict=True)])


def cosine_similarity(a: Sequence[float], b: Sequence[float]) -> float:
    """Cosine similarity of two equal-length vectors."""
    dot = sum(x * y for x, y in zip(a, b, strict=True))
    norm = math.sqrt(sum(x * x for x in a)) * math.sqrt(sum(y * y for y in b))
    return 0.0 if norm == 0.0 else dot / norm
