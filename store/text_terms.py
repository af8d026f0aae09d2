"""Text → index terms for the lexical (BM25) half of hybrid recall.

`terms(text)` turns a stored text (a chat turn, a document chunk) into the terms that go into
`lexical_postings`; `query_terms(text)` turns a search query into groups of alternative terms.
Both run the same pipeline (words and identifier parts, English/German detection, stopwords,
Snowball stems), so a word and its query form meet. It lives in store/ because the lexical
index needs it; memory/ takes these word tools through `memory.text.words`. The pipeline and
the measurements behind the choice of stemmer: docs/lexical_search.md.
"""

from __future__ import annotations

import re
import threading
import unicodedata
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Literal

Language = Literal["en", "de"]
StemFn = Callable[[str], str]

_RAW_TOKEN_RE = re.compile(r"\w+")


def _wordset(text: str) -> frozenset[str]:
    return frozenset(text.split())


ENGLISH_STOPWORDS: frozenset[str] = _wordset(
    """
    a about above after again against all am an and any are aren as at be because been before
    being below between both but by can cannot could couldn did didn do does doesn doing don down
    during each few for from further had hadn has hasn have haven having he her here hers herself
    him himself his how i if in into is isn it its itself just ll me more most my myself no nor
    not now of off on once only or other our ours ourselves out over own re s same she should
    shouldn so some such t than that the their theirs them themselves then there these they this
    those through to too under until up very was wasn we were weren what when where which while
    who whom why will with won would wouldn you your yours yourself yourselves ve d m o y also
    hey hi oh yeah yes ok okay
    """
)

GERMAN_STOPWORDS: frozenset[str] = _wordset(
    """
    aber alle allem allen aller alles als also am an ander andere anderem anderen anderer anderes
    auch auf aus bei beim bin bis bist da damit dann das dass dein deine deinem deinen deiner dem
    den denn der des dessen dich die dies diese diesem diesen dieser dieses dir doch dort du durch
    ein eine einem einen einer eines er es etwas euch euer eure für gegen gewesen hab habe haben
    hat hatte hatten hier hin hinter ich ihm ihn ihnen ihr ihre ihrem ihren ihrer im in indem ins
    ist ja jede jedem jeden jeder jedes jetzt kann kein keine keinem keinen keiner man manche mein
    meine meinem meinen meiner mich mir mit muss nach nicht nichts noch nun nur ob oder ohne sehr
    sein seine seinem seinen seiner sich sie sind so solche soll sollte sondern sonst über um und
    uns unser unsere unter vom von vor war waren warst was weil wenn wer werde werden wie wieder
    will wir wird wirst wo wollen wollte würde würden zu zum zur zwar zwischen
    """
)

# Words that tell the language apart: frequent function words that are not also words of the
# other language (so no `die`, `war`, `will`, `also`, `so`, `was`, `in`, `an`, `am`, `man`).
_GERMAN_MARKERS: frozenset[str] = _wordset(
    """
    aber auch auf aus bei beim bist dass dein deine dem der des dich dies diese diesem diesen
    dieser dieses dir doch durch ein eine einem einen einer eines es etwas euch für gibt habe
    haben hatte hier ich ihm ihn ihnen ihr ihre ist jetzt kann kein keine mein meine mich mir
    mit muss nach nicht nichts noch nur oder ohne sehr sein sich sie sind und uns unser von vor
    weil wenn werden wie wieder wir wird wurde zu zum zur über schon einen zwei drei immer alle
    bzw jede jeder jedes zwischen sondern wurden ob unter gegen bis
    """
)
_ENGLISH_MARKERS: frozenset[str] = _wordset(
    """
    the and is are were of to that this with for you your it its have has not what which would
    could should be been my me we they them their there these those from at by or but if how
    when where who why did does do i just about because than then very can
    """
)

STOPWORDS: dict[Language, frozenset[str]] = {"en": ENGLISH_STOPWORDS, "de": GERMAN_STOPWORDS}


_GERMAN_LETTERS = frozenset("äöüß")


def detect_language(tokens: Iterable[str]) -> Language:
    """German if more German than English evidence among lowercased tokens, else English.

    Evidence: marker words (see above); a word with ä, ö, ü or ß counts for German too.
    """
    german = english = 0
    for token in tokens:
        if token in _GERMAN_MARKERS or not _GERMAN_LETTERS.isdisjoint(token):
            german += 1
        elif token in _ENGLISH_MARKERS:
            english += 1
    return "de" if german > english else "en"


def raw_tokens(text: str) -> list[str]:
    """Unicode word tokens of `text` (letters, digits, underscore), original case."""
    return _RAW_TOKEN_RE.findall(unicodedata.normalize("NFC", text))


def _char_kind(char: str) -> int:
    """0 lowercase / uncased letter, 1 uppercase letter, 2 digit."""
    if char.isdigit():
        return 2
    if char.isupper():
        return 1
    return 0


def identifier_parts(token: str) -> list[str]:
    """The camelCase / snake_case / letter–digit parts of a raw token, original case.

    Returns `[token]` when there is nothing to split. `HTTPError` → `HTTP`, `Error`;
    `readTimeout2` → `read`, `Timeout`, `2`; `read_timeout` → `read`, `timeout`.
    """
    if token.isalpha() and (token[1:].islower() or token.isupper()):
        return [token]  # the fast path: `word`, `Word`, `WORD`
    parts: list[str] = []
    for piece in token.split("_"):
        if not piece:
            continue
        start = 0
        for i in range(1, len(piece)):
            prev, cur = _char_kind(piece[i - 1]), _char_kind(piece[i])
            boundary = (
                (prev == 0 and cur == 1)  # readTimeout
                or (prev == 2) != (cur == 2)  # llama3, 3d
                or (
                    prev == 1 and cur == 1 and i + 1 < len(piece) and _char_kind(piece[i + 1]) == 0
                )  # HTTPError: the boundary is before the last capital of a run
            )
            if boundary:
                parts.append(piece[start:i])
                start = i
        parts.append(piece[start:])
    return parts


class _PerThreadStemmer:
    """A PyStemmer algorithm, one instance per thread: its objects keep internal state and
    must not be called concurrently (PyStemmer's documentation)."""

    def __init__(self, algorithm: str) -> None:
        self._algorithm = algorithm
        self._local = threading.local()

    def __call__(self, word: str) -> str:
        try:
            stem: StemFn = self._local.stem
        except AttributeError:
            import Stemmer  # PyStemmer; imported on first use, off the TUI's start path

            stem = self._local.stem = Stemmer.Stemmer(self._algorithm).stemWord
        return stem(word)


@lru_cache(maxsize=8)
def snowball(language: Language) -> StemFn:
    """The Snowball stemmer of a language (`english` = Porter2, `german`), from PyStemmer."""
    return _PerThreadStemmer("english" if language == "en" else "german")


def _identity(word: str) -> str:
    return word


@dataclass(frozen=True)
class Analyzer:
    """A text → terms pipeline; `DEFAULT` is the one the index uses.

    `stemmers` maps a language to its stem function (missing → no stemming for it);
    `detect` off means every text is English; `query_alternatives` stems each query word with
    every configured stemmer (docs/lexical_search.md). `name` is recorded with the index so
    that a change of analyzer can be detected and repaired by a reindex.
    """

    name: str
    stemmers: dict[Language, StemFn] = field(default_factory=dict)
    detect: bool = True
    query_alternatives: bool = True
    split_identifiers: bool = True

    def words(self, text: str) -> tuple[Language, list[str]]:
        """The lowercased words of `text` (whole tokens + identifier parts) and its language."""
        raws = raw_tokens(text)
        lowered = [raw.lower() for raw in raws]
        language = detect_language(lowered) if self.detect else "en"
        if not self.split_identifiers:
            return language, lowered
        words: list[str] = []
        for raw, low in zip(raws, lowered, strict=True):
            words.append(low)
            parts = identifier_parts(raw)
            if parts != [raw]:  # `__init__` gives `__init__` and `init`; `_` gives nothing more
                words.extend(part.lower() for part in parts)
        return language, words

    def _keep(self, word: str, stopwords: frozenset[str]) -> bool:
        core = word.strip("_")
        return (len(core) > 1 or core.isdigit()) and word not in stopwords

    def terms(self, text: str) -> list[str]:
        """The index terms of a stored text, in order, with repeats (their count is the tf)."""
        language, words = self.words(text)
        stopwords = STOPWORDS[language]
        stem = self.stemmers.get(language, _identity)
        return [stem(word) for word in words if self._keep(word, stopwords)]

    def query_terms(self, text: str) -> list[tuple[str, ...]]:
        """Unique groups of alternative terms for a query; a group is one query word."""
        language, words = self.words(text)
        stopwords = STOPWORDS[language]
        if self.query_alternatives:
            stems = [self.stemmers.get(language, _identity)]
            stems += [stem for lang, stem in self.stemmers.items() if lang != language]
        else:
            stems = [self.stemmers.get(language, _identity)]
        groups: list[tuple[str, ...]] = []
        seen: set[tuple[str, ...]] = set()
        for word in words:
            if not self._keep(word, stopwords):
                continue
            group = tuple(dict.fromkeys(stem(word) for stem in stems))
            if group not in seen:
                seen.add(group)
                groups.append(group)
        return groups


# Recorded in `meta` with the index: change it whenever the default analyzer's output changes.
DEFAULT_ANALYZER_NAME = "v1:words+parts;en|de-detect;stopwords;snowball"


@lru_cache(maxsize=1)
def default_analyzer() -> Analyzer:
    """The analyzer of the index: words + identifier parts, en/de detection, Snowball stems.

    Built on first use, so importing this module does not import PyStemmer.
    """
    return Analyzer(
        name=DEFAULT_ANALYZER_NAME,
        stemmers={"en": snowball("en"), "de": snowball("de")},
    )


def terms(text: str) -> list[str]:
    """The index terms of `text` with the default analyzer (docs/lexical_search.md)."""
    return default_analyzer().terms(text)


def query_terms(text: str) -> list[tuple[str, ...]]:
    """The query term groups of `text` with the default analyzer (docs/lexical_search.md)."""
    return default_analyzer().query_terms(text)
