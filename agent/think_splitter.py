"""Inline thinking: `<think>…</think>` at the start of a reply's content, split off as it streams.

Models without Ollama's thinking parser write their reasoning into `content`, wrapped in
`<think>` tags, before the answer. `ThinkSplitter` takes the content chunks as they arrive
and gives back ("thinking", text) and ("answer", text) pieces; a tag split across chunks is
held back until it is whole. Only a reply that *starts* with `<think>` (after whitespace) is
split: a tag later in an answer (a code sample, a quote) is answer text.
"""

from __future__ import annotations

from typing import Literal

OPEN_TAG = "<think>"
CLOSE_TAG = "</think>"

Piece = tuple[Literal["thinking", "answer"], str]


class ThinkSplitter:
    """A small state machine over one reply's content: start → thinking → gap → answer."""

    def __init__(self) -> None:
        self._state: Literal["start", "thinking", "gap", "answer"] = "start"
        self._held = ""  # text that may be the beginning of a tag

    def feed(self, chunk: str) -> list[Piece]:
        """The pieces `chunk` completes (possibly none: a tag may still be arriving)."""
        pieces: list[Piece] = []
        text = self._held + chunk
        self._held = ""
        while text:
            if self._state == "answer":
                pieces.append(("answer", text))
                break
            if self._state == "start":
                stripped = text.lstrip()
                if stripped.startswith(OPEN_TAG):
                    self._state = "thinking"
                    text = stripped[len(OPEN_TAG) :]
                    continue
                if OPEN_TAG.startswith(stripped):  # whitespace, or a tag still arriving
                    self._held = text
                    break
                self._state = "answer"
                continue
            if self._state == "gap":  # the whitespace between </think> and the answer
                text = text.lstrip()
                if text:
                    self._state = "answer"
                continue
            end = text.find(CLOSE_TAG)
            if end >= 0:
                if text[:end]:
                    pieces.append(("thinking", text[:end]))
                self._state = "gap"
                text = text[end + len(CLOSE_TAG) :]
                continue
            keep = _partial_tag_length(text, CLOSE_TAG)
            if text[: len(text) - keep]:
                pieces.append(("thinking", text[: len(text) - keep]))
            self._held = text[len(text) - keep :]
            break
        return pieces

    def flush(self) -> list[Piece]:
        """What is still held at the end of the reply: an unfinished tag is text after all."""
        held, self._held = self._held, ""
        if not held:
            return []
        if self._state == "thinking":
            return [("thinking", held)]
        if self._state == "start":
            return [("answer", held)]
        return []


def _partial_tag_length(text: str, tag: str) -> int:
    """How many characters at the end of `text` could begin `tag`."""
    for length in range(min(len(tag) - 1, len(text)), 0, -1):
        if tag.startswith(text[-length:]):
            return length
    return 0
