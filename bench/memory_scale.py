"""Layer-3 memory at scale: save and recall latency, index rebuild, file sizes, RSS.

    python -m bench.memory_scale [--sizes 10000,100000] [--saves 200] [--recalls 200]
                                 [--pinned 50] [--json [OUT]] [--profile]
                                 [--tmpdir DIR] [--keep DIR]

For each size N, on synthetic 768-d points (issue 3, "Benchmarks"):

1. build (own interpreter): a store with N points is loaded in bulk — one `MemoryStore.save`
   (fixes the embedding model and dimension), `PointStore.add_many` in batches, one
   `lexical_index.reindex_all` transaction over what `save` would index (`lexical_text`: the
   text, the message it answers, the date; per-point `index_point` would take minutes at
   100k), then the index rebuild exactly as the store does it after losing `vectors.usearch`:
   `PointStore.vectors` + `VectorIndex.rebuild` (which saves the file). Reported: the time of
   each step and the file sizes.
2. attrib (own interpreter): RSS after each component is opened on its own — the database,
   the usearch index, the lexical cache — to see where the resident memory goes.
3. measure (own interpreter): RSS before `MemoryStore.open`, after open + `wait_until_ready`
   + 5 recalls (the growth compared with `status()["ram_estimate_bytes"]`), then `--recalls`
   `recall(query, vector=...)` and `--saves` `save(role, text, vector=...)` calls with
   precomputed vectors (no embedding in the timings), p50/p95; last (after the RSS figures),
   the synthetic recall check: the overlap of the vector search's top 10 with an exact
   float32 search over every stored vector, for 50 queries (`vector_overlap`).

Data: a Gaussian mixture of 256 topics (Zipf-weighted) around a shared direction, as real
embeddings are anisotropic (same-topic cosine ~0.56, other topics ~0.16 on average), normalised
float32; chat-like texts of 60–400 characters from a Zipf (s = 1) vocabulary whose head mixes
English stopwords with common chat words, a quarter of the words from the point's topic. Saves
go five turns (user + assistant) per conversation, so the dedup rule compares but rarely fires.
`--pinned` of the N points are pinned `doc` points (every recall ranks all pins exactly).

Targets (issue 18): recall p95 <= 4 ms at 100k and <= 5 ms at 1M, save p95 <= 4 ms, RSS growth
<= 3 KiB a point from 100k, the store ready <= 2 s at 1M; `ram_estimate_bytes` within 15 % of
the measured RSS growth (issue 3's were recall <= 10 ms, save <= 5 ms, 20 %). With `--json`
alone the results go to stdout as JSON (no table); `--json OUT` writes them to OUT and prints
the table. `--profile` adds cProfile listings of the save and recall loops; `--tmpdir /dev/shm`
takes disk latency (fsync) out;
`--keep DIR` leaves the built stores in DIR for experiments. ~3 min on 2 cores (the 100k HNSW
build is most of it).
"""

from __future__ import annotations

import argparse
import gc
import itertools
import json
import math
import re
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from bench._common import REPO_ROOT, JsonDict, format_machine, machine_info, write_json

DIM = 768
TOPICS = 256
SEED = 20_260_301
EMBED_MODEL = "nomic-embed-text"  # MemoryConfig's default
BULK_BATCH = 10_000
WARM_RECALLS = 5
TURNS_PER_CONVERSATION = 5
# Issue 18's goals (issue 3's were recall ≤ 10 ms, save ≤ 5 ms, the estimate within 20 %)
RECALL_P95_TARGET_MS = 4.0  # at 100k points
RECALL_P95_TARGET_MS_1M = 5.0  # at 1M points and above
SAVE_P95_TARGET_MS = 4.0
TARGET_AT = 100_000  # the latency and RAM targets apply from this size
TARGET_1M = 1_000_000
RAM_TOLERANCE = 0.15
RAM_BYTES_PER_POINT_TARGET = 3 * 1024  # RSS growth a point (open + warm recalls)
READY_S_TARGET_1M = 2.0  # the store open and its word index ready, at 1M points
WORKER_TIMEOUT_SECONDS = 900
OVERLAP_QUERIES = 50  # the synthetic recall check: queries, and ids read at a time
OVERLAP_CHUNK = 20_000

FloatMatrix = npt.NDArray[np.float32]

# --------------------------------------------------------------------------- synthetic data

_CHAT_WORDS = (
    "think know really good time work want need make right thing people use going "
    "yes thanks great sure help problem idea question look maybe day week tomorrow "
    "yesterday code file error test run build server model memory data python config "
    "update change issue fix works broken slow fast new old start stop open close "
    "remember meeting project team email call plan trip book music movie dinner "
    "coffee weekend family friend home office train flight hotel price order send"
)
_SYLLABLES = (
    "ka lo mi ren ta sho vel dor pa qui zen mar tis bel nor ax ul ey fin gro "
    "stra ven pol bri cas tel mon dri ske lan"
)
_ENDINGS = ("", "", "", "s", "ing", "ed", "er", "ly", "tion")


def _normalise(matrix: FloatMatrix) -> FloatMatrix:
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    return (matrix / norms).astype(np.float32, copy=False)


class Synthetic:
    """Deterministic topics, vectors and texts; `seed` picks the stream, the topics are fixed."""

    def __init__(self, seed: int) -> None:
        base = np.random.default_rng(SEED)  # the same topics in every process
        common = _normalise(base.standard_normal((1, DIM), dtype=np.float32))
        own = _normalise(base.standard_normal((TOPICS, DIM), dtype=np.float32))
        self.centres = _normalise(0.55 * common + 0.85 * own)
        self.spread = base.uniform(0.7, 1.1, TOPICS).astype(np.float32)
        weights = 1.0 / np.arange(1, TOPICS + 1) ** 0.8
        self.topic_p = weights / weights.sum()
        self.vocab = _vocabulary(base, 30_000)
        word_weights = 1.0 / np.arange(1, len(self.vocab) + 1)
        self.word_p = word_weights / word_weights.sum()
        self.topic_words = base.integers(120, 8_000, size=(TOPICS, 40))
        self.rng = np.random.default_rng(seed)

    def topics(self, n: int) -> npt.NDArray[np.int64]:
        return self.rng.choice(TOPICS, size=n, p=self.topic_p)

    def vectors(self, topics: npt.NDArray[np.int64], *, noise: float = 1.0) -> FloatMatrix:
        """One unit vector per topic id, in chunks (100k × 768 f32 is 307 MB)."""
        out = np.empty((len(topics), DIM), dtype=np.float32)
        for start in range(0, len(topics), 20_000):
            part = topics[start : start + 20_000]
            z = self.rng.standard_normal((len(part), DIM), dtype=np.float32) / math.sqrt(DIM)
            scale = (self.spread[part] * noise)[:, None]
            out[start : start + len(part)] = _normalise(self.centres[part] + scale * z)
        return out

    def texts(self, topics: npt.NDArray[np.int64]) -> list[str]:
        """Chat-like messages of 60–400 characters (median ~150)."""
        n = len(topics)
        rng = self.rng
        targets = np.clip(rng.lognormal(math.log(150), 0.55, n), 60, 400).astype(int)
        pool = 90 * n
        drawn = rng.choice(len(self.vocab), size=pool, p=self.word_p)
        topical = rng.random(pool) < 0.25
        topic_pick = rng.integers(0, 40, size=pool)
        sentence_len = rng.integers(6, 14, size=pool)
        marks = rng.choice(np.array(list("..?!,")), size=pool)
        extras = rng.random(pool)
        vocab, topic_words = self.vocab, self.topic_words
        out: list[str] = []
        pos = 0
        for doc, target in zip(topics.tolist(), targets.tolist(), strict=True):
            words: list[str] = []
            size = 0
            in_sentence = 0
            limit = int(sentence_len[pos])
            while size <= target:
                if topical[pos]:
                    word = vocab[topic_words[doc, topic_pick[pos]]]
                else:
                    word = vocab[drawn[pos]]
                extra = extras[pos]
                if extra < 0.01:
                    word = f"{word}_{vocab[drawn[pos - 1]]}.py"
                elif extra < 0.02:
                    word = str(int(extra * 100_000))
                if in_sentence == 0:
                    word = word.capitalize()
                in_sentence += 1
                if in_sentence >= limit:
                    word += str(marks[pos])
                    in_sentence = 0
                    limit = int(sentence_len[pos])
                words.append(word)
                size += len(word) + 1
                pos += 1
            text = " ".join(words)
            if len(text) > 400:
                text = text[:400].rsplit(" ", 1)[0]
            out.append(text if text[-1] in ".?!" else text.rstrip(",") + ".")
        return out

    def queries(self, topics: npt.NDArray[np.int64]) -> list[str]:
        """Questions of 4–12 words, half of them from the topic's words."""
        out: list[str] = []
        for doc in topics.tolist():
            n = int(self.rng.integers(4, 13))
            words = [
                self.vocab[self.topic_words[doc, int(self.rng.integers(0, 40))]]
                if self.rng.random() < 0.5
                else self.vocab[int(self.rng.choice(len(self.vocab), p=self.word_p))]
                for _ in range(n)
            ]
            out.append(" ".join(words).capitalize() + "?")
        return out


def _vocabulary(rng: np.random.Generator, size: int) -> list[str]:
    """Zipf-ranked: stopwords and common chat words shuffled at the head, made-up words after."""
    from store.text_terms import ENGLISH_STOPWORDS

    syllables = _SYLLABLES.split()
    made_up: set[str] = set()
    while len(made_up) < size:
        parts = rng.choice(syllables, size=int(rng.integers(2, 5)))
        made_up.add("".join(parts) + str(rng.choice(_ENDINGS)))
    rest = sorted(made_up)
    rng.shuffle(rest)
    head = sorted(ENGLISH_STOPWORDS) + _CHAT_WORDS.split()
    rng.shuffle(head)
    return (head + rest)[:size]


# --------------------------------------------------------------------------- measuring


def vm_status() -> dict[str, int]:
    """VmRSS, VmHWM, RssAnon, RssFile of this process in bytes (/proc/self/status)."""
    out: dict[str, int] = {}
    for line in Path("/proc/self/status").read_text(encoding="ascii").splitlines():
        key, _, value = line.partition(":")
        if key in ("VmRSS", "VmHWM", "RssAnon", "RssFile"):
            out[key] = int(value.split()[0]) * 1024
    return out


def rss() -> int:
    return vm_status()["VmRSS"]


def ms_stats(values: Sequence[float]) -> JsonDict:
    arr = np.asarray(values, dtype=np.float64)
    return {
        "n": len(arr),
        "p50_ms": round(float(np.percentile(arr, 50)), 3),
        "p95_ms": round(float(np.percentile(arr, 95)), 3),
        "p99_ms": round(float(np.percentile(arr, 99)), 3),
        "mean_ms": round(float(arr.mean()), 3),
        "max_ms": round(float(arr.max()), 3),
        "max_at": int(arr.argmax()),  # which call (0-based) was the slowest
        "over_100ms": int((arr > 100).sum()),
    }


def file_sizes(home: Path) -> JsonDict:
    names = ("straylight.duckdb", "straylight.duckdb.wal", "vectors.usearch")
    return {name: (home / name).stat().st_size for name in names if (home / name).exists()}


def duckdb_memory(con: Any) -> JsonDict:
    rows = con.execute(
        "SELECT tag, memory_usage_bytes FROM duckdb_memory() WHERE memory_usage_bytes > 0"
    ).fetchall()
    return {str(tag): int(used) for tag, used in rows}


def _config() -> Any:
    from memory.memory_store import MemoryConfig

    return MemoryConfig(embed_model=EMBED_MODEL)


def _clock() -> Any:
    from store.clock import Clock

    return Clock()


# --------------------------------------------------------------------------- workers


def worker_build(home: Path, n: int, pinned: int) -> JsonDict:
    """Load n points in bulk, then rebuild the index from the stored vectors."""
    from datetime import UTC, datetime, timedelta

    from memory.embedding_space import META_DATABASE_ID
    from memory.memory_store import INDEX_FILENAME, MemoryStore, lexical_text
    from memory.point_traits import point_traits
    from store import lexical_index, meta
    from store.database import database_path, open_database
    from store.point_store import NewPoint, PointStore
    from store.vector_index import VectorIndex
    from store.vector_index_file import index_identity

    result: JsonDict = {"n": n}
    started = time.perf_counter()
    data = Synthetic(seed=1)
    topics = data.topics(n)
    vectors = data.vectors(topics)
    texts = data.texts(topics)
    result["generate_s"] = round(time.perf_counter() - started, 2)
    result["text_chars_mean"] = round(sum(map(len, texts)) / n, 1)

    # The first point through the real save path: fixes the model and dimension in `meta`.
    with MemoryStore.open(home, _config(), clock=_clock()) as store:
        store.save("user", texts[0], conversation_id="bulk-0", vector=vectors[0], use_filter=False)

    db = open_database(database_path(home), clock=_clock())
    points = PointStore(db)
    now = datetime.now(UTC)
    age_s = data.rng.uniform(0, 365 * 86_400, n)
    pin_every = max(1, n // pinned) if pinned else 0
    is_doc = [bool(pin_every) and i > 0 and i % pin_every == 0 for i in range(n)]
    created = [now - timedelta(seconds=float(age)) for age in age_s]
    started = time.perf_counter()
    for start in range(1, n, BULK_BATCH):
        batch = []
        for i in range(start, min(n, start + BULK_BATCH)):
            doc = is_doc[i]
            batch.append(
                NewPoint(
                    role="doc" if doc else ("user", "assistant")[i % 2],
                    content=texts[i],
                    source=f"doc:bench.md#{i}" if doc else "turn",
                    conversation_id="" if doc else f"bulk-{i // (2 * TURNS_PER_CONVERSATION)}",
                    channel="doc" if doc else "tui",
                    pinned=bool(doc),
                    created_at=created[i],
                    embedding=vectors[i],
                    embed_model=EMBED_MODEL,
                )
            )
        points.add_many(batch, audit_reason="bench bulk load")
    result["add_many_s"] = round(time.perf_counter() - started, 2)

    # What `MemoryStore.save` indexes: the text, the message it answers, the date as words.
    started = time.perf_counter()
    with db.transaction() as cur:
        ids = [int(r[0]) for r in cur.execute("SELECT id FROM points ORDER BY id").fetchall()]
        if len(ids) != n:
            raise RuntimeError(f"{len(ids)} points stored, expected {n}")
        rows = [
            (
                point_id,
                lexical_text(
                    texts[i],
                    context="" if is_doc[i] else _neighbours(texts, i),
                    when=created[i],
                ),
            )
            for i, point_id in enumerate(ids)
        ]
        traits = {pid: point_traits(texts[i], created[i]) for i, pid in enumerate(ids)}
        lexical_index.reindex_all(cur, rows, traits=traits)  # as a save gives them
    result["lexical_reindex_s"] = round(time.perf_counter() - started, 2)
    del vectors, texts, rows
    gc.collect()

    with db.cursor() as cur:
        cur.execute("CHECKPOINT")
        for key, sql in (
            ("postings", "SELECT count(*) FROM lexical_postings"),
            ("pinned", "SELECT count(*) FROM points WHERE pinned"),
        ):
            result[key] = int(cur.execute(sql).fetchall()[0][0])

    # The rebuild the store runs when vectors.usearch is missing (`VectorKeeper._start_rebuild`).
    (home / INDEX_FILENAME).unlink(missing_ok=True)
    started = time.perf_counter()
    ids, matrix = points.vectors(EMBED_MODEL, DIM)
    fetched = time.perf_counter()
    with db.cursor() as cur:  # the identity the store requires of its index file
        database_id = meta.get(cur, META_DATABASE_ID)
    identity = index_identity(database_id, EMBED_MODEL) if database_id else None
    index = VectorIndex(home / INDEX_FILENAME, DIM, identity=identity)
    index.rebuild(ids, matrix)  # HNSW build + atomic save
    done = time.perf_counter()
    index.save()
    result["rebuild"] = {
        "vectors": len(ids),
        "fetch_s": round(fetched - started, 2),
        "build_and_save_s": round(done - fetched, 2),
        "save_s": round(time.perf_counter() - done, 2),
        "total_s": round(done - started, 2),
    }
    db.close()
    result["files"] = file_sizes(home)
    return result


def _neighbours(texts: Sequence[str], i: int) -> str:
    """What `TurnMemory.save_turn` indexes beside a point: the two messages before it in
    its conversation, and a user message's reply."""
    first = i - i % (2 * TURNS_PER_CONVERSATION)
    last = first + 2 * TURNS_PER_CONVERSATION - 1
    offsets = (-2, -1, 1) if i % 2 == 0 else (-2, -1)
    return "\n".join(texts[i + o] for o in offsets if first <= i + o <= min(last, len(texts) - 1))


def worker_attrib(home: Path) -> JsonDict:
    """RSS after each component is opened on its own (fresh interpreter)."""
    from memory.memory_store import INDEX_FILENAME
    from store.database import database_path, open_database
    from store.lexical_index import LexicalCache
    from store.vector_index import VectorIndex

    gc.collect()
    steps: dict[str, int] = {"start": rss()}
    db = open_database(database_path(home), clock=_clock())
    steps["database_open"] = rss()
    index = VectorIndex(home / INDEX_FILENAME, DIM)
    index.open()
    gc.collect()
    steps["vector_index_loaded"] = rss()
    cache = LexicalCache()
    with db.cursor() as cur:
        cache.load(cur)
    gc.collect()
    steps["lexical_cache_loaded"] = rss()
    with db.cursor() as cur:
        memory = duckdb_memory(cur)
    names = list(steps)
    deltas = {b: steps[b] - steps[a] for a, b in itertools.pairwise(names)}
    result = {
        "rss": steps,
        "delta": deltas,
        "duckdb_memory": memory,
        # private attributes, for information only: usearch's reserved arenas (not RSS), terms
        "usearch_memory_usage": int(getattr(getattr(index, "_index", None), "memory_usage", 0)),
        "lexical_postings_bytes": cache.postings_bytes(),
        "lexical_terms": cache.term_count,
        "vm": vm_status(),
    }
    db.close()
    return result


def worker_measure(home: Path, n: int, saves: int, recalls: int, profile: bool) -> JsonDict:
    """RSS growth vs the estimate, then recall and save latency on the loaded store."""
    from memory.memory_store import MemoryStore
    from store.vector_index import estimate_index_bytes

    data = Synthetic(seed=2)
    query_topics = data.topics(recalls + WARM_RECALLS)
    query_vectors = data.vectors(query_topics, noise=0.8)
    query_texts = data.queries(query_topics)
    save_topics = data.topics(saves)
    save_vectors = data.vectors(save_topics)
    save_texts = data.texts(save_topics)
    result: JsonDict = {"n": n}
    gc.collect()
    rss_steps: dict[str, int] = {"before_open": rss()}

    started = time.perf_counter()
    store = MemoryStore.open(home, _config(), clock=_clock())
    opened = time.perf_counter()
    store.wait_until_ready()
    ready = time.perf_counter()
    result["open_s"] = round(opened - started, 2)
    result["ready_s"] = round(ready - started, 2)
    rss_steps["open_ready"] = rss()
    for q, v in zip(query_texts[:WARM_RECALLS], query_vectors[:WARM_RECALLS], strict=True):
        store.recall(q, vector=v)
    gc.collect()
    rss_steps["after_warm_recalls"] = rss()

    status_started = time.perf_counter()
    status = store.status()
    result["status_ms"] = round((time.perf_counter() - status_started) * 1000, 1)
    estimate = int(status["ram_estimate_bytes"])
    growth = rss_steps["after_warm_recalls"] - rss_steps["before_open"]
    rss_steps["after_status"] = rss()
    result["status"] = {
        "points": status["points"],
        "index": status["index"],
        "ram_estimate_bytes": estimate,
        "headroom": status["headroom"],
    }
    payload = estimate - estimate_index_bytes(status["index"]["size"], DIM)
    result["estimate_parts"] = {"index": estimate - payload, "payload": payload}

    profiler = None
    if profile:
        import cProfile

        profiler = cProfile.Profile()

    def timed(action: Callable[[], Any]) -> tuple[float, Any]:
        if profiler is not None:
            profiler.enable()
        t0 = time.perf_counter()
        out = action()
        elapsed = (time.perf_counter() - t0) * 1000
        if profiler is not None:
            profiler.disable()
        return elapsed, out

    recall_ms: list[float] = []
    hits: list[int] = []
    for q, v in zip(query_texts[WARM_RECALLS:], query_vectors[WARM_RECALLS:], strict=True):
        elapsed, found = timed(lambda q=q, v=v: store.recall(q, vector=v))
        recall_ms.append(elapsed)
        hits.append(len(found.hits))
    result["recall"] = ms_stats(recall_ms)
    result["recall"]["hits_mean"] = round(sum(hits) / len(hits), 2)
    # how many recalls (the warm ones too) ranked their words beside the vector search
    result["recall"]["side_thread"] = dict(store.side.stats)
    rss_steps["after_recalls"] = rss()
    recall_profile = _profile_text(profiler)

    if profiler is not None:
        import cProfile

        profiler = cProfile.Profile()
    save_ms: list[float] = []
    skipped: dict[str, int] = {}
    for i, (text, vec) in enumerate(zip(save_texts, save_vectors, strict=True)):
        role = ("user", "assistant")[i % 2]
        conversation = f"bench-{i // (2 * TURNS_PER_CONVERSATION)}"
        context = _neighbours(save_texts, i)
        elapsed, saved = timed(
            lambda role=role, text=text, vec=vec, conversation=conversation, context=context: (
                store.save(role, text, conversation_id=conversation, vector=vec, context=context)
            )
        )
        save_ms.append(elapsed)
        if saved.skipped:
            skipped[saved.skipped] = skipped.get(saved.skipped, 0) + 1
    result["save"] = ms_stats(save_ms)
    result["save"]["skipped"] = skipped
    rss_steps["after_saves"] = rss()
    save_profile = _profile_text(profiler)

    with store.db.cursor() as cur:
        result["duckdb_memory"] = duckdb_memory(cur)
    result["lexical_postings_bytes"] = store.lexical.postings_bytes()
    result["rss"] = rss_steps
    result["vm"] = vm_status()
    result["rss_growth_bytes"] = growth
    result["estimate_over_growth"] = round(estimate / growth, 3) if growth > 0 else None
    result["estimate_within_tolerance"] = abs(estimate - growth) <= RAM_TOLERANCE * growth
    # In use: after the measured recalls too. The word index's file pages are mapped back as
    # recalls read them (store/mapped_pages.py) and DuckDB caches the hit rows' blocks, so
    # five recalls no longer show what a memory in use keeps resident; the estimate is meant
    # for that (docs/memory-scale.md, "In use").
    in_use = rss_steps["after_recalls"] - rss_steps["before_open"]
    result["rss_growth_in_use_bytes"] = in_use
    result["estimate_over_growth_in_use"] = round(estimate / in_use, 3) if in_use > 0 else None
    # after every RSS figure was taken: it reads every vector, a chunk at a time
    result["vector_overlap"] = vector_overlap(store, query_vectors[:OVERLAP_QUERIES])
    started = time.perf_counter()
    store.close()
    result["close_s"] = round(time.perf_counter() - started, 2)
    result["files_after"] = file_sizes(home)
    if profile:
        result["profile"] = {"recall": recall_profile, "save": save_profile}
    return result


def vector_overlap(store: Any, queries: FloatMatrix, k: int = 10) -> JsonDict:
    """The synthetic recall check: the share of the exact top k (float32 cosine over every
    stored vector, read in chunks of ids) that the store's vector search returns."""
    from store.point_values import matrix_from_bytes

    unit = _normalise(np.asarray(queries, dtype=np.float32))
    best_ids = np.zeros((len(unit), 0), dtype=np.int64)
    best_sims = np.zeros((len(unit), 0), dtype=np.float32)
    sql = (
        "SELECT id, embedding FROM points WHERE embed_model = ? AND embedding IS NOT NULL "
        "AND octet_length(embedding) = ? AND id >= ? AND id < ?"
    )
    with store.db.cursor() as cur:
        low, high = cur.execute("SELECT min(id), max(id) FROM points").fetchall()[0]
        for start in range(int(low or 0), int(high or 0) + 1, OVERLAP_CHUNK):
            found = cur.execute(sql, [EMBED_MODEL, 4 * DIM, start, start + OVERLAP_CHUNK])
            columns = found.fetchnumpy()
            if not len(columns["id"]):
                continue
            rows = _normalise(matrix_from_bytes(list(columns["embedding"]), DIM))
            ids = np.broadcast_to(np.asarray(columns["id"], dtype=np.int64), (len(unit), len(rows)))
            all_ids = np.concatenate([best_ids, ids], axis=1)
            all_sims = np.concatenate([best_sims, unit @ rows.T], axis=1)
            keep = np.argsort(-all_sims, axis=1, kind="stable")[:, :k]
            best_ids = np.take_along_axis(all_ids, keep, axis=1)
            best_sims = np.take_along_axis(all_sims, keep, axis=1)
    shares = [
        len({pid for pid, _ in store.vectors.search(q, k)} & set(truth.tolist())) / k
        for q, truth in zip(unit, best_ids, strict=True)
    ]
    return {"queries": len(shares), "k": k, f"overlap_at_{k}": round(float(np.mean(shares)), 4)}


def _profile_text(profiler: Any) -> str | None:
    if profiler is None:
        return None
    import io
    import pstats

    buffer = io.StringIO()
    stats = pstats.Stats(profiler, stream=buffer)
    stats.sort_stats("cumulative").print_stats(30)
    stats.sort_stats("tottime").print_stats(15)
    return re.sub(r"[ \t]+\n", "\n", buffer.getvalue())


# --------------------------------------------------------------------------- orchestration


def worker_timeout(n: int) -> float:
    """Seconds one phase may take: 15 minutes, more from 225k points on (a 1M build takes
    ~25 min of both cores on a quiet 2-core VM, longer beside other work)."""
    return max(float(WORKER_TIMEOUT_SECONDS), n * 0.004)


class WorkerFailed(RuntimeError):
    """A phase's worker ended without its result; `str()` is the one line for the user."""


def run_worker(
    phase: str,
    home: Path,
    n: int,
    args: argparse.Namespace,
    timeout: float | None = None,
) -> JsonDict:
    """One phase in its own interpreter (bench/scaling.py passes a longer `timeout` at 1M)."""
    out = home.parent / f"{phase}-{n}.json"
    command = [
        sys.executable,
        "-m",
        "bench.memory_scale",
        "--worker",
        phase,
        "--home",
        str(home),
        "--n",
        str(n),
        "--saves",
        str(args.saves),
        "--recalls",
        str(args.recalls),
        "--pinned",
        str(args.pinned),
        "--json",
        str(out),
    ]
    if args.profile:
        command.append("--profile")
    started = time.perf_counter()
    limit = worker_timeout(n) if timeout is None else timeout
    try:
        done = subprocess.run(command, cwd=REPO_ROOT, timeout=limit, check=False)
    except subprocess.TimeoutExpired:
        raise WorkerFailed(f"{phase} worker for {n:,} points took over {limit:.0f} s") from None
    if done.returncode != 0 or not out.is_file():
        raise WorkerFailed(f"{phase} worker for {n:,} points failed (exit {done.returncode})")
    result: JsonDict = json.loads(out.read_text(encoding="utf-8"))
    result["wall_s"] = round(time.perf_counter() - started, 1)
    return result


def run_size(n: int, args: argparse.Namespace, tmp: Path) -> JsonDict:
    home = tmp / f"home-{n}"
    say = print if not args.stdout_json else (lambda *a, **k: None)
    say(f"[{n:,} points] build …", flush=True)
    build = run_worker("build", home, n, args)
    say(
        f"[{n:,} points] built in {build['wall_s']} s "
        f"(add_many {build['add_many_s']} s, lexical {build['lexical_reindex_s']} s, "
        f"index rebuild {build['rebuild']['total_s']} s); attrib …",
        flush=True,
    )
    attrib = run_worker("attrib", home, n, args)
    say(f"[{n:,} points] measure …", flush=True)
    measure = run_worker("measure", home, n, args)
    say(f"[{n:,} points] done", flush=True)
    return summarise(n, build, attrib, measure)


def summarise(n: int, build: JsonDict, attrib: JsonDict, measure: JsonDict) -> JsonDict:
    files = build["files"]
    db_bytes = files.get("straylight.duckdb", 0) + files.get("straylight.duckdb.wal", 0)
    index_bytes = files.get("vectors.usearch", 0)
    growth = measure["rss_growth_bytes"]
    estimate = measure["status"]["ram_estimate_bytes"]
    return {
        "n": n,
        "save": measure["save"],
        "recall": measure["recall"],
        "open_s": measure["open_s"],
        "ready_s": measure["ready_s"],
        "index_rebuild_s": build["rebuild"]["total_s"],
        "vector_overlap": measure.get("vector_overlap"),
        "files": {
            "bytes": files,
            "duckdb_mb": round(db_bytes / 2**20, 1),
            "usearch_mb": round(index_bytes / 2**20, 1),
            "duckdb_bytes_per_point": round(db_bytes / n),
            "usearch_bytes_per_point": round(index_bytes / n),
        },
        "ram": {
            "rss_growth_bytes": growth,
            "ram_estimate_bytes": estimate,
            "estimate_over_growth": measure["estimate_over_growth"],
            "within_tolerance": measure["estimate_within_tolerance"],
            "rss_growth_in_use_bytes": measure["rss_growth_in_use_bytes"],
            "estimate_over_growth_in_use": measure["estimate_over_growth_in_use"],
            "estimate_parts": measure["estimate_parts"],
            "rss_steps": measure["rss"],
            "components": attrib["delta"],
            "duckdb_memory": attrib["duckdb_memory"],
            "duckdb_memory_after_measure": measure["duckdb_memory"],
            "lexical_postings_bytes": attrib["lexical_postings_bytes"],
            "lexical_terms": attrib["lexical_terms"],
            "usearch_memory_usage": attrib["usearch_memory_usage"],
        },
        "build": build,
        "attrib": attrib,
        "measure": measure,
    }


def mb(value: float) -> str:
    return f"{value / 2**20:.1f} MB"


def rows_for(result: JsonDict) -> list[tuple[str, str, str, str]]:
    n = result["n"]
    targeted = n >= TARGET_AT
    save, recall, ram = result["save"], result["recall"], result["ram"]
    files = result["files"]

    def verdict(ok: bool, applies: bool = True) -> str:
        return ("PASS" if ok else "MISS") if applies else "info"

    recall_target = RECALL_P95_TARGET_MS_1M if n >= TARGET_1M else RECALL_P95_TARGET_MS
    per_point = ram["rss_growth_bytes"] / n
    rows = [
        (
            f"{n:,}: save (filter + DB + lexical + index)",
            f"p50 {save['p50_ms']:.2f} ms, p95 {save['p95_ms']:.2f} ms",
            f"p95 <= {SAVE_P95_TARGET_MS:.0f} ms" if targeted else "-",
            verdict(save["p95_ms"] <= SAVE_P95_TARGET_MS, targeted),
        ),
        (
            f"{n:,}: recall (hybrid, embedding excluded)",
            f"p50 {recall['p50_ms']:.2f} ms, p95 {recall['p95_ms']:.2f} ms",
            f"p95 <= {recall_target:.0f} ms" if targeted else "-",
            verdict(recall["p95_ms"] <= recall_target, targeted),
        ),
        (
            f"{n:,}: RSS growth a point (open + warm recalls)",
            f"{per_point:,.0f} B",
            f"<= {RAM_BYTES_PER_POINT_TARGET:,} B" if targeted else "-",
            verdict(per_point <= RAM_BYTES_PER_POINT_TARGET, targeted),
        ),
        (
            f"{n:,}: store open, word index ready",
            f"{result['open_s']:.2f} s / {result['ready_s']:.2f} s",
            f"ready <= {READY_S_TARGET_1M:.0f} s" if n >= TARGET_1M else "-",
            verdict(result["ready_s"] <= READY_S_TARGET_1M, n >= TARGET_1M),
        ),
        (
            f"{n:,}: index rebuild (fetch + HNSW + save)",
            f"{result['index_rebuild_s']:.1f} s",
            "-",
            "info",
        ),
        (
            f"{n:,}: files (duckdb / usearch)",
            f"{files['duckdb_mb']:.0f} MB ({files['duckdb_bytes_per_point']} B/pt) / "
            f"{files['usearch_mb']:.0f} MB ({files['usearch_bytes_per_point']} B/pt)",
            "-",
            "info",
        ),
        (
            f"{n:,}: ram_estimate_bytes vs RSS growth",
            f"{mb(ram['ram_estimate_bytes'])} vs {mb(ram['rss_growth_bytes'])} "
            f"(x{ram['estimate_over_growth']})",
            f"within {RAM_TOLERANCE:.0%}",
            verdict(bool(ram["within_tolerance"])),
        ),
    ]
    return rows


def print_table(rows: list[tuple[str, str, str, str]]) -> None:
    headers = ("metric", "value", "target", "result")
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(headers)]
    print("  ".join(h.ljust(w) for h, w in zip(headers, widths, strict=True)))
    print("  ".join("-" * w for w in widths))
    for row in rows:
        print("  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip())


def print_details(result: JsonDict) -> None:
    n = result["n"]
    build, ram, measure = result["build"], result["ram"], result["measure"]
    rebuild = build["rebuild"]
    print(f"\n-- {n:,} points --")
    print(
        f"bulk load: generate {build['generate_s']} s, add_many {build['add_many_s']} s, "
        f"lexical reindex_all {build['lexical_reindex_s']} s ({build['postings']:,} postings), "
        f"{build['pinned']} pinned; build worker {build['wall_s']} s"
    )
    print(
        f"index rebuild: fetch vectors {rebuild['fetch_s']} s + HNSW build and save "
        f"{rebuild['build_and_save_s']} s (a save alone: {rebuild['save_s']} s)"
    )
    print(
        f"open {measure['open_s']} s, ready (lexical cache loaded) {measure['ready_s']} s, "
        f"status() {measure['status_ms']} ms, close {measure['close_s']} s; "
        f"recall hits/query {result['recall']['hits_mean']}, "
        f"words beside the vectors {result['recall'].get('side_thread', {}).get('beside', '?')}, "
        f"save skips {result['save']['skipped'] or 'none'}"
    )
    overlap = result.get("vector_overlap")
    if overlap:
        print(
            f"vector search vs exact float32 top {overlap['k']}: overlap "
            f"{overlap['overlap_at_' + str(overlap['k'])]} ({overlap['queries']} queries)"
        )
    for name in ("save", "recall"):
        st = result[name]
        print(
            f"{name} latency (ms): p50 {st['p50_ms']}, p95 {st['p95_ms']}, p99 {st['p99_ms']}, "
            f"mean {st['mean_ms']}, max {st['max_ms']} (call #{st['max_at']}), "
            f"{st['over_100ms']} over 100 ms"
        )
    after = measure["files_after"]
    print(
        "files after the measure run (+saves, close): "
        + ", ".join(f"{name} {mb(size)}" for name, size in after.items())
    )
    steps = ram["rss_steps"]
    print(
        "RSS: "
        + ", ".join(f"{name} {mb(value)}" for name, value in steps.items())
        + f"; peak {mb(measure['vm']['VmHWM'])}"
    )
    parts = ram["estimate_parts"]
    print(
        f"estimate {mb(ram['ram_estimate_bytes'])} = index {mb(parts['index'])} + payload "
        f"{mb(parts['payload'])}; measured growth {mb(ram['rss_growth_bytes'])}, in use "
        f"(+ the recalls) {mb(ram['rss_growth_in_use_bytes'])} "
        f"(x{ram['estimate_over_growth_in_use']})"
    )
    comps = ram["components"]
    print(
        "RSS by component (separate process): "
        + ", ".join(f"{name} +{mb(value)}" for name, value in comps.items())
        + f"; lexical postings arrays {mb(ram['lexical_postings_bytes'])}"
        f" ({ram['lexical_terms']:,} terms); usearch memory_usage {mb(ram['usearch_memory_usage'])}"
    )
    print(
        "DuckDB duckdb_memory(): "
        + (", ".join(f"{k} {mb(v)}" for k, v in ram["duckdb_memory_after_measure"].items()) or "-")
        + " (after the measure run)"
    )
    for name in ("recall", "save"):
        text = (measure.get("profile") or {}).get(name)
        if text:
            print(f"\n== cProfile of {name} ({n:,}) ==\n{text}")


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="10000,100000", help="comma-separated point counts")
    parser.add_argument("--saves", type=int, default=200)
    parser.add_argument("--recalls", type=int, default=200)
    parser.add_argument("--pinned", type=int, default=50, help="pinned doc points among N")
    parser.add_argument(
        "--json",
        nargs="?",
        const="-",
        default=None,
        metavar="OUT",
        help="machine-readable results: to stdout (no table) or to the file OUT",
    )
    parser.add_argument("--profile", action="store_true", help="cProfile save and recall")
    parser.add_argument(
        "--tmpdir", type=Path, help="where the temporary stores go (e.g. /dev/shm: no disk I/O)"
    )
    parser.add_argument("--keep", type=Path, help="build the stores here and keep them")
    parser.add_argument("--worker", choices=("build", "attrib", "measure"), help=argparse.SUPPRESS)
    parser.add_argument("--home", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--n", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    args.stdout_json = args.json == "-"
    return args


def worker_main(args: argparse.Namespace) -> int:
    home: Path = args.home
    if args.worker == "build":
        result = worker_build(home, args.n, args.pinned)
    elif args.worker == "attrib":
        result = worker_attrib(home)
    else:
        result = worker_measure(home, args.n, args.saves, args.recalls, args.profile)
    write_json(Path(args.json), result)
    return 0


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.worker:
        return worker_main(args)
    sizes = [int(s.replace("_", "")) for s in args.sizes.split(",") if s.strip()]
    info = machine_info()
    if not args.stdout_json:
        print(format_machine(info), flush=True)
    results: list[JsonDict] = []
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="straylight-memscale-", dir=args.tmpdir) as raw_tmp:
        tmp = args.keep or Path(raw_tmp)
        tmp.mkdir(parents=True, exist_ok=True)
        for n in sizes:
            try:
                results.append(run_size(n, args, tmp))
            except WorkerFailed as failed:
                print(f"memory_scale: {failed}", file=sys.stderr)
                return 1
    report = {
        "machine": info,
        "loadavg_after": machine_info()["loadavg"],
        "total_s": round(time.perf_counter() - started, 1),
        "targets": {
            "recall_p95_ms": RECALL_P95_TARGET_MS,
            "recall_p95_ms_1m": RECALL_P95_TARGET_MS_1M,
            "save_p95_ms": SAVE_P95_TARGET_MS,
            "at_points": TARGET_AT,
            "ram_tolerance": RAM_TOLERANCE,
            "ram_bytes_per_point": RAM_BYTES_PER_POINT_TARGET,
            "ready_s_1m": READY_S_TARGET_1M,
        },
        "sizes": results,
    }
    if args.stdout_json:
        print(json.dumps(report, indent=2))
        return 0
    for result in results:
        print_details(result)
    print()
    print_table([row for result in results for row in rows_for(result)])
    print(f"total {report['total_s']} s, load after {report['loadavg_after']}")
    if args.json:
        write_json(Path(args.json), report)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
