"""The save filter: decides whether an auto-saved turn becomes a layer-3 point.

Every user message and assistant reply is offered to the store in the background after the
turn; `SaveFilter.skip_reason` returns the name of the first rule that rejects it (empty, too
short, mostly footnotes or code, a near-duplicate of a recent save, an echo of recalled text),
or `None` to save. Pins (`/remember`) never pass through here. Rules run cheapest first. The
rules, their thresholds and the measurements behind them: docs/save_filter.md.
"""

from __future__ import annotations

import re
import threading
from collections import OrderedDict, deque
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from memory.settings_models import SaveFilterConfig
from memory.text.markdown import FENCE_OPEN_RE
from store.daily_log import ROLES

RULE_EMPTY = "empty"
RULE_LENGTH_FLOOR = "length_floor"
RULE_FOOTNOTE_DOMINANT = "footnote_dominant"
RULE_CODE_DOMINANT = "code_dominant"
RULE_DEDUP = "dedup"
RULE_RECALLED_ECHO = "recalled_echo"
RULES: tuple[str, ...] = (
    RULE_EMPTY,
    RULE_LENGTH_FLOOR,
    RULE_FOOTNOTE_DOMINANT,
    RULE_CODE_DOMINANT,
    RULE_DEDUP,
    RULE_RECALLED_ECHO,
)
"""Every rule name, in the order the filter checks them."""

ECHO_NGRAM = 3
"""Words per run in `echo_coverage`: three rides over single shared words and phrases."""

_ASSISTANT = "assistant"
_WORD_RE = re.compile(r"\w+")
_FOOTNOTE_DEF_RE = re.compile(r"^ {0,3}\[\^[^\]\s]+\]:")
_CONTINUATION_RE = re.compile(r"^(?: {4}|\t)")


@dataclass(frozen=True, slots=True)
class BlockLengths:
    """Characters of a text that belong to footnote definitions and to fenced code."""

    footnote: int
    code: int


def block_lengths(text: str) -> BlockLengths:
    """Count the characters (newlines included) in footnote definitions and fenced code.

    A fence is CommonMark's: three or more backticks or tildes, closed by a line of at least
    as many of the same character; an unclosed fence runs to the end. Fence lines count as
    code. A footnote definition is a line ``[^label]: …`` outside code, with its indented
    continuation lines and the blank lines between them.
    """
    footnote = code = pending_blank = 0
    fence: str | None = None
    in_footnote = False
    for line in text.splitlines(keepends=True):
        if fence is not None:
            code += len(line)
            if _closes_fence(line, fence):
                fence = None
            continue
        opening = FENCE_OPEN_RE.match(line)
        if opening:
            fence, in_footnote, pending_blank = opening.group(1), False, 0
            code += len(line)
        elif _FOOTNOTE_DEF_RE.match(line) or (in_footnote and _CONTINUATION_RE.match(line)):
            footnote += pending_blank + len(line)
            in_footnote, pending_blank = True, 0
        elif in_footnote and not line.strip():
            pending_blank += len(line)
        else:
            in_footnote, pending_blank = False, 0
    return BlockLengths(footnote=footnote, code=code)


def _closes_fence(line: str, fence: str) -> bool:
    """Whether ``line`` closes a fence opened with ``fence`` (same char, at least as long)."""
    stripped = line.strip()
    indent = len(line) - len(line.lstrip(" "))
    return indent <= 3 and len(stripped) >= len(fence) and stripped == fence[0] * len(stripped)


def dedup_similarity(a: str, b: str) -> float:
    """Similarity in 0..1 that ``dedup_threshold`` is compared with (``fuzz.ratio / 100``)."""
    from rapidfuzz import fuzz  # imported at first use: 3 MB an empty memory does not need

    return fuzz.ratio(a, b) / 100.0


def echo_coverage(reply: str, recalled_texts: Iterable[str], ngram: int = ECHO_NGRAM) -> float:
    """Share of the reply's words inside a run of ``ngram`` words found in a recalled text.

    Words are ``\\w+`` runs, case-folded. A reply of fewer than ``ngram`` words scores 0.
    """
    words = _words(reply)
    if len(words) < ngram:
        return 0.0
    recalled: set[tuple[str, ...]] = set()
    for text in recalled_texts:
        recalled.update(_ngrams(_words(text), ngram))
    if not recalled:
        return 0.0
    covered = [False] * len(words)
    for start, gram in enumerate(_ngrams(words, ngram)):
        if gram in recalled:
            covered[start : start + ngram] = [True] * ngram
    return sum(covered) / len(words)


def _words(text: str) -> list[str]:
    """The case-folded ``\\w+`` words of a text."""
    return _WORD_RE.findall(text.casefold())


def _ngrams(words: Sequence[str], n: int) -> list[tuple[str, ...]]:
    """Consecutive runs of ``n`` words, in order."""
    return [tuple(words[i : i + n]) for i in range(len(words) - n + 1)]


def _check_role(role: str) -> None:
    """Only user messages and assistant replies are ever auto-saved."""
    if role not in ROLES:
        raise ValueError(f"role must be one of {ROLES}, got {role!r}")


class SaveFilter:
    """The save filter with its memory of recent saves (one per process, shared by turns)."""

    def __init__(self, config: SaveFilterConfig | None = None) -> None:
        """Start with empty ring buffers."""
        self._config = config or SaveFilterConfig()
        self._lock = threading.Lock()
        self._recent: OrderedDict[tuple[str, str], deque[str]] = OrderedDict()

    @property
    def config(self) -> SaveFilterConfig:
        """The thresholds in use."""
        return self._config

    def skip_reason(
        self,
        role: str,
        content: str,
        conversation_id: str,
        recalled_texts: Sequence[str] = (),
    ) -> str | None:
        """Name the first rule that rejects ``content``, or return ``None`` to save it.

        ``recalled_texts`` are the texts injected as recalled context in this turn.
        """
        _check_role(role)
        text = content.strip()
        reason = self._shape_reason(role, text)
        if reason is None and self._is_duplicate(role, text, conversation_id):
            reason = RULE_DEDUP
        if reason is None and role == _ASSISTANT and self._is_echo(text, recalled_texts):
            reason = RULE_RECALLED_ECHO
        return reason

    def record_saved(self, role: str, content: str, conversation_id: str) -> None:
        """Remember a text that was saved, for the dedup rule (skipped texts never enter)."""
        _check_role(role)
        text = content.strip()
        if not text or self._config.dedup_lookback == 0:
            return
        key = (conversation_id, role)
        with self._lock:
            buffer = self._recent.get(key)
            if buffer is None:
                buffer = self._recent[key] = deque(maxlen=self._config.dedup_lookback)
            buffer.append(text)
            self._recent.move_to_end(key)
            while len(self._recent) > self._config.max_conversations:
                self._recent.popitem(last=False)

    def knows(self, role: str, conversation_id: str) -> bool:
        """Whether this process holds the recent saves of this conversation and role (from
        its own saves or a `seed`); dedup off needs none."""
        with self._lock:
            return self._config.dedup_lookback == 0 or (conversation_id, role) in self._recent

    def seed(self, role: str, conversation_id: str, texts: Sequence[str]) -> None:
        """Start the memory of a conversation saved by an earlier process (oldest first);
        a conversation this process already knows is left as it is."""
        _check_role(role)
        with self._lock:
            if self._config.dedup_lookback == 0 or (conversation_id, role) in self._recent:
                return
        for text in texts:
            self.record_saved(role, text, conversation_id)
        with self._lock:  # known from now on, even with no earlier save
            self._recent.setdefault(
                (conversation_id, role), deque(maxlen=self._config.dedup_lookback)
            )

    def forget_saved(self, role: str, content: str, conversation_id: str) -> None:
        """Take a text back out of the dedup memory: its point was forgotten (a superseded
        message), so its replacement is not a duplicate of it."""
        text = content.strip()
        with self._lock:
            buffer = self._recent.get((conversation_id, role))
            if buffer is not None and text in buffer:
                buffer.remove(text)

    def recent_saves(self, role: str, conversation_id: str) -> tuple[str, ...]:
        """The texts dedup compares against for this conversation and role, oldest first."""
        with self._lock:
            return tuple(self._recent.get((conversation_id, role), ()))

    def _shape_reason(self, role: str, text: str) -> str | None:
        """The rules that look at the text alone: emptiness, length, footnotes, code."""
        if not text:
            return RULE_EMPTY
        if len(text) < self._config.min_chars:
            return RULE_LENGTH_FLOOR
        if role != _ASSISTANT:
            return None
        lengths = block_lengths(text)
        if lengths.footnote / len(text) > self._config.footnote_ratio:
            return RULE_FOOTNOTE_DOMINANT
        if lengths.code / len(text) > self._config.code_ratio:
            return RULE_CODE_DOMINANT
        return None

    def _is_duplicate(self, role: str, text: str, conversation_id: str) -> bool:
        """Whether ``text`` is too similar to a recent save of this role and conversation."""
        from rapidfuzz import fuzz  # imported at first use: 3 MB an empty memory does not need

        recent = self.recent_saves(role, conversation_id)  # a snapshot taken under the lock
        cutoff = self._config.dedup_threshold * 100.0
        return any(fuzz.ratio(previous, text, score_cutoff=cutoff) > cutoff for previous in recent)

    def _is_echo(self, text: str, recalled_texts: Sequence[str]) -> bool:
        """Whether the reply mostly repeats the recalled context of this turn."""
        if not recalled_texts:
            return False
        return echo_coverage(text, recalled_texts) > self._config.echo_threshold
