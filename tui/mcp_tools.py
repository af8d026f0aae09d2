"""What `straylight mcp`'s tools do: each runs one `straylight … --json` command through
`CommandRunner` and turns its output into the tool's result.

The server never opens the memory itself: the command does, inside whichever process owns
the data dir (this one after it took the data dir over, see `tui/command_runner.py`), so a
tool behaves exactly like the command a user would type, filter, masking and approval gate
included. A failing command
becomes a `ToolError` carrying its one-line message; no traceback reaches the client.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mcp.server.mcpserver.exceptions import ToolError

from tui.command_runner import CommandRunner
from tui.mcp_doc_roots import allowed_doc

PROG_PREFIX = "straylight: "
SEARCH_FIELDS = ("id", "role", "date", "score", "pinned", "content")
MIN_HIT_CHARS = 500
"""The least of a hit's content `memory_search` returns, whatever `memory_max_chars` says."""
APPROVAL_NOTE = (
    "This is a candidate, not a fact: it waits for the user's approval (the Straylight chat "
    "asks, or `straylight candidates approve {id}`). Until approved, memory_read does not "
    "return it and no prompt sees it."
)


def cut_content(point_id: int, content: str, max_chars: int) -> str:
    """`content` whole when it has at most `max_chars` characters (at least `MIN_HIT_CHARS`);
    else its first `max_chars` and a line saying it was cut, the memory's id and length and
    how to read it whole. A point larger than the chat's whole recall block
    (`memory_max_chars`) would never reach a prompt whole either; over MCP it would hand
    another agent megabytes (a pasted log) for one search."""
    limit = max(max_chars, MIN_HIT_CHARS)
    if len(content) <= limit:
        return content
    return (
        f"{content[:limit]}\n[cut: memory #{point_id} has {len(content)} characters, the first "
        f"{limit} are shown; `straylight recall --json` with the same query gives it whole]"
    )


def one_line(stderr: str, argv: Sequence[str], exit_code: int) -> str:
    """The command's error line (its last non-empty stderr line, without the program name)."""
    lines = [line.strip() for line in stderr.splitlines() if line.strip()]
    if not lines:
        return f"straylight {argv[0]} failed (exit {exit_code})"
    last = lines[-1]
    return last[len(PROG_PREFIX) :] if last.startswith(PROG_PREFIX) else last


NOTE_PREFIX = f"{PROG_PREFIX}note: "  # a command's note on stderr (`remember`: no vector)


@dataclass
class MemoryTools:
    """The seven memory tools over one runner; `global_argv` are the server's own options
    (`--home`, `--ollama-host`, …), given to every command."""

    runner: CommandRunner
    global_argv: list[str]
    doc_roots: list[Path]
    hit_max_chars: int = 4000
    """`memory_search` cuts each hit's content here (`memory_max_chars`, see `cut_content`)."""
    unusable: Callable[[], str | None] | None = None
    """Why the data dir may not be used (it failed its check when the server started), asked
    before each call until it answers None."""
    # One command at a time per client: the tools' order is the order the client asked in.
    _turn: asyncio.Lock = field(default_factory=asyncio.Lock)

    async def check_usable(self) -> None:
        """ToolError naming why the data dir may not be used, while its check fails (the
        tools and the resources alike)."""
        if self.unusable is not None:
            if (problem := await asyncio.to_thread(self.unusable)) is not None:
                raise ToolError(problem)
            self.unusable = None  # fixed: from now on the commands check for themselves

    async def run_json(self, command: Sequence[str], *rest: str, stdin: str | None = None) -> Any:
        """`straylight COMMAND [global options] --json REST…`, its stdout parsed as JSON."""
        return (await self._run_json_noted(command, *rest, stdin=stdin))[0]

    async def _run_json_noted(
        self, command: Sequence[str], *rest: str, stdin: str | None = None
    ) -> tuple[Any, list[str]]:
        """`run_json`, and the notes the command wrote to stderr (`straylight: note: …`)."""
        argv = [*command, *self.global_argv, "--json", *rest]
        async with self._turn:
            await self.check_usable()
            outcome = await self.runner.run(argv, stdin=stdin)
        if outcome.exit_code != 0:
            raise ToolError(one_line(outcome.stderr, argv, outcome.exit_code))
        notes = [
            line.removeprefix(NOTE_PREFIX)
            for line in outcome.stderr.splitlines()
            if line.startswith(NOTE_PREFIX)
        ]
        try:
            return json.loads(outcome.stdout), notes
        except json.JSONDecodeError:
            raise ToolError(f"straylight {command[0]} printed no JSON") from None

    async def search(self, query: str, k: int | None, role: str | None) -> dict[str, Any]:
        if not query.strip():
            raise ToolError("memory_search needs a non-empty query")
        options = [] if k is None else ["--k", str(k)]
        if role is not None:
            options += ["--role", role]
        data = await self.run_json(["recall"], *options, "--", query)
        hits = [{name: hit.get(name) for name in SEARCH_FIELDS} for hit in data.get("hits", [])]
        for hit in hits:
            if isinstance(hit["content"], str):
                hit["content"] = cut_content(hit["id"], hit["content"], self.hit_max_chars)
        return {"hits": hits}

    async def save(self, text: str) -> dict[str, Any]:
        if not text.strip():
            raise ToolError("memory_save needs non-empty text")
        data, notes = await self._run_json_noted(["remember"], "-", stdin=text)
        if notes:  # saved without a vector: found by its words until backfill
            return {"id": data["id"], "note": " ".join(notes)}
        return {"id": data["id"]}

    async def forget(self, point_id: int) -> dict[str, Any]:
        data = await self.run_json(["forget"], "--", str(point_id))
        return {"id": data["id"], "forgotten": bool(data.get("forgotten"))}

    async def status(self) -> dict[str, Any]:
        data: dict[str, Any] = await self.run_json(["status"])
        return data

    async def load_doc(self, path: str) -> dict[str, Any]:
        try:
            target = allowed_doc(path, self.doc_roots)
        except ValueError as refused:
            raise ToolError(str(refused)) from None
        data: dict[str, Any] = await self.run_json(["import-doc"], "--", str(target))
        return {"path": str(target), **data}

    async def read(self, key: str | None, query: str | None) -> dict[str, Any]:
        key = key.strip() if key else None
        query = query.strip() if query else None
        if not key and not query:
            raise ToolError("memory_read needs a key or a query")
        found: list[dict[str, Any]] = []
        if key:
            try:
                found.append(await self.run_json(["facts", "get"], "--", key))
            except ToolError as error:  # no such fact; a key no fact can have, beside a query
                said = str(error)
                bad_key = said.startswith(("empty fact key", "fact key is"))
                if not (said.startswith("no fact") or (bad_key and query)):
                    raise
        if query:
            found += await self.run_json(["facts", "search"], "--", query)
        seen: set[int] = set()
        facts = []
        for fact in found:
            if fact["id"] not in seen and fact.get("status") != "retired":
                seen.add(fact["id"])
                facts.append(fact)
        return {"facts": facts}

    async def write(
        self, key: str, type: str, body: str, scope: str, proof: str, origin: str
    ) -> dict[str, Any]:
        if not body.strip():
            raise ToolError("memory_write needs a non-empty body")
        options = [f"--type={type}", "--body=-", f"--scope={scope}", f"--origin={origin}"]
        if proof:
            options.append(f"--proof={proof}")
        candidate = await self.run_json(["candidates", "propose"], *options, "--", key, stdin=body)
        return {
            "status": "pending_approval",
            "candidate": candidate,
            "note": APPROVAL_NOTE.format(id=candidate["id"]),
        }

    async def active_facts(self) -> list[dict[str, Any]]:
        data: list[dict[str, Any]] = await self.run_json(["facts", "list"], "--status=active")
        return data
