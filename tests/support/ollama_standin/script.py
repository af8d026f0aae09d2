"""Scripted behaviour and the request log of the stand-in: queued replies, injected faults, and
every request received (with what the model did for each chat). `OllamaStandIn` inherits them.
"""

from __future__ import annotations

import dataclasses
import threading
from collections import deque
from collections.abc import Mapping, Sequence
from typing import Any

from .faults import FAULT_KINDS, FAULT_PARAMS, Fault, FaultKind
from .replies import ScriptedReply, default_reply, normalize_tool_call, split_tokens
from .wire import ChatOutcome, JsonObject, RecordedRequest

__all__ = ["Script"]


def _tokens_of(text: str, tokens: Sequence[str] | None) -> tuple[str, ...]:
    chunks = split_tokens(text) if tokens is None else list(tokens)
    if "".join(chunks) != text:
        raise ValueError("tokens must concatenate to text")
    return tuple(chunks)


class Script:
    """Replies, faults and the request log, each change guarded by one lock."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._replies: deque[ScriptedReply] = deque()
        self._faults: list[Fault] = []
        self._requests: list[RecordedRequest] = []

    # ---- scripted replies

    def script_reply(
        self,
        text: str,
        *,
        tokens: Sequence[str] | None = None,
        tool_calls: Sequence[Mapping[str, Any]] | None = None,
        thinking: str | None = None,
        thinking_tokens: Sequence[str] | None = None,
    ) -> None:
        """Queue a chat reply (FIFO, one per /api/chat request that reaches the model).

        ``tokens`` overrides the default whitespace-keeping split of ``text`` and
        must concatenate to ``text``. ``tool_calls`` items are
        ``{"function": {"name", "arguments"}}`` (or the shorthand
        ``{"name", "arguments"}``) and are sent in a chunk after the text.
        ``thinking`` (split like ``text``, or by ``thinking_tokens``) is streamed first
        when the model thinks for that request, and dropped when it does not; a thinking
        model without scripted thinking thinks "Stand-in thinking about: <last message>".
        """
        chunks = _tokens_of(text, tokens)
        thought = _tokens_of(thinking or "", thinking_tokens)
        calls = tuple(normalize_tool_call(call) for call in tool_calls or ())
        with self._lock:
            self._replies.append(ScriptedReply(chunks, calls, thought))

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
          (any endpoint); ``body`` -> that text as the whole reply instead.
        * ``delay``: ``seconds`` [1.0] -> sleep before the headers (any endpoint).
        Stream faults (``stall``, ``drop``, ``malformed``, ``error_line``) are taken by a
        streaming chat; a streaming /api/pull takes only those given ``path="/api/pull"``.

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
        unexpected = set(params) - FAULT_PARAMS[kind]
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

    def chat_outcomes(self) -> list[ChatOutcome]:
        """What the model saw and did for each /api/chat request that reached it, oldest first.

        Each `ChatOutcome` names the window, the estimated and evaluated prompt tokens, the
        messages dropped to fit the window, the thinking and the images.
        """
        return [r.chat for r in self.requests if r.chat is not None]

    def clear_requests(self) -> None:
        with self._lock:
            self._requests.clear()

    # ---- used by the request handler (any thread)

    def _record(self, request: RecordedRequest) -> None:
        with self._lock:
            self._requests.append(request)

    def _annotate(self, request: RecordedRequest, **changes: Any) -> RecordedRequest:
        """Replace ``request`` in the log by a copy with ``changes``; returns the copy."""
        updated = dataclasses.replace(request, **changes)
        with self._lock:
            for index in range(len(self._requests) - 1, -1, -1):
                if self._requests[index] is request:
                    self._requests[index] = updated
                    break
        return updated

    def _take_fault(
        self, path: str, kinds: frozenset[str], *, explicit: bool = False
    ) -> Fault | None:
        """The next fault of ``kinds`` for ``path``; ``explicit``: only faults naming it."""
        with self._lock:
            for fault in self._faults:
                if not fault.matches(path, kinds) or (explicit and fault.path != path):
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
        return default_reply(messages)
