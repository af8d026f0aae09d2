"""Chat replies: the scripted-reply type, the default echo reply and the NDJSON chunks of a reply.

One streamed chunk is one generated token, as with Ollama, so ``eval_count`` is the number of
thinking and content chunks. A thinking model streams its thinking first (``message.thinking``
set, ``content`` empty), then the answer; an inline thinker writes ``<think>…</think>`` into
``content`` instead. ``options.num_predict`` caps the tokens (``done_reason`` "length") and
``options.stop`` ends the answer before the first stop string (``done_reason`` "stop").
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from .wire import JsonObject, now

__all__ = [
    "DEFAULT_REPLY_PREFIX",
    "DEFAULT_THINKING_PREFIX",
    "ReplyPlan",
    "ScriptedReply",
    "chat_stream_objects",
    "chat_whole",
    "default_reply",
    "default_thinking",
    "load_response",
    "messages_of",
    "normalize_tool_call",
    "plan_reply",
    "split_tokens",
]

DEFAULT_REPLY_PREFIX: Final = "Stand-in reply to: "
DEFAULT_THINKING_PREFIX: Final = "Stand-in thinking about: "
_TOKEN_RE: Final = re.compile(r"\S+\s*|\s+")


@dataclass(frozen=True)
class ScriptedReply:
    """A queued assistant reply: streamed one chunk per token."""

    tokens: tuple[str, ...]
    tool_calls: tuple[JsonObject, ...] = ()
    thinking_tokens: tuple[str, ...] = ()
    """Thinking streamed before the answer when the model thinks (dropped when it does not)."""

    @property
    def content(self) -> str:
        return "".join(self.tokens)

    @property
    def thinking(self) -> str:
        return "".join(self.thinking_tokens)


@dataclass(frozen=True)
class ReplyPlan:
    """What the model generates for one request, after thinking, num_predict and stop."""

    thinking: tuple[str, ...]
    """Tokens streamed as ``message.thinking``."""
    content: tuple[str, ...]
    """Tokens streamed as ``message.content`` (inline thinking tags included)."""
    tool_calls: tuple[JsonObject, ...]
    done_reason: str

    @property
    def eval_count(self) -> int:
        return len(self.thinking) + len(self.content)


def split_tokens(text: str) -> list[str]:
    """Split text into tokens that keep their trailing whitespace."""
    return _TOKEN_RE.findall(text)


def messages_of(body: JsonObject) -> list[JsonObject]:
    messages = body.get("messages")
    if not isinstance(messages, list):
        return []
    return [m for m in messages if isinstance(m, dict)]


def _last_user_text(messages: Sequence[JsonObject]) -> str:
    user_texts = [str(m.get("content") or "") for m in messages if m.get("role") == "user"]
    return user_texts[-1] if user_texts else ""


def default_reply(messages: Sequence[JsonObject]) -> ScriptedReply:
    """Echo the last user message; a thinking model first 'thinks about' it."""
    last = _last_user_text(messages)
    return ScriptedReply(
        tuple(split_tokens(DEFAULT_REPLY_PREFIX + last[:200])),
        thinking_tokens=default_thinking(messages),
    )


def default_thinking(messages: Sequence[JsonObject]) -> tuple[str, ...]:
    """What a thinking model thinks when its scripted reply brought no thinking."""
    return tuple(split_tokens(DEFAULT_THINKING_PREFIX + _last_user_text(messages)[:80]))


def normalize_tool_call(call: Mapping[str, Any]) -> JsonObject:
    """Accept ``{"function": {...}}`` or the shorthand ``{"name", "arguments"}``."""
    if "function" in call:
        return dict(call)
    return {"function": {"name": call["name"], "arguments": dict(call.get("arguments") or {})}}


def _cut_at_stop(tokens: Sequence[str], stops: Sequence[str]) -> tuple[tuple[str, ...], bool]:
    """Tokens up to (not including) the first stop string; True when one was found."""
    text = "".join(tokens)
    hits = [text.find(stop) for stop in stops if stop and stop in text]
    if not hits:
        return tuple(tokens), False
    limit, length = min(hits), 0
    kept: list[str] = []
    for token in tokens:
        if length + len(token) > limit:
            if token[: limit - length]:
                kept.append(token[: limit - length])
            break
        kept.append(token)
        length += len(token)
    return tuple(kept), True


def plan_reply(
    reply: ScriptedReply,
    *,
    think: bool,
    inline_thinking: bool = False,
    num_predict: int | None = None,
    stop: Sequence[str] = (),
) -> ReplyPlan:
    """Lay ``reply`` out as the model would generate it for this request."""
    thinking = reply.thinking_tokens if think or inline_thinking else ()
    answer, stopped = _cut_at_stop(reply.tokens, stop)
    tool_calls = () if stopped else reply.tool_calls
    if inline_thinking and thinking:
        content = ("<think>", *thinking, "</think>", "\n\n", *answer)
        thinking = ()
    else:
        content = answer
    if num_predict is not None and 0 < num_predict < len(thinking) + len(content):
        thinking, content = thinking[:num_predict], content[: max(0, num_predict - len(thinking))]
        return ReplyPlan(thinking, content, (), "length")
    return ReplyPlan(thinking, content, tool_calls, "stop")


def _chat_chunk(
    model: str, content: str, *, thinking: str = "", tool_calls: Sequence[JsonObject] = ()
) -> JsonObject:
    message: JsonObject = {"role": "assistant", "content": content}
    if thinking:
        message["thinking"] = thinking
    if tool_calls:
        message["tool_calls"] = list(tool_calls)
    return {"model": model, "created_at": now(), "message": message, "done": False}


def _chat_final(model: str, plan: ReplyPlan, prompt_count: int, final: JsonObject) -> JsonObject:
    eval_count = plan.eval_count
    load, prompt_eval, evaluation = 1_000_000, prompt_count * 100_000, eval_count * 1_000_000
    final.update(
        done=True,
        done_reason=plan.done_reason,
        total_duration=load + prompt_eval + evaluation,
        load_duration=load,
        prompt_eval_count=prompt_count,
        prompt_eval_duration=prompt_eval,
        eval_count=eval_count,
        eval_duration=evaluation,
    )
    return final


def chat_stream_objects(model: str, plan: ReplyPlan, prompt_count: int) -> list[JsonObject]:
    """The NDJSON objects of a streamed reply: thinking, content, tool calls, final."""
    chunks = [_chat_chunk(model, "", thinking=token) for token in plan.thinking]
    chunks.extend(_chat_chunk(model, token) for token in plan.content)
    if plan.tool_calls:
        chunks.append(_chat_chunk(model, "", tool_calls=plan.tool_calls))
    chunks.append(_chat_final(model, plan, prompt_count, _chat_chunk(model, "")))
    return chunks


def chat_whole(model: str, plan: ReplyPlan, prompt_count: int) -> JsonObject:
    """The single JSON object of a reply with ``stream: false``."""
    whole = _chat_chunk(
        model,
        "".join(plan.content),
        thinking="".join(plan.thinking),
        tool_calls=plan.tool_calls,
    )
    return _chat_final(model, plan, prompt_count, whole)


def load_response(model: str, done_reason: str) -> JsonObject:
    """Ollama's answer to a chat request without messages: the model was loaded or unloaded."""
    return {
        "model": model,
        "created_at": now(),
        "message": {"role": "assistant", "content": ""},
        "done": True,
        "done_reason": done_reason,
    }
