"""Markdown structure in chat text: fenced code blocks, quoted lines, list markers, inline
code, curly apostrophes. Pasted code, logs and quotations are not statements, so the classifier
and the can't check read a message without them; a model's JSON reply may come fenced."""

from __future__ import annotations

import re

# A whole fenced block (``` or ~~~, any indentation), up to its closing fence or, if it is
# never closed, to the end of the text.
FENCED_BLOCK_RE = re.compile(
    r"^[ \t]*(?P<fence>`{3,}|~{3,})[^\n]*\n.*?(?:^[ \t]*(?P=fence)[ \t]*$|\Z)",
    re.MULTILINE | re.DOTALL,
)
# The opening line of a fence as CommonMark has it: at most three spaces before it. The save
# filter reads Markdown line by line with this one.
FENCE_OPEN_RE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
# The same, but tabs count like spaces: the document splitter has always let a tab-indented
# fence hide its headings, and ingested keys depend on it.
FENCE_OPEN_OR_TAB_RE = re.compile(r"^[ \t]{0,3}(`{3,}|~{3,})")
QUOTE_LINE_RE = re.compile(r"^[ \t]*>.*$", re.MULTILINE)
INLINE_CODE_RE = re.compile(r"`([^`\n]+)`")

_JSON_FENCE_RE = re.compile(r"^```[\w-]*[ \t]*\n?|\n?```\s*$")
_APOSTROPHES = str.maketrans(dict.fromkeys("’‘´ʼ", "'"))


def without_fenced_blocks(text: str) -> str:
    """`text` with every fenced code block replaced by a line break."""
    return FENCED_BLOCK_RE.sub("\n", text)


def unwrap_fenced_reply(raw: str) -> str:
    """A model's reply, stripped, with a surrounding ```json … ``` fence taken off."""
    text = raw.strip()
    if text.startswith("```"):
        text = _JSON_FENCE_RE.sub("", text)
    return text


def plain_apostrophes(text: str) -> str:
    """Curly and accent apostrophes (’ ‘ ´ ʼ) as ``'``: "don’t" reads as "don't"."""
    return text.translate(_APOSTROPHES)
