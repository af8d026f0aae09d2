"""Ollama's model names: `llama3.2` and `llama3.2:latest` name one model.

A tag is what follows the last `:` after the last `/`, so the port of a registry host
(`registry.local:5000/team/model`) is not taken for one.
"""

from __future__ import annotations

__all__ = ["normalise_name", "same_model"]

_DEFAULT_TAG = "latest"


def normalise_name(name: str) -> str:
    """The name with its tag: `llama3.2` → `llama3.2:latest`."""
    return name if ":" in name.rsplit("/", 1)[-1] else f"{name}:{_DEFAULT_TAG}"


def same_model(a: str | None, b: str | None) -> bool:
    """Whether two names (None: no model) name the same model."""
    if a is None or b is None:
        return a is b
    return normalise_name(a) == normalise_name(b)
