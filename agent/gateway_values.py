"""What the gateway answers with: a health check's `OllamaStatus`, with the one rule of what
a pulled model can do (`can_chat`, `is_embedding`) that the model catalogue shares too, and
the events of a streamed chat (`ChatDelta`, `ChatThinking`, `ChatToolCalls` with its
`ToolCall`s, then `ChatDone`).

Plain dataclasses: the turn, the TUI and the catalogue use them without the gateway's client.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from memory.model_names import normalise_name


@dataclass(frozen=True, slots=True)
class OllamaStatus:
    """What a health check found."""

    host: str
    reachable: bool
    version: str | None = None
    models: tuple[str, ...] = ()
    error: str | None = None
    error_kind: str | None = None
    """The failure's `GatewayError.kind`: `unreachable` (offline) or how a server failed."""
    capabilities: tuple[tuple[str, ...] | None, ...] = ()
    """Per model (same order as `models`), what /api/show says it can; None: not known."""

    @property
    def state(self) -> str:
        """`online`; `offline` when nothing answered (or not in time); `error` when a server
        answered with a failure (an HTTP 500 from /api/tags is up and broken, not offline)."""
        if self.reachable:
            return "online"
        return "offline" if self.error_kind in (None, "unreachable", "timeout") else "error"

    def has_model(self, name: str) -> bool:
        return normalise_name(name) in {normalise_name(m) for m in self.models}

    def capabilities_of(self, name: str) -> tuple[str, ...] | None:
        """What /api/show said the pulled model `name` can; None: not pulled or not known."""
        wanted = normalise_name(name)
        known = self.capabilities or (None,) * len(self.models)
        for model, caps in zip(self.models, known, strict=True):
            if normalise_name(model) == wanted:
                return caps
        return None

    @property
    def chat_models(self) -> tuple[str, ...]:
        """The pulled models that can chat (capability `completion`), by what Ollama says
        rather than by name; a model whose capabilities are unknown (an old server, none
        listed) stays (`can_chat`)."""
        known = self.capabilities or (None,) * len(self.models)
        return tuple(
            name
            for name, caps in zip(self.models, known, strict=True)
            if can_chat(caps) is not False
        )


def can_chat(capabilities: tuple[str, ...] | None) -> bool | None:
    """The one rule of "can this model chat": whether Ollama lists `completion`; None
    (unknown, so allowed) when it lists nothing — no field (an Ollama from before
    capabilities) or an empty list. Used by the models list and screen
    (`ModelRecord.chat_capable`), the chat's model choice (`OllamaStatus.chat_models`), and
    `/model` and `ask --model` (`cannot_chat`)."""
    return "completion" in capabilities if capabilities else None


def is_embedding(capabilities: tuple[str, ...] | None) -> bool | None:
    """Whether Ollama lists `embedding`; None when it lists nothing (as `can_chat`)."""
    return "embedding" in capabilities if capabilities else None


@dataclass(frozen=True, slots=True)
class ChatDelta:
    """A piece of reply text."""

    text: str


@dataclass(frozen=True, slots=True)
class ChatThinking:
    """A piece of the model's thinking (`message.thinking`, or inline `<think>` content):
    shown while it arrives, never part of the reply."""

    text: str


@dataclass(frozen=True, slots=True)
class ChatDone:
    """The final chunk: the model finished."""

    eval_count: int | None = None
    prompt_eval_count: int | None = None
    total_duration_ns: int | None = None
    eval_duration_ns: int | None = None
    done_reason: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class ToolCall:
    """One function call the model asked for; `arguments` as the model sent them."""

    name: str
    arguments: dict[str, Any]


@dataclass(frozen=True, slots=True)
class ChatToolCalls:
    """The model asked for tool calls (it waits for their results)."""

    calls: tuple[ToolCall, ...]


ChatEvent = ChatDelta | ChatThinking | ChatDone | ChatToolCalls
