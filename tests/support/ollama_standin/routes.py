"""The Ollama endpoints the stand-in serves, as functions of the request handler and JSON body.

`ROUTES` maps ``(method, path)`` to them; `OllamaStandIn` hands the table to its HTTP server.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Final

from .embeddings import embed_text, word_count
from .faults import EMBED_FAULTS, STREAM_FAULTS
from .handler import Handler, Route
from .models import MODIFIED_AT, model_details
from .replies import chat_stream_objects, chat_whole, messages_of, prompt_eval_count
from .wire import JsonObject

__all__ = ["ROUTES", "VERSION"]

_log = logging.getLogger(__name__)

VERSION: Final = "0.12.0-standin"


def _not_found_error(model: str) -> str:
    return f'model "{model}" not found, try pulling it first'


def root(h: Handler, _body: JsonObject) -> None:
    h.send_bytes(200, b"Ollama is running", "text/plain; charset=utf-8")


def version(h: Handler, _body: JsonObject) -> None:
    h.send_json(200, {"version": VERSION})


def tags(h: Handler, _body: JsonObject) -> None:
    h.send_json(200, {"models": h.standin._tag_entries()})


def ps(h: Handler, _body: JsonObject) -> None:
    h.send_json(200, {"models": []})


def show(h: Handler, body: JsonObject) -> None:
    name = str(body.get("model") or body.get("name") or "")
    capabilities = h.standin._capabilities_of(name)
    if capabilities is None:
        h.send_error_json(404, f"model '{name}' not found")
        return
    h.send_json(
        200,
        {
            "modelfile": "",
            "parameters": "",
            "template": "",
            "details": model_details(capabilities),
            "model_info": {},
            "capabilities": list(capabilities),
            "modified_at": MODIFIED_AT,
        },
    )


def chat(h: Handler, body: JsonObject) -> None:
    model = str(body.get("model") or "")
    capabilities = h.standin._capabilities_of(model)
    if capabilities is None:
        h.send_error_json(404, _not_found_error(model))
        return
    if "completion" not in capabilities:
        h.send_error_json(400, f'"{model}" does not support chat')
        return
    if body.get("tools") and "tools" not in capabilities:
        h.send_error_json(400, f"registry.ollama.ai/library/{model} does not support tools")
        return
    messages = messages_of(body)
    reply = h.standin._next_reply(messages)
    prompt_count = prompt_eval_count(messages)
    if body.get("stream", True) is False:
        h.send_json(200, chat_whole(model, reply, prompt_count))
        return
    fault = h.standin._take_fault("/api/chat", STREAM_FAULTS)
    h.stream_ndjson(chat_stream_objects(model, reply, prompt_count), fault)


def embed(h: Handler, body: JsonObject) -> None:
    model = str(body.get("model") or "")
    if h.standin._capabilities_of(model) is None:
        h.send_error_json(404, _not_found_error(model))
        return
    raw_input = body.get("input", [])
    texts = [raw_input] if isinstance(raw_input, str) else [str(t) for t in raw_input or []]
    embeddings = _embeddings(h, "/api/embed", texts)
    if embeddings is None:
        return
    h.send_json(
        200,
        {
            "model": model,
            "embeddings": embeddings,
            "total_duration": 2_000_000,
            "load_duration": 1_000_000,
            "prompt_eval_count": sum(word_count(text) for text in texts),
        },
    )


def embeddings_legacy(h: Handler, body: JsonObject) -> None:
    model = str(body.get("model") or "")
    if h.standin._capabilities_of(model) is None:
        h.send_error_json(404, _not_found_error(model))
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


ROUTES: Final[Mapping[tuple[str, str], Route]] = {
    ("GET", "/"): root,
    ("HEAD", "/"): root,
    ("GET", "/api/version"): version,
    ("GET", "/api/tags"): tags,
    ("GET", "/api/ps"): ps,
    ("POST", "/api/show"): show,
    ("POST", "/api/chat"): chat,
    ("POST", "/api/embed"): embed,
    ("POST", "/api/embeddings"): embeddings_legacy,
}
