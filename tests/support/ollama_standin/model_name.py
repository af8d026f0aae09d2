"""Whether a model name is one Ollama accepts, as its ``model.ParseName(...).IsValid()``, and
the full name it takes a name for (``full_model_name``: how it matches names).

A name is ``[host/][namespace/]model[:tag]``; missing parts take defaults. Each part is 1 to
80 characters (the host 350), starts with a letter, digit or ``_``, and holds only letters,
digits, ``_``, ``-`` and ``.`` (no ``.`` in a namespace; ``:`` only in a host, for its port).
Ollama answers an invalid name on ``/api/pull`` (and create, show, chat …) with HTTP 400
``{"error": "invalid model name"}`` before anything else (types/model/name.go, server/routes.go).
"""

from __future__ import annotations

from typing import Final, Literal

INVALID_NAME: Final = "invalid model name"

_Part = Literal["host", "namespace", "model", "tag"]
_MAX_LEN: Final[dict[_Part, int]] = {"host": 350, "namespace": 80, "model": 80, "tag": 80}


def _valid_part(kind: _Part, part: str) -> bool:
    if not 1 <= len(part) <= _MAX_LEN[kind]:
        return False
    for index, char in enumerate(part):
        word_char = char.isascii() and (char.isalnum() or char == "_")
        if index == 0:
            if not word_char:
                return False
        elif char == "-" or word_char:
            continue
        elif char == ".":
            if kind == "namespace":
                return False
        elif char == ":":
            if kind != "host":
                return False
        else:
            return False
    return True


def is_valid_name(name: str) -> bool:
    """Whether Ollama would take ``name`` as a model name."""
    rest, tag = name, "latest"
    slash = rest.rfind("/")
    colon = rest.rfind(":")
    if colon > slash:  # (an empty tag takes the default, as an empty part does in Ollama)
        rest, tag = rest[:colon], rest[colon + 1 :] or tag
    parts = rest.split("/")
    if len(parts) > 3:
        return False
    kinds: tuple[_Part, ...] = ("host", "namespace", "model")[3 - len(parts) :]
    return _valid_part("tag", tag) and all(
        _valid_part(kind, part) for kind, part in zip(kinds, parts, strict=True)
    )


def full_model_name(name: str) -> str:
    """Ollama's full name of a model, compared without regard to case (`ParseName` fills the
    default host, namespace and tag; names match by `strings.EqualFold`):
    ``Llama3.2`` -> ``registry.ollama.ai/library/llama3.2:latest``."""
    rest, tag = name, "latest"
    slash, colon = rest.rfind("/"), rest.rfind(":")
    if colon > slash:
        rest, tag = rest[:colon], rest[colon + 1 :] or tag
    parts = rest.split("/")
    defaults = ["registry.ollama.ai", "library"][: max(0, 3 - len(parts))]
    return "/".join([*defaults, *parts]).casefold() + ":" + tag.casefold()
