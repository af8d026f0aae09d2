"""The success classifier's word lists, built from the data of each language (`en`, `de`) and
the names every language shares (`names`): sets for lookups, `Lexicon`s for the cues."""

from __future__ import annotations

from memory.success_classifier.kinds import Kind
from memory.success_classifier.lexicon import Lexicon
from memory.success_classifier.lexicons import de, en, names
from memory.text import cues
from memory.text.words import word_set


def _both(english: str, german: str, *more: str) -> frozenset[str]:
    return word_set(" ".join((english, german, *more)))


STOP = _both(en.STOP, de.STOP, names.REDACTED)
GENERIC = _both(en.GENERIC, de.GENERIC)
ENV: dict[str, str] = {**en.ENV, **de.ENV}
ENV_WORDS = _both(en.ENV_WORDS, de.ENV_WORDS)
ENGINES: dict[str, str] = dict(names.ENGINES)
BUILD_TOOLS = word_set(names.BUILD_TOOLS)
TEST_RUNNERS = word_set(names.TEST_RUNNERS)
DEPLOY_TOOLS = word_set(names.DEPLOY_TOOLS)
AUTH_TOOLS = word_set(names.AUTH_TOOLS)

_KEYWORDS_BY_KIND: tuple[tuple[Kind, frozenset[str]], ...] = (
    ("deploy", _both(en.DEPLOY_KEYWORDS, de.DEPLOY_KEYWORDS)),
    ("build", _both(en.BUILD_KEYWORDS, de.BUILD_KEYWORDS)),
    ("test", _both(en.TEST_KEYWORDS, de.TEST_KEYWORDS, names.TEST_KEYWORDS)),
    ("ssh", word_set(names.SSH_KEYWORDS)),
    ("db", _both(en.DB_KEYWORDS, de.DB_KEYWORDS, names.DB_KEYWORDS)),
    ("auth", _both(en.AUTH_KEYWORDS, de.AUTH_KEYWORDS)),
)
KEYWORD_WORDS: dict[str, Kind] = {word: kind for kind, words in _KEYWORDS_BY_KIND for word in words}
KEYWORD_PREFIXES: tuple[tuple[str, Kind], ...] = tuple(
    {**en.KEYWORD_PREFIXES, **de.KEYWORD_PREFIXES}.items()
)
KEYWORD_PREFIX_HEADS = tuple(prefix for prefix, _ in KEYWORD_PREFIXES)
KEYWORD_PHRASES: dict[str, tuple[tuple[str, Kind], ...]] = en.KEYWORD_PHRASES
LOGIN_WORDS = _both(en.LOGIN_WORDS, de.LOGIN_WORDS)
LOGIN_PREFIXES = tuple(de.LOGIN_PREFIXES.split())
NOT_AFTER_DEPLOY = word_set(en.NOT_AFTER_DEPLOY)
PLACE_NOUNS = _both(en.PLACE_NOUNS, de.PLACE_NOUNS)
AFTER_BAUT = word_set(de.AFTER_BAUT)

FAILURE = Lexicon(
    f"{en.FAILURE} {de.FAILURE}",
    prefixes=f"{en.FAILURE_PREFIXES} {de.FAILURE_PREFIXES}",
    phrases=f"{en.FAILURE_PHRASES}, {de.FAILURE_PHRASES}",
)
NEGATION = Lexicon(
    f"{cues.NEGATIONS_EN} {cues.NEGATIONS_DE} {cues.KEIN_FORMS_DE}", suffixes=en.NEGATION_SUFFIXES
)
HEDGE = Lexicon(
    f"{en.HEDGE} {cues.UNCERTAIN_EN} {de.HEDGE} {cues.UNCERTAIN_DE}",
    prefixes=de.HEDGE_PREFIXES,
    phrases=en.HEDGE_PHRASES,
    unless_next=en.HEDGE_UNLESS_NEXT,
)
ADVICE_OPENERS = _both(en.ADVICE_OPENERS, de.ADVICE_OPENERS)
NOT_QUESTION_SECOND = word_set(en.NOT_QUESTION_SECOND)

EN_NOT_VERBS = word_set(en.NOT_VERBS)
EN_VERB_EXCEPTIONS = word_set(en.VERB_EXCEPTIONS)
DE_NOT_INFINITIVES = word_set(de.NOT_INFINITIVES)
DE_NOT_IMPERATIVES = word_set(de.NOT_IMPERATIVES)
DE_IMPERATIVE_STEMS = word_set(de.IMPERATIVE_STEMS)
STANDING_NOT_VERBS = _both(en.STANDING_NOT_VERBS, de.STANDING_NOT_VERBS)
RULE_DROP = _both(en.RULE_DROP, de.RULE_DROP)
NOT_DEST_BEFORE = word_set(en.NOT_DEST_BEFORE)
STOP_PREPOSITIONS = _both(en.STOP_PREPOSITIONS, de.STOP_PREPOSITIONS)
ABBREVIATIONS = _both(en.ABBREVIATIONS, de.ABBREVIATIONS)
