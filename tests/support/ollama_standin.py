"""A real HTTP stand-in for the Ollama server, for tests and benchmarks.

`OllamaStandIn` serves the subset of the Ollama REST API that Straylight uses
(``/api/version``, ``/api/tags``, ``/api/show``, ``/api/ps``, ``/api/chat``,
``/api/embed`` and the legacy ``/api/embeddings``) on ``127.0.0.1`` from a
daemon thread, so tests can drive the *real* ``ollama`` python client (and the
``httpx`` transport under it) without mocks.

Only the standard library is used. Replies are deterministic:

* chat replies come from a FIFO queue filled with `OllamaStandIn.script_reply`,
  falling back to ``"Stand-in reply to: " + <last user message>``;
* embeddings are a hashed bag of lowercase words plus a small sha256-seeded
  component, L2-normalised, so texts sharing words are more similar than
  unrelated texts; an ``embedder`` callable (``list[str] -> list[list[float]]``,
  e.g. `bench.minilm_embedder.load_minilm`) replaces them with real vectors.

Faults are injected with `OllamaStandIn.fail_next` (``status``, ``delay``,
``stall``, ``drop``, ``malformed``, ``error_line``, ``embed_dim``), and
`OllamaStandIn.stop` really closes the listening socket (connections are
refused) while `OllamaStandIn.start` brings the server back on the same port.

Run it by hand with::

    python -m tests.support.ollama_standin --port 11434 [--embed-dim 768] [--token-delay 0.02]
        [--embedder minilm]
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import logging
import math
import re
import socket
import sys
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any, Final, Literal, Self, get_args
from urllib.parse import urlsplit

__all__ = [
    "FAULT_KINDS",
    "Embedder",
    "Fault",
    "FaultKind",
    "OllamaStandIn",
    "RecordedRequest",
    "ScriptedReply",
    "cosine_similarity",
    "embed_text",
    "main",
    "normalize_model_name",
    "split_tokens",
]

_log = logging.getLogger(__name__)

LOCALHOST: Final = "127.0.0.1"
VERSION: Final = "0.12.0-standin"
MODIFIED_AT: Final = "2026-01-01T00:00:00Z"
DEFAULT_MODELS: Final = ("llama3.2", "nomic-embed-text")
DEFAULT_REPLY_PREFIX: Final = "Stand-in reply to: "
CHAT_CAPABILITIES: Final = ("completion", "tools")
EMBED_CAPABILITIES: Final = ("embedding",)

FaultKind = Literal["status", "delay", "stall", "drop", "malformed", "error_line", "embed_dim"]
FAULT_KINDS: Final[frozenset[str]] = frozenset(get_args(FaultKind))

# Parameters each fault kind accepts (all optional; defaults live on `Fault`).
_FAULT_PARAMS: Final[Mapping[str, frozenset[str]]] = {
    "status": frozenset({"status", "message"}),
    "delay": frozenset({"seconds"}),
    "stall": frozenset({"after", "seconds"}),
    "drop": frozenset({"after"}),
    "malformed": frozenset({"after", "line"}),
    "error_line": frozenset({"after", "message"}),
    "embed_dim": frozenset({"dim"}),
}
# Which requests consume which fault kinds.
_REQUEST_FAULTS: Final = frozenset({"status", "delay"})
_STREAM_FAULTS: Final = frozenset({"stall", "drop", "malformed", "error_line"})
_EMBED_FAULTS: Final = frozenset({"embed_dim"})

_WORD_RE: Final = re.compile(r"\w+")
_TOKEN_RE: Final = re.compile(r"\S+\s*|\s+")
_NOISE_WEIGHT: Final = 0.15
_POLL_INTERVAL: Final = 0.05

JsonObject = dict[str, Any]
Embedder = Callable[[list[str]], list[list[float]]]


# --------------------------------------------------------------------------- data


@dataclass(frozen=True)
class RecordedRequest:
    """One request as the stand-in received it."""

    method: str
    path: str
    body: Any
    """Parsed JSON body, or ``None`` when the body was empty or not JSON."""
    headers: dict[str, str]


@dataclass(frozen=True)
class ScriptedReply:
    """A queued assistant reply: streamed one chunk per token."""

    tokens: tuple[str, ...]
    tool_calls: tuple[JsonObject, ...] = ()

    @property
    def content(self) -> str:
        return "".join(self.tokens)


@dataclass
class Fault:
    """An injected fault; ``remaining`` is ``None`` for "until cleared"."""

    kind: FaultKind
    remaining: int | None = 1
    path: str | None = None
    status: int = 500
    message: str = "stand-in injected failure"
    seconds: float = 1.0
    after: int = 1
    line: str = "{not json"
    dim: int = 3

    def matches(self, path: str, kinds: frozenset[str]) -> bool:
        return self.kind in kinds and (self.path is None or self.path == path)


# ---------------------------------------------------------------- pure helpers


def normalize_model_name(name: str) -> str:
    """Append ``:latest`` when the model name carries no tag."""
    return name if ":" in name.rsplit("/", 1)[-1] else f"{name}:latest"


def default_capabilities(name: str) -> tuple[str, ...]:
    """Embedding models (name contains "embed") embed; everything else chats."""
    return EMBED_CAPABILITIES if "embed" in name.lower() else CHAT_CAPABILITIES


def split_tokens(text: str) -> list[str]:
    """Split text into tokens that keep their trailing whitespace."""
    return _TOKEN_RE.findall(text)


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


def _word_count(text: str) -> int:
    return len(_WORD_RE.findall(text))


def _now() -> str:
    return datetime.now(UTC).isoformat().replace("+00:00", "Z")


def _model_details(capabilities: Sequence[str]) -> JsonObject:
    embedding_only = "embedding" in capabilities and "completion" not in capabilities
    family = "bert" if embedding_only else "llama"
    return {
        "parent_model": "",
        "format": "gguf",
        "family": family,
        "families": [family],
        "parameter_size": "137M" if embedding_only else "3.2B",
        "quantization_level": "F16" if embedding_only else "Q4_K_M",
    }


def _messages(body: JsonObject) -> list[JsonObject]:
    messages = body.get("messages")
    if not isinstance(messages, list):
        return []
    return [m for m in messages if isinstance(m, dict)]


def _default_reply(messages: list[JsonObject]) -> ScriptedReply:
    user_texts = [str(m.get("content") or "") for m in messages if m.get("role") == "user"]
    last = user_texts[-1] if user_texts else ""
    return ScriptedReply(tuple(split_tokens(DEFAULT_REPLY_PREFIX + last[:200])))


def _prompt_eval_count(messages: list[JsonObject]) -> int:
    return max(1, sum(_word_count(str(m.get("content") or "")) for m in messages))


def _normalize_tool_call(call: Mapping[str, Any]) -> JsonObject:
    """Accept ``{"function": {...}}`` or the shorthand ``{"name", "arguments"}``."""
    if "function" in call:
        return dict(call)
    return {"function": {"name": call["name"], "arguments": dict(call.get("arguments") or {})}}


def _chat_chunk(model: str, content: str, tool_calls: Sequence[JsonObject] = ()) -> JsonObject:
    message: JsonObject = {"role": "assistant", "content": content}
    if tool_calls:
        message["tool_calls"] = list(tool_calls)
    return {"model": model, "created_at": _now(), "message": message, "done": False}


def _chat_final(model: str, reply: ScriptedReply, prompt_count: int, content: str) -> JsonObject:
    eval_count = len(reply.tokens)
    load, prompt_eval, evaluation = 1_000_000, prompt_count * 100_000, eval_count * 1_000_000
    final = _chat_chunk(model, content)
    final.update(
        done=True,
        done_reason="stop",
        total_duration=load + prompt_eval + evaluation,
        load_duration=load,
        prompt_eval_count=prompt_count,
        prompt_eval_duration=prompt_eval,
        eval_count=eval_count,
        eval_duration=evaluation,
    )
    return final


def _chat_stream_objects(model: str, reply: ScriptedReply, prompt_count: int) -> list[JsonObject]:
    chunks = [_chat_chunk(model, token) for token in reply.tokens]
    if reply.tool_calls:
        chunks.append(_chat_chunk(model, "", reply.tool_calls))
    chunks.append(_chat_final(model, reply, prompt_count, ""))
    return chunks


def _chat_whole(model: str, reply: ScriptedReply, prompt_count: int) -> JsonObject:
    final = _chat_final(model, reply, prompt_count, reply.content)
    if reply.tool_calls:
        final["message"]["tool_calls"] = list(reply.tool_calls)
    return final


def _ndjson(obj: JsonObject) -> bytes:
    return json.dumps(obj, separators=(",", ":")).encode() + b"\n"


def _not_found_error(model: str) -> str:
    return f'model "{model}" not found, try pulling it first'


# ---------------------------------------------------------------- HTTP plumbing


class _StandInHTTPServer(ThreadingHTTPServer):
    """ThreadingHTTPServer that tracks live connections so `stop` can cut them."""

    daemon_threads = True
    allow_reuse_address = True
    block_on_close = False

    def __init__(self, address: tuple[str, int], standin: OllamaStandIn) -> None:
        self.standin = standin
        self.stop_event = threading.Event()
        self._connections: set[socket.socket] = set()
        self._connections_lock = threading.Lock()
        super().__init__(address, _Handler)

    def process_request(
        self, request: socket.socket | tuple[bytes, socket.socket], client_address: Any
    ) -> None:
        if isinstance(request, socket.socket):
            with self._connections_lock:
                self._connections.add(request)
        super().process_request(request, client_address)

    def shutdown_request(self, request: socket.socket | tuple[bytes, socket.socket]) -> None:
        if isinstance(request, socket.socket):
            with self._connections_lock:
                self._connections.discard(request)
        super().shutdown_request(request)

    def cut_connections(self) -> None:
        """Shut down every open client connection (wakes blocked handlers)."""
        with self._connections_lock:
            connections = list(self._connections)
        for connection in connections:
            with contextlib.suppress(OSError):
                connection.shutdown(socket.SHUT_RDWR)

    def handle_error(self, request: Any, client_address: Any) -> None:
        # Disconnects (BrokenPipe, ConnectionReset, sockets cut by stop()) are normal.
        if isinstance(sys.exc_info()[1], OSError):
            return
        _log.exception("ollama stand-in: unexpected error serving %s", client_address)


Route = Callable[["_Handler", JsonObject], None]
StreamOutcome = Literal["continue", "finish", "abort"]


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "OllamaStandIn/1.0"
    disable_nagle_algorithm = True  # flush every streamed chunk immediately

    # ---- plumbing

    @property
    def _srv(self) -> _StandInHTTPServer:
        assert isinstance(self.server, _StandInHTTPServer)
        return self.server

    @property
    def _standin(self) -> OllamaStandIn:
        return self._srv.standin

    def log_message(self, format: str, *args: Any) -> None:
        """Stay quiet: no per-request lines on stderr."""

    def do_GET(self) -> None:
        self._dispatch()

    def do_POST(self) -> None:
        self._dispatch()

    def do_HEAD(self) -> None:
        self._dispatch()

    def do_DELETE(self) -> None:
        self._dispatch()

    def _read_body(self) -> bytes:
        if "chunked" in self.headers.get("Transfer-Encoding", "").lower():
            return self._read_chunked_body()
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length > 0 else b""

    def _read_chunked_body(self) -> bytes:
        parts: list[bytes] = []
        while size := int(self.rfile.readline().split(b";", 1)[0].strip() or b"0", 16):
            parts.append(self.rfile.read(size))
            self.rfile.readline()
        while self.rfile.readline() not in (b"\r\n", b"\n", b""):
            pass  # trailers
        return b"".join(parts)

    def _send_bytes(self, status: int, payload: bytes, content_type: str) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(payload)

    def _send_json(self, status: int, obj: JsonObject) -> None:
        self._send_bytes(status, json.dumps(obj).encode(), "application/json; charset=utf-8")

    def _send_error_json(self, status: int, message: str) -> None:
        self._send_json(status, {"error": message})

    def _wait(self, seconds: float) -> bool:
        """Sleep unless the server stops; True when the server is stopping."""
        return self._srv.stop_event.wait(seconds) if seconds > 0 else self._srv.stop_event.is_set()

    def _drop_connection(self) -> None:
        """Close abruptly: no terminating chunk, FIN on both directions."""
        self.close_connection = True
        with contextlib.suppress(OSError):
            self.connection.shutdown(socket.SHUT_RDWR)

    # ---- dispatch

    def _dispatch(self) -> None:
        path = urlsplit(self.path).path
        raw = self._read_body()
        body = _parse_json(raw)
        self._standin._record(RecordedRequest(self.command, path, body, dict(self.headers.items())))
        if not self._apply_request_fault(path):
            return
        route = _ROUTES.get((self.command, path))
        if route is None:
            self._send_bytes(404, b"404 page not found", "text/plain")
        elif self.command == "POST" and not isinstance(body, dict):
            self._send_error_json(400, "invalid JSON request body")
        else:
            route(self, body if isinstance(body, dict) else {})

    def _apply_request_fault(self, path: str) -> bool:
        """Apply a pending status/delay fault; False when the request is answered."""
        fault = self._standin._take_fault(path, _REQUEST_FAULTS)
        if fault is None:
            return True
        if fault.kind == "status":
            self._send_error_json(fault.status, fault.message)
            return False
        if self._wait(fault.seconds):
            self._drop_connection()
            return False
        return True

    # ---- endpoints

    def _root(self, _body: JsonObject) -> None:
        self._send_bytes(200, b"Ollama is running", "text/plain; charset=utf-8")

    def _version(self, _body: JsonObject) -> None:
        self._send_json(200, {"version": VERSION})

    def _tags(self, _body: JsonObject) -> None:
        self._send_json(200, {"models": self._standin._tag_entries()})

    def _ps(self, _body: JsonObject) -> None:
        self._send_json(200, {"models": []})

    def _show(self, body: JsonObject) -> None:
        name = str(body.get("model") or body.get("name") or "")
        capabilities = self._standin._capabilities_of(name)
        if capabilities is None:
            self._send_error_json(404, f"model '{name}' not found")
            return
        self._send_json(
            200,
            {
                "modelfile": "",
                "parameters": "",
                "template": "",
                "details": _model_details(capabilities),
                "model_info": {},
                "capabilities": list(capabilities),
                "modified_at": MODIFIED_AT,
            },
        )

    def _chat(self, body: JsonObject) -> None:
        model = str(body.get("model") or "")
        capabilities = self._standin._capabilities_of(model)
        if capabilities is None:
            self._send_error_json(404, _not_found_error(model))
            return
        if "completion" not in capabilities:
            self._send_error_json(400, f'"{model}" does not support chat')
            return
        if body.get("tools") and "tools" not in capabilities:
            self._send_error_json(400, f"registry.ollama.ai/library/{model} does not support tools")
            return
        messages = _messages(body)
        reply = self._standin._next_reply(messages)
        prompt_count = _prompt_eval_count(messages)
        if body.get("stream", True) is False:
            self._send_json(200, _chat_whole(model, reply, prompt_count))
            return
        fault = self._standin._take_fault("/api/chat", _STREAM_FAULTS)
        self._stream_ndjson(_chat_stream_objects(model, reply, prompt_count), fault)

    def _embed(self, body: JsonObject) -> None:
        model = str(body.get("model") or "")
        if self._standin._capabilities_of(model) is None:
            self._send_error_json(404, _not_found_error(model))
            return
        raw_input = body.get("input", [])
        texts = [raw_input] if isinstance(raw_input, str) else [str(t) for t in raw_input or []]
        embeddings = self._embeddings("/api/embed", texts)
        if embeddings is None:
            return
        self._send_json(
            200,
            {
                "model": model,
                "embeddings": embeddings,
                "total_duration": 2_000_000,
                "load_duration": 1_000_000,
                "prompt_eval_count": sum(_word_count(text) for text in texts),
            },
        )

    def _embeddings_legacy(self, body: JsonObject) -> None:
        model = str(body.get("model") or "")
        if self._standin._capabilities_of(model) is None:
            self._send_error_json(404, _not_found_error(model))
            return
        embeddings = self._embeddings("/api/embeddings", [str(body.get("prompt") or "")])
        if embeddings is not None:
            self._send_json(200, {"embedding": embeddings[0]})

    def _embeddings(self, path: str, texts: list[str]) -> list[list[float]] | None:
        """Vectors for ``texts``: embed_dim fault, else the embedder, else hashed.

        None when the embedder failed and a 500 has been sent instead.
        """
        fault = self._standin._take_fault(path, _EMBED_FAULTS)
        if fault is not None:
            return [embed_text(text, fault.dim) for text in texts]
        embedder = self._standin.embedder
        if embedder is None:
            dim = self._standin.embed_dim
            return [embed_text(text, dim) for text in texts]
        if not texts:
            return []
        try:
            vectors = [[float(value) for value in vector] for vector in embedder(texts)]
        except Exception as exc:  # noqa: BLE001 - reported to the client like Ollama would
            _log.exception("ollama stand-in: embedder failed")
            self._send_error_json(500, f"embedder failed: {exc}")
            return None
        if len(vectors) != len(texts):
            self._send_error_json(
                500, f"embedder returned {len(vectors)} vectors for {len(texts)} inputs"
            )
            return None
        return vectors

    # ---- streaming

    def _send_chunk(self, data: bytes) -> None:
        self.wfile.write(f"{len(data):X}\r\n".encode() + data + b"\r\n")

    def _stream_ndjson(self, objects: list[JsonObject], fault: Fault | None) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "application/x-ndjson")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        lines = [_ndjson(obj) for obj in objects]
        cut = len(lines) if fault is None else min(max(fault.after, 0), len(lines))
        if not self._send_lines(lines[:cut], first=True):
            return
        outcome: StreamOutcome = "continue" if fault is None else self._stream_fault(fault)
        if outcome == "abort":
            return
        if outcome == "continue" and not self._send_lines(lines[cut:], first=cut == 0):
            return
        self._send_chunk(b"")  # zero-length chunk: end of body

    def _send_lines(self, lines: list[bytes], *, first: bool) -> bool:
        """Send NDJSON lines spaced by token_delay; False if the stream was aborted."""
        for index, line in enumerate(lines):
            if (index > 0 or not first) and self._wait(self._standin.token_delay):
                self._drop_connection()
                return False
            self._send_chunk(line)
        return True

    def _stream_fault(self, fault: Fault) -> StreamOutcome:
        if fault.kind == "stall":
            if self._wait(fault.seconds):
                self._drop_connection()
                return "abort"
            return "continue"
        if fault.kind == "malformed":
            self._send_chunk(fault.line.encode() + b"\n")
            return "finish"
        if fault.kind == "error_line":
            self._send_chunk(_ndjson({"error": fault.message}))
            return "finish"
        self._drop_connection()  # "drop"
        return "abort"


def _parse_json(raw: bytes) -> Any:
    if not raw.strip():
        return None
    try:
        return json.loads(raw)
    except (json.JSONDecodeError, UnicodeDecodeError):
        return None


_ROUTES: Final[Mapping[tuple[str, str], Route]] = {
    ("GET", "/"): _Handler._root,
    ("HEAD", "/"): _Handler._root,
    ("GET", "/api/version"): _Handler._version,
    ("GET", "/api/tags"): _Handler._tags,
    ("GET", "/api/ps"): _Handler._ps,
    ("POST", "/api/show"): _Handler._show,
    ("POST", "/api/chat"): _Handler._chat,
    ("POST", "/api/embed"): _Handler._embed,
    ("POST", "/api/embeddings"): _Handler._embeddings_legacy,
}


# --------------------------------------------------------------------- public API


class OllamaStandIn:
    """A real Ollama-compatible HTTP server on 127.0.0.1, run from a daemon thread.

    Use as a context manager (``with OllamaStandIn(port=0) as srv: ...``) or
    call `start` / `stop` directly. All setters are thread-safe and take effect
    for the next request.
    """

    def __init__(
        self,
        models: Iterable[str] = DEFAULT_MODELS,
        *,
        port: int = 0,
        embed_dim: int = 768,
        token_delay: float = 0.0,
        capabilities: Mapping[str, Sequence[str]] | None = None,
        embedder: Embedder | None = None,
    ) -> None:
        """``embedder``, when given, computes /api/embed(dings) vectors instead of the
        hashed `embed_text` (their size is then the embedder's, not ``embed_dim``;
        ``embed_dim`` faults still return hashed vectors of the faulty size)."""
        if embed_dim < 1:
            raise ValueError(f"embed_dim must be >= 1, got {embed_dim}")
        self._lock = threading.Lock()
        self._lifecycle_lock = threading.Lock()
        self._port = port
        self._embed_dim = embed_dim
        self._token_delay = token_delay
        self._embedder = embedder
        self._models: list[str] = []
        self._capability_overrides: dict[str, tuple[str, ...]] = {}
        self._replies: deque[ScriptedReply] = deque()
        self._faults: list[Fault] = []
        self._requests: list[RecordedRequest] = []
        self._server: _StandInHTTPServer | None = None
        self._thread: threading.Thread | None = None
        self.set_models(models, capabilities=capabilities)

    # ---- lifecycle

    def start(self) -> Self:
        """Bind 127.0.0.1 (same port as before after a `stop`) and serve. Idempotent."""
        with self._lifecycle_lock:
            if self._server is not None:
                return self
            server = _StandInHTTPServer((LOCALHOST, self._port), self)
            self._port = server.server_address[1]
            thread = threading.Thread(
                target=server.serve_forever,
                kwargs={"poll_interval": _POLL_INTERVAL},
                name=f"ollama-standin:{self._port}",
                daemon=True,
            )
            thread.start()
            self._server, self._thread = server, thread
        return self

    def stop(self) -> None:
        """Close the listening socket and cut open connections. Idempotent."""
        with self._lifecycle_lock:
            server, thread = self._server, self._thread
            self._server, self._thread = None, None
            if server is None:
                return
            server.stop_event.set()
            server.shutdown()
            server.server_close()
            server.cut_connections()
            if thread is not None:
                thread.join(timeout=5)

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    @property
    def running(self) -> bool:
        return self._server is not None

    @property
    def port(self) -> int:
        if self._port == 0:
            raise RuntimeError("port is not known until the stand-in has been started")
        return self._port

    @property
    def host(self) -> str:
        """``"127.0.0.1:PORT"``, the form OLLAMA_HOST accepts."""
        return f"{LOCALHOST}:{self.port}"

    @property
    def url(self) -> str:
        return f"http://{self.host}"

    # ---- configuration

    @property
    def embed_dim(self) -> int:
        with self._lock:
            return self._embed_dim

    @embed_dim.setter
    def embed_dim(self, value: int) -> None:
        if value < 1:
            raise ValueError(f"embed_dim must be >= 1, got {value}")
        with self._lock:
            self._embed_dim = value

    @property
    def embedder(self) -> Embedder | None:
        """Callable computing embeddings for a batch of texts; None: hashed `embed_text`."""
        with self._lock:
            return self._embedder

    @embedder.setter
    def embedder(self, value: Embedder | None) -> None:
        with self._lock:
            self._embedder = value

    @property
    def token_delay(self) -> float:
        """Seconds between streamed chunks (default 0)."""
        with self._lock:
            return self._token_delay

    @token_delay.setter
    def token_delay(self, value: float) -> None:
        with self._lock:
            self._token_delay = max(0.0, value)

    @property
    def models(self) -> list[str]:
        """Configured model names, normalised with a tag (``name:latest``)."""
        with self._lock:
            return list(self._models)

    def set_models(
        self,
        models: Iterable[str],
        *,
        capabilities: Mapping[str, Sequence[str]] | None = None,
    ) -> None:
        """Replace the set of installed models; ``capabilities`` adds per-model overrides."""
        names = list(dict.fromkeys(normalize_model_name(name) for name in models))
        overrides = {
            normalize_model_name(name): tuple(caps) for name, caps in (capabilities or {}).items()
        }
        with self._lock:
            self._models = names
            self._capability_overrides.update(overrides)

    # ---- scripted replies

    def script_reply(
        self,
        text: str,
        *,
        tokens: Sequence[str] | None = None,
        tool_calls: Sequence[Mapping[str, Any]] | None = None,
    ) -> None:
        """Queue a chat reply (FIFO, one per /api/chat request).

        ``tokens`` overrides the default whitespace-keeping split of ``text`` and
        must concatenate to ``text``. ``tool_calls`` items are
        ``{"function": {"name", "arguments"}}`` (or the shorthand
        ``{"name", "arguments"}``) and are sent in a chunk after the text.
        """
        chunks = split_tokens(text) if tokens is None else list(tokens)
        if "".join(chunks) != text:
            raise ValueError("tokens must concatenate to text")
        calls = tuple(_normalize_tool_call(call) for call in tool_calls or ())
        with self._lock:
            self._replies.append(ScriptedReply(tuple(chunks), calls))

    @property
    def pending_replies(self) -> int:
        with self._lock:
            return len(self._replies)

    def clear_replies(self) -> None:
        with self._lock:
            self._replies.clear()

    # ---- faults

    def fail_next(
        self,
        kind: FaultKind,
        *,
        count: int | None = 1,
        path: str | None = None,
        **params: Any,
    ) -> None:
        """Inject a fault for the next ``count`` matching requests (None: until cleared).

        ``path`` restricts the fault to one endpoint (e.g. ``"/api/chat"``).
        Kinds and their parameters (defaults in brackets):

        * ``status``: ``status`` [500], ``message`` -> HTTP error with ``{"error": message}``
          (any endpoint).
        * ``delay``: ``seconds`` [1.0] -> sleep before the headers (any endpoint).
        * ``stall``: ``after`` [1], ``seconds`` [1.0] -> streaming chat pauses after
          ``after`` chunks for ``seconds``, then carries on.
        * ``drop``: ``after`` [1] -> streaming chat closes the socket after ``after``
          chunks without the terminating zero-length chunk.
        * ``malformed``: ``after`` [1], ``line`` ["{not json"] -> non-JSON line, then end.
        * ``error_line``: ``after`` [1], ``message`` -> ``{"error": message}`` line, then end.
        * ``embed_dim``: ``dim`` [3] -> /api/embed(dings) vectors of the wrong size.
        """
        if kind not in FAULT_KINDS:
            raise ValueError(f"unknown fault kind {kind!r}; expected one of {sorted(FAULT_KINDS)}")
        unexpected = set(params) - _FAULT_PARAMS[kind]
        if unexpected:
            raise TypeError(f"fault {kind!r} does not take {sorted(unexpected)}")
        if count is not None and count < 1:
            raise ValueError(f"count must be >= 1 or None, got {count}")
        fault = Fault(kind=kind, remaining=count, path=path, **params)
        with self._lock:
            self._faults.append(fault)

    def clear_faults(self) -> None:
        with self._lock:
            self._faults.clear()

    @property
    def pending_faults(self) -> list[Fault]:
        with self._lock:
            return list(self._faults)

    # ---- request log

    @property
    def requests(self) -> list[RecordedRequest]:
        """Snapshot of every request received, oldest first."""
        with self._lock:
            return list(self._requests)

    def chat_requests(self) -> list[JsonObject]:
        """JSON bodies of the /api/chat requests received, oldest first."""
        return [
            r.body
            for r in self.requests
            if r.path == "/api/chat" and r.method == "POST" and isinstance(r.body, dict)
        ]

    def clear_requests(self) -> None:
        with self._lock:
            self._requests.clear()

    # ---- used by the request handler (any thread)

    def _record(self, request: RecordedRequest) -> None:
        with self._lock:
            self._requests.append(request)

    def _take_fault(self, path: str, kinds: frozenset[str]) -> Fault | None:
        with self._lock:
            for fault in self._faults:
                if not fault.matches(path, kinds):
                    continue
                if fault.remaining is not None:
                    fault.remaining -= 1
                    if fault.remaining <= 0:
                        self._faults.remove(fault)
                return fault
        return None

    def _next_reply(self, messages: list[JsonObject]) -> ScriptedReply:
        with self._lock:
            if self._replies:
                return self._replies.popleft()
        return _default_reply(messages)

    def _capabilities_of(self, name: str) -> tuple[str, ...] | None:
        """Capabilities of an installed model, or None when it is not installed."""
        if not name:
            return None
        normalized = normalize_model_name(name)
        with self._lock:
            if normalized not in self._models:
                return None
            override = self._capability_overrides.get(normalized)
        return override if override is not None else default_capabilities(normalized)

    def _tag_entries(self) -> list[JsonObject]:
        entries: list[JsonObject] = []
        for name in self.models:
            capabilities = self._capabilities_of(name) or default_capabilities(name)
            entries.append(
                {
                    "name": name,
                    "model": name,
                    "modified_at": MODIFIED_AT,
                    "size": 274_302_450 if "completion" not in capabilities else 2_019_393_189,
                    "digest": "sha256:" + hashlib.sha256(name.encode()).hexdigest(),
                    "details": _model_details(capabilities),
                }
            )
        return entries


# ------------------------------------------------------------------- standalone


def _parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description="Serve a fake Ollama API on 127.0.0.1.")
    parser.add_argument("--port", type=int, default=11434, help="port (0: any free port)")
    parser.add_argument("--embed-dim", type=int, default=768, help="embedding dimension")
    parser.add_argument("--token-delay", type=float, default=0.0, help="seconds between chunks")
    parser.add_argument(
        "--models", nargs="+", default=list(DEFAULT_MODELS), help="installed model names"
    )
    parser.add_argument(
        "--embedder",
        choices=("hash", "minilm"),
        default="hash",
        help="hash: hashed bag of words (default); minilm: real all-MiniLM-L6-v2 vectors "
        "(384-d, needs the 'bench' extra; also installs the model name all-minilm)",
    )
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    """Serve until Ctrl-C."""
    args = _parse_args(argv)
    embedder: Embedder | None = None
    models = list(args.models)
    if args.embedder == "minilm":
        from bench.minilm_embedder import MiniLMUnavailableError, load_minilm

        try:
            embedder = load_minilm()
        except MiniLMUnavailableError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 2
        models.append("all-minilm")
    standin = OllamaStandIn(
        models,
        port=args.port,
        embed_dim=args.embed_dim,
        token_delay=args.token_delay,
        embedder=embedder,
    )
    with standin:
        print(f"Ollama stand-in listening on {standin.url}", flush=True)
        try:
            while True:
                time.sleep(3600)
        except KeyboardInterrupt:
            pass
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
