"""Embeddings of LoCoMo texts kept on disk, so a rerun of `bench/locomo.py` costs no model time.

`CachedEmbedder` wraps an embedder (`texts -> vectors`, loaded only on the first miss) and
keeps every vector it made in one ``.npz`` file keyed by the SHA-1 of the text. It still
sits behind the test stand-in's `/api/embed`, so the product's gateway path is what runs.
Default place: ``$TMPDIR/straylight-locomo/<embedder>.npz`` (`--cache-dir` changes it).
"""

from __future__ import annotations

import hashlib
import tempfile
from collections.abc import Callable
from pathlib import Path

import numpy as np

Embedder = Callable[[list[str]], list[list[float]]]


def default_cache_dir() -> Path:
    return Path(tempfile.gettempdir()) / "straylight-locomo"


def _key(text: str) -> str:
    return hashlib.sha1(text.encode("utf-8")).hexdigest()


class CachedEmbedder:
    """`texts -> vectors` through a disk cache; `load()` makes the real embedder on a miss."""

    def __init__(self, path: Path, load: Callable[[], Embedder]) -> None:
        self.path = path
        self._load = load
        self._embed: Embedder | None = None
        self._vectors: dict[str, list[float]] = {}
        self.misses = 0
        if path.is_file():
            with np.load(path) as data:
                keys, matrix = data["keys"], data["vectors"]
                self._vectors = {
                    str(key): row.tolist() for key, row in zip(keys, matrix, strict=True)
                }
        self._loaded_count = len(self._vectors)

    def __call__(self, texts: list[str]) -> list[list[float]]:
        keys = [_key(text) for text in texts]
        missing = [text for text, key in zip(texts, keys, strict=True) if key not in self._vectors]
        if missing:
            if self._embed is None:
                self._embed = self._load()
            unique = list(dict.fromkeys(missing))
            for text, vector in zip(unique, self._embed(unique), strict=True):
                self._vectors[_key(text)] = vector
            self.misses += len(unique)
        return [self._vectors[key] for key in keys]

    def save(self) -> None:
        """Write the cache when it grew (atomically: a temporary file, then a rename)."""
        if len(self._vectors) == self._loaded_count:
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        keys = np.asarray(list(self._vectors), dtype="U40")
        matrix = np.asarray(list(self._vectors.values()), dtype=np.float32)
        partial = self.path.with_suffix(".partial.npz")
        np.savez(partial, keys=keys, vectors=matrix)
        partial.replace(self.path)
        self._loaded_count = len(self._vectors)
