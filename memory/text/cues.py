"""Cue words more than one reader of chat text looks for, per language.

Each reader adds its own: the success classifier silences a report on any negation and on
hedges, conditions and plans (`memory.success_classifier.lexicons`); the can't check looks for
German negation after a modal ("ich kann … nicht") and also takes any ``kein…`` form; the
dream refuses a prediction with an uncertainty word, a tautology or a vague quantity
(`memory.dream`). Only the words all of them mean the same way live here.
"""

from __future__ import annotations

# Negations. English n't forms are matched as a suffix by the classifier.
NEGATIONS_EN = "not no nope never cannot nor neither nothing nobody nowhere"
NEGATIONS_DE = "nicht nichts nie niemals"
KEIN_FORMS_DE = "kein keine keinen keinem keiner"

# Uncertainty: the statement may not be so. ("may" is the classifier's too, but the dream
# keeps its own "may" that is no month before a number.)
UNCERTAIN_EN = "might perhaps maybe likely probably"
UNCERTAIN_DE = "vielleicht wahrscheinlich"
