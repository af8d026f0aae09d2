"""Token counts without the model's tokenizer: a script-aware estimate, calibrated per model.

Straylight cannot run the model's BPE vocabulary (Ollama does not expose a tokenize endpoint and
the vocabularies are not shipped), so it estimates and then learns from what Ollama reports.

The estimate prices the text the way a llama-3-style BPE vocabulary tends to (then scales by
`_BASE_SCALE`):

* an ASCII letter run of up to 7 letters is one token, longer ones one more per 4 letters; in
  German text (told by its function words and umlauts) the vocabulary knows fewer whole words,
  so the limit is 4 letters and one more token per 3;
* a run of non-ASCII characters (umlauts, accents, other scripts) costs one token per 3 UTF-8
  bytes; a CJK character one token;
* a group of up to 3 digits, a run of newlines, a run of spaces or tabs (indentation), a run of
  underscores and up to 3 ASCII punctuation characters are one token each; a space is free.

The constants were fitted against llama-3's real tokenizer on text that is *not* the benchmark's
corpus (docs/context_budget.md). A chat prompt also pays the template: `PROMPT_OVERHEAD` plus
`MESSAGE_OVERHEAD` a message (llama-3 uses 5 and 5).

Calibration: after each reply the turn reports what it estimated and Ollama's
`prompt_eval_count`; `TokenEstimator` keeps a per-model factor (an exponential moving average
of the observed ratio, each step clamped, the factor bounded to 0.5-2.0) applied to the
content part of later estimates. Observations that look like a KV-cache hit or a truncation
(a count far below the estimate) are rejected, so they cannot drag the factor down.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, Final

__all__ = [
    "CALIBRATED_MARGIN",
    "COUNTED_FACTOR_MAX",
    "FACTOR_MAX",
    "FACTOR_MIN",
    "MESSAGE_OVERHEAD",
    "PROMPT_OVERHEAD",
    "UNCALIBRATED_MARGIN",
    "ModelCalibration",
    "PromptEstimate",
    "TokenEstimator",
    "estimate_text_tokens",
]

PROMPT_OVERHEAD: Final = 5
"""Begin-of-text and the assistant header the reply starts from."""
MESSAGE_OVERHEAD: Final = 5
"""Role header and end-of-turn around every message."""

FACTOR_MIN: Final = 0.5
FACTOR_MAX: Final = 2.0
"""What the moving average and a noted truncation may raise the factor to."""
COUNTED_FACTOR_MAX: Final = 4.0
"""What Ollama's own count of a prompt (`note_counted`) may raise it to: a vocabulary that
splits the text far finer than llama-3's (or text that tokenizes badly) is real, and a count
is a fact about this prompt, not an average."""
_ALPHA: Final = 0.35
"""Weight of a new observation in the moving average: ~3 replies to follow a change."""
_STEP_MAX: Final = 1.5
"""An accepted observation moves the factor by at most this ratio (one outlier cannot flip it)."""
_ACCEPT_LOW: Final = 0.6
_ACCEPT_HIGH: Final = 1.8
"""Observed/expected ratios outside this band are rejected: a cache hit or a truncation."""
_MIN_CONTENT_TOKENS: Final = 48
"""Below this the template overhead dominates and the ratio says little."""

UNCALIBRATED_MARGIN: Final = 0.15
CALIBRATED_MARGIN: Final = 0.10
"""Room held back for the estimate's error: before 3 observations, and after (docs give the
measured error these cover)."""
_CALIBRATED_AFTER: Final = 3

_BASE_SCALE: Final = 0.85
"""Maps the piece prices onto llama-3's counts for mixed text (fitted, see the docs)."""
_WORD_FREE = 7
_WORD_STEP = 4
_GERMAN_WORD_FREE = 4
_GERMAN_WORD_STEP = 3
_NON_ASCII_BYTES = 3
_GERMAN_SHARE = 0.08

_ASCII_WORD_RE: Final = re.compile(r"[A-Za-z]+")
_NON_ASCII_RUN_RE: Final = re.compile(r"[^\x00-\x7f]+")
_CJK_RE: Final = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff]")
_ONE_TOKEN_RE: Final = re.compile(
    # The lookahead lets the engine skip letters fast (1.7x faster than the bare alternation).
    r"(?=[\d\n \t_!-/:-@\[-^`{-~])(?:\d{1,3}|\n+|[ \t]{2,}|_+|[!-/:-@\[-^`{-~]{1,3})"
)
"""Digit groups, newline runs, indentation, underscores, ASCII punctuation by threes."""
_GERMAN_HINT_RE: Final = re.compile(
    r"\b(?:d(?:er|ie|as|en|em)|und|ist|nicht|eine?|zu|mit|von|sie|es|ich|auf|für|im|sich|"
    r"auch|wird|werden|sind|wir|ihr|noch|wie|bei|oder|aus|nach)\b|[äöüß]"
)
_GERMAN_SAMPLE: Final = 4000
"""German is told from the first characters (lowercased): enough words, bounded cost."""


def _extra_tokens(words: list[str], free: int, step: int) -> int:
    """Tokens beyond the first for words longer than ``free`` letters."""
    return sum(-(-(len(word) - free) // step) for word in words if len(word) > free)


def _non_ascii_units(text: str) -> int:
    """Runs of non-ASCII characters: a CJK character is a token, the rest by UTF-8 bytes."""
    units = 0
    for run in _NON_ASCII_RUN_RE.findall(text):
        cjk = len(_CJK_RE.findall(run)) if len(run) > 1 else 0
        rest = len(run.encode()) - 3 * cjk
        units += cjk + (-(-rest // _NON_ASCII_BYTES) if rest > 0 else 0)
    return units


@lru_cache(maxsize=4096)
def _raw_units(text: str) -> float:
    """Unscaled price of ``text``; cached because history and longterm.md repeat every turn.

    A few C-level regex passes: a Python loop over every piece was ~5x slower."""
    units = len(_ONE_TOKEN_RE.findall(text))
    if not text.isascii():
        units += _non_ascii_units(text)
    ascii_words = _ASCII_WORD_RE.findall(text)
    words = len(ascii_words)
    sample = text[:_GERMAN_SAMPLE]
    german = len(_GERMAN_HINT_RE.findall(sample.lower())) if words else 0
    sample_words = words if len(text) <= _GERMAN_SAMPLE else len(_ASCII_WORD_RE.findall(sample))
    if sample_words and german / sample_words >= _GERMAN_SHARE:
        units += words + _extra_tokens(ascii_words, _GERMAN_WORD_FREE, _GERMAN_WORD_STEP)
    else:
        units += words + _extra_tokens(ascii_words, _WORD_FREE, _WORD_STEP)
    return float(units)


def estimate_text_tokens(text: str) -> float:
    """Uncalibrated tokens of ``text`` on its own (no chat template), as a float."""
    if not text:
        return 0.0
    return _raw_units(text) * _BASE_SCALE


@dataclass(frozen=True, slots=True)
class PromptEstimate:
    """What the turn sent, in the estimator's raw units: content tokens and message count."""

    content: float
    messages: int

    @property
    def overhead(self) -> int:
        return PROMPT_OVERHEAD + MESSAGE_OVERHEAD * self.messages

    def tokens(self, factor: float) -> int:
        """The whole prompt's tokens with ``factor`` applied to the content."""
        return self.overhead + math.ceil(self.content * factor)

    @property
    def uncalibrated(self) -> float:
        """The whole prompt's tokens without a model's factor, not rounded."""
        return self.overhead + self.content

    @classmethod
    def of_messages(cls, messages: Iterable[Mapping[str, Any]]) -> PromptEstimate:
        """Estimate a chat request's ``messages`` (their ``content``)."""
        content = 0.0
        count = 0
        for message in messages:
            content += estimate_text_tokens(str(message.get("content") or ""))
            count += 1
        return cls(content, count)


@dataclass(slots=True)
class ModelCalibration:
    """One model's correction factor and how it was learnt."""

    factor: float = 1.0
    observations: int = 0
    rejected: int = 0
    counted: bool = False
    """The factor was raised by one count (`note_counted`), not averaged: a lower count
    after it may bring it down (`observe`)."""

    def to_json(self) -> dict[str, Any]:
        return {
            "factor": round(self.factor, 4),
            "observations": self.observations,
            "rejected": self.rejected,
            "counted": self.counted,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> ModelCalibration:
        factor = float(data.get("factor", 1.0))
        if not math.isfinite(factor):
            factor = 1.0
        return cls(
            factor=min(COUNTED_FACTOR_MAX, max(FACTOR_MIN, factor)),
            observations=max(0, int(data.get("observations", 0))),
            rejected=max(0, int(data.get("rejected", 0))),
            counted=data.get("counted") is True,
        )


@dataclass(slots=True)
class TokenEstimator:
    """Calibrated token estimates per model; its state round-trips through `to_json`."""

    models: dict[str, ModelCalibration] = field(default_factory=dict)

    def factor(self, model: str) -> float:
        calibration = self.models.get(model)
        return calibration.factor if calibration else 1.0

    def margin(self, model: str) -> float:
        """The share of the budget to hold back for this model's estimation error."""
        calibration = self.models.get(model)
        if calibration is None or calibration.observations < _CALIBRATED_AFTER:
            return UNCALIBRATED_MARGIN
        return CALIBRATED_MARGIN

    def text_tokens(self, model: str, text: str) -> int:
        """Calibrated tokens of ``text`` alone (no template), rounded up."""
        return math.ceil(estimate_text_tokens(text) * self.factor(model))

    def prompt_tokens(self, model: str, estimate: PromptEstimate) -> int:
        return estimate.tokens(self.factor(model))

    def messages_tokens(self, model: str, messages: Sequence[Mapping[str, Any]]) -> int:
        """Calibrated tokens of a whole chat prompt, template included."""
        return self.prompt_tokens(model, PromptEstimate.of_messages(messages))

    def observe(
        self, model: str, sent: PromptEstimate, prompt_eval_count: int | None, cached: int = 0
    ) -> bool:
        """Learn from one reply: ``prompt_eval_count`` (+ ``cached`` tokens, when the server
        reports them) against what was ``sent``. True when the observation was used."""
        calibration = self.models.setdefault(model, ModelCalibration())
        if not prompt_eval_count or prompt_eval_count <= 0 or sent.content < _MIN_CONTENT_TOKENS:
            return False
        actual_content = prompt_eval_count + max(0, cached) - sent.overhead
        expected = sent.content * calibration.factor
        ratio = actual_content / expected
        if calibration.counted and ratio < _ACCEPT_LOW:
            # one count raised it (a paste that tokenized badly, say); what the model reads
            # now is far less: step back down rather than reject every count from now on
            calibration.factor = max(FACTOR_MIN, calibration.factor / _STEP_MAX)
            calibration.rejected += 1  # (still `counted`: until a count agrees with it)
            return False
        if not _ACCEPT_LOW <= ratio <= _ACCEPT_HIGH and calibration.observations > 0:
            calibration.rejected += 1
            return False
        if not 0.4 <= ratio <= 2.5:
            # Even uncalibrated no tokenizer is this far off: a cache hit or a truncation.
            calibration.rejected += 1
            return False
        step = min(_STEP_MAX, max(1 / _STEP_MAX, ratio))
        # First observation: jump to it; later ones: an EMA in log space (ratios are symmetric).
        weight = 1.0 if calibration.observations == 0 else _ALPHA
        new = calibration.factor * math.exp(weight * math.log(step))
        # a factor Ollama's count set above FACTOR_MAX is averaged from where it is
        upper = max(FACTOR_MAX, calibration.factor)
        calibration.factor = min(upper, max(FACTOR_MIN, new))
        calibration.observations += 1
        calibration.counted = False  # an ordinary count agrees with it now
        return True

    def note_truncation(self, model: str) -> None:
        """Ollama cut a prompt the budget said fits: the estimate runs low, so raise the factor
        by a step at once rather than wait for the average (the cut count is useless)."""
        calibration = self.models.setdefault(model, ModelCalibration())
        raised = min(FACTOR_MAX, calibration.factor * 1.15)
        calibration.factor = max(calibration.factor, raised)
        calibration.rejected += 1

    def note_counted(self, model: str, sent: PromptEstimate, counted: int) -> bool:
        """Ollama counted `counted` tokens of a prompt estimated as `sent` (the count of a
        prompt it refused, or of one that filled its window): at least that many, since a cut
        or a cache only ever lowers a count. When that is above the estimate the factor rises
        to match it at once (up to `COUNTED_FACTOR_MAX`); True when it rose."""
        calibration = self.models.setdefault(model, ModelCalibration())
        content = counted - sent.overhead
        if sent.content <= 0 or content <= sent.content * calibration.factor:
            return False
        needed = content / sent.content
        calibration.factor = min(COUNTED_FACTOR_MAX, max(calibration.factor, needed))
        calibration.counted = True
        calibration.rejected += 1
        return True

    def to_json(self) -> dict[str, Any]:
        return {"version": 1, "models": {m: c.to_json() for m, c in sorted(self.models.items())}}

    @classmethod
    def from_json(cls, data: Mapping[str, Any] | None) -> TokenEstimator:
        """Rebuild from `to_json`; anything unreadable starts that model afresh."""
        models: dict[str, ModelCalibration] = {}
        raw = data.get("models") if isinstance(data, Mapping) else None
        if isinstance(raw, Mapping):
            for name, value in raw.items():
                if isinstance(value, Mapping):
                    try:
                        models[str(name)] = ModelCalibration.from_json(value)
                    except (TypeError, ValueError):
                        continue
        return cls(models)
