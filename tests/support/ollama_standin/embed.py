"""``/api/embed`` and the legacy ``/api/embeddings``: hashed vectors, or the configured embedder.

Serving an embed request loads the model (``/api/ps``) like a chat request does.
"""

from __future__ import annotations

import logging

from .catalog import parse_keep_alive
from .context import resolve_window
from .embeddings import embed_text, word_count
from .faults import EMBED_FAULTS
from .handler import Handler
from .wire import JsonObject

__all__ = ["embed", "embeddings_legacy", "not_found_error"]

_log = logging.getLogger(__name__)


def not_found_error(model: str) -> str:
    return f'model "{model}" not found, try pulling it first'


def _load(h: Handler, body: JsonObject) -> bool:
    """Load the request's model; False when it was refused instead (404 unknown, 400 keep_alive)."""
    name = str(body.get("model") or "")
    model = h.standin.catalog.resolved(name)
    if model is None:
        h.send_error_json(404, not_found_error(name))
        return False
    try:
        keep_alive = parse_keep_alive(body.get("keep_alive"))
    except ValueError as exc:
        h.send_error_json(400, str(exc))
        return False
    raw_options = body.get("options")
    options = raw_options if isinstance(raw_options, dict) else {}
    window = resolve_window(
        options.get("num_ctx"), model.num_ctx, h.standin.default_num_ctx, model.context_length
    )
    h.standin.catalog.load(model, window, keep_alive)
    return True


def embed(h: Handler, body: JsonObject) -> None:
    if not _load(h, body):
        return
    raw_input = body.get("input", [])
    texts = [raw_input] if isinstance(raw_input, str) else [str(t) for t in raw_input or []]
    embeddings = _embeddings(h, "/api/embed", texts)
    if embeddings is None:
        return
    h.send_json(
        200,
        {
            "model": body.get("model"),
            "embeddings": embeddings,
            "total_duration": 2_000_000,
            "load_duration": 1_000_000,
            "prompt_eval_count": sum(word_count(text) for text in texts),
        },
    )


def embeddings_legacy(h: Handler, body: JsonObject) -> None:
    if not _load(h, body):
        return
    embeddings = _embeddings(h, "/api/embeddings", [str(body.get("prompt") or "")])
    if embeddings is not None:
        h.send_json(200, {"embedding": embeddings[0]})


def _embeddings(h: Handler, path: str, texts: list[str]) -> list[list[float]] | None:
    """Vectors for ``texts``: embed_dim fault, else the embedder, else hashed.

    None when the embedder failed and a 500 has been sent instead.
    """
    fault = h.standin._take_fault(path, EMBED_FAULTS)
    if fault is not None:
        return [embed_text(text, fault.dim) for text in texts]
    embedder = h.standin.embedder
    if embedder is None:
        dim = h.standin.embed_dim
        return [embed_text(text, dim) for text in texts]
    if not texts:
        return []
    try:
        vectors = [[float(value) for value in vector] for vector in embedder(texts)]
    except Exception as exc:  # noqa: BLE001 - reported to the client like Ollama would
        _log.exception("ollama stand-in: embedder failed")
        h.send_error_json(500, f"embedder failed: {exc}")
        return None
    if len(vectors) != len(texts):
        h.send_error_json(500, f"embedder returned {len(vectors)} vectors for {len(texts)} inputs")
        return None
    return vectors
