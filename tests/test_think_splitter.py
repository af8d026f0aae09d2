"""Inline `<think>…</think>`: split off the start of streamed content, whatever the chunking."""

from __future__ import annotations

import itertools

import pytest

from agent.ollama_gateway import answer_text
from agent.think_splitter import ThinkSplitter

REPLY = "  <think>Count the r: s-t-r-a-w-b-e-r-r-y.</think>\n\nThree r."


def split(chunks: list[str]) -> tuple[str, str]:
    splitter = ThinkSplitter()
    pieces = [piece for chunk in chunks for piece in splitter.feed(chunk)] + splitter.flush()
    assert all(text for _, text in pieces)  # no empty pieces
    thinking = "".join(text for kind, text in pieces if kind == "thinking")
    return thinking, "".join(text for kind, text in pieces if kind == "answer")


def chunkings(text: str) -> list[list[str]]:
    """Every way to cut `text` in three (two cut points), tags cut anywhere."""
    cuts = itertools.combinations(range(1, len(text)), 2)
    return [[text[:a], text[a:b], text[b:]] for a, b in cuts]


def test_thinking_and_answer_are_the_same_however_the_chunks_fall() -> None:
    for chunks in chunkings(REPLY):
        assert split(chunks) == ("Count the r: s-t-r-a-w-b-e-r-r-y.", "Three r."), chunks


def test_one_character_at_a_time() -> None:
    assert split(list(REPLY)) == ("Count the r: s-t-r-a-w-b-e-r-r-y.", "Three r.")


@pytest.mark.parametrize(
    "text",
    [
        "Plain answer, no thinking.",
        "\n\n  leading whitespace is kept",
        "<div>html first</div>",
        "<",
        "<thin",  # a reply that only looked like a tag
        "",
        "Use <think>tags</think> like this.",  # a tag inside an answer is answer text
    ],
)
def test_a_reply_without_a_leading_think_tag_is_unchanged(text: str) -> None:
    for chunks in [[text], list(text), *chunkings(text)[:50]]:
        assert split(chunks) == ("", text), chunks


def test_an_unclosed_think_is_all_thinking() -> None:
    assert split(["<think>still going </thi"]) == ("still going </thi", "")


def test_a_whole_reply_loses_its_think_block() -> None:
    assert answer_text('<think>json next</think>\n{"a": 1}') == '{"a": 1}'
    assert answer_text('{"a": 1}') == '{"a": 1}'
