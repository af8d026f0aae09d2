"""``/api/chat``: validation as Ollama does it, the context window, thinking, options, streaming.

Order of checks, as in Ollama's ChatHandler: the model (404), chat capability (400), tools (400),
``think`` (400: an invalid value, or a truthy value for a model without the ``thinking``
capability: ``"<model>" does not support thinking``), then the model is loaded (``/api/ps``),
then the prompt is fitted to the window (`context`), then the reply is generated.

Thinking: a model with the ``thinking`` capability thinks unless ``think`` is false (a level
"low"/"medium"/"high"/"max" is accepted by every thinking model, as Ollama's thinking docs say;
gpt-oss-like models ignore false). A model with ``inline_thinking`` writes ``<think>…</think>``
into ``content`` whatever ``think`` says, as models without Ollama's thinking parser do.

Images: accepted on messages for a model with the ``vision`` capability (768 tokens each in the
estimate). Ollama does not check this capability for chat: a model without a vision projector
fails later in its runner with an error that is not documented. The stand-in answers HTTP 400
``registry.ollama.ai/library/<model> does not support vision`` instead (the wording of Ollama's
capability errors), and 400 ``illegal base64 data`` for an image that is not base64.
"""

from __future__ import annotations

import base64
import binascii
import dataclasses
import math
from typing import Any, Final

from .catalog import parse_keep_alive
from .context import DEFAULT_NUM_KEEP, ContextFit, fit_messages, resolve_window
from .embed import not_found_error
from .faults import STREAM_FAULTS
from .handler import Handler
from .models import ResolvedModel
from .replies import (
    chat_stream_objects,
    chat_whole,
    default_thinking,
    load_response,
    messages_of,
    plan_reply,
)
from .tokens import estimate_tokens, prompt_tokens
from .wire import ChatOutcome, JsonObject

__all__ = ["THINK_LEVELS", "chat"]

THINK_LEVELS: Final = ("high", "medium", "low", "max")
OLLAMA_CONTEXT_ERROR: Final = "the input length exceeds the context length"
"""Ollama's own 400 for a prompt over the window (`truncate: false`, some models): no size."""
_THINK_VALUES: Final = '("high", "medium", "low", "max", true, or false)'


class _Refused(Exception):
    """A request Ollama answers with an HTTP error before generating anything."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


def _options(body: JsonObject) -> JsonObject:
    options = body.get("options")
    return options if isinstance(options, dict) else {}


def _thinks(model: ResolvedModel, name: str, think: Any) -> bool:
    """Whether the model streams ``message.thinking`` for this ``think`` value."""
    if think is not None and not isinstance(think, bool | str):
        raise _Refused(400, f"think must be a boolean or string {_THINK_VALUES}")
    if isinstance(think, str) and model.think_is_bool:
        raise _Refused(
            400, "json: cannot unmarshal string into Go struct field ChatRequest.think of type bool"
        )
    if isinstance(think, str) and think not in THINK_LEVELS:
        raise _Refused(400, f'invalid think value: "{think}" (must be {_THINK_VALUES[1:-1]})')
    if "thinking" not in model.capabilities:
        if think not in (None, False):
            raise _Refused(400, f'"{name}" does not support thinking')
        return False
    if isinstance(think, str) and not model.takes_levels:
        raise _Refused(400, f'think value "{think}" is not supported for this model')
    return think is not False or model.always_thinks


def _check_images(model: ResolvedModel, name: str, messages: list[JsonObject]) -> int:
    """Number of images on the messages; refuses them for a model without vision."""
    images = [image for m in messages for image in (m.get("images") or [])]
    if images and "vision" not in model.capabilities:
        raise _Refused(400, f"registry.ollama.ai/library/{name} does not support vision")
    for image in images:
        try:
            base64.b64decode(str(image), validate=True)
        except (binascii.Error, ValueError):
            raise _Refused(400, "illegal base64 data") from None
    return len(images)


def _stop_strings(options: JsonObject) -> list[str]:
    stop = options.get("stop")
    return [str(s) for s in stop] if isinstance(stop, list) else []


def _num_predict(options: JsonObject) -> int | None:
    value = options.get("num_predict")
    return int(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def _fit(h: Handler, model: ResolvedModel, body: JsonObject, window: int) -> ContextFit:
    options = _options(body)
    num_keep = options.get("num_keep")
    return fit_messages(
        messages_of(body),
        window=window,
        mode=model.context_mode or h.standin.context_mode,
        tools=body.get("tools"),
        truncate=body.get("truncate") is not False,
        num_keep=num_keep if isinstance(num_keep, int) and num_keep >= 0 else DEFAULT_NUM_KEEP,
        scale=model.token_scale,
    )


def _outcome(fit: ContextFit, think: Any, thinking: bool, images: int) -> ChatOutcome:
    return ChatOutcome(
        window=fit.window,
        full_prompt_tokens=fit.full_prompt_tokens,
        prompt_tokens=fit.prompt_tokens,
        dropped_messages=fit.dropped_messages,
        kept_messages=len(fit.kept),
        runner_truncated=fit.runner_truncated,
        think=think,
        thinking=thinking,
        images=images,
        error=fit.error,
    )


def _validate(h: Handler, body: JsonObject) -> tuple[ResolvedModel, bool, int, float | None]:
    """The model, whether it thinks, the image count and keep_alive; or `_Refused`."""
    name = str(body.get("model") or "")
    model = h.standin.catalog.resolved(name)
    if model is None:
        raise _Refused(404, not_found_error(name))
    if "completion" not in model.capabilities:
        raise _Refused(400, f'"{name}" does not support chat')
    if body.get("tools") and "tools" not in model.capabilities:
        raise _Refused(400, f"registry.ollama.ai/library/{name} does not support tools")
    thinks = _thinks(model, name, body.get("think"))
    images = _check_images(model, name, messages_of(body))
    try:
        keep_alive = parse_keep_alive(body.get("keep_alive"))
    except ValueError as exc:
        raise _Refused(400, str(exc)) from None
    stop = _options(body).get("stop")
    if stop is not None and not isinstance(stop, list):
        # Ollama's Options.FromMap: a slice option must be a JSON array (HTTP 500).
        raise _Refused(500, 'option "stop" must be of type array')
    return model, thinks, images, keep_alive


def chat(h: Handler, body: JsonObject) -> None:
    """Serve one ``/api/chat`` request."""
    name = str(body.get("model") or "")
    try:
        model, thinks, images, keep_alive = _validate(h, body)
    except _Refused as refused:
        h.send_error_json(refused.status, refused.message)
        return
    options = _options(body)
    asked = options.get("num_ctx") if model.applies_num_ctx else None
    window = resolve_window(asked, model.num_ctx, h.standin.default_num_ctx, model.context_length)
    if not messages_of(body):
        if keep_alive == 0:
            h.standin.catalog.unload(model.name)
            h.send_json(200, load_response(name, "unload"))
            return
        h.standin.catalog.load(model, window, keep_alive)
        h.send_json(200, load_response(name, "load"))
        return
    h.standin.catalog.load(model, window, keep_alive)
    fit = _fit(h, model, body, window)
    if fit.error is not None:
        h.annotate(chat=_outcome(fit, body.get("think"), False, images))
        h.send_error_json(400, fit.error if model.counts_refusal else OLLAMA_CONTEXT_ERROR)
        return
    reply = h.standin._next_reply(list(fit.kept))
    if (thinks or model.inline_thinking) and not reply.thinking_tokens:
        reply = dataclasses.replace(reply, thinking_tokens=default_thinking(fit.kept))
    plan = plan_reply(
        reply,
        think=thinks,
        inline_thinking=model.inline_thinking,
        num_predict=_num_predict(options),
        stop=_stop_strings(options),
    )
    thinking = thinks or model.inline_thinking
    h.annotate(chat=_outcome(fit, body.get("think"), thinking, images))
    counted = _counted_tokens(h, model, fit, body.get("tools"))
    if body.get("stream", True) is False:
        h.send_json(200, chat_whole(name, plan, counted))
        return
    fault = h.standin._take_fault("/api/chat", STREAM_FAULTS)
    h.stream_ndjson(chat_stream_objects(name, plan, counted), fault)


def _counted_tokens(h: Handler, model: ResolvedModel, fit: ContextFit, tools: Any) -> int:
    """``prompt_eval_count``: the prompt's tokens, or (`count_cached_prompt` off, as Ollama
    before 0.31) those after the front it shares with the model's last request, which the
    prompt cache held: whole messages, then the shared start of the first that differs."""
    previous = h.standin.last_prompts.get(model.name, ())
    h.standin.last_prompts[model.name] = fit.kept
    if h.standin.count_cached_prompt or fit.runner_truncated or not previous:
        return fit.prompt_tokens
    shared = 0
    for before, now in zip(previous, fit.kept, strict=False):
        if before == now:
            shared += 1
            continue
        cached = prompt_tokens(fit.kept[:shared], tools, model.token_scale)
        if before.get("role") == now.get("role"):
            old, new = str(before.get("content") or ""), str(now.get("content") or "")
            same = next(
                (i for i, (a, b) in enumerate(zip(old, new, strict=False)) if a != b),
                min(len(old), len(new)),
            )
            cached += math.ceil(model.token_scale * estimate_tokens(new[:same]))
        return max(1, fit.prompt_tokens - cached)
    return max(1, fit.prompt_tokens - prompt_tokens(fit.kept[:shared], tools, model.token_scale))
