"""Installed models: name normalisation, default capabilities and the details Ollama reports."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

from .wire import JsonObject

__all__ = [
    "CHAT_CAPABILITIES",
    "DEFAULT_MODELS",
    "EMBED_CAPABILITIES",
    "MODIFIED_AT",
    "default_capabilities",
    "model_details",
    "normalize_model_name",
]

MODIFIED_AT: Final = "2026-01-01T00:00:00Z"
DEFAULT_MODELS: Final = ("llama3.2", "nomic-embed-text")
CHAT_CAPABILITIES: Final = ("completion", "tools")
EMBED_CAPABILITIES: Final = ("embedding",)


def normalize_model_name(name: str) -> str:
    """Append ``:latest`` when the model name carries no tag."""
    return name if ":" in name.rsplit("/", 1)[-1] else f"{name}:latest"


def default_capabilities(name: str) -> tuple[str, ...]:
    """Embedding models (name contains "embed") embed; everything else chats."""
    return EMBED_CAPABILITIES if "embed" in name.lower() else CHAT_CAPABILITIES


def model_details(capabilities: Sequence[str]) -> JsonObject:
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
