"""Sentences and turns in, proposals out: cleans a sentence, skips questions, tries a user's
rule first and then a success event; a turn is split into sentences outside code and quotes,
the user's first, at most `MAX_PROPOSALS_PER_TURN` and one per key."""

from __future__ import annotations

from collections.abc import Iterable

from memory.fact_types import FactProposal
from memory.secret_masking import mask_secrets
from memory.success_classifier.events import classify_success
from memory.success_classifier.keywords import find_keywords
from memory.success_classifier.kinds import Speaker
from memory.success_classifier.lexicons import ABBREVIATIONS
from memory.success_classifier.names import BULLET_RE, REDACTED_RE, SPACES_RE
from memory.success_classifier.questions import is_question
from memory.success_classifier.rules import RULE_HINT_RE, classify_rule
from memory.text.markdown import plain_apostrophes, without_fenced_blocks
from memory.text.sentences import split_sentences

MAX_PROPOSALS_PER_TURN = 3
PROOF_CHARS = 300
MAX_SENTENCE_CHARS = 600


def _proof(masked: str) -> str:
    proof = SPACES_RE.sub(" ", masked.strip())
    return proof if len(proof) <= PROOF_CHARS else proof[: PROOF_CHARS - 1].rstrip() + "…"


def _classify_masked(masked: str, speaker: Speaker) -> FactProposal | None:
    """`classify_sentence` on a sentence whose secrets are already masked."""
    masked = masked.strip()
    if not masked or len(masked) > MAX_SENTENCE_CHARS:
        return None
    text = REDACTED_RE.sub("REDACTED", plain_apostrophes(masked))
    text = SPACES_RE.sub(" ", BULLET_RE.sub("", text)).strip()
    maybe_rule = speaker == "user" and RULE_HINT_RE.search(text) is not None
    keywords = find_keywords(text)
    if len(text) < 4 or not (maybe_rule or keywords) or is_question(text):
        return None
    proof = _proof(masked)
    if maybe_rule:
        rule = classify_rule(text, proof)
        if rule is not None:
            return rule
    return classify_success(text, speaker, proof, keywords) if keywords else None


def classify_sentence(sentence: str, *, speaker: Speaker = "user") -> FactProposal | None:
    """The proposal one sentence makes (a success event, or a user's rule), or None."""
    return _classify_masked(mask_secrets(sentence.strip()), speaker)


def _sentences(text: str) -> Iterable[str]:
    """Lines and sentences outside fenced code and quotations, without list bullets."""
    for line in without_fenced_blocks(text).splitlines():
        line = line.strip()
        if not line or line.startswith(">"):
            continue
        line = BULLET_RE.sub("", line)
        pieces = split_sentences(line, ends=".!?…", abbreviations=ABBREVIATIONS)
        yield from (piece for piece in pieces if piece.strip())


def classify_turn(user_text: str, reply_text: str = "") -> list[FactProposal]:
    """Proposals from one finished turn: the user's sentences first, then the reply's; at most
    `MAX_PROPOSALS_PER_TURN`, one per key (the first wins). A reply event of a kind already
    proposed in the turn is dropped: it echoes the user's ("Nice, the deployment went
    through" after "I deployed blyck … it worked" would otherwise add ``deploy:workspace``)."""
    proposals: list[FactProposal] = []
    seen: set[str] = set()
    kinds: set[str] = set()
    sources: tuple[tuple[str, Speaker], ...] = ((user_text, "user"), (reply_text, "assistant"))
    for text, speaker in sources:
        if not text:
            continue
        for sentence in _sentences(mask_secrets(text)):
            proposal = _classify_masked(sentence, speaker)
            if proposal is None or proposal.key in seen:
                continue
            kind = proposal.key.split(":", 1)[0]
            if speaker == "assistant" and kind in kinds:
                continue
            seen.add(proposal.key)
            kinds.add(kind)
            proposals.append(proposal)
            if len(proposals) >= MAX_PROPOSALS_PER_TURN:
                return proposals
    return proposals
