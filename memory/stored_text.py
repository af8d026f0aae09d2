"""The one form in which a text is stored as a point: no NUL, secrets masked, no white space
at its ends.

A NUL (`\\x00`, from a pasted binary or a hostile client) is no character a reader wants and
cuts strings short in C-based tools; it is dropped before masking, so that a NUL inside a
token cannot hide the token from the detectors. The other control characters are kept
(tabs, form feeds in documents); what the model proposes is checked by `hostile_text`.
"""

from __future__ import annotations

from memory.secret_masking import MaskedText, mask_secrets


def stored_text(text: str) -> MaskedText:
    """`text` as a point stores it: NUL dropped, secrets masked, surrounding space stripped.
    Idempotent; an already masked text without NUL is not scanned again."""
    if "\x00" in text:
        text = text.replace("\x00", "")  # a plain str again: masked anew
    return mask_secrets(text).strip()
