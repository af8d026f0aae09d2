"""Is a reflection's proof in the session? The proof (a quote the model gives for a fact) is
normalised like the transcript (case, markup, quotes, whitespace; secrets masked), split at
ellipses, and each fragment looked for with rapidfuzz's partial ratio; the worst fragment is
the score (0-100). Measurements: docs/reflection.md."""

from __future__ import annotations

import re
import unicodedata

from memory.hostile_text import INVISIBLE
from memory.secret_masking import mask_secrets

PROOF_MATCH_MIN = 80.0
PROOF_MIN_CHARS = 12
_FLAGS = re.IGNORECASE | re.UNICODE


def clean_proof(text: str) -> str:
    """The proof with control and invisible characters turned into spaces (CRLF → LF)."""
    text = text.replace("\r\n", "\n")
    return "".join(
        " "
        if (char not in "\n\t" and (char in INVISIBLE or unicodedata.category(char) == "Cc"))
        else char
        for char in text
    ).strip()


_PROOF_ROLE_LABEL = re.compile(
    r"^(?:the\s+)?(?:user|assistant|model|ai|human|benutzer|nutzer)"
    r"(?:\s+(?:said|says|wrote|writes|confirmed|replied|schrieb|sagte))?\s*:\s*",
    _FLAGS,
)
_QUOTES = "\"'“”„‘’«»‹›"
_ELLIPSIS = re.compile(r"\.\.\.+|…")
_WHITESPACE = re.compile(r"\s+")
_MARKUP_OFF = str.maketrans(dict[str, str | None]({"`": None, "*": None, "’": "'", "‘": "'"}))
_DOUBLE_QUOTES = str.maketrans(dict.fromkeys("“”„", '"'))


def _normalise_for_match(text: str) -> str:
    """Case-folded, markup-free, single-spaced text for the proof check."""
    text = unicodedata.normalize("NFC", text).casefold()
    text = text.translate(_MARKUP_OFF).translate(_DOUBLE_QUOTES)
    return _WHITESPACE.sub(" ", text).strip()


def _proof_fragments(proof: str) -> list[str]:
    """The parts of a normalised proof to look for: role label and quotes off, split at
    ellipses; fragments shorter than `PROOF_MIN_CHARS` are skipped unless all are."""
    text = _PROOF_ROLE_LABEL.sub("", proof).strip(_QUOTES + " ")
    pieces = [piece.strip(_QUOTES + " ,;:") for piece in _ELLIPSIS.split(text)]
    pieces = [piece for piece in pieces if piece]
    long_enough = [piece for piece in pieces if len(piece) >= PROOF_MIN_CHARS]
    return long_enough or [" ".join(pieces)]


def transcript_haystack(transcript_text: str) -> str:
    return _normalise_for_match(mask_secrets(transcript_text))


def proof_score(proof: str, transcript_text: str) -> float:
    """How well the proof is found in the transcript, 0-100: the worst of its fragments."""
    return proof_match(proof, transcript_haystack(transcript_text))


def proof_match(proof: str, haystack: str) -> float:
    """`proof_score` against a haystack made once (`transcript_haystack`) for many proofs."""
    from rapidfuzz import fuzz  # imported at first use: 3 MB an empty memory does not need

    fragments = _proof_fragments(_normalise_for_match(mask_secrets(proof)))
    scores: list[float] = []
    for fragment in fragments:
        if len(fragment) < PROOF_MIN_CHARS:
            return 0.0
        if len(fragment) > len(haystack):
            scores.append(fuzz.ratio(fragment, haystack))
        else:
            scores.append(fuzz.partial_ratio(fragment, haystack))
    return min(scores) if scores else 0.0
