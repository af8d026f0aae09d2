"""`straylight status [--json]`: Ollama, the data dir, longterm.md, today's log, the memory
(points, index, RAM headroom), the last prompt's context window, facts and hypotheses."""

from __future__ import annotations

import asyncio
import json
from typing import Any

from agent.gateway_errors import EXIT_OK
from agent.settings import Settings
from tui.cli_output import for_terminal, one_line
from tui.display_text import counted


async def status(settings: Settings, *, as_json: bool) -> int:
    from agent.ollama_gateway import OllamaGateway
    from store.daily_log import DailyLog
    from store.longterm_file import LongtermFile

    gateway = OllamaGateway(
        settings.ollama.host,
        read_timeout=settings.ollama.connect_timeout_seconds,
        connect_timeout=settings.ollama.connect_timeout_seconds,
    )
    try:
        ollama = await gateway.check()
    finally:
        await gateway.aclose()
    longterm = LongtermFile(settings.home / "longterm.md", settings.longterm_budget_bytes).load()
    today = settings.clock.now().astimezone().date()
    today_messages = DailyLog(settings.home / "conversation").read_day(today)
    longterm_warning = longterm.warning
    if longterm_warning is None and longterm.over_budget:
        longterm_warning = (
            f"longterm.md is {longterm.size_bytes:,} bytes, over its budget of "
            f"{longterm.budget_bytes:,} bytes: every turn pays for it"
        )
    elif longterm_warning is None and longterm.unclosed_comment_line is not None:
        longterm_warning = (
            f"longterm.md: the comment opened on line {longterm.unclosed_comment_line:,} is "
            "never closed with -->, so it and everything after it are sent to the model"
        )
    from tui.cli_memory import memory_status

    memory = await asyncio.to_thread(memory_status, settings)
    context_notes: list[str] = memory.pop("context_notes", [])
    index_note: str | None = memory.pop("index_note", None)  # plain output only
    report: dict[str, Any] = {
        "home": str(settings.home),
        **memory,
        "longterm_bytes": longterm.size_bytes,
        "ollama": {
            "host": ollama.host,
            "reachable": ollama.reachable,
            "version": ollama.version,
            "model": settings.ollama.model,
            "model_pulled": ollama.has_model(settings.ollama.model) if ollama.reachable else None,
            "embed_model": settings.memory.embed_model,
            "embed_model_pulled": (
                ollama.has_model(settings.memory.embed_model) if ollama.reachable else None
            ),
            "error": ollama.error,
            "missing_models": _missing_json(settings, ollama.models if ollama.reachable else None),
        },
        "longterm": {
            "path": str(longterm.path),
            "size_bytes": longterm.size_bytes,
            "budget_bytes": longterm.budget_bytes,
            "over_budget": longterm.over_budget,
            "warning": longterm_warning,
        },
        "log": {"today": today.isoformat(), "messages_today": len(today_messages)},
    }
    if as_json:
        print(json.dumps(report, ensure_ascii=False, indent=2))
        return EXIT_OK
    # offline, or error: answered but failed (Ollama's words: one line, no ESC sequence)
    down = f"{ollama.state}: {one_line(ollama.error or '')}"
    state = f"online, Ollama {ollama.version}" if ollama.reachable else down
    _say(f"data dir   {settings.home}")
    _say(f"ollama     {ollama.host} ({state})")  # the server's version too
    pulled = report["ollama"]["model_pulled"]
    model_note = "" if pulled is None else (" (pulled)" if pulled else " (not pulled)")
    _say(f"model      {settings.ollama.model}{model_note}")
    for missing in report["ollama"]["missing_models"] or ():
        _say(f"missing    {_missing_text(missing)}")
    _say(f"longterm   {longterm.size_bytes:,} / {longterm.budget_bytes:,} bytes")
    if longterm_warning:
        _say(f"warning    {longterm_warning}")
    _say(f"today      {counted(len(today_messages), 'message')} in {today.isoformat()}.md")
    points = memory["points"]
    _say(
        f"memory     {counted(points['total'], 'point')} ({points['user']:,} user, "
        f"{points['assistant']:,} assistant, {points['doc']:,} doc; {points['pinned']:,} pinned, "
        f"{points['without_vector']:,} without vector)"
    )
    skips = ", ".join(f"{rule} {count}" for rule, count in memory["skips"].items()) or "none"
    _say(f"skipped    {skips}")
    index = memory["index"]
    note = f" ({index_note})" if index_note else ""
    _say(f"index      {index['state']}, {counted(index['size'], 'vector')}{note}")
    mib = memory["ram_estimate_bytes"] / 2**20
    _say(f"ram        ~{mib:,.1f} MiB estimated, headroom {memory['headroom']}")
    embed_pulled = report["ollama"]["embed_model_pulled"]
    embed_note = (
        ""
        if embed_pulled is None
        else " (pulled)"
        if embed_pulled
        else f" (not pulled: run `straylight pull {settings.memory.embed_model}`)"
    )
    _say(
        f"embedding  {settings.memory.embed_model}{embed_note}, "
        f"{counted(memory['embed_requests'], 'request')} so far"
    )
    if (embedding := memory.get("embedding")) and embedding["changed_from"]:
        _say(
            f"warning    embedding model changed from {embedding['changed_from']}: "
            f"{counted(embedding['to_embed'], 'point')} "
            f"wait{'s' if embedding['to_embed'] == 1 else ''} for backfill "
            "(recall uses words meanwhile)"
        )
    cards = memory["hypotheses"]
    _say(f"hypotheses {cards['open']} open, {cards['overdue']} overdue")
    facts = memory["facts"]
    _say(
        f"facts      {facts['active']} active, {facts['stale']} stale, {facts['retired']} "
        f"retired; {counted(facts['pending_candidates'], 'candidate')} pending "
        f"({memory['workspace']})"
    )
    _say(f"context    {context_line(memory['context'], context_notes)}")
    return EXIT_OK


def _say(line: str) -> None:
    """A line of the report: names and paths from flags, config.toml and Ollama may hold
    control characters (`--model $'\\e]52;…'` writes the clipboard), shown as symbols on a
    terminal as every other command shows them."""
    print(for_terminal(line))


def _missing_json(settings: Settings, pulled: tuple[str, ...] | None) -> list[Any] | None:
    """`[{"role", "model", "fix"}]` for the chat and embedding models Ollama does not have;
    None when Ollama could not be asked."""
    from agent.model_catalog import missing_models

    if pulled is None:
        return None
    missing = missing_models(
        pulled, chat_model=settings.ollama.model, embed_model=settings.memory.embed_model
    )
    return [model.to_json() for model in missing]


def _missing_text(missing: dict[str, Any]) -> str:
    from agent.model_catalog import MissingModel

    return MissingModel(missing["role"], missing["model"]).line()


def context_line(context: dict[str, Any], notes: list[str]) -> str:
    """`3.1k / 8k tokens (ok) — history: 6 oldest messages left out` for the last turn."""
    from agent.context_budget import format_tokens

    if context.get("window") is None or context.get("last_prompt_tokens") is None:
        return "not known yet (measured by the next chat turn or ask)"
    used = f"{format_tokens(context['last_prompt_tokens'])} / {format_tokens(context['window'])}"
    cut = f" — {'; '.join(notes)}" if notes else ""
    return f"{used} tokens ({context['headroom']}){cut}"
