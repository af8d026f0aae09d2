"""The success-event classifier: finished chat turns → fact proposals for the approval gate.

After each turn `classify_turn(user_text, reply_text)` proposes at most three facts: success
events (a deploy, build, test run, SSH login, database connection or authentication that
worked → ``capability`` or ``procedure``) and the user's standing rules (→ ``rule``). No model:
word lists and regular expressions, English and German, deterministic, ~50 µs a sentence.
How a sentence is read, the key scheme and the measured precision and recall:
docs/success_classifier.md.
"""

from memory.success_classifier.classify import (
    MAX_PROPOSALS_PER_TURN,
    PROOF_CHARS,
    classify_sentence,
    classify_turn,
)

__all__ = ["MAX_PROPOSALS_PER_TURN", "PROOF_CHARS", "classify_sentence", "classify_turn"]
