"""The stand-in's tokenizer: a deterministic token estimate that behaves roughly like a real one.

Real Ollama models count tokens with their own BPE vocabulary; the stand-in has none, so it
estimates. The rule, chosen to be simple, stable and close enough for calibration:

* a run of letters costs ``1 + (utf8_bytes - 1) // 5`` tokens, plus 1 when it holds a
  non-ASCII letter (umlauts, accents and other scripts split into more pieces in real vocabularies);
* a group of up to three digits, one or two punctuation characters, a run of newlines, a run of
  two or more spaces or tabs (indentation) and ``_`` cost 1 token each;
* a single space costs nothing (real vocabularies fold it into the next word).

On small samples this gives about 4.0 characters a token for English prose, 3.9-4.1 for German,
2.9 for Python and 2.6 for dense Markdown; llama3's tokenizer gives roughly 4.3, 3.3, 3.2 and 3.0.
So it is *not* exact for any model: tests of Straylight calibrate against ``prompt_eval_count``.

A chat prompt also pays a chat template: `PROMPT_OVERHEAD` tokens (begin-of-text and the
assistant header the reply starts from) plus `MESSAGE_OVERHEAD` per message (role header and
end-of-turn), as llama3's template does; each image costs `IMAGE_TOKENS` (Ollama's own estimate
for a CLIP image in its truncation heuristic); tool definitions cost the estimate of their JSON.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Sequence
from typing import Any, Final

from .wire import JsonObject

__all__ = [
    "IMAGE_TOKENS",
    "MESSAGE_OVERHEAD",
    "PROMPT_OVERHEAD",
    "estimate_tokens",
    "message_tokens",
    "prompt_tokens",
]

PROMPT_OVERHEAD: Final = 5
MESSAGE_OVERHEAD: Final = 4
IMAGE_TOKENS: Final = 768
_LETTERS_PER_TOKEN: Final = 5

_PIECE_RE: Final = re.compile(r"[^\W\d_]+|\d{1,3}|\n+|[ \t]{2,}|[^\w\s]{1,2}|_|\s")


def _piece_tokens(piece: str) -> int:
    if piece == " ":
        return 0
    if piece[0].isalpha():
        extra = 0 if piece.isascii() else 1
        return 1 + (len(piece.encode()) - 1) // _LETTERS_PER_TOKEN + extra
    return 1


def estimate_tokens(text: str) -> int:
    """Estimated tokens of ``text`` on its own (no chat template)."""
    return sum(_piece_tokens(match.group()) for match in _PIECE_RE.finditer(text))


def message_tokens(message: JsonObject, scale: float = 1.0) -> int:
    """Estimated tokens of one chat message, template and images included; ``scale`` is the
    model's vocabulary against the stand-in's rule (`ModelSpec.token_scale`)."""
    images = message.get("images")
    image_count = len(images) if isinstance(images, list) else 0
    return (
        MESSAGE_OVERHEAD
        + math.ceil(scale * estimate_tokens(str(message.get("content") or "")))
        + IMAGE_TOKENS * image_count
    )


def prompt_tokens(messages: Sequence[JsonObject], tools: Any = None, scale: float = 1.0) -> int:
    """Estimated tokens of a whole chat prompt: what ``prompt_eval_count`` reports."""
    tool_tokens = math.ceil(scale * estimate_tokens(json.dumps(tools))) if tools else 0
    return PROMPT_OVERHEAD + tool_tokens + sum(message_tokens(m, scale) for m in messages)
