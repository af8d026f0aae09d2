"""LoCoMo-format data: loader, retrieval metrics and the README's naive reference.

Independent of the product: this module reads a LoCoMo-format file (see
``shared/data/locomo/README.md``), gives each turn its session date, keeps the
questions of categories 1-4 whose evidence names at least one existing turn, and
scores rankings of turn ids (``dia_id``) against that evidence.

`reference_baseline` re-runs the README's naive retrieval (one turn per document
``"(date) Speaker: text"``, per conversation; all-MiniLM-L6-v2 cosine, Okapi BM25
with stopwords, and both fused by RRF) to prove the scorer before the product is
measured::

    python -m bench.locomo_data FILE [--json] [--no-vectors]

MiniLM needs the optional ``bench`` extra; ``--no-vectors`` prints BM25 alone.
"""

from __future__ import annotations

import argparse
import json
import math
import re
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Final

from bench.minilm_embedder import MiniLMUnavailableError, load_minilm

__all__ = [
    "CATEGORIES",
    "DEFAULT_KS",
    "STOPWORDS",
    "BM25Index",
    "Conversation",
    "Metrics",
    "Question",
    "QuestionScore",
    "Report",
    "Turn",
    "aggregate",
    "bm25_tokens",
    "document_text",
    "evaluate",
    "format_table",
    "load_locomo",
    "main",
    "mrr",
    "parse_session_datetime",
    "recall_at_k",
    "reference_baseline",
    "rrf_fuse",
    "score_question",
]

CATEGORIES: Final[Mapping[int, str]] = {
    1: "multi-hop",
    2: "temporal",
    3: "open-domain",
    4: "single-hop",
}
"""Question categories kept (5, adversarial, has no answer and is dropped)."""
DEFAULT_KS: Final = (5, 10)
RRF_K: Final = 60
BM25_K1: Final = 1.2
BM25_B: Final = 0.75

Embedder = Callable[[list[str]], list[list[float]]]
Ranker = Callable[["Conversation", "Question"], Sequence[str]]

# ------------------------------------------------------------------------ data


@dataclass(frozen=True, slots=True)
class Turn:
    """One dialogue turn with the date of its session."""

    dia_id: str
    """Turn id, e.g. ``"D3:12"`` (session 3, turn 12): what evidence names."""
    session: int
    speaker: str
    text: str
    """The turn's text, with ``" [image: caption]"`` appended when it shared a picture."""
    date: datetime
    """Session start, an aware UTC datetime (the file gives no zone)."""
    date_text: str
    """The session date as written in the file, e.g. ``"1:56 pm on 8 May, 2023"``."""


@dataclass(frozen=True, slots=True)
class Question:
    question: str
    answer: str
    evidence: tuple[str, ...]
    """Evidence turn ids that exist in the conversation (at least one)."""
    category: int
    """1 multi-hop, 2 temporal, 3 open-domain, 4 single-hop."""


@dataclass(frozen=True, slots=True)
class Conversation:
    sample_id: str
    speaker_a: str
    speaker_b: str
    turns: tuple[Turn, ...]
    """Every turn, in session then turn order."""
    questions: tuple[Question, ...]
    """Questions of categories 1-4 with at least one valid evidence id."""


_MONTHS: Final = {
    name: number
    for number, names in enumerate(
        (
            ("january", "jan"),
            ("february", "feb"),
            ("march", "mar"),
            ("april", "apr"),
            ("may",),
            ("june", "jun"),
            ("july", "jul"),
            ("august", "aug"),
            ("september", "sep", "sept"),
            ("october", "oct"),
            ("november", "nov"),
            ("december", "dec"),
        ),
        start=1,
    )
    for name in names
}
_DATE_RE: Final = re.compile(
    r"^\s*(?P<hour>\d{1,2}):(?P<minute>\d{2})\s*(?P<half>[ap])\.?\s*m\.?\s+on\s+"
    r"(?P<day>\d{1,2})\s+(?P<month>[a-z]+)\.?,?\s+(?P<year>\d{4})\s*$",
    re.IGNORECASE,
)
_SESSION_RE: Final = re.compile(r"^session_(\d+)$")


def parse_session_datetime(text: str) -> datetime:
    """``"1:56 pm on 8 May, 2023"`` -> ``datetime(2023, 5, 8, 13, 56, tzinfo=UTC)``.

    Locale-independent; 12 am is midnight, 12 pm noon. Raises ValueError otherwise.
    """
    match = _DATE_RE.match(text)
    month = _MONTHS.get(match["month"].lower()) if match else None
    if match is None or month is None:
        raise ValueError(f"not a LoCoMo session date: {text!r}")
    hour = int(match["hour"])
    if not 1 <= hour <= 12:
        raise ValueError(f"hour out of range in session date: {text!r}")
    hour = hour % 12 + (12 if match["half"].lower() == "p" else 0)
    try:
        return datetime(
            int(match["year"]), month, int(match["day"]), hour, int(match["minute"]), tzinfo=UTC
        )
    except ValueError as exc:
        raise ValueError(f"invalid session date {text!r}: {exc}") from None


def _turn_text(raw: Mapping[str, Any]) -> str:
    text = str(raw.get("text") or "").strip()
    caption = str(raw.get("blip_caption") or "").strip()
    if caption:
        text = f"{text} [image: {caption}]" if text else f"[image: {caption}]"
    return text


def _conversation(raw: Mapping[str, Any]) -> Conversation:
    sample_id = str(raw.get("sample_id") or "")
    body = raw["conversation"]
    sessions = sorted(
        (int(match[1]), key)
        for key, value in body.items()
        if (match := _SESSION_RE.match(key)) and isinstance(value, list)
    )
    turns: list[Turn] = []
    for number, key in sessions:
        if not body[key]:
            continue
        date_text = str(body.get(f"{key}_date_time") or "")
        try:
            date = parse_session_datetime(date_text)
        except ValueError as exc:
            raise ValueError(f"{sample_id} {key}: {exc}") from None
        turns.extend(
            Turn(
                dia_id=str(item["dia_id"]),
                session=number,
                speaker=str(item.get("speaker") or ""),
                text=_turn_text(item),
                date=date,
                date_text=date_text,
            )
            for item in body[key]
        )
    ids = {turn.dia_id for turn in turns}
    questions: list[Question] = []
    for item in raw.get("qa", []):
        category = item.get("category")
        if category not in CATEGORIES:
            continue
        evidence = tuple(
            dict.fromkeys(e for e in (str(x) for x in item.get("evidence") or ()) if e in ids)
        )
        if not evidence:
            continue
        answer = item.get("answer")
        questions.append(
            Question(
                question=str(item["question"]),
                answer="" if answer is None else str(answer),
                evidence=evidence,
                category=int(category),
            )
        )
    return Conversation(
        sample_id=sample_id,
        speaker_a=str(body.get("speaker_a") or ""),
        speaker_b=str(body.get("speaker_b") or ""),
        turns=tuple(turns),
        questions=tuple(questions),
    )


def load_locomo(path: str | Path) -> list[Conversation]:
    """Read a LoCoMo-format JSON file (a list of conversations)."""
    data = json.loads(Path(path).read_text(encoding="utf-8"))
    if not isinstance(data, list):
        raise ValueError(f"{path}: expected a JSON list of conversations")
    return [_conversation(item) for item in data]


def document_text(turn: Turn) -> str:
    """The README's reference document: ``"(1:56 pm on 8 May, 2023) Caroline: text"``."""
    return f"({turn.date_text}) {turn.speaker}: {turn.text}"


# --------------------------------------------------------------------- metrics


def _evidence_set(evidence_ids: Iterable[str]) -> set[str]:
    evidence = set(evidence_ids)
    if not evidence:
        raise ValueError("evidence must name at least one id")
    return evidence


def recall_at_k(ranked_ids: Sequence[str], evidence_ids: Iterable[str], k: int) -> float:
    """Share of the (distinct) evidence ids found among the first ``k`` ranked ids."""
    if k < 1:
        raise ValueError(f"k must be >= 1, got {k}")
    evidence = _evidence_set(evidence_ids)
    return len(evidence.intersection(ranked_ids[:k])) / len(evidence)


def mrr(ranked_ids: Sequence[str], evidence_ids: Iterable[str]) -> float:
    """Reciprocal rank of the first evidence id in ``ranked_ids`` (1-based); 0 if absent.

    Averaged over questions (`aggregate`) this is the mean reciprocal rank.
    """
    evidence = _evidence_set(evidence_ids)
    for rank, item in enumerate(ranked_ids, start=1):
        if item in evidence:
            return 1.0 / rank
    return 0.0


@dataclass(frozen=True, slots=True)
class QuestionScore:
    """Scores of one ranking for one question."""

    category: int
    recall: Mapping[int, float]
    """k -> recall@k."""
    reciprocal_rank: float


def score_question(
    ranked_ids: Sequence[str], question: Question, ks: Sequence[int] = DEFAULT_KS
) -> QuestionScore:
    """recall@k for every k in ``ks`` and the reciprocal rank of one ranking."""
    ranked = list(ranked_ids)
    return QuestionScore(
        category=question.category,
        recall={k: recall_at_k(ranked, question.evidence, k) for k in ks},
        reciprocal_rank=mrr(ranked, question.evidence),
    )


@dataclass(frozen=True, slots=True)
class Metrics:
    """Means over ``n`` questions."""

    n: int
    recall: dict[int, float]
    """k -> mean recall@k."""
    mrr: float


@dataclass(frozen=True, slots=True)
class Report:
    """Metrics per category (only categories with questions) and over all questions."""

    overall: Metrics
    by_category: dict[int, Metrics] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        """JSON-ready: ``{"overall": {...}, "by_category": {"1": {...}, ...}}``."""
        return {
            "overall": _metrics_json(self.overall),
            "by_category": {str(c): _metrics_json(m) for c, m in self.by_category.items()},
        }


def _metrics_json(metrics: Metrics) -> dict[str, Any]:
    data = asdict(metrics)
    data["recall"] = {str(k): v for k, v in metrics.recall.items()}
    return data


def _mean_metrics(scores: Sequence[QuestionScore], ks: Sequence[int]) -> Metrics:
    n = len(scores)
    if n == 0:
        return Metrics(n=0, recall={k: 0.0 for k in ks}, mrr=0.0)
    return Metrics(
        n=n,
        recall={k: math.fsum(s.recall[k] for s in scores) / n for k in ks},
        mrr=math.fsum(s.reciprocal_rank for s in scores) / n,
    )


def aggregate(scores: Iterable[QuestionScore]) -> Report:
    """Mean recall@k and MRR per category and overall (each question weighs the same)."""
    items = list(scores)
    ks = sorted({k for s in items for k in s.recall}) or list(DEFAULT_KS)
    categories = sorted({s.category for s in items})
    return Report(
        overall=_mean_metrics(items, ks),
        by_category={
            c: _mean_metrics([s for s in items if s.category == c], ks) for c in categories
        },
    )


def evaluate(
    conversations: Iterable[Conversation], rank: Ranker, ks: Sequence[int] = DEFAULT_KS
) -> Report:
    """Score ``rank(conversation, question) -> ranked dia_ids`` on every question."""
    return aggregate(
        score_question(rank(conversation, question), question, ks)
        for conversation in conversations
        for question in conversation.questions
    )


def format_table(reports: Mapping[str, Report], ks: Sequence[int] = DEFAULT_KS) -> str:
    """A plain-text table: one line per method, overall then each category."""
    columns = [f"R@{k}" for k in ks] + ["MRR"]
    header = f"{'method':<22} {'scope':<14} {'n':>4} " + " ".join(f"{c:>6}" for c in columns)
    lines = [header, "-" * len(header)]
    for method, report in reports.items():
        scopes = [("overall", report.overall)] + [
            (f"{c} {CATEGORIES.get(c, '?')}", m) for c, m in report.by_category.items()
        ]
        for index, (scope, metrics) in enumerate(scopes):
            values = [metrics.recall.get(k, 0.0) for k in ks] + [metrics.mrr]
            lines.append(
                f"{method if index == 0 else '':<22} {scope:<14} {metrics.n:>4} "
                + " ".join(f"{v:>6.3f}" for v in values)
            )
    return "\n".join(lines)


# ---------------------------------------------------- naive reference retrieval

_NLTK_ENGLISH_STOPWORDS: Final = """
    i me my myself we our ours ourselves you you're you've you'll you'd your yours yourself
    yourselves he him his himself she she's her hers herself it it's its itself they them
    their theirs themselves what which who whom this that that'll these those am is are was
    were be been being have has had having do does did doing a an the and but if or because
    as until while of at by for with about against between into through during before after
    above below to from up down in out on off over under again further then once here there
    when where why how all any both each few more most other some such no nor not only own
    same so than too very s t can will just don don't should should've now d ll m o re ve y
    ain aren aren't couldn couldn't didn didn't doesn doesn't hadn hadn't hasn hasn't haven
    haven't isn isn't ma mightn mightn't mustn mustn't needn needn't shan shan't shouldn
    shouldn't wasn wasn't weren weren't won won't wouldn wouldn't
"""
STOPWORDS: Final = frozenset(_NLTK_ENGLISH_STOPWORDS.split())
"""NLTK's English stopword list (179 words), used by `bm25_tokens`."""
_BM25_TOKEN_RE: Final = re.compile(r"[^\W\d_]+")


def bm25_tokens(text: str) -> list[str]:
    """The reference's BM25 analyser: lowercase runs of letters, minus `STOPWORDS`.

    Digits and punctuation split words and are dropped (``"Caroline's 8 May, 2023"`` ->
    ``["caroline", "may"]``); no stemming.
    """
    return [t for t in _BM25_TOKEN_RE.findall(text.lower()) if t not in STOPWORDS]


class BM25Index:
    """Okapi BM25 over pre-tokenised documents; idf = ln(1 + (N - df + 0.5) / (df + 0.5))."""

    def __init__(
        self, documents: Sequence[Sequence[str]], *, k1: float = BM25_K1, b: float = BM25_B
    ) -> None:
        self._k1, self._b = k1, b
        self._tfs = [Counter(doc) for doc in documents]
        self._lengths = [len(doc) for doc in documents]
        count = len(documents)
        self._avg_length = (sum(self._lengths) / count) if count else 0.0
        df = Counter(term for tf in self._tfs for term in tf)
        self._idf = {t: math.log(1.0 + (count - n + 0.5) / (n + 0.5)) for t, n in df.items()}

    def __len__(self) -> int:
        return len(self._tfs)

    def scores(self, query: Sequence[str]) -> list[float]:
        """Score of every document for the query terms (repeated terms count again)."""
        result = [0.0] * len(self._tfs)
        avg = self._avg_length or 1.0
        for term in query:
            idf = self._idf.get(term)
            if idf is None:
                continue
            for index, tf in enumerate(self._tfs):
                freq = tf.get(term)
                if freq:
                    norm = self._k1 * (1.0 - self._b + self._b * self._lengths[index] / avg)
                    result[index] += idf * freq * (self._k1 + 1.0) / (freq + norm)
        return result


def _lexical_ranking(ids: Sequence[str], scores: Sequence[float]) -> list[str]:
    """Ids of the documents matching the query (score > 0), best first; ties in doc order."""
    order = sorted((i for i in range(len(ids)) if scores[i] > 0.0), key=lambda i: -scores[i])
    return [ids[i] for i in order]


def rrf_fuse(rankings: Iterable[Sequence[str]], k: int = RRF_K) -> list[str]:
    """Reciprocal rank fusion: sum of 1 / (k + rank) over the rankings (rank from 1)."""
    fused: dict[str, float] = {}
    for ranking in rankings:
        for rank, item in enumerate(ranking, start=1):
            fused[item] = fused.get(item, 0.0) + 1.0 / (k + rank)
    return sorted(fused, key=lambda item: -fused[item])


def _cosine_rankings(
    conversation: Conversation, embedder: Embedder, docs: list[str]
) -> list[list[str]]:
    import numpy as np

    ids = [turn.dia_id for turn in conversation.turns]
    doc_vectors = np.asarray(embedder(docs), dtype=np.float64)
    query_vectors = np.asarray(
        embedder([q.question for q in conversation.questions]), dtype=np.float64
    )

    def unit(matrix: Any) -> Any:
        norms = np.linalg.norm(matrix, axis=1, keepdims=True)
        return matrix / np.where(norms == 0.0, 1.0, norms)

    similarities = unit(query_vectors) @ unit(doc_vectors).T
    return [[ids[i] for i in np.argsort(-row, kind="stable")] for row in similarities]


def reference_baseline(
    path: str | Path,
    *,
    embedder: Embedder | None = None,
    vectors: bool = True,
    ks: Sequence[int] = DEFAULT_KS,
) -> dict[str, Report]:
    """The README's naive reference retrieval, scored with this module's metrics.

    Per conversation, each turn is one document (`document_text`) and each
    question the query. Returns reports for ``"minilm"`` (cosine of ``embedder``
    vectors; all-MiniLM-L6-v2 via `bench.minilm_embedder.load_minilm` when None),
    ``"bm25"`` (`BM25Index`, k1 1.2, b 0.75, `bm25_tokens`; like an inverted index it
    ranks only the documents sharing a term with the question) and ``"rrf"`` (`rrf_fuse`
    of the full cosine ranking and the BM25 matches, k 60); only ``"bm25"`` when
    ``vectors`` is False. On locomo-dev.json this gives recall@5/@10 of 0.430/0.522
    (MiniLM), 0.530/0.596 (BM25) and 0.518/0.600 (RRF) against the README's
    0.430/0.528, 0.523/0.593 and 0.520/0.609.
    """
    conversations = load_locomo(path)
    if vectors and embedder is None:
        embedder = load_minilm()
    scores: dict[str, list[QuestionScore]] = {"minilm": [], "bm25": [], "rrf": []}
    for conversation in conversations:
        if not conversation.questions:
            continue
        ids = [turn.dia_id for turn in conversation.turns]
        docs = [document_text(turn) for turn in conversation.turns]
        index = BM25Index([bm25_tokens(doc) for doc in docs])
        lexical = [
            _lexical_ranking(ids, index.scores(bm25_tokens(question.question)))
            for question in conversation.questions
        ]
        dense = _cosine_rankings(conversation, embedder, docs) if embedder and vectors else None
        for number, question in enumerate(conversation.questions):
            scores["bm25"].append(score_question(lexical[number], question, ks))
            if dense is not None:
                scores["minilm"].append(score_question(dense[number], question, ks))
                fused = rrf_fuse([dense[number], lexical[number]])
                scores["rrf"].append(score_question(fused, question, ks))
    names = ("minilm", "bm25", "rrf") if vectors else ("bm25",)
    return {name: aggregate(scores[name]) for name in names}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description="Reproduce the README's naive LoCoMo retrieval reference (evidence recall)."
    )
    parser.add_argument("file", type=Path, help="a LoCoMo-format JSON file")
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
    parser.add_argument(
        "--no-vectors", action="store_true", help="BM25 only (no MiniLM, no torch needed)"
    )
    args = parser.parse_args(argv)
    conversations = load_locomo(args.file)
    started = time.perf_counter()
    try:
        reports = reference_baseline(args.file, vectors=not args.no_vectors)
    except MiniLMUnavailableError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    elapsed = time.perf_counter() - started
    turns = sum(len(c.turns) for c in conversations)
    questions = sum(len(c.questions) for c in conversations)
    if args.json:
        payload = {
            "file": str(args.file),
            "conversations": len(conversations),
            "turns": turns,
            "questions": questions,
            "seconds": round(elapsed, 2),
            "methods": {name: report.to_json() for name, report in reports.items()},
        }
        print(json.dumps(payload, indent=2))
    else:
        print(
            f"{args.file}: {len(conversations)} conversations, {turns} turns, "
            f"{questions} questions (categories 1-4 with valid evidence); {elapsed:.1f} s"
        )
        print(format_table(reports))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
