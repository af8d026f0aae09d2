"""Issue 17, thirteenth round: two pools, each alone in round 12's nested
leave-one-conversation-out.

    python -m bench.locomo_round13 /work/shared/data/locomo/locomo-dev.json [--json]
        [--only FORM …] [--forced] [--items PICKLE]

Round 10's items (`bench.locomo_round10.extract`: each development conversation replayed
once through the save path, MiniLM vectors, filter off) and, per form, the same questions
over a different pool (the 17 columns computed as `extract` does, the mood's 8 on top):

- `vector N` (N = 100, 150): for a question `is_hypothetical` flags, the vector ranking's
  top N into the fusion (the word ranking's stays 50; the features' depth N); the other
  questions keep round 10's candidates. Columns: the mood model's 25.
- `speaker feedback`: for a question that names a speaker (`asked_speakers`: none for
  "when"), a second word search over only the points that person spoke, its query the
  question plus the content words of the fused top 3 (no stopword, no capitalised word —
  names —, three letters or more; the "Name: " prefix dropped); its top `FEEDBACK` are
  appended to the word ranking after its 50 (a point already there keeps its place; an
  added point's score is the question's own BM25), fused again (RRF: the top 50s' scores
  do not change), depth 50 + `FEEDBACK` (round 11's treatment). One more column:
  log(1 + FEEDBACK) − log(1 + its rank there), 0 when not in it. Columns: the mood's 25 + 1.

Each form competes against round 12's grid (round 10's 17-column form, then the mood form,
L2 0.1 / 1 / 10 / 100; listed first, they win ties): chosen inside the four training
conversations on recall@10 (ties by @5), trained on the four, scored on the fifth (the
model's best five in the product's order, then the rest of its ten). `pools` is how much of
the evidence each form's candidates hold (round 9's table). `--forced` adds each form with
its own configs in every fold (round 12's not competing: a diagnostic).
"""

from __future__ import annotations

import argparse
import json
import re
import time
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from bench.locomo_cache import CachedEmbedder, default_cache_dir
from bench.locomo_data import Conversation, Question, load_locomo
from bench.locomo_loo import Scored, progress
from bench.locomo_round5_rankers import base
from bench.locomo_round6_rankers import Conv6
from bench.locomo_round7_learn import Example, fit
from bench.locomo_round8 import answer_held, print_rows, product_score
from bench.locomo_round9 import pool_coverage
from bench.locomo_round10 import ASKING, Item, extract, scored
from bench.locomo_round12 import L2, WIDTH, Config12, Model12, Round12, close, kept
from bench.locomo_round12 import configs as configs12
from memory.recall import TUNING
from memory.recall_fusion import fuse
from memory.recall_rerank import asked_speakers, candidate_features, mood_columns, speaker_column
from memory.text.answers import answer_types, question_names
from memory.text.dates import date_spans
from memory.text.shape import is_hypothetical, is_list_question
from memory.text.words import STOPWORDS
from store import point_reads

SIZES = (100, 150)
FEEDBACK = 20
SEEDS = 3
FORMS = (*(f"vector {n}" for n in SIZES), "speaker feedback")
_STOP = frozenset().union(*STOPWORDS.values())
_WORD = re.compile(r"[^\W\d_][\w'’-]*")
_PREFIX = re.compile(r"^[^:\n]{1,40}:\s")


@dataclass
class Item13(Item):
    """Round 10's item over another pool; `extra`: the form's own columns (or None)."""

    extra: np.ndarray | None = None


Alt = dict[str, dict[str, list[Item]]]
"""Per form, conversation: its items (round 10's own where the form changes nothing)."""


def content_terms(text: str) -> list[str]:
    """The content words of a point (no "Name: " prefix, no stopword, no capitalised word,
    three letters or more), in order, once each."""
    words = _WORD.findall(_PREFIX.sub("", text, count=1))
    out: list[str] = []
    for w in words:
        if len(w) < 3 or w[0].isupper() or w.lower() in _STOP or w in out:
            continue
        out.append(w)
    return out


def candidates(
    conv: Conv6,
    rows: dict[int, point_reads.HitRow],
    question: Question,
    index: int,
    vector: list[tuple[int, float]],
    lexical: list[tuple[int, float]],
    depth: int,
) -> tuple[Item13, list[int]]:
    """Round 10's item for question `index` over the rankings given (as `extract` makes
    it), and its fused order."""
    memory = conv.memory
    tuning = TUNING
    if TUNING.list_vector_weight is not None and is_list_question(question.question):
        tuning = replace(TUNING, vector_weight=TUNING.list_vector_weight)
    fused = fuse(vector, lexical, tuning)
    order = sorted(fused, key=lambda p: -fused[p])
    spans = date_spans(question.question, memory.db.clock.now())
    kinds = answer_types(question.question)
    names = question_names(question.question) if "who" in kinds else frozenset()
    traits = memory.lexical.traits_of(order)
    assert traits is not None, "every replayed point has its traits"
    x = candidate_features(order, fused, vector, lexical, traits, spans, kinds, depth)
    column = speaker_column(traits[3], asked_speakers(question.question, ASKING))
    assert column is not None, "every replayed point has its speaker"
    held = answer_held(rows, order, kinds, names)
    score = product_score(rows, order, fused, spans, held)
    turns = [conv.to_turn.get(p, "") for p in order]
    evidence = set(question.evidence)
    labels = np.array([t in evidence for t in turns])
    present = bool(np.any(traits[3] != 0))
    features = np.hstack([x, column[:, None]])
    return Item13(question, index, turns, features, score, labels, present), order


def pools(conversation: Conversation, cache: CachedEmbedder) -> tuple[list[Item], Alt]:
    """Round 10's items of `conversation` and each form's."""
    conv, home, items = extract(conversation, cache)
    try:
        memory = conv.memory
        every = sorted(conv.to_turn)
        rows = point_reads.hit_rows(memory.db, every)
        all_traits = memory.lexical.traits_of(every)
        assert all_traits is not None
        speaker_of = np.asarray(all_traits[3])
        ids = np.asarray(every, np.int64)
        alt: dict[str, list[Item]] = {form: [] for form in FORMS}
        for item in items:
            i, q = item.index, item.question
            b = base(conv, i, q)
            same, order = candidates(conv, rows, q, i, b.vector, b.lexical, TUNING.candidates)
            assert same.turns == item.turns and np.allclose(same.features, item.features)
            if is_hypothetical(q.question):
                query = np.asarray(conv.question_vectors["question"][i], np.float32)
                more = memory.vectors.search(query, max(SIZES))
                assert [p for p, _ in more[: len(b.vector)]] == [p for p, _ in b.vector]
                for n in SIZES:
                    wide, _ = candidates(conv, rows, q, i, more[:n], b.lexical, n)
                    alt[f"vector {n}"].append(wide)
            else:
                for n in SIZES:
                    alt[f"vector {n}"].append(item)
            asked = asked_speakers(q.question, ASKING)
            allowed = ids[np.isin(speaker_of, np.fromiter(asked, np.int64, len(asked)))]
            if not len(allowed):
                alt["speaker feedback"].append(item)
                continue
            seeds = [rows[p].content for p in order[:SEEDS]]
            terms = [t for s in seeds for t in content_terms(s)]
            expanded = " ".join([q.question, *dict.fromkeys(terms)])
            with memory.db.cursor() as cur:
                found = memory.lexical.search(
                    cur, expanded, FEEDBACK, candidate_ids=allowed.tolist()
                )
                have = {p for p, _ in b.lexical}
                new = [p for p, _ in found if p not in have]
                own = (
                    dict(memory.lexical.search(cur, q.question, len(new), candidate_ids=new))
                    if new
                    else {}
                )
            lexical = b.lexical + [(p, own.get(p, 0.0)) for p in new]
            fed, fed_order = candidates(
                conv, rows, q, i, b.vector, lexical, TUNING.candidates + FEEDBACK
            )
            at = {p: j for j, p in enumerate(fed_order)}
            column = np.zeros(len(fed_order))
            for r, (p, _s) in enumerate(found):
                column[at[p]] = np.log1p(FEEDBACK) - np.log1p(r)
            fed.extra = column[:, None]
            alt["speaker feedback"].append(fed)
        return items, alt
    finally:
        close(conv, home)


def replay(path: Path, cache_dir: Path) -> tuple[dict[str, list[Item]], Alt]:
    from bench.minilm_embedder import load_minilm

    cache = CachedEmbedder(cache_dir / "minilm.npz", load_minilm)
    started = time.perf_counter()
    data: dict[str, list[Item]] = {}
    alt: Alt = {form: {} for form in FORMS}
    for conversation in [c for c in load_locomo(path) if c.questions]:
        items, per_form = pools(conversation, cache)
        data[conversation.sample_id] = items
        for form, its in per_form.items():
            alt[form][conversation.sample_id] = its
        progress(conversation.sample_id, started)
    cache.save()
    return data, alt


@dataclass(frozen=True, slots=True)
class Model13(Model12):
    form: str = ""


class Round13(Round12):
    def __init__(self, data: dict[str, list[Item]], alt: Alt) -> None:
        super().__init__(data, {})
        self.alt = alt
        self.columns13: dict[int, np.ndarray] = {}

    def own_columns(self, item: Item) -> np.ndarray:
        """The mood's 25 columns, and the form's own."""
        key = id(item)
        if key not in self.columns13:
            x = mood_columns(item.features, is_hypothetical(item.question.question))
            extra = getattr(item, "extra", None)
            if extra is not None:
                x = np.hstack([x, extra])
            self.columns13[key] = x
        return self.columns13[key]

    def width(self, form: str) -> int:
        return WIDTH + 8 + (1 if form == "speaker feedback" else 0)

    def padded(self, item: Item, form: str) -> np.ndarray:
        x = self.own_columns(item)
        missing = self.width(form) - x.shape[1]
        return np.hstack([x, np.zeros((len(x), missing))]) if missing else x

    def scores(self, conv: str, model: Any) -> list[Scored]:
        form = getattr(model, "form", "")
        items = self.alt[form][conv] if form in self.alt else self.data[conv]
        return [scored(a, self.ranked(a, model)) for a in items]

    def _train(self, convs: Sequence[str], config: Config12) -> Model12:
        form = config.form
        if form not in self.alt:
            return super()._train(convs, config)
        plain = self._fit(convs, WIDTH - 1, config.l2)
        items = [a for c in convs for a in self.alt[form][c]]
        examples = [Example(self.padded(a, form), a.labels) for a in items]
        model = fit(examples, "balanced", config.l2, range(self.width(form)))
        return Model13(plain, None, False, lambda a: model.scores(self.padded(a, form)), form)


def run(
    data: dict[str, list[Item]], alt: Alt, only: Sequence[str] = (), forced: bool = False
) -> dict[str, Any]:
    started = time.perf_counter()
    round13 = Round13(data, alt)
    results: dict[str, Any] = {"pools": pool_coverage({"top 50": data, **alt})}
    results["round 12"] = round13.held_out(round13.folds(configs12("mood")))
    progress("round 12", started)
    for form in [f for f in FORMS if not only or f in only]:
        grid = configs12("mood") + [Config12(form, l2) for l2 in L2]
        results[form] = round13.held_out(round13.folds(grid))
        if forced:  # the form's own configs in every fold (round 12's not competing)
            own = [Config12(form, l2) for l2 in L2]
            results[f"{form}, forced"] = round13.held_out(round13.folds(own))
        progress(form, started)
    return results


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("path", type=Path)
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--only", nargs="*", default=(), choices=FORMS)
    parser.add_argument("--forced", action="store_true", help="also each form in every fold")
    parser.add_argument("--items", type=Path, help="keep the replayed items here (a pickle)")
    parser.add_argument("--cache-dir", type=Path, default=default_cache_dir())
    args = parser.parse_args(argv)
    data, alt = kept(args.items, lambda: replay(args.path, args.cache_dir))
    results = run(data, alt, args.only, args.forced)
    if args.json:
        print(json.dumps(results, indent=2, default=str))
    else:
        print("pools:", json.dumps(results["pools"], indent=1))
        print_rows(results, every_choice=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
