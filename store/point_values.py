"""How a point's values are stored: its content hash, UTC times, and vectors as bytes.

Embeddings are BLOBs of little-endian float32 bytes (schema v2; `FLOAT[]` made every commit
slower as the table grew); read back they are read-only float32 arrays.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from datetime import UTC, datetime

import numpy as np
import numpy.typing as npt

FloatVector = npt.NDArray[np.float32]


def content_hash(content: str) -> str:
    """The hex SHA-256 of the UTF-8 content: the `content_hash` of a point."""
    return hashlib.sha256(content.encode("utf-8")).hexdigest()


def as_utc(value: datetime) -> datetime:
    """An aware datetime converted to UTC; a naive one is refused."""
    if value.tzinfo is None or value.utcoffset() is None:
        raise ValueError(f"naive datetime {value.isoformat()}: pass an aware (UTC) datetime")
    return value.astimezone(UTC)


def as_vector(values: npt.ArrayLike) -> FloatVector:
    """A read-only, contiguous, finite, one-dimensional float32 copy of `values`."""
    vector = np.array(values, dtype=np.float32, copy=True)
    if vector.ndim != 1 or vector.size == 0:
        raise ValueError(f"an embedding must be a non-empty 1-D vector, got shape {vector.shape}")
    if not np.isfinite(vector).all():
        raise ValueError("an embedding must not contain NaN or infinity")
    vector.flags.writeable = False
    return vector


def vector_bytes(vector: FloatVector) -> bytes:
    """The stored form of a vector: its little-endian float32 bytes."""
    return np.asarray(vector, dtype="<f4").tobytes()


def vector_from_bytes(blob: bytes) -> FloatVector:
    """A stored vector back as a read-only float32 array."""
    vector = np.frombuffer(blob, dtype="<f4").astype(np.float32, copy=False)
    vector.flags.writeable = False
    return vector


def matrix_from_bytes(blobs: Sequence[bytes], dim: int) -> FloatVector:
    """Stored vectors (all of `dim`) as one float32 (n, dim) matrix."""
    if not len(blobs):
        return np.empty((0, dim), dtype=np.float32)
    flat = np.frombuffer(b"".join(blobs), dtype="<f4")
    return flat.astype(np.float32, copy=False).reshape(len(blobs), dim)
