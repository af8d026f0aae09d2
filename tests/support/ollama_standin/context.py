"""The context window: which window a chat request gets, and what meets a prompt too long for it.

Ollama's rules, from its API docs and source (server/prompt.go ``chatPrompt``, llm/llama_server.go):

* The window is ``options.num_ctx`` when the request sends it, else the model's ``PARAMETER
  num_ctx``, else the server default (4,096 on most machines; 2,048 in older releases), and never
  more than the model's trained maximum (``<arch>.context_length`` in ``/api/show``).
* ``"truncate"`` (Ollama's usual behaviour): messages are dropped from the front, oldest first,
  keeping every system message and always the last message, until the rendered prompt fits
  (``<= window``). If even that is too long, the runner keeps the first ``num_keep`` tokens
  (default 4, +1 for begin-of-text) and cuts the front down to ``window - (window - keep) // 2``
  (2,051 for 4,096): HTTP 200, a smaller ``prompt_eval_count``, nothing else tells the client.
  A request with ``"truncate": false`` gets the error below instead.
* ``"error"``: HTTP 400 whose ``error`` is llama-server's JSON as a string, e.g.
  ``{"error":{"code":400,"message":"request (8889 tokens) exceeds the available context size
  (4096 tokens), try increasing it","type":"exceed_context_size_error","n_prompt_tokens":8889,
  "n_ctx":4096}}`` (measured on Ollama 0.33 with ``truncate: false``; ollama/ollama#17889 shows
  some models answering so without it).
* ``"unlimited"``: the stand-in's historical behaviour, every prompt accepted whole. It was the
  default until Straylight sent ``num_ctx`` and budgeted its prompt; now "truncate" is, so a
  test meets an over-long prompt as it would meet it on real Ollama.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Final, Literal, get_args

from .tokens import prompt_tokens
from .wire import JsonObject

__all__ = [
    "CONTEXT_MODES",
    "DEFAULT_NUM_CTX",
    "DEFAULT_NUM_KEEP",
    "ContextFit",
    "ContextMode",
    "context_error",
    "fit_messages",
    "resolve_window",
]

ContextMode = Literal["unlimited", "truncate", "error"]
CONTEXT_MODES: Final[tuple[str, ...]] = get_args(ContextMode)
DEFAULT_NUM_CTX: Final = 4096
DEFAULT_NUM_KEEP: Final = 4
_BOS_TOKENS: Final = 1


@dataclass(frozen=True)
class ContextFit:
    """What the model saw of one chat request."""

    window: int
    kept: tuple[JsonObject, ...]
    """The messages the prompt was rendered from (system messages first when any were dropped)."""
    dropped_messages: int
    """Non-system messages dropped from the front, oldest first."""
    full_prompt_tokens: int
    """Estimated tokens of the whole prompt as sent."""
    prompt_tokens: int
    """Tokens the model evaluated: what ``prompt_eval_count`` reports."""
    runner_truncated: bool = False
    """True when even the kept messages did not fit and their front was cut token-wise."""
    error: str | None = None
    """The HTTP 400 message when the prompt was refused (mode "error")."""


def resolve_window(
    requested: Any, model_num_ctx: int | None, server_default: int, model_max: int
) -> int:
    """The window a request runs with: request, then model parameter, then server default."""
    window = server_default
    if model_num_ctx:
        window = model_num_ctx
    if isinstance(requested, int | float) and not isinstance(requested, bool) and requested > 0:
        window = int(requested)
    return max(1, min(window, model_max))


def context_error(prompt: int, window: int) -> str:
    """Ollama's 400 for a prompt over the window: llama-server's error JSON, as a string."""
    message = (
        f"request ({prompt} tokens) exceeds the available context size ({window} tokens), "
        "try increasing it"
    )
    inner = {
        "error": {
            "code": 400,
            "message": message,
            "type": "exceed_context_size_error",
            "n_prompt_tokens": prompt,
            "n_ctx": window,
        }
    }
    return json.dumps(inner, separators=(",", ":"))


def _drop_front(
    messages: Sequence[JsonObject], window: int, tools: Any, scale: float
) -> tuple[list[JsonObject], int]:
    """Ollama's chatPrompt: drop from the front until it fits, keeping system + last message."""
    last = len(messages) - 1
    for start in range(len(messages)):
        system = [m for m in messages[:start] if m.get("role") == "system"]
        candidate = [*system, *messages[start:]]
        if start == last or prompt_tokens(candidate, tools, scale) <= window:
            dropped = start - len(system)
            return candidate, dropped
    return list(messages), 0


def _runner_limit(window: int, num_keep: int) -> int:
    """Tokens left after llama_server's front truncation (contextShiftPromptLimit)."""
    keep = max(0, min(num_keep + _BOS_TOKENS, window - 1))
    return window - max((window - keep) // 2, 1)


def fit_messages(
    messages: Sequence[JsonObject],
    *,
    window: int,
    mode: ContextMode,
    tools: Any = None,
    truncate: bool = True,
    num_keep: int = DEFAULT_NUM_KEEP,
    scale: float = 1.0,
) -> ContextFit:
    """Apply ``mode`` to a chat prompt; ``truncate`` is the request's own field (default true),
    ``scale`` the model's `token_scale`."""
    full = prompt_tokens(messages, tools, scale)
    whole = ContextFit(window, tuple(messages), 0, full, full)
    if mode == "unlimited" or full <= window - 1 or not messages:
        return whole
    if mode == "error" or not truncate:
        return ContextFit(window, tuple(messages), 0, full, full, error=context_error(full, window))
    kept, dropped = _drop_front(messages, window, tools, scale)
    tokens = prompt_tokens(kept, tools, scale)
    if tokens <= window - 1:
        return ContextFit(window, tuple(kept), dropped, full, tokens)
    limit = _runner_limit(window, num_keep)
    return ContextFit(window, tuple(kept), dropped, full, limit, runner_truncated=True)
