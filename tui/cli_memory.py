"""The layer-3 commands: `remember`, `forget`, `recall`, `import-doc`, and status's memory part."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from agent.gateway_errors import EXIT_NOT_FOUND
from agent.ollama_gateway import OllamaGateway
from agent.settings import Settings
from agent.workspace import resolve_workspace
from memory.context_meta import context_status, load_context_report
from memory.memory_store import MemoryConfig, RecallResult
from memory.recall_block import join_recall_block, placed_entries
from tui.cli_output import for_terminal, print_json
from tui.memory_commands import memory_off_note
from tui.memory_session import MemorySession

EXIT_OK = 0


async def remember(settings: Settings, text: str, *, as_json: bool) -> int:
    gateway = OllamaGateway.from_config(settings.ollama)
    try:
        with MemorySession(settings, gateway, channel="cli") as memory:
            point_id = await memory.remember(text)
            point = memory.store.points.get(point_id)
    finally:
        await gateway.aclose()
    embedded = point is not None and point.embedding is not None
    why = memory.embed_problem or "Ollama was not reachable"
    no_vector = f"no vector yet: {why}; found by its words until backfill"
    if as_json:  # stdout stays {"id": n}; the missing vector is a note on stderr
        print_json({"id": point_id})
        if not embedded:
            print(f"straylight: note: {no_vector}", file=sys.stderr)
    else:
        print(f"remembered #{point_id}{'' if embedded else f' ({no_vector})'}")
    if not settings.memory.enabled:
        print(f"straylight: note: {memory_off_note(point_id)}", file=sys.stderr)
    return EXIT_OK


async def forget(settings: Settings, point_id: int, *, as_json: bool) -> int:
    gateway = OllamaGateway.from_config(settings.ollama)
    try:
        with MemorySession(settings, gateway) as memory:
            gone = memory.store.forget(point_id)
    finally:
        await gateway.aclose()
    if as_json:
        print_json({"id": point_id, "forgotten": gone})
    elif gone:
        print(f"forgot #{point_id}")
    if not gone:
        print(f"straylight: no memory point #{point_id}", file=sys.stderr)
        return EXIT_NOT_FOUND
    return EXIT_OK


async def recall(
    settings: Settings, query: str, *, k: int | None, role: str | None = None, as_json: bool
) -> int:
    from store.database import database_path

    if not database_path(settings.home).exists():  # nothing stored yet: create nothing
        result, vector = RecallResult([], ""), None
        return _print_recall(
            result, as_json=as_json, no_vector_because=None, config=settings.memory
        )
    gateway = OllamaGateway.from_config(settings.ollama)
    try:
        with MemorySession(settings, gateway, read_only=True) as memory:
            vector = await memory.embed_query(query)
            # k and the block's cap from this command's settings, not the store's: an owner
            # serving it has its memory open with its own (`MEMORY_TOP_K=1 straylight recall`)
            cap = settings.memory.max_chars
            if role is None:
                k = k or settings.memory.top_k
                result = memory.store.recall(query, vector=vector, k=k, max_chars=cap)
            else:
                wide = memory.store.recall(query, vector=vector, k=ROLE_POOL, max_chars=cap)
                result = only_role(wide, role, k or settings.memory.top_k, settings.memory)
    finally:
        await gateway.aclose()
    if not settings.memory.enabled:  # searched all the same; no prompt gets the block
        result = RecallResult(result.hits, "")
    why = None if vector is not None else memory.embed_problem or "Ollama unreachable"
    return _print_recall(result, as_json=as_json, no_vector_because=why, config=settings.memory)


# `recall --role`: the hits of that role among the same fused candidates the chat ranks (50
# from each ranking), so the ranking is the chat's; a role rare among them may give fewer.
ROLE_POOL = 100


def only_role(result: RecallResult, role: str, k: int, config: MemoryConfig) -> RecallResult:
    """The first `k` pinned and `k` other hits of `role`, in recall's order, and their block."""
    pinned = [hit for hit in result.hits if hit.pinned and hit.role == role][:k]
    others = [hit for hit in result.hits if not hit.pinned and hit.role == role][:k]
    hits = pinned + others
    entries, placed = placed_entries(hits, config.max_chars)
    return RecallResult(hits, join_recall_block(entries), entries, placed=placed)


def recall_json(result: RecallResult) -> dict[str, Any]:
    """`recall --json`: recall's fields plus `date`, the local day of each hit (its daily
    log's day), and `in_block`, whether the hit's entry is in `block` (what the prompt
    gets: the budget cuts the lowest-ranked hits whole; memory off gives an empty block)."""
    from memory.secret_masking import mask_secrets

    data = result.to_json()
    in_block = result.hits_in_block()
    for place, (hit, shown) in enumerate(zip(result.hits, data["hits"], strict=True)):
        shown["date"] = hit.created_at.astimezone().date().isoformat()
        shown["in_block"] = place in in_block
        shown["content"] = str(mask_secrets(shown["content"]))  # (see `_print_recall`)
    data["block"] = str(mask_secrets(data["block"]))
    return data


def _print_recall(
    result: RecallResult, *, as_json: bool, no_vector_because: str | None, config: MemoryConfig
) -> int:
    """Print the block; `no_vector_because` (why the query has no vector) adds the
    words-only note, naming the cause (an unreachable Ollama, or a NaN vector from a
    reachable one). Hits that give no block are counted, with the reason."""
    if as_json:
        print_json(recall_json(result))
        return EXIT_OK
    if result.block:  # masked again: a point stored before its secret's pattern existed
        from memory.secret_masking import mask_secrets

        print(for_terminal(mask_secrets(result.block)))
    elif result.hits:
        why = (
            f"none fits memory_max_chars = {config.max_chars}"
            if config.enabled
            else "memory is off: memory_enabled = false"
        )
        found = f"{len(result.hits)} hit{'s' if len(result.hits) != 1 else ''} found"
        print(f"nothing recalled into the prompt ({found}, {why})", file=sys.stderr)
    else:
        print("nothing recalled", file=sys.stderr)  # stdout stays the block: empty
    if no_vector_because is not None:
        note = f"straylight: note: no query vector ({no_vector_because}): words only"
        print(note, file=sys.stderr)
    return EXIT_OK


async def import_doc(settings: Settings, path: Path, *, as_json: bool) -> int:
    if not path.is_file():
        raise FileNotFoundError(f"no such file: {path}")
    gateway = OllamaGateway.from_config(settings.ollama)

    def progress(done: int, total: int) -> None:
        if total > 16:
            print(f"embedding {done}/{total}…", file=sys.stderr, flush=True)

    try:
        with MemorySession(settings, gateway) as memory:
            report = await memory.ingest_doc(path, progress=progress)
    finally:
        await gateway.aclose()
    if as_json:
        print_json(report.to_json())
    else:
        print(for_terminal(f"{path}: {report.summary()}"))
    note = report.vector_note(memory.embed_problem)
    if note is not None:
        print(f"straylight: note: {note}", file=sys.stderr)
    return EXIT_OK


def memory_status(settings: Settings) -> dict[str, Any]:
    """The memory fields of `status`; a data dir without a database reports empty memory
    (and is not created)."""
    from memory.headroom import headroom
    from store.data_dir_check import check_not_in_use
    from store.database import database_path

    if not database_path(settings.home).exists():
        if settings.home.is_dir():  # in use, even before its database exists? say so
            check_not_in_use(settings.home)
        return _empty_status(settings.memory, resolve_workspace(settings.workspace))
    gateway = OllamaGateway.from_config(settings.ollama)
    with MemorySession(settings, gateway, read_only=True) as memory:
        memory.store.wait_until_ready(timeout=60)
        status = memory.store.status()
        # the levels of this command's settings, not the store's: an owner serving it has
        # its memory open with its own (`MEMORY_RAM_CRIT_BYTES=1 straylight status`)
        config = settings.memory
        status["headroom"] = headroom(
            status["ram_estimate_bytes"], config.ram_warn_bytes, config.ram_crit_bytes
        )
        if memory.facts is not None:
            status["facts"] = fact_status(memory.facts.counts(), len(memory.facts.pending()))
            status["workspace"] = memory.facts.workspace
        counts = memory.hypotheses.counts(settings.clock.now())
        status["hypotheses"] = {"open": counts["open"], "overdue": counts["overdue"]}
        report = load_context_report(memory.store.db)
        status["context"] = context_status(report)
        status["context_notes"] = list(report.get("notes") or []) if report else []
        status["index_note"] = memory.store.index_note()
        return status


def fact_status(counts: dict[str, int], pending: int) -> dict[str, int]:
    """`status`'s `facts`: {active, stale, retired, pending_candidates}."""
    return {
        "active": counts.get("active", 0),
        "stale": counts.get("stale", 0),
        "retired": counts.get("retired", 0),
        "pending_candidates": pending,
    }


def _empty_status(config: MemoryConfig, workspace: str) -> dict[str, Any]:
    """No database yet: what an empty memory reports once opened (its fixed RAM cost too)."""
    from memory.deferred_store import empty_status

    return {
        **empty_status(config),
        "facts": fact_status({}, 0),
        "workspace": workspace,
        "hypotheses": {"open": 0, "overdue": 0},
        "context": context_status(None),
        "context_notes": [],
        "index_note": None,
    }
