"""The layer-4 commands: `facts set|get|list|retire|history|undo`, `candidates list|approve|
reject` and `reflect`.

They open only the database (and take the data-dir lock), not the vector index or the word
index, so they are quick on a big store. A written or approved fact's body is embedded once
for the semantic half of injection; with Ollama down it is matched by its words until then.
Exit codes: 0 ok, 1 no such key or candidate, 2 invalid input (type, key, empty body).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import sys
from collections.abc import Iterator
from typing import Any

from agent.settings import Settings
from agent.workspace import resolve_workspace
from memory.fact_drawer import FactDrawer
from memory.fact_json import candidate_json, fact_json, with_replaces
from memory.fact_types import FactError, normalise_key
from store.clock import format_instant
from store.data_dir_lock import DataDirLock, held_here
from store.database import database_path
from store.fact_records import Candidate, Fact
from tui.cli_output import fail, print_json, read_stdin_text

EXIT_OK = 0
EXIT_NOT_FOUND = 1
EXIT_INVALID = 2
EMBED_TIMEOUT_SECONDS = 15.0


@contextlib.contextmanager
def open_drawer(
    settings: Settings, *, read_only: bool = False, counts_use: bool = False
) -> Iterator[FactDrawer]:
    """The fact drawer of this workspace, with the data dir locked for the duration (in the
    owner's process: a drawer over the owner's open database); a reading command
    (`read_only`) elsewhere takes no lock file and writes nothing (DuckDB's read-only mode,
    whose own lock still meets a writer). A read that writes only to count a use
    (`counts_use`: `facts get`, `facts search`) reads a data dir that cannot be written (a
    backup on a read-only mount) as `read_only` does, the use not counted."""
    from tui.memory_session import open_store
    from tui.owner_server import serving

    if open_store(settings.home) is not None or serving(settings.home):
        yield from _shared_drawer(settings)  # one store per process: DuckDB opens a file once
        return
    if read_only and not held_here(settings.home):  # (owner asked before: owner_client)
        yield from _database_drawer(settings, read_only=True)
        return
    try:
        lock = DataDirLock(settings.home).acquire()
    except OSError as error:
        from tui.data_dir_access import unwritable_data_dir

        if not counts_use or unwritable_data_dir(error, settings.home) is None:
            raise
        yield from _database_drawer(settings, read_only=True)
        return
    try:
        yield from _database_drawer(settings)
    finally:
        lock.release()


def _database_drawer(settings: Settings, *, read_only: bool = False) -> Iterator[FactDrawer]:
    """A drawer over the database (`read_only`: in DuckDB's read-only mode, no lock file
    taken)."""
    from memory.database_only import opened_fact_drawer

    workspace = resolve_workspace(settings.workspace)
    with opened_fact_drawer(
        settings.home, settings.clock, workspace, settings.facts, read_only=read_only
    ) as drawer:
        yield drawer


def _shared_drawer(settings: Settings) -> Iterator[FactDrawer]:
    """The drawer over the memory this process has open (or opens) for its data dir."""
    from agent.ollama_gateway import OllamaGateway
    from tui.memory_session import MemorySession

    with MemorySession(settings, OllamaGateway.from_config(settings.ollama)) as memory:
        assert memory.facts is not None
        yield memory.facts


def _embed(settings: Settings, drawer: FactDrawer, fact: Fact) -> None:
    """Embed a fact's body (fail-soft: without a vector it is matched by its words)."""
    from agent.ollama_gateway import OllamaGateway

    async def run() -> list[list[float]] | None:
        gateway = OllamaGateway.from_config(settings.ollama)
        try:
            return await asyncio.wait_for(
                gateway.embed(settings.memory.embed_model, [fact.body]), EMBED_TIMEOUT_SECONDS
            )
        except Exception:  # noqa: BLE001 - fail-soft, logged by the gateway
            return None
        finally:
            await gateway.aclose()

    vectors = asyncio.run(run())
    if vectors:
        drawer.set_vector(fact, vectors[0])


def fact_line(fact: Fact, *, workspace: bool = False) -> str:
    """One fact on a line; with `workspace`, the workspace it belongs to (`--all-workspaces`)."""
    if fact.scope == "global":
        where = "global"
    else:
        where = f"workspace {fact.workspace}" if workspace else "workspace"
    status = "" if fact.status == "active" else f" [{fact.status}]"
    return f"{fact.key}  {fact.type} ({where}, {fact.confidence:.2f}){status}: {fact.body}"


def dispatch(args: argparse.Namespace, settings: Settings) -> int:
    if args.command == "reflect":
        return asyncio.run(_reflect(settings, args.conversation, as_json=args.json))
    if args.action in ("search", "propose"):
        from tui import cli_fact_agent

        return cli_fact_agent.dispatch(args, settings)
    try:
        if args.command == "facts":
            return _facts(args, settings)
        return _candidates(args, settings)
    except FactError as error:
        message = str(error)
        code = EXIT_NOT_FOUND if message.startswith(("no candidate", "candidate #")) else 2
        return fail(message, code)


def _facts(args: argparse.Namespace, settings: Settings) -> int:
    action = args.action
    if action == "set":
        body = read_stdin_text() if args.body == "-" else args.body
        with open_drawer(settings) as drawer:
            fact = drawer.set(
                args.key,
                args.type,
                body,
                scope=args.scope,
                proof=args.proof,
                requires=args.requires,
            )
            _embed(settings, drawer, fact)
        if args.json:
            print_json(fact_json(fact))
        else:
            print(f"set {fact_line(fact)}")
        return EXIT_OK
    if action == "list":
        if not database_path(settings.home).exists():
            facts: list[Fact] = []
        else:
            with open_drawer(settings, read_only=True) as drawer:
                facts = drawer.list_facts(
                    type=args.type,
                    status=None if args.status == "all" else args.status,
                    all_workspaces=args.all_workspaces,
                )
        if args.json:
            print_json([fact_json(f) for f in facts])
        else:
            for fact in facts:
                print(fact_line(fact, workspace=args.all_workspaces))
            if not facts:
                print("no facts", file=sys.stderr)
        return EXIT_OK
    key = normalise_key(args.key)  # an empty key is a usage error, database or none
    if not database_path(settings.home).exists():
        return fail(f"no fact {args.key!r}", EXIT_NOT_FOUND)
    # `get` counts a use (it writes where it can); `history` only reads
    with open_drawer(settings, read_only=action == "history", counts_use=action == "get") as drawer:
        if action == "get":
            found = drawer.get(key)
            data: Any = fact_json(found[0]) if found else None
            text = "\n".join(fact_line(f) for f in found)
            exists = bool(found)
        elif action == "retire":
            found = drawer.retire(key, scope=args.scope)
            if not found and drawer.has_key(key, args.scope):  # all retired
                return fail(f"fact {_named(args)} is already retired", EXIT_NOT_FOUND)
            data = fact_json(found[0]) if found else None
            text = f"retired {fact_line(found[0])}" if found else ""
            exists = bool(found)
        elif action == "history":
            versions = drawer.history(key)
            data = [
                {"at": format_instant(v.at), "event": v.event, "reason": v.reason, "fact": v.fact}
                for v in versions
            ]
            text = "\n".join(
                f"{v.at:%Y-%m-%d %H:%M} {v.event} ({v.reason}): {v.fact.get('body')}"
                for v in versions
            )
            exists = bool(versions)
        else:  # undo
            exists = drawer.has_key(key, args.scope)
            restored = drawer.undo(key, scope=args.scope) if exists else None
            data = {"key": key, "restored": fact_json(restored) if restored else None}
            text = f"restored {fact_line(restored)}" if restored else f"removed {key}"
    if not exists:
        return fail(f"no fact {_named(args)}", EXIT_NOT_FOUND)
    if args.json:
        print_json(data)
    else:
        print(text)
    return EXIT_OK


def _named(args: argparse.Namespace) -> str:
    """The key as the user typed it, and the scope when `--scope` picked one."""
    scope = getattr(args, "scope", None)
    return f"{args.key!r}" + (f" ({scope})" if scope else "")


def _candidates(args: argparse.Namespace, settings: Settings) -> int:
    if args.action == "list":
        if not database_path(settings.home).exists():
            pending: list[Candidate] = []
        else:
            with open_drawer(settings, read_only=True) as drawer:
                pending = drawer.pending(all_workspaces=args.all_workspaces)
                replaced = {c.id: drawer.replaces(c) for c in pending}
        if args.json:
            print_json([with_replaces(candidate_json(c), replaced.get(c.id)) for c in pending])
        else:
            for c in pending:
                where = c.scope
                if args.all_workspaces and c.scope == "workspace":
                    where = f"workspace {c.workspace}"
                print(f"#{c.id} {c.key}  {c.type} ({where}, from {c.origin}): {c.body}")
                if c.proof:
                    print(f"    proof: {c.proof}")
                if (old := replaced.get(c.id)) is not None:
                    print(f"    replaces: {old.body}")
            if not pending:
                print("no pending candidates", file=sys.stderr)
        return EXIT_OK
    if not database_path(settings.home).exists():
        return fail(f"no candidate #{args.id}", EXIT_NOT_FOUND)
    with open_drawer(settings) as drawer:
        if args.action == "approve":
            pending_one = drawer.store.candidate(args.id)
            old = drawer.replaces(pending_one) if pending_one is not None else None
            fact = drawer.approve(args.id, body=args.body, key=args.key)
            _embed(settings, drawer, fact)
            if args.json:
                print_json(fact_json(fact))
            else:
                print(f"approved #{args.id}: {fact_line(fact)}")
                if old is not None and old.id == fact.id and old.body != fact.body:
                    print(
                        f"    replaced: {old.body} (straylight facts undo {fact.key} restores it)"
                    )
            return EXIT_OK
        rejected = drawer.reject(args.id)
    if args.json:
        print_json({"id": rejected.id, "status": rejected.status})
    else:
        print(f"rejected #{rejected.id} ({rejected.key}); it will not be proposed again")
    return EXIT_OK


async def _reflect(settings: Settings, conversation: str | None, *, as_json: bool) -> int:
    """Run the end-of-session reflection pass over one conversation (default: the latest)."""
    from agent.gateway_errors import GatewayError
    from agent.ollama_gateway import OllamaGateway
    from agent.turn import TurnEngine
    from agent.turn_facts import reflect_report
    from tui.cli_ask import conversation_option
    from tui.memory_session import MemorySession

    if conversation is not None:
        try:  # a value no id can be (a pasted token): exit 2, not repeated, as `history`
            conversation_option(conversation)
        except ValueError as error:
            return fail(str(error), EXIT_INVALID)
    gateway = OllamaGateway.from_config(settings.ollama)
    session = MemorySession(settings, gateway)
    try:
        memory = session.open()
        engine = TurnEngine(settings, gateway, memory)
        conversation = conversation or _latest_conversation(engine)
        if conversation is None:
            return fail("no conversation to reflect on", EXIT_NOT_FOUND)
        if not engine.daily_log.recent(conversation, 1):
            return fail(f"no conversation {conversation!r} in the logs", EXIT_NOT_FOUND)
        proposed: list[Candidate] = []
        dropped: list[tuple[str, str]] = []
        drawer = engine.facts
        if drawer is None or not settings.facts.reflection:
            dropped = [("(the conversation)", "reflection is off (memory_reflection = false)")]
        else:
            try:
                proposed, dropped = await reflect_report(
                    drawer, gateway, engine.daily_log, conversation, settings.ollama.model
                )
            except GatewayError as error:
                return fail(str(error), error.exit_code)
    finally:
        session.close()
        await gateway.aclose()
    if as_json:
        print_json(
            {
                "conversation": conversation,
                "candidates": [candidate_json(c) for c in proposed],
                "dropped": [{"item": item, "reason": reason} for item, reason in dropped],
            }
        )
    else:
        for c in proposed:
            print(f"#{c.id} {c.key}  {c.type}: {c.body}")
        for item, reason in dropped:
            print(f"dropped ({reason}): {item}", file=sys.stderr)
        summary = f"{len(proposed)} new candidates from {conversation}"
        if dropped:
            summary += f", {len(dropped)} dropped"
        elif not proposed:
            summary += ": the model proposed nothing"
        print(summary, file=sys.stderr)
    return EXIT_OK


def _latest_conversation(engine: Any) -> str | None:
    for _day, messages in engine.daily_log.iter_days_newest_first():
        for message in reversed(messages):
            if message.conversation_id:
                return str(message.conversation_id)
    return None
