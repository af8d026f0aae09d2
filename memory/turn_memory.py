"""The async side of layer 3: embedding through a caller-given function, and fail-soft use.

`TurnMemory` wraps a `MemoryStore` (whose methods block, so they run in threads) and an
async `embed(texts) -> vectors` function (the agent passes the Ollama gateway's). A turn
costs at most two embedding requests: the user's message is embedded once, for recall and
again as its own point's vector; the reply once, when it is saved. When embedding fails
(Ollama down, the model not pulled), points are stored without a vector and `backfill`
embeds them later; recall falls back to words. Nothing here raises into a turn: every
failure is logged and counted.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import cast

from memory.doc_splitter import split_markdown
from memory.embed_failure import EmbeddingFailed, EmbedFn, unnamed_embed_problem
from memory.embedding_check import vector_problem
from memory.fact_drawer import FactDrawer
from memory.hypotheses import Hypotheses
from memory.memory_store import IngestReport, MemoryStore, RecallResult
from memory.neighbour_words import reply_context, user_context
from memory.point_limits import (
    PointTooLarge,
    doc_size_problem,
    section_size_problem,
    text_size_problem,
)
from memory.point_writes import Role, SaveResult
from memory.recall import TURN_TUNING
from memory.secret_masking import mask_secrets
from memory.stored_text import stored_text
from store.job_runs import JobRuns
from store.point_records import Point
from store.point_store import content_hash

log = logging.getLogger("straylight.memory")

QUERY_EMBED_SECONDS = 20.0
"""How long a search waits for its query's vector before it ranks by words alone: the chat
turn's recall, `/recall`, `straylight recall` and MCP `memory_search`. A stalled Ollama held
them for the whole HTTP timeout (`ollama_http_timeout_seconds`, 300 s by default); an
embedding model loaded from disk answers within a few seconds, so 20 s only gives up on a
server that is not coming back."""

SAVE_EMBED_SECONDS = 20.0
"""How long a turn's save waits for the reply's vector (and `remember`, `/remember` and MCP
`memory_save` for theirs) before it stores the point without one (the backfill embeds it
later); an MCP client gives up on a tool after about 60 s and may call it again. Without a
limit a stalled embedding outlasted the 30 s `ask` (and the chat's quit) wait for the save,
and the reply's point was lost without a word."""


REPLY_EMBEDDING = "the reply's embedding"
"""What `embed_problem` names when the reply's vector came too late (`ask` then says only the
reply lacks one: the search had its vector)."""

SLOW_EMBED_FAILURE_SECONDS = 5.0
"""An import's batch that failed after waiting this long (a stalled or timed-out embedding)
stops the embedding of the rest: stored without vectors, for the backfill."""

ProgressFn = Callable[[int, int], None]
EMBED_BATCH = 16  # texts per /api/embed request in backfill and ingest


@dataclass(frozen=True, slots=True)
class TurnRecall:
    """What recall gave a turn: the block (maybe empty) and the query vector to reuse."""

    result: RecallResult | None
    query_vector: list[float] | None
    late_vector: str | None = None  # the line when the query's embedding ran out of time


class TurnMemory:
    """Recall before a turn, save after it, pins, forget, backfill and doc ingest."""

    def __init__(
        self,
        store: MemoryStore,
        embed: EmbedFn | None,
        facts: FactDrawer | None = None,
        *,
        channel: str = "tui",
    ) -> None:
        self.store = store
        self.channel = channel  # where its points come from: "tui" (the chat) or "cli"
        self.embed = embed
        self.facts = facts  # layer 4, in the same database
        self.embed_problem: str | None = None  # why the last embedding gave no vector

    @property
    def job_runs(self) -> JobRuns:
        """The last run of each background job, in the same database."""
        return JobRuns(self.store.db)

    @property
    def hypotheses(self) -> Hypotheses:
        """The dream's cards, in the fact drawer's workspace (every one without a drawer)."""
        return Hypotheses(self.store.db, self.facts)

    async def embed_texts(self, texts: Sequence[str]) -> list[list[float] | None] | None:
        """One embedding request (counted); None when it fails. The texts are masked first,
        whoever calls (remember, recall, backfill, import-doc): a raw secret never reaches
        /api/embed, and a vector is computed from the text that is stored. A vector the
        server got wrong (NaN, infinity, absurd size, zero: `memory.embedding_check`) is None
        in its place: that text is stored without a vector, like when Ollama is down."""
        vectors, _reached = await self._embed_counted(texts)
        return vectors

    async def _embed_counted(
        self, texts: Sequence[str]
    ) -> tuple[list[list[float] | None] | None, bool]:
        """`embed_texts`, and whether its request got to Ollama (`status` counts those)."""
        if self.embed is None or not texts:
            self.embed_problem = "no embedder"
            return None, False
        # Counted before it is sent, so a kill after Ollama got it cannot lose the count;
        # taken back when it found no connection (a kill in between counts one too many).
        await self._count_requests(1)
        try:
            vectors = await self.embed([stored_text(text) for text in texts])
        except EmbeddingFailed as named:  # fail-soft too, and named
            log.warning("embedding failed (%s): points wait for backfill", named)
            self.embed_problem = str(named)
            return None, await self._reached(named.reached)
        except Exception as error:  # noqa: BLE001 - fail-soft: stored without vectors
            log.warning("embedding failed (%r): points wait for backfill", error)
            self.embed_problem = unnamed_embed_problem(error)
            return None, await self._reached(not isinstance(error, ConnectionError))
        if len(vectors) != len(texts):
            self.embed_problem = "Ollama returned the wrong number of vectors"
            return None, True
        checked: list[list[float] | None] = []
        self.embed_problem = None
        dim = self.store.embed_dim
        for vector in vectors:
            problem = vector_problem(vector)
            if problem is not None:
                log.warning("unusable embedding (%s): the point waits for backfill", problem)
                self.embed_problem = f"the embedding server returned {problem}"
            elif dim is not None and len(vector) != dim:
                self.embed_problem = (
                    f"{self.store.config.embed_model} now gives vectors of {len(vector)} numbers,"
                    f" the memory holds {dim}; `straylight jobs run backfill` re-embeds"
                )
            checked.append(None if problem else vector)
        return checked, True

    async def _count_requests(self, n: int) -> None:
        """Add `n` to `status`'s `embed_requests`: /api/embed requests that got to Ollama
        (answered or refused by it), not ones that found no connection."""
        await asyncio.to_thread(self.store.count_embed_requests, n)

    async def _reached(self, reached: bool) -> bool:
        """`reached`, after taking back the count of a request that found no connection."""
        if not reached:
            await self._count_requests(-1)
        return reached

    async def embed_one(self, text: str) -> list[float] | None:
        vectors = await self.embed_texts([text])
        return vectors[0] if vectors else None  # None also for an unusable vector

    async def embed_query(self, query: str) -> list[float] | None:
        """A search's query vector, or None (words only; `embed_problem` says why) when
        Ollama fails or gives no answer within `QUERY_EMBED_SECONDS`."""
        vector, _late = await self._timed_query_vector(query)
        return vector

    async def _timed_query_vector(self, query: str) -> tuple[list[float] | None, bool]:
        """`embed_query`'s vector, and whether it was given up for lateness."""
        try:
            vector = await asyncio.wait_for(self.embed_one(query), QUERY_EMBED_SECONDS)
        except TimeoutError:
            self.embed_problem = (
                f"Ollama did not answer the query embedding within {QUERY_EMBED_SECONDS:g} s"
            )
            return None, True
        # A vector with a problem named (another dimension than the index's) is none: the
        # search goes by words, and the note says why.
        return (vector if self.embed_problem is None else None), False

    async def _timed_save_vector(
        self, text: str, what: str = REPLY_EMBEDDING
    ) -> list[float] | None:
        """The vector of a point being saved, or None (stored without one, found by its
        words until the backfill) when Ollama gives none within `SAVE_EMBED_SECONDS`."""
        try:
            return await asyncio.wait_for(self.embed_one(text), SAVE_EMBED_SECONDS)
        except TimeoutError:
            self.embed_problem = (
                f"Ollama did not answer {what} within {SAVE_EMBED_SECONDS:g} s: "
                "saved without a vector, the backfill embeds it later"
            )
            return None

    async def recall_for_turn(
        self, query: str, *, exclude_contents: Sequence[str], context: str = ""
    ) -> TurnRecall:
        """Hybrid recall for the prompt; fail-soft (None result, cause logged and counted).

        The query vector is the message alone (measured on LoCoMo, embedding it with the
        message it answers lowered vector recall@10 from 0.494 to 0.447); `context` goes
        to the word index only. The vector is reused as the user point's own. The block also
        holds the turns next to the hits (`TURN_TUNING`), cut first by the budget."""
        if not self.store.config.enabled or not query.strip():
            return TurnRecall(None, None)
        vector, timed_out = await self._timed_query_vector(query)
        late = f"{self.embed_problem}: this turn recalled by words only" if timed_out else None
        try:
            result = await asyncio.to_thread(
                functools.partial(
                    self.store.recall,
                    query,
                    vector=vector,
                    exclude_contents=exclude_contents,
                    tuning=TURN_TUNING,
                )
            )
        except Exception:
            log.exception("recall failed; the turn goes on without recalled context")
            await asyncio.to_thread(self.store.count_recall_failure)
            return TurnRecall(None, vector, late)
        return TurnRecall(result, vector, late)

    async def save_turn(
        self,
        *,
        user_text: str,
        user_vector: list[float] | None,
        reply_text: str,
        conversation_id: str,
        recalled_texts: Sequence[str] = (),
        context: str = "",
        earlier: str = "",
    ) -> tuple[SaveResult, SaveResult]:
        """Save the user message and the final reply as two points, through the filter.

        Each point's words are indexed with its neighbours: the user's message with the
        message before (`earlier`), the reply it followed (`context`) and the reply it got;
        the reply with the reply before it and the user's message (LoCoMo hybrid recall@10
        0.665 alone → 0.750 with the turns next to it → 0.769 with two turns back,
        `bench/locomo_round2.py`, leave-one-conversation-out). The reply is embedded only
        if the filter keeps it (≤ 1 request here)."""
        if not self.store.config.enabled:
            return SaveResult(None, "disabled"), SaveResult(None, "disabled")
        save = self.store.save
        try:
            await asyncio.to_thread(self.store.load_dedup_memory, conversation_id)
            user = await asyncio.to_thread(
                functools.partial(
                    save,
                    "user",
                    user_text,
                    conversation_id=conversation_id,
                    channel=self.channel,
                    vector=user_vector,
                    context=user_context(earlier, context, reply_text),
                )
            )
            rule = await asyncio.to_thread(
                self.store.skip_rule, "assistant", reply_text, conversation_id, recalled_texts
            )
            if rule is not None:
                return user, SaveResult(None, rule)
            reply_vector = await self._timed_save_vector(reply_text)
            reply = await asyncio.to_thread(
                functools.partial(
                    save,
                    "assistant",
                    reply_text,
                    conversation_id=conversation_id,
                    channel=self.channel,
                    vector=reply_vector,
                    use_filter=False,
                    context=reply_context(context, user_text),
                )
            )
        except Exception:
            log.exception("saving the turn's points failed")
            raise
        return user, reply

    async def saved_points(self, text: str) -> list[Point]:
        """The points holding exactly this message, as the save path stored it (masked and
        stripped): for a message whose point id nobody kept (a continued conversation)."""
        digest = content_hash(stored_text(text))
        return await asyncio.to_thread(self.store.points.find_by_hash, digest)

    async def count_turn(self) -> int:
        """One more turn since memstatus last ran (kept in the database); the new count."""
        from memory.memstatus_notice import count_turn

        return await asyncio.to_thread(count_turn, self.store.db)

    async def remember(self, text: str, *, conversation_id: str = "", role: Role = "user") -> int:
        """Pin `text`; `PointTooLarge` (nothing stored) over `TEXT_MAX_CHARS`."""
        if (too_long := text_size_problem(text)) is not None:
            raise PointTooLarge(too_long)
        vector = await self._timed_save_vector(text, "the embedding")  # (MCP memory_save)
        return await asyncio.to_thread(
            functools.partial(
                self.store.remember,
                text,
                conversation_id=conversation_id,
                vector=vector,
                channel=self.channel,
                role=role,
            )
        )

    async def backfill(self, *, limit: int | None = None) -> int:
        """Embed points stored without a vector (or with another model's, or of another
        dimension); returns how many.

        A whole batch of vectors of one new dimension under the same model name (a model
        re-pulled) changes the store's dimension (`MemoryStore.change_dimension`): then every
        point with a vector of the old size is re-embedded too."""
        pending = await asyncio.to_thread(self.store.ids_to_embed)
        if limit is not None:
            pending = pending[:limit]
        done = taken = 0
        while pending:
            batch, pending = pending[:EMBED_BATCH], pending[EMBED_BATCH:]
            taken += len(batch)
            texts = await asyncio.to_thread(self.store.texts_of, batch)
            order = [pid for pid in batch if pid in texts]
            vectors = await self.embed_texts([texts[pid] for pid in order])
            if vectors is None:
                break  # Ollama is away: try again next time
            new_dim = _one_new_dimension(vectors, self.store.embed_dim)
            if new_dim is not None:  # every old-size vector waits now
                await asyncio.to_thread(self.store.change_dimension, new_dim)
                again = await asyncio.to_thread(self.store.ids_to_embed)
                pending = [pid for pid in again if pid not in set(batch)]
                if limit is not None:
                    pending = pending[: max(0, limit - taken)]
            done += await asyncio.to_thread(
                self.store.store_vectors, list(zip(order, vectors, strict=True))
            )
        return done

    async def ingest_doc(self, path: Path, *, progress: ProgressFn | None = None) -> IngestReport:
        """Ingest a Markdown file as pinned doc points, idempotently (see doc_splitter).

        Unchanged entries cost no embedding request; new and changed ones are embedded in
        batches (each request well within the HTTP timeout), with `progress(done, total)`."""
        resolved = path.expanduser().resolve()
        if (too_large := doc_size_problem(resolved)) is not None:  # before reading it
            raise PointTooLarge(too_large)
        # a byte-order mark (Windows editors save one) is no text: it hid the first heading
        text = await asyncio.to_thread(resolved.read_text, encoding="utf-8-sig")
        sections = split_markdown(text)
        for entry in sections:  # every section checked before any is stored
            if (too_long := section_size_problem(path, entry.key, entry.content)) is not None:
                raise PointTooLarge(too_long)
        entries = masked_keys([(entry.key, entry.content) for entry in sections])
        prefix = mask_secrets(f"doc:{resolved}#")
        while not self.store.ingesting.acquire(blocking=False):  # cancellable, unlike a
            await asyncio.sleep(0.05)  # blocking acquire in a thread
        try:
            return await self._ingest_planned(prefix, entries, progress)
        finally:
            self.store.ingesting.release()

    async def _ingest_planned(
        self, prefix: str, entries: list[tuple[str, str]], progress: ProgressFn | None
    ) -> IngestReport:
        """Plan against the stored points, embed what the plan needs, write it."""
        plan = await asyncio.to_thread(self.store.plan_ingest, prefix, entries)
        todo = plan.texts_to_embed()
        vectors: dict[str, Sequence[float] | None] = {}
        requests = 0  # the report counts requests that got to Ollama, as `status` does
        problem: str | None = None  # the first batch's problem: a later batch's success
        for start in range(0, len(todo), EMBED_BATCH):  # does not undo it
            batch = todo[start : start + EMBED_BATCH]
            asked = time.monotonic()
            got, reached = await self._embed_counted([text for _source, text in batch])
            slow = time.monotonic() - asked >= SLOW_EMBED_FAILURE_SECONDS
            problem = problem or self.embed_problem
            requests += reached
            for index, (source, _text) in enumerate(batch):
                vectors[source] = _compact(got[index]) if got else None
            if got is None and (slow or not reached):  # a timeout, Ollama away: the rest
                # waits for the backfill too (each batch waited the whole HTTP timeout again:
                # 15 min for 40 sections); a quick refusal (one HTTP 500) lets the next try
                vectors.update((source, None) for source, _text in todo[start + len(batch) :])
                if progress is not None:
                    progress(len(todo), len(todo))
                break
            if progress is not None:
                progress(min(start + EMBED_BATCH, len(todo)), len(todo))
        self.embed_problem = problem
        report = await asyncio.to_thread(self.store.apply_ingest, plan, vectors)
        return replace(report, embed_requests=requests)


def _compact(vector: Sequence[float] | None) -> Sequence[float] | None:
    """`vector` as float32, as an import holds each batch's until the write: the client's
    lists of Python floats cost ~32 B a number (10,000 sections of 768-d vectors: ~245 MB,
    not 31). One numpy cannot read as finite floats stays as it came, for the store's check
    to name what is wrong with it."""
    import numpy as np

    if vector is None:
        return None
    try:
        packed = np.asarray(vector, dtype=np.float32)
    except (TypeError, ValueError):
        return vector
    if packed.ndim != 1 or not bool(np.isfinite(packed).all()):
        return vector
    return cast("Sequence[float]", packed)  # a 1-D array reads as a sequence of floats


def masked_keys(entries: Sequence[tuple[str, str]]) -> list[tuple[str, str]]:
    """Entries with their keys (heading paths, stored in `points.source`) masked like the
    content they head; two headings that differ only by a secret stay two keys
    (`Token [REDACTED:github_token] (2)`)."""
    used: set[str] = set()
    masked: list[tuple[str, str]] = []
    for key, content in entries:
        base: str = stored_text(key)
        unique = base
        count = 1
        while unique in used:
            count += 1
            unique = f"{base} ({count})"
        used.add(unique)
        masked.append((unique, content))
    return masked


def _one_new_dimension(
    vectors: Sequence[Sequence[float] | None], current: int | None
) -> int | None:
    """The dimension every vector of a batch has, when it is not the store's (and the store
    has one): the embedding model behind the same name changed."""
    sizes = {len(vector) for vector in vectors if vector is not None}
    if current is None or len(sizes) != 1 or None in vectors:
        return None
    size = sizes.pop()
    return size if size != current else None
