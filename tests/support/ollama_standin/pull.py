"""``/api/pull`` and ``/api/delete``, with the progress records Ollama streams.

A pull streams, as Ollama's PullModel does: ``pulling manifest``; per layer ``pulling <12 hex>``
with ``digest``, ``total`` and a ``completed`` that grows over several records (the weights) or
arrives whole (small layers; Go omits a zero ``completed``); ``verifying sha256 digest``;
``writing manifest``; ``success``. The model then appears in ``/api/tags``. A name the registry
does not know streams ``pulling manifest`` then ``{"error": "pull model manifest: file does not
exist"}`` (with ``stream: false``: HTTP 500 with that error). A name Ollama cannot parse
(``bad name``, ``-x``, an empty one) is HTTP 400 ``invalid model name`` before anything
streams. Stream faults scoped with ``path="/api/pull"`` (``drop``, ``error_line``, ``stall``,
``malformed``) break a pull midway; the model is then not installed. Delete answers 200 with
an empty body, or 404 ``model '<name>' not found``.
"""

from __future__ import annotations

import hashlib
from typing import Final

from .faults import STREAM_FAULTS
from .handler import Handler
from .model_name import INVALID_NAME, is_valid_name
from .models import ResolvedModel
from .wire import JsonObject

__all__ = ["PULL_STEPS", "delete", "pull", "pull_records"]

PULL_STEPS: Final = 5
"""Progress records for the weights layer (the first has no ``completed``)."""
MANIFEST_ERROR: Final = "pull model manifest: file does not exist"
_SMALL_LAYERS: Final = (("template", 1_429), ("params", 96))


def _digest(name: str, layer: str) -> str:
    return "sha256:" + hashlib.sha256(f"{name}/{layer}".encode()).hexdigest()


def _layer_records(digest: str, total: int, steps: int) -> list[JsonObject]:
    status = f"pulling {digest[7:19]}"
    records: list[JsonObject] = []
    for step in range(steps):
        record: JsonObject = {"status": status, "digest": digest, "total": total}
        completed = total * step // (steps - 1) if steps > 1 else total
        if completed:
            record["completed"] = completed
        records.append(record)
    return records


def pull_records(model: ResolvedModel, steps: int = PULL_STEPS) -> list[JsonObject]:
    """The progress records of a successful pull of ``model``."""
    small = sum(size for _, size in _SMALL_LAYERS)
    records: list[JsonObject] = [{"status": "pulling manifest"}]
    records += _layer_records(_digest(model.name, "model"), model.size - small, max(steps, 2))
    for layer, size in _SMALL_LAYERS:
        records += _layer_records(_digest(model.name, layer), size, 1)
    records += [
        {"status": "verifying sha256 digest"},
        {"status": "writing manifest"},
        {"status": "success"},
    ]
    return records


def pull(h: Handler, body: JsonObject) -> None:
    """Serve one ``/api/pull`` request."""
    name = str(body.get("model") or body.get("name") or "")
    if not is_valid_name(name):  # checked before anything streams, as Ollama does
        h.send_error_json(400, INVALID_NAME)
        return
    model = h.standin.catalog.pullable(name)
    streamed = body.get("stream", True) is not False
    if not streamed:
        if model is None:
            h.send_error_json(500, MANIFEST_ERROR)
            return
        h.standin.catalog.install(model.name)
        h.send_json(200, {"status": "success"})
        return
    if model is None:
        h.stream_ndjson([{"status": "pulling manifest"}, {"error": MANIFEST_ERROR}], None)
        return
    fault = h.standin._take_fault("/api/pull", STREAM_FAULTS, explicit=True)
    if fault is None or fault.kind == "stall":
        h.standin.catalog.install(model.name)  # before "success" reaches the client
    h.stream_ndjson(pull_records(model, h.standin.pull_steps), fault)


def delete(h: Handler, body: JsonObject) -> None:
    """Serve one ``/api/delete`` request."""
    name = str(body.get("model") or body.get("name") or "")
    if not name or not h.standin.catalog.remove(name):
        h.send_error_json(404, f"model '{name}' not found")
        return
    h.send_bytes(200, b"", "application/json; charset=utf-8")
