"""Chat replies: the scripted-reply type, the default echo reply and the NDJSON chunks."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from .embeddings import word_count
from .wire import JsonObject, now

__all__ = [
    "DEFAULT_REPLY_PREFIX",
    "ScriptedReply",
    "chat_stream_objects",
    "chat_whole",
    "default_reply",
    "messages_of",
    "normalize_tool_call",
    "prompt_eval_count",
    "split_tokens",
]

DEFAULT_REPLY_PREFIX: Final = "Stand-in reply to: "
_TOKEN_RE: Final = re.compile(r"\S+\s*|\s+")


@dataclass(frozen=True)
class ScriptedReply:
    """A queued assistant reply: streamed one chunk per token."""

    tokens: tuple[str, ...]
    tool_calls: tuple[JsonObject, ...] = ()

    @property
    def content(self) -> str:
        return "".join(self.tokens)


def split_tokens(text: str) -> list[str]:
    """Split text into tokens that keep their trailing whitespace."""
    return _TOKEN_RE.findall(text)


def messages_of(body: JsonObject) -> list[JsonObject]:
    messages = body.get("messages")
    if not isinstance(messages, list):
        return []
    return [m for m in messages if isinstance(m, dict)]


def default_reply(messages: list[JsonObject]) -> ScriptedReply:
    user_texts = [str(m.get("content") or "") for m in messages if m.get("role") == "user"]
    last = user_texts[-1] if user_texts else ""
    return ScriptedReply(tuple(split_tokens(DEFAULT_REPLY_PREFIX + last[:200])))


def prompt_eval_count(messages: list[JsonObject]) -> int:
    return max(1, sum(word_count(str(m.get("content") or "")) for m in messages))


def normalize_tool_call(call: Mapping[str, Any]) -> JsonObject:
    """Accept ``{"function": {...}}`` or the shorthand ``{"name", "arguments"}``."""
    if "function" in call:
        return dict(call)
    return {"function": {"name": call["name"], "arguments": dict(call.get("arguments") or {})}}


def chat_chunk(model: str, content: str, tool_calls: Sequence[JsonObject] = ()) -> JsonObject:
    message: JsonObject = {"role": "assistant", "content": content}
    if tool_calls:
        message["tool_calls"] = list(tool_calls)
    return {"model": model, "created_at": now(), "message": message, "done": False}


def chat_final(model: str, reply: ScriptedReply, prompt_count: int, content: str) -> JsonObject:
    eval_count = len(reply.tokens)
    load, prompt_eval, evaluation = 1_000_000, prompt_count * 100_000, eval_count * 1_000_000
    final = chat_chunk(model, content)
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


def chat_stream_objects(model: str, reply: ScriptedReply, prompt_count: int) -> list[JsonObject]:
    chunks = [chat_chunk(model, token) for token in reply.tokens]
    if reply.tool_calls:
        chunks.append(chat_chunk(model, "", reply.tool_calls))
    chunks.append(chat_final(model, reply, prompt_count, ""))
    return chunks


def chat_whole(model: str, reply: ScriptedReply, prompt_count: int) -> JsonObject:
    final = chat_final(model, reply, prompt_count, reply.content)
    if reply.tool_calls:
        final["message"]["tool_calls"] = list(reply.tool_calls)
    return final
