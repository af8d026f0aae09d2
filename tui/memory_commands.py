"""The TUI's layer-3 slash commands: /remember, /forget, /recall, /memstatus, /import.

Each runs the store call in a thread and answers with a notice in the chat log.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING

from memory.point_limits import PointTooLarge

if TYPE_CHECKING:
    from memory.turn_memory import TurnMemory

Notice = Callable[..., Awaitable[None]]
MEMORY_OFF = "memory is off (memory_enabled = false)"
PROGRESS_MIN_SECTIONS = 64  # an /import of more sections to embed shows its progress


async def run_memory_command(
    memory: TurnMemory | None, unavailable: str, command: str, argument: str, notice: Notice
) -> None:
    """Run one memory command; `unavailable` says why `memory` is None."""
    if memory is None:
        await notice(f"Memory is not available: {unavailable}", kind="error")
        return
    if command == "/remember":
        await _remember(memory, argument, notice)
    elif command == "/forget":
        await _forget(memory, argument, notice)
    elif command == "/recall":
        await _recall(memory, argument, notice)
    elif command == "/memstatus":
        await _memstatus(memory, notice)
    elif command == "/import":
        await _import(memory, argument, notice)


async def _remember(memory: TurnMemory, text: str, notice: Notice) -> None:
    if not text:
        await notice("Usage: /remember TEXT", kind="error")
        return
    point_id = await memory.remember(text)
    point = await asyncio.to_thread(memory.store.points.get, point_id)
    if memory.store.config.enabled and point is not None and point.embedding is None:
        why = memory.embed_problem or "Ollama was not reachable"  # as `remember` says it
        await notice(
            f"Remembered #{point_id} (pinned; no vector yet: {why}; found by its words "
            "until backfill).",
            kind="warning",
        )
    elif memory.store.config.enabled:
        await notice(f"Remembered #{point_id} (pinned).")
    else:
        await notice(
            f"Remembered #{point_id} (pinned). {memory_off_note(point_id)}.", kind="warning"
        )


def import_path_problem(path: Path) -> str | None:
    """Why `path` cannot be imported as a document (`import-doc`, `/import`), or None: a
    folder, something that is not a regular file (a FIFO, a device, a socket: never opened,
    a FIFO would block), one this user may not read, or nothing at all."""
    if path.is_file():
        if not os.access(path, os.R_OK):  # said "unexpected error: PermissionError", exit 1
            return f"cannot read {path}: permission denied"
        return None
    if path.is_dir():
        return f"{path} is a directory, not a Markdown file"
    if path.exists():
        return f"{path} is not a regular file, not a Markdown file"
    return f"no such file: {path}"


def memory_off_note(point_id: int) -> str:
    """What `remember` and `/remember` add while memory is off: the pin is an explicit
    request, so it is stored, but no prompt gets recalled context until memory is on."""
    return f"{MEMORY_OFF}: #{point_id} is stored, but not recalled into prompts until memory is on"


async def _forget(memory: TurnMemory, argument: str, notice: Notice) -> None:
    if not argument.lstrip("#").isdigit():
        await notice("Usage: /forget ID (the number shown as #ID)", kind="error")
        return
    point_id = int(argument.lstrip("#"))
    gone = await asyncio.to_thread(memory.store.forget, point_id)
    if gone:
        await notice(f"Forgot #{point_id}.")
    else:
        await notice(f"No memory point #{point_id}.", kind="error")


async def _recall(memory: TurnMemory, query: str, notice: Notice) -> None:
    if not query:
        await notice("Usage: /recall QUERY", kind="error")
        return
    vector = await memory.embed_query(query)
    result = await asyncio.to_thread(memory.store.recall, query, vector=vector)
    # as `straylight recall` says it: without the query's vector, only words were matched
    why = memory.embed_problem or "no query vector"
    words_only = "" if vector is not None else f" (words only: {why})"
    if not result.hits:
        off = "" if memory.store.config.enabled else " (memory is off: memory_enabled = false)"
        await notice(f"Nothing recalled.{off}{words_only}")
        return
    lines = [
        f"#{hit.id} · {hit.role} · {hit.created_at.astimezone():%Y-%m-%d} · {hit.score:.2f}"
        f"{' · pinned' if hit.pinned else ''} — {_first_line(hit.content)}"
        for hit in result.hits
    ]
    await notice(f"Recalled{words_only}:\n" + "\n".join(lines))
    if not memory.store.config.enabled:
        await notice(
            f"{MEMORY_OFF}: none of this reaches a prompt until memory is on",
            kind="warning",
        )


async def _memstatus(memory: TurnMemory, notice: Notice) -> None:
    status = await asyncio.to_thread(memory.store.status)
    points, index = status["points"], status["index"]
    skips = ", ".join(f"{rule} {count}" for rule, count in status["skips"].items()) or "none"
    from tui.display_text import counted

    await notice(
        f"Memory: {counted(points['total'], 'point')} ({points['pinned']} pinned, "
        f"{points['without_vector']} without vector) · index {index['state']} "
        f"({index['size']}) · RAM ~{status['ram_estimate_bytes'] / 2**20:.1f} MiB, "
        f"headroom {status['headroom']} · skipped: {skips} · "
        f"{counted(status['embed_requests'], 'embedding request')}",
        kind="warning" if status["headroom"] != "ok" else "info",
    )


async def _import(memory: TurnMemory, argument: str, notice: Notice) -> None:
    if not argument:
        await notice("Usage: /import PATH", kind="error")
        return
    if len(argument) >= 2 and argument[0] == argument[-1] and argument[0] in "'\"":
        argument = argument[1:-1]  # a path pasted with quotes, as `/image` takes it
    path = Path(argument).expanduser()
    if (why := import_path_problem(path)) is not None:  # the words of `straylight import-doc`
        await notice(f"Cannot import: {why}", kind="error")
        return
    await notice(f"Importing {path}…")
    shown: list[asyncio.Future[None]] = []
    quarters_shown: set[int] = set()

    def progress(done: int, total: int) -> None:
        """A long ingest says how far it got, at most once a quarter (like the CLI's
        stderr lines, which come once a batch)."""
        quarter = 4 * done // total
        if total > PROGRESS_MIN_SECTIONS and quarter not in quarters_shown:
            quarters_shown.add(quarter)
            shown.append(asyncio.ensure_future(notice(f"Embedding {done}/{total} sections…")))

    try:
        report = await memory.ingest_doc(path, progress=progress)
    except PointTooLarge as error:  # nothing was stored
        await notice(f"Cannot import: {error}", kind="error")
        return
    except (OSError, UnicodeDecodeError) as error:
        await notice(f"Cannot import {path}: {error}", kind="error")
        return
    finally:
        await asyncio.gather(*shown)
    await notice(f"Imported {path}: {report.summary()}.")
    note = report.vector_note(memory.embed_problem)
    if note is not None:
        await notice(f"{note}.", kind="warning")


def _first_line(text: str, limit: int = 70) -> str:
    line = " ".join(text.split())
    return line if len(line) <= limit else line[: limit - 1] + "…"
