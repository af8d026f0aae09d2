"""Which context window to ask Ollama for, how much of it the reply keeps, and overflow named.

Ollama runs a chat request with ``options.num_ctx`` when the request sends it, else the model's
Modelfile ``num_ctx``, else its server default (4,096 today, 2,048 in older releases), never more
than the model was trained for. Straylight always sends ``num_ctx`` (a stable one: a different
``num_ctx`` reloads the model) and budgets its prompt against it, so Ollama never truncates.

The window (`choose_window`): the ``num_ctx`` setting when set; else the Modelfile's ``num_ctx``;
else the model's trained maximum capped at `DEFAULT_WINDOW_CAP` (16,384: the KV cache of a
typical 8B model is 2 GiB there; docs/context_budget.md has the table); 4,096 when nothing is
known. Overflow is still detected: a ``prompt_eval_count`` far below the estimate with the
window nearly full (`detect_truncation`), and the HTTP 400 texts that name the context
(`parse_context_error`); both become one line that names the fix.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final, Literal

from agent.token_estimate import UNCALIBRATED_MARGIN

__all__ = [
    "DEFAULT_WINDOW_CAP",
    "FALLBACK_WINDOW",
    "Overflow",
    "WindowChoice",
    "WindowSource",
    "choose_window",
    "detect_filled_window",
    "detect_smaller_window",
    "detect_truncation",
    "is_short_count",
    "model_context_length",
    "modelfile_num_ctx",
    "parse_context_error",
    "reply_reserve",
]

DEFAULT_WINDOW_CAP: Final = 16_384
FALLBACK_WINDOW: Final = 4_096
"""Ollama's own default: safe when the model's maximum is unknown."""
_TRUNCATION_SHORTFALL: Final = 0.8
"""A count below 80 % of the calibrated estimate is a shortfall (the estimate errs by ~10 %)."""
_FULL_WINDOW_SHARE: Final = 0.45
"""Ollama's truncation leaves the window at least half full (runner: window - (window-5)//2)."""
_FILLED_SHARE: Final = 0.9
"""A count at 90 % of the window or more: the budget never sends that much (it keeps an
eighth of the window or more for the reply, and a margin), so the estimate ran low."""
_ABOVE_ESTIMATE: Final = 1.1
_CUT_PLAUSIBLE_SHARE: Final = 0.75
"""A prompt estimated below 75 % of the window was not cut (that would take an estimate a
third too low): a short count there is the prompt cache. Ollama before 0.31 counts only the
tokens it did not have cached (a long paste into a cached conversation: 8,000 of 12,000)."""

WindowSource = Literal["setting", "modelfile", "model max", "cap", "fallback", "loaded"]


@dataclass(frozen=True, slots=True)
class WindowChoice:
    window: int
    source: WindowSource
    model_max: int | None

    def describe(self) -> str:
        """E.g. "16,384 tokens (capped; the model holds 131,072)"."""
        text = f"{self.window:,} tokens"
        if self.source == "cap" and self.model_max:
            return f"{text} (capped; the model holds {self.model_max:,})"
        return f"{text} ({self.source})"


def _field(show: Any, *names: str) -> Any:
    for name in names:
        value = show.get(name) if isinstance(show, Mapping) else getattr(show, name, None)
        if value is not None:
            return value
    return None


def model_context_length(show: Any) -> int | None:
    """``<architecture>.context_length`` from an ``/api/show`` answer (dict or the client's
    ShowResponse); any ``*.context_length`` when the architecture is not named."""
    info = _field(show, "model_info", "modelinfo")
    if not isinstance(info, Mapping):
        return None
    arch = info.get("general.architecture")
    keys = [f"{arch}.context_length"] if arch else []
    keys += sorted(k for k in info if isinstance(k, str) and k.endswith(".context_length"))
    for key in keys:
        value = info.get(key)
        if isinstance(value, int) and not isinstance(value, bool) and value > 0:
            return value
    return None


_NUM_CTX_RE: Final = re.compile(r"^\s*num_ctx\s+(\d+)\s*$", re.MULTILINE)


def modelfile_num_ctx(show: Any) -> int | None:
    """A ``num_ctx`` line in ``/api/show``'s ``parameters`` text."""
    parameters = _field(show, "parameters")
    if not isinstance(parameters, str):
        return None
    match = _NUM_CTX_RE.search(parameters)
    return int(match.group(1)) if match and int(match.group(1)) > 0 else None


def choose_window(
    setting: int | None,
    show: Any = None,
    *,
    cap: int = DEFAULT_WINDOW_CAP,
) -> WindowChoice:
    """The window to send as ``options.num_ctx`` (see the module docstring)."""
    model_max = model_context_length(show) if show is not None else None
    if setting and setting > 0:
        if model_max and setting > model_max:
            return WindowChoice(model_max, "model max", model_max)
        return WindowChoice(setting, "setting", model_max)
    param = modelfile_num_ctx(show) if show is not None else None
    if param:
        return WindowChoice(min(param, model_max or param), "modelfile", model_max)
    if model_max:
        if model_max > cap:
            return WindowChoice(cap, "cap", model_max)
        return WindowChoice(model_max, "model max", model_max)
    return WindowChoice(FALLBACK_WINDOW, "fallback", None)


def reply_reserve(window: int, num_predict: int | None = None) -> int:
    """Tokens kept free for the reply: ``num_predict`` when set (at most half the window),
    else an eighth of the window, between 512 and 4,096."""
    if num_predict and num_predict > 0:
        return min(num_predict, window // 2)
    return max(min(512, window // 2), min(window // 8, 4096))


def structured_room(window: int) -> float:
    """The tokens a structured call's prompt (the reflection, the dream) may take in
    `window` (the `num_ctx` it sends), estimated uncalibrated: the reply's reserve kept
    free and the uncalibrated estimate's margin taken off."""
    return (window - reply_reserve(window)) / (1 + UNCALIBRATED_MARGIN)


@dataclass(frozen=True, slots=True)
class Overflow:
    """The prompt did not fit and Ollama said so (``rejected``) or cut it (``truncated``)."""

    kind: Literal["truncated", "rejected"]
    message: str
    prompt_tokens: int | None = None
    window: int | None = None


# Ollama keeps the end of an over-long prompt and drops its front: old messages, but when the
# history is short also the system instructions and the recalled memory that open the prompt.
_WHAT_WAS_CUT: Final = (
    "part of the prompt's front was dropped (old messages, or the instructions and recalled "
    "memory at its start)"
)


def _fix(window: int | None, model_max: int | None) -> str:
    if model_max and window and model_max > window:
        return f"raise num_ctx (the model holds up to {model_max:,}) or shorten longterm.md"
    return "shorten longterm.md or the message, or use a model with a larger window"


_BELOW_ESTIMATE: Final = 0.95


def is_short_count(estimate: int, prompt_eval_count: int | None) -> bool:
    """Ollama evaluated under the estimate by more than its usual error: perhaps a cut (a
    window smaller than the one sent, which only /api/ps tells), perhaps the prompt cache
    holding the rest, perhaps only the estimate's error."""
    count = prompt_eval_count or 0
    return 0 < count < _BELOW_ESTIMATE * estimate


def detect_truncation(
    estimate: int, prompt_eval_count: int | None, window: int, model_max: int | None = None
) -> Overflow | None:
    """Ollama cut the prompt when it evaluated far fewer tokens than estimated, the window is
    nearly full *and* the prompt was estimated near the window's size; a small count with room
    to spare, or of a prompt well inside the window, is a KV-cache reuse, not a cut."""
    if not prompt_eval_count or prompt_eval_count <= 0 or estimate <= 0:
        return None
    if estimate < _CUT_PLAUSIBLE_SHARE * window:
        return None
    if prompt_eval_count >= _TRUNCATION_SHORTFALL * estimate:
        return None
    if prompt_eval_count < _FULL_WINDOW_SHARE * window:
        return None
    return Overflow(
        "truncated",
        f"Ollama cut the prompt: it read {prompt_eval_count:,} of about {estimate:,} tokens "
        f"(window {window:,}): {_WHAT_WAS_CUT}; {_fix(window, model_max)}",
        prompt_tokens=estimate,
        window=window,
    )


def detect_filled_window(
    estimate: int, prompt_eval_count: int | None, window: int, model_max: int | None = None
) -> Overflow | None:
    """Ollama read over the estimate and (nearly) filled the window: the estimate runs low,
    so the prompt may have been longer than the window and lost its front, with nothing else
    to tell (a text that tokenizes far finer than estimated: code, hex, another model's
    vocabulary). A cut cannot be proven from the count; it is named as possible. (A count
    far above the estimate at half the window was named too, for a week of one session: on
    a first turn with nothing to cut it was a false alarm, and the raise it made stuck.)"""
    if not prompt_eval_count or estimate <= 0 or window <= 0:
        return None
    if prompt_eval_count < _FILLED_SHARE * window:
        return None
    if prompt_eval_count <= _ABOVE_ESTIMATE * estimate:
        return None
    return Overflow(
        "truncated",
        f"Ollama may have cut the prompt: it read {prompt_eval_count:,} tokens of its "
        f"{window:,}-token window where about {estimate:,} were estimated, so the prompt may "
        "have been longer and lost its front (old messages, or the instructions and recalled "
        "memory at its start); Straylight now counts this model's tokens higher and leaves "
        f"out old messages itself; {_fix(window, model_max)}",
        prompt_tokens=prompt_eval_count,
        window=window,
    )


def detect_smaller_window(
    estimate: int, asked: int, loaded: int | None, *, maximum_known: bool = False
) -> Overflow | None:
    """Ollama ran the model with a smaller window than the `asked` one (`/api/ps` says
    `loaded`; it caps num_ctx at the model's maximum, which /api/show did not tell — or, with
    `maximum_known`, it did not apply the num_ctx sent at all): a prompt estimated above that
    window lost the front of the prompt, whatever `prompt_eval_count` says."""
    if not loaded or loaded >= asked or estimate <= loaded:
        return None
    why = "Ollama did not apply it" if maximum_known else "/api/show did not tell its maximum"
    return Overflow(
        "truncated",
        f"Ollama cut the prompt: the model runs with a {loaded:,}-token window (not the "
        f"{asked:,} sent: {why}) and the prompt needed about "
        f"{estimate:,}: {_WHAT_WAS_CUT}; set num_ctx to {loaded:,} and "
        "Straylight cuts whole messages itself and says which",
        prompt_tokens=estimate,
        window=loaded,
    )


_LLAMA_SERVER_RE: Final = re.compile(
    r"request \((\d+) tokens\) exceeds the available context size \((\d+) tokens\)"
)
_CONTEXT_PHRASES: Final = (
    "exceeds the available context size",
    "input length exceeds the context length",
    "input exceeds context length",
    "exceed_context_size_error",
    "context length exceeded",
    "maximum context length",
    "longer than the context length",  # Ollama's own, for models that cannot shift the window
)


def _numbers_from_json(text: str) -> tuple[int | None, int | None]:
    """``n_prompt_tokens`` / ``n_ctx`` from llama-server's error JSON, possibly nested in a
    string (Ollama passes it through as the ``error`` text)."""
    for _ in range(3):
        try:
            data = json.loads(text)
        except (ValueError, RecursionError):  # a server's error text, nested deep
            return None, None
        if isinstance(data, dict) and "error" in data:
            inner = data["error"]
            if isinstance(inner, dict):
                prompt, ctx = inner.get("n_prompt_tokens"), inner.get("n_ctx")
                return (
                    prompt if isinstance(prompt, int) else None,
                    ctx if isinstance(ctx, int) else None,
                )
            if isinstance(inner, str):
                text = inner
                continue
        return None, None
    return None, None


def parse_context_error(
    text: str, *, window: int | None = None, model_max: int | None = None
) -> Overflow | None:
    """One line naming the fix when an Ollama error ``text`` says the prompt exceeded the
    window; None for any other error."""
    lowered = text.lower()
    if not any(phrase in lowered for phrase in _CONTEXT_PHRASES):
        return None
    prompt, ctx = _numbers_from_json(text.strip())
    match = _LLAMA_SERVER_RE.search(text)
    if match:
        prompt, ctx = int(match.group(1)), int(match.group(2))
    ctx = ctx or window
    if prompt and ctx:
        what = f"The prompt ({prompt:,} tokens) is larger than the model's window ({ctx:,})"
    elif ctx:
        what = f"The prompt is larger than the model's window ({ctx:,} tokens)"
    else:
        what = "The prompt is larger than the model's window"
    if ctx and window and ctx < window:
        # Ollama ran a smaller window than the one sent (the model's maximum, unknown to us,
        # or a server that does not apply num_ctx)
        fix = f"set num_ctx to {ctx:,} and Straylight cuts whole messages itself and says which"
    else:
        fix = _fix(ctx, model_max)
    return Overflow("rejected", f"{what}: {fix}", prompt, ctx)
