"""Texts the third recall round embeds (`bench/locomo_round3.py`): a question without its
scaffolding, and the sentence pieces of a turn. Prototypes measured on LoCoMo, not product
code (none of them held in the product's form: docs/recall-quality.md, "Third round")."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Literal

import numpy as np

from bench.locomo_data import Conversation
from memory.text.sentences import split_sentences
from store.text_terms import ENGLISH_STOPWORDS

QueryForm = Literal["question", "stripped", "content"]

_WORD = re.compile(r"[\w'’-]+")
_QUESTION_WORDS = frozenset(
    ["what", "which", "who", "whom", "whose", "when", "where", "why", "how"]
)
_QUANTIFIERS = frozenset(["many", "much", "long", "often", "old", "far"])
_KIND_WORDS = frozenset(["kind", "kinds", "type", "types", "sort", "sorts"])
_AUXILIARIES = frozenset(
    [
        "did",
        "does",
        "do",
        "is",
        "are",
        "was",
        "were",
        "has",
        "have",
        "had",
        "will",
        "would",
        "can",
        "could",
        "should",
        "might",
        "may",
        "am",
    ]
)


def vector_query_text(message: str, form: QueryForm) -> str:
    """The text embedded for the vector ranking. "question": as asked. "stripped": without
    the question word, its quantifier or "kind of", and the auxiliary after it ("When did
    Melanie go to the workshop?" → "Melanie go to the workshop"). "content": the stripped
    form's words that are not stopwords. A message that is not a question stays as it is."""
    if form == "question":
        return message
    if form == "content":
        stripped = vector_query_text(message, "stripped")
        kept = [w for w in _WORD.findall(stripped) if w.lower() not in ENGLISH_STOPWORDS]
        return " ".join(kept) or message
    words = _WORD.findall(message)
    lowered = [w.lower() for w in words]
    start = 0
    if lowered and lowered[0] in _QUESTION_WORDS:
        start = 1
        if start < len(lowered) and lowered[start] in _QUANTIFIERS:
            start += 1
        elif (
            start + 1 < len(lowered)
            and lowered[start] in _KIND_WORDS
            and lowered[start + 1] == "of"
        ):
            start += 2
    if start < len(lowered) and lowered[start] in _AUXILIARIES and (start or "?" in message):
        start += 1
    if start == 0:
        return message
    return " ".join(words[start:]) or message


def _joined(sentences: Sequence[str], shortest: int) -> list[str]:
    """`sentences` with each one shorter than `shortest` characters joined with the next."""
    pieces: list[str] = []
    carry = ""
    for sentence in sentences:
        if not sentence.strip():
            continue
        piece = f"{carry} {sentence}".strip()
        if len(piece) < shortest:
            carry = piece
            continue
        pieces.append(piece)
        carry = ""
    if carry:
        if pieces:
            pieces[-1] = f"{pieces[-1]} {carry}"
        else:
            pieces.append(carry)
    return pieces


def sentence_texts(conversation: Conversation, shortest: int = 0) -> tuple[list[str], list[int]]:
    """ "Speaker: sentence" for every sentence (and image caption) of a turn that has more
    than one — the speaker named in every piece — and the turn index of each; a sentence
    shorter than `shortest` characters is joined with the next."""
    texts: list[str] = []
    owners: list[int] = []
    for index, turn in enumerate(conversation.turns):
        body, _, caption = turn.text.partition(" [image:")
        pieces = _joined(split_sentences(body), shortest)
        if caption:
            pieces.append("[image:" + caption)
        if len(pieces) < 2:
            continue
        for piece in pieces:
            texts.append(f"{turn.speaker}: {piece}")
            owners.append(index)
    return texts, owners


def embedding_pieces(text: str, shortest: int = 40) -> list[str]:
    """What a product rule could embed for a stored text without knowing who speaks: its
    sentences (every line split at `.`, `!`, `?`), short ones joined with the next; `[text]`
    when that leaves one piece."""
    sentences = [s for line in text.splitlines() for s in split_sentences(line.strip())]
    pieces = _joined(sentences, shortest)
    return pieces if len(pieces) > 1 else [text]


def product_pieces(conversation: Conversation, *, named: bool) -> tuple[list[str], list[int]]:
    """`embedding_pieces` of each turn's stored text ("Speaker: text": only the first piece
    names the speaker) or, without `named`, of its text alone; turns with more than one."""
    texts: list[str] = []
    owners: list[int] = []
    for index, turn in enumerate(conversation.turns):
        pieces = embedding_pieces(f"{turn.speaker}: {turn.text}" if named else turn.text)
        if len(pieces) > 1:
            texts += pieces
            owners += [index] * len(pieces)
    return texts, owners


def unit_rows(matrix: object) -> np.ndarray:
    """Rows scaled to unit length (a vector: itself scaled)."""
    m = np.asarray(matrix, np.float32)
    return m / np.maximum(np.linalg.norm(m, axis=-1, keepdims=True), 1e-12)
