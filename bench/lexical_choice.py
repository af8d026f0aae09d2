"""Measure the lexical index: SQL BM25 vs the in-memory cache, and which stemmer.

    python -m bench.lexical_choice [--locomo FILE] [--sizes 10000 100000] [--json OUT]
                                   [--skip-speed] [--skip-recall] [--alternatives]

(a) Speed on synthetic chat-like documents: a vocabulary with a Zipf (s = 1) distribution whose
    head mixes the English stopwords with content words (as in chat, where names, "great",
    "really" sit among the function words), ~25 words a document, questions of 4–12 words from
    the same distribution. Per size: bulk `reindex_all`, `LexicalCache.load`, search p50/p95 by
    SQL and by the cache, `index_point` (+ commit) p50/p95, a save followed by a search (the
    chat turn's pattern), `remove_point`. With --alternatives, tantivy and bm25s (if installed)
    on the largest size with the same analyzer: build, search, tantivy's add + commit.
(b) LoCoMo lexical-only recall: one document per turn ("speaker: text", or "(date) speaker:
    text" as in the data's README), one index per conversation, every question of categories
    1–4 with at least one evidence id that names a turn; recall@k = share of those evidence ids
    in the top k, averaged over questions. Rows per analyzer (stemming option), plus stemmer
    speed per token and the language detection rate on LoCoMo turns and on the German seeds.

Any file of the LoCoMo format can be given with --locomo.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import duckdb
import numpy as np

from bench._common import REPO_ROOT, format_machine, machine_info, write_json
from store import lexical_index as li
from store import schema
from store.text_terms import (
    ENGLISH_STOPWORDS,
    Analyzer,
    default_analyzer,
    detect_language,
    raw_tokens,
    snowball,
)

K1_B = (li.K1, li.B)
DEFAULT_LOCOMO = REPO_ROOT.parent / "shared" / "data" / "locomo" / "locomo-dev.json"
SEEDS_DIR = REPO_ROOT.parent / "shared" / "seeds"


def connect() -> duckdb.DuckDBPyConnection:
    """An in-memory database at the current schema (migrations run here, not by store code)."""
    con = duckdb.connect(":memory:")
    con.execute(schema.VERSION_TABLE)
    for step in schema.MIGRATIONS:
        for statement in step:
            con.execute(statement)
    return con


def percentile(values: Sequence[float], q: float) -> float:
    ordered = sorted(values)
    if len(ordered) == 1:
        return ordered[0]
    return float(np.percentile(ordered, q))


def ms_summary(values: Sequence[float]) -> dict[str, float]:
    return {
        "n": len(values),
        "p50_ms": round(percentile(values, 50), 3),
        "p95_ms": round(percentile(values, 95), 3),
        "max_ms": round(max(values), 3),
    }


# --- (a) speed --------------------------------------------------------------------------


def make_vocabulary(size: int, rng: random.Random) -> list[str]:
    """Zipf-ranked words: stopwords shuffled with 60 content words at the head, then the rest."""
    syllables = [
        "ka",
        "lo",
        "mi",
        "ren",
        "ta",
        "sho",
        "vel",
        "dor",
        "pa",
        "qui",
        "zen",
        "mar",
        "tis",
        "bel",
        "nor",
        "ax",
        "ul",
        "ey",
        "fin",
        "gro",
    ]
    endings = ["", "", "", "s", "ing", "ed", "er", "ly"]
    content: set[str] = set()
    while len(content) < size:
        word = "".join(rng.choice(syllables) for _ in range(rng.randint(2, 4)))
        content.add(word + rng.choice(endings))
    ordered = sorted(content)
    rng.shuffle(ordered)
    head = sorted(ENGLISH_STOPWORDS) + ordered[:60]
    rng.shuffle(head)
    return (head + ordered[60:])[:size]


@dataclass
class Corpus:
    docs: list[str]
    queries: list[str]


def make_corpus(n_docs: int, n_queries: int, *, vocab_size: int = 50_000, seed: int = 7) -> Corpus:
    rng = random.Random(seed)
    vocab = make_vocabulary(vocab_size, rng)
    npr = np.random.default_rng(seed)
    weights = 1.0 / np.arange(1, vocab_size + 1)
    weights /= weights.sum()
    lengths = np.maximum(3, npr.lognormal(3.1, 0.6, n_docs).astype(int))
    drawn = npr.choice(vocab_size, size=int(lengths.sum()), p=weights)
    docs: list[str] = []
    offset = 0
    for length in lengths.tolist():
        docs.append(" ".join(vocab[j] for j in drawn[offset : offset + length]))
        offset += length
    queries = [
        " ".join(vocab[j] for j in npr.choice(vocab_size, size=int(npr.integers(4, 13)), p=weights))
        for _ in range(n_queries)
    ]
    return Corpus(docs, queries)


def timed(action: Callable[..., object], *args: object) -> float:
    started = time.perf_counter()
    action(*args)
    return (time.perf_counter() - started) * 1000


def measure_speed(n_docs: int, n_queries: int) -> dict[str, Any]:
    corpus = make_corpus(n_docs + 300, n_queries)
    docs, spare = corpus.docs[:n_docs], corpus.docs[n_docs:]
    con = connect()
    result: dict[str, Any] = {"docs": n_docs}

    started = time.perf_counter()
    con.begin()
    li.reindex_all(con, enumerate(docs, start=1))
    con.commit()
    result["reindex_all_s"] = round(time.perf_counter() - started, 2)
    result["postings"] = con.execute("SELECT count(*) FROM lexical_postings").fetchall()[0][0]

    cache = li.LexicalCache()
    started = time.perf_counter()
    cache.load(con)
    result["cache_load_s"] = round(time.perf_counter() - started, 2)
    result["cache_postings_mb"] = round(cache.postings_bytes() / 2**20, 1)

    for query in corpus.queries[:5]:  # warm both paths
        li.search(con, query, 10)
        cache.search(con, query, 10)
    sql_queries = corpus.queries[: max(20, n_queries // (4 if n_docs >= 50_000 else 1))]
    result["search_sql"] = ms_summary([timed(li.search, con, q, 10) for q in sql_queries])
    result["search_cache"] = ms_summary([timed(cache.search, con, q, 10) for q in corpus.queries])
    agree = sum(
        [pid for pid, _ in li.search(con, q, 10)] == [pid for pid, _ in cache.search(con, q, 10)]
        for q in sql_queries[:20]
    )
    result["cache_equals_sql_top10"] = f"{agree}/{min(20, len(sql_queries))}"

    next_id = n_docs + 1

    def save(text: str, use_cache: bool) -> None:
        nonlocal next_id
        con.begin()
        li.index_point(con, next_id, text, cache=cache if use_cache else None)
        con.commit()
        next_id += 1

    result["index_point_sql"] = ms_summary([timed(save, t, False) for t in spare[:100]])
    cache.sync(con)  # takes in the 100 saves made without it (diff path)
    result["index_point_cached"] = ms_summary([timed(save, t, True) for t in spare[100:200]])
    turn: list[float] = []
    for text, query in zip(spare[200:300], corpus.queries, strict=False):
        save(text, True)
        turn.append(timed(cache.search, con, query, 10))
    result["search_after_save_cache"] = ms_summary(turn)

    def remove(point_id: int) -> None:
        con.begin()
        li.remove_point(con, point_id, cache=cache)
        con.commit()

    result["remove_point"] = ms_summary([timed(remove, p) for p in range(1, 21)])
    result["search_after_remove_cache"] = ms_summary(
        [timed(cache.search, con, corpus.queries[0], 10)]
    )
    result["cache_stats"] = dict(cache.stats)
    con.close()
    return result


def measure_alternatives(n_docs: int, n_queries: int) -> dict[str, Any]:
    """tantivy and bm25s on the same corpus and analyzer, where installed (neither is a
    dependency: `pip install tantivy bm25s` to include them)."""
    corpus = make_corpus(n_docs + 30, n_queries)
    docs, spare = corpus.docs[:n_docs], corpus.docs[n_docs:]
    analyzer = default_analyzer()
    result: dict[str, Any] = {"docs": n_docs}

    def flat_query(query: str) -> list[str]:
        return [term for group in analyzer.query_terms(query) for term in group]

    try:
        import tantivy
    except ImportError:
        result["tantivy"] = "not installed"
    else:
        import tempfile

        builder = tantivy.SchemaBuilder()
        builder.add_integer_field("id", stored=True, indexed=True)
        builder.add_text_field("body", stored=False, tokenizer_name="whitespace")
        with tempfile.TemporaryDirectory(ignore_cleanup_errors=True) as folder:
            index = tantivy.Index(builder.build(), path=folder)
            started = time.perf_counter()
            writer = index.writer()
            for i, doc in enumerate(docs, start=1):
                writer.add_document(tantivy.Document(id=i, body=" ".join(analyzer.terms(doc))))
            writer.commit()
            writer.wait_merging_threads()
            index.reload()
            build_s = round(time.perf_counter() - started, 2)
            searcher = index.searcher()

            def tantivy_search(query: str) -> object:
                terms = flat_query(query)
                if not terms:
                    return []
                return searcher.search(index.parse_query(" ".join(terms), ["body"]), 10).hits

            writer = index.writer()

            def tantivy_add(i: int) -> None:
                text = " ".join(analyzer.terms(spare[i]))
                writer.add_document(tantivy.Document(id=n_docs + 1 + i, body=text))
                writer.commit()

            result["tantivy"] = {
                "build_s": build_s,
                "search": ms_summary([timed(tantivy_search, q) for q in corpus.queries]),
                "add_commit": ms_summary([timed(tantivy_add, i) for i in range(len(spare))]),
            }
            writer.wait_merging_threads()
    try:
        import bm25s
    except ImportError:
        result["bm25s"] = "not installed"
    else:
        started = time.perf_counter()
        vocab: dict[str, int] = {}
        ids = [[vocab.setdefault(t, len(vocab)) for t in analyzer.terms(doc)] for doc in docs]
        retriever = bm25s.BM25(k1=K1_B[0], b=K1_B[1], method="lucene")
        retriever.index(bm25s.tokenization.Tokenized(ids=ids, vocab=vocab), show_progress=False)
        build_s = round(time.perf_counter() - started, 2)

        def bm25s_search(query: str) -> object:
            wanted = [vocab[t] for t in flat_query(query) if t in vocab]
            if not wanted:
                return None
            tokens = bm25s.tokenization.Tokenized(ids=[wanted], vocab=vocab)
            return retriever.retrieve(tokens, k=10, show_progress=False, n_threads=1)

        result["bm25s"] = {
            "build_s (every change: no incremental add)": build_s,
            "search": ms_summary([timed(bm25s_search, q) for q in corpus.queries]),
        }
    return result


# --- (b) LoCoMo recall ----------------------------------------------------------------


@dataclass
class Question:
    text: str
    evidence: list[str]
    category: int


@dataclass
class Conversation:
    turns: dict[str, str]  # dia_id -> document text
    questions: list[Question]


def load_locomo(path: Path, *, with_date: bool) -> list[Conversation]:
    data = json.loads(path.read_text(encoding="utf-8"))
    conversations: list[Conversation] = []
    for sample in data:
        conv = sample["conversation"]
        turns: dict[str, str] = {}
        for key, value in conv.items():
            if not key.startswith("session_") or not isinstance(value, list):
                continue
            date = conv.get(f"{key}_date_time", "")
            for turn in value:
                prefix = f"({date}) " if with_date and date else ""
                turns[turn["dia_id"]] = f"{prefix}{turn['speaker']}: {turn['text']}"
        questions = []
        for qa in sample.get("qa", []):
            if qa.get("category") not in (1, 2, 3, 4):
                continue
            evidence = [e.strip() for e in qa.get("evidence", []) if e.strip() in turns]
            if evidence:
                questions.append(Question(qa["question"], evidence, int(qa["category"])))
        conversations.append(Conversation(turns, questions))
    return conversations


def light_english_stem(word: str) -> str:
    """Harman's S-stemmer: plurals only (a baseline that needs no library)."""
    if len(word) > 3 and word.endswith("ies") and not word.endswith(("eies", "aies")):
        return word[:-3] + "y"
    if len(word) > 3 and word.endswith("es") and not word.endswith(("aes", "ees", "oes")):
        return word[:-1]
    if len(word) > 2 and word.endswith("s") and not word.endswith(("us", "ss")):
        return word[:-1]
    return word


def pure_python_snowball() -> Callable[[str], str] | None:
    """snowballstemmer's own pure-Python English stemmer (it defers to PyStemmer when present)."""
    try:
        from snowballstemmer.english_stemmer import EnglishStemmer
    except ImportError:
        return None
    stemmer = EnglishStemmer()
    return stemmer.stemWord  # type: ignore[no-any-return]


def analyzers() -> dict[str, Analyzer]:
    options = {
        "no stemming": Analyzer("none", {}, detect=False, query_alternatives=False),
        "plural -s only (Harman)": Analyzer(
            "light", {"en": light_english_stem}, detect=False, query_alternatives=False
        ),
        "Porter (original)": Analyzer(
            "porter", {"en": li_porter()}, detect=False, query_alternatives=False
        ),
        "Snowball English (PyStemmer)": Analyzer(
            "en", {"en": snowball("en")}, detect=False, query_alternatives=False
        ),
    }
    pure = pure_python_snowball()
    if pure is not None:
        options["Snowball English (snowballstemmer, pure Python)"] = Analyzer(
            "en-py", {"en": pure}, detect=False, query_alternatives=False
        )
    options["Snowball English, no identifier split"] = Analyzer(
        "en-nosplit",
        {"en": snowball("en")},
        detect=False,
        query_alternatives=False,
        split_identifiers=False,
    )
    options["Snowball en+de, detected, both stems in queries (default)"] = default_analyzer()
    return options


def li_porter() -> Callable[[str], str]:
    import Stemmer

    return Stemmer.Stemmer("porter").stemWord  # type: ignore[no-any-return]


def recall_for(conversations: list[Conversation], analyzer: Analyzer) -> dict[str, Any]:
    hits = {5: [], 10: []}  # type: dict[int, list[float]]
    by_category: dict[int, list[float]] = {}
    started = time.perf_counter()
    for conv in conversations:
        con = connect()
        ids = {dia_id: i for i, dia_id in enumerate(conv.turns, start=1)}
        li.reindex_all(con, ((ids[d], text) for d, text in conv.turns.items()), analyzer=analyzer)
        # The cache is the production read path, and its float sums are deterministic (SQL's
        # parallel aggregation may order near-ties differently from run to run).
        cache = li.LexicalCache(analyzer)
        for question in conv.questions:
            found = [pid for pid, _ in cache.search(con, question.text, 10)]
            wanted = [ids[e] for e in question.evidence]
            for k in (5, 10):
                top = set(found[:k])
                hits[k].append(sum(w in top for w in wanted) / len(wanted))
            by_category.setdefault(question.category, []).append(hits[10][-1])
        con.close()
    return {
        "questions": len(hits[10]),
        "recall@5": round(statistics.fmean(hits[5]), 3),
        "recall@10": round(statistics.fmean(hits[10]), 3),
        "recall@10_by_category": {
            str(c): round(statistics.fmean(v), 3) for c, v in sorted(by_category.items())
        },
        "seconds": round(time.perf_counter() - started, 2),
    }


def stem_speed(words: list[str]) -> dict[str, float]:
    """µs per token over all LoCoMo tokens (repeats included, as indexing sees them)."""
    import Stemmer

    out: dict[str, float] = {}
    uncached = Stemmer.Stemmer("english", 0)
    stemmers: dict[str, Callable[[str], str]] = {
        "PyStemmer (C), its default cache": Stemmer.Stemmer("english").stemWord,
        "PyStemmer (C), no cache": uncached.stemWord,
        "plural -s only (Harman)": light_english_stem,
    }
    pure = pure_python_snowball()
    if pure is not None:
        stemmers["snowballstemmer (pure Python)"] = pure
        memo: dict[str, str] = {}

        def cached_pure(word: str) -> str:
            stem = memo.get(word)
            if stem is None:
                stem = memo[word] = pure(word)
            return stem

        stemmers["snowballstemmer (pure Python) + dict cache"] = cached_pure
    for name, stem in stemmers.items():
        started = time.perf_counter()
        for word in words:
            stem(word)
        out[name] = round((time.perf_counter() - started) * 1e6 / len(words), 3)
    analyzer = default_analyzer()
    return out | {"terms() default analyzer, µs per token": round(_terms_speed(analyzer, words), 3)}


def _terms_speed(analyzer: Analyzer, words: list[str]) -> float:
    text = " ".join(words)
    chunks = [text[i : i + 200] for i in range(0, len(text), 200)]
    started = time.perf_counter()
    for chunk in chunks:
        analyzer.terms(chunk)
    return (time.perf_counter() - started) * 1e6 / len(words)


def detection_rates(conversations: list[Conversation]) -> dict[str, Any]:
    turns = [text for conv in conversations for text in conv.turns.values()]
    german_turns = sum(detect_language(w.lower() for w in raw_tokens(t)) == "de" for t in turns)
    out: dict[str, Any] = {"locomo_turns_detected_de": f"{german_turns}/{len(turns)}"}
    paragraphs = [
        p
        for f in sorted(SEEDS_DIR.glob("*.txt"))
        for p in f.read_text(encoding="utf-8").split("\n")
        if len(p.split()) >= 8
    ]
    if paragraphs:
        german = sum(detect_language(w.lower() for w in raw_tokens(p)) == "de" for p in paragraphs)
        out["seed_paragraphs_detected_de"] = f"{german}/{len(paragraphs)}"
    return out


def measure_recall(path: Path) -> dict[str, Any]:
    result: dict[str, Any] = {"file": str(path)}
    for with_date in (False, True):
        conversations = load_locomo(path, with_date=with_date)
        label = '"(date) speaker: text"' if with_date else '"speaker: text"'
        rows: dict[str, Any] = {}
        for name, analyzer in analyzers().items():
            if (
                with_date
                and name not in ("no stemming", "Snowball English (PyStemmer)")
                and ("default" not in name)
            ):
                continue
            rows[name] = recall_for(conversations, analyzer)
            print(
                f"  {label:24} {name:58} r@5 {rows[name]['recall@5']:.3f}"
                f"  r@10 {rows[name]['recall@10']:.3f}",
                flush=True,
            )
        result[label] = rows
    conversations = load_locomo(path, with_date=False)
    words = [w.lower() for c in conversations for t in c.turns.values() for w in raw_tokens(t)]
    result["stem_us_per_token"] = stem_speed(words)
    result["language_detection"] = detection_rates(conversations)
    return result


# --- report ------------------------------------------------------------------------------


def print_speed(rows: list[dict[str, Any]]) -> None:
    print("\nspeed (ms; top-10)             " + "".join(f"{r['docs']:>22,}" for r in rows))
    for key in (
        "search_sql",
        "search_cache",
        "search_after_save_cache",
        "index_point_sql",
        "index_point_cached",
        "remove_point",
    ):
        cells = "".join(f"{r[key]['p50_ms']:>10.2f} /{r[key]['p95_ms']:>9.2f}" for r in rows)
        print(f"  {key + ' p50/p95':30}{cells}")
    for key in (
        "reindex_all_s",
        "cache_load_s",
        "cache_postings_mb",
        "postings",
        "cache_equals_sql_top10",
    ):
        print(f"  {key:30}" + "".join(f"{r[key]!s:>22}" for r in rows))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--locomo", type=Path, default=DEFAULT_LOCOMO, help="LoCoMo-format file")
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--queries", type=int, default=300, help="searches per size")
    parser.add_argument("--skip-speed", action="store_true")
    parser.add_argument("--skip-recall", action="store_true")
    parser.add_argument(
        "--alternatives", action="store_true", help="also tantivy and bm25s, if installed"
    )
    parser.add_argument("--json", type=Path, help="also write the results here")
    args = parser.parse_args(argv)

    info = machine_info()
    print(format_machine(info))
    result: dict[str, Any] = {"machine": info}
    if not args.skip_recall:
        if not args.locomo.is_file():
            print(f"no LoCoMo file at {args.locomo}", file=sys.stderr)
            return 1
        print(f"LoCoMo lexical-only recall ({args.locomo.name})", flush=True)
        result["recall"] = measure_recall(args.locomo)
        print("  stemming, µs per token:", result["recall"]["stem_us_per_token"])
        print("  language detection:", result["recall"]["language_detection"])
    if not args.skip_speed:
        rows = []
        for size in args.sizes:
            print(f"speed at {size:,} docs …", flush=True)
            rows.append(measure_speed(size, args.queries))
        result["speed"] = rows
        print_speed(rows)
        print("  cache stats:", [r["cache_stats"] for r in rows])
        if args.alternatives:
            result["alternatives"] = measure_alternatives(max(args.sizes), args.queries)
            print("alternatives:", json.dumps(result["alternatives"], indent=1))
    if args.json:
        write_json(args.json, result)
    return 0


if __name__ == "__main__":
    sys.exit(main())
