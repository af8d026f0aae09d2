"""Ollama's model names, matched as Ollama matches them: `llama3.2`, `llama3.2:latest`,
`Llama3.2` and `registry.ollama.ai/library/llama3.2:latest` name one model.

Ollama compares names without regard to case and fills in what a name leaves out: the
registry `registry.ollama.ai`, the namespace `library` and the tag `latest`. A tag is what
follows the last `:` after the last `/`, so the port of a registry host
(`registry.local:5000/team/model`) is not taken for one.
"""

from __future__ import annotations

__all__ = ["normalise_name", "same_model"]

_DEFAULT_TAG = "latest"
_DEFAULT_REGISTRY = "registry.ollama.ai"
_DEFAULT_NAMESPACE = "library"


def normalise_name(name: str) -> str:
    """The key Ollama matches a name by: lower case, with its tag, without the default
    registry and namespace (`Llama3.2` → `llama3.2:latest`, `registry.ollama.ai/library/
    qwen3:8b` → `qwen3:8b`). A name that is already so is returned as it is."""
    key = name.strip().lower()
    if ":" not in key.rsplit("/", 1)[-1]:
        key = f"{key}:{_DEFAULT_TAG}"
    parts = key.split("/")
    if len(parts) == 3 and parts[0] == _DEFAULT_REGISTRY:
        parts = parts[1:]
    if len(parts) == 2 and parts[0] == _DEFAULT_NAMESPACE:
        parts = parts[1:]
    return "/".join(parts)


def same_model(a: str | None, b: str | None) -> bool:
    """Whether two names (None: no model) name the same model."""
    if a is None or b is None:
        return a is b
    return normalise_name(a) == normalise_name(b)
