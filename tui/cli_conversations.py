"""`straylight conversations …`: conversations you manage, from the shell.

- `conversations [--json]` (or `conversations list`) prints
  `[{"id", "title", "started", "last", "messages", "model"}]`, the one written to last first;
  `title` is the one set (`/title`, `rename`) or proposed from the first message.
- `conversations rename ID TITLE` sets the title.
- `conversations export ID [--format md|json] [-o FILE]` prints (or writes) it.
- `conversations delete ID [--yes]` removes its messages from the daily logs (each file
  rewritten atomically), forgets its unpinned memory points, drops its title and system
  prompt and records a `conversation_delete` audit row. It asks first on a terminal; without
  one it needs `--yes` (exit 2 otherwise).

Exit codes: 0 done, 1 an unknown id (as `forget` and `facts get`) or declined at the
question, 2 usage: an empty title, no terminal to ask on, a file that cannot be written;
6 (`delete`) the data dir held by a process that does not serve it, for longer than a
forwarded command waits.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, TypeVar

from agent.gateway_errors import EXIT_NOT_FOUND, EXIT_OK, EXIT_USAGE
from agent.settings import ResolvedSettings, Settings
from store.daily_log import DailyLog
from tui.cli_output import PROG, fail, for_terminal, one_line, print_json
from tui.conversation_export import FORMATS, export_to
from tui.conversation_index import (
    ConversationInfo,
    clean_title,
    conversation_info,
    days_from_start,
    list_conversations,
    load_conversation,
)
from tui.display_text import counted

EXIT_DECLINED = 1
_T = TypeVar("_T")


def register(commands: Any, common: Any, parser_class: type) -> None:
    conversations = commands.add_parser(
        "conversations",
        allow_abbrev=False,
        help="list, rename, export or delete conversations",
        description="Without an action: list the conversations, the latest first.",
    )
    common(conversations, top=False)
    conversations.add_argument("--json", action="store_true", help="print JSON")
    actions = conversations.add_subparsers(
        dest="action", metavar="ACTION", parser_class=parser_class
    )
    listing = actions.add_parser("list", allow_abbrev=False, help="list them (the default)")
    common(listing, top=False)
    # SUPPRESS: `conversations --json list` keeps the group's --json (a default here would reset it)
    listing.add_argument(
        "--json", action="store_true", default=argparse.SUPPRESS, help="print JSON"
    )
    rename = actions.add_parser("rename", allow_abbrev=False, help="set a conversation's title")
    common(rename, top=False)
    rename.add_argument("id", metavar="ID")
    rename.add_argument("title", metavar="TITLE")
    export = actions.add_parser("export", allow_abbrev=False, help="print or write one")
    common(export, top=False)
    export.add_argument("id", metavar="ID")
    export.add_argument("--format", choices=FORMATS, default="md", help="md (default) or json")
    export.add_argument(
        "-o", "--output", metavar="FILE", help="write to FILE (without it, or with '-': stdout)"
    )
    delete = actions.add_parser(
        "delete", allow_abbrev=False, help="delete its messages and unpinned memory points"
    )
    common(delete, top=False)
    delete.add_argument("id", metavar="ID")
    delete.add_argument("--yes", "-y", action="store_true", help="do not ask first")
    for action in (rename, export, delete):  # after the action too: refused with the hint
        action.add_argument(
            "--json", action="store_true", default=argparse.SUPPRESS, help=argparse.SUPPRESS
        )


def dispatch(args: Any, settings: Settings) -> int:
    return asyncio.run(_main(args, settings))


async def _main(args: Any, settings: Settings) -> int:
    daily_log = DailyLog(settings.home / "conversation")
    action = args.action or "list"
    if action == "list":
        titles = await _read_notes(settings, _titles) or {}
        return _print_list(list_conversations(daily_log, titles), as_json=args.json)
    if args.json:  # given before the action: only the list prints JSON
        return fail(
            f"--json is for the list; `conversations {action}` takes none"
            + (" (export: --format json)" if action == "export" else ""),
            EXIT_USAGE,
        )
    conversation_id = args.id
    found = _find(daily_log, conversation_id)
    if found is None:
        return _unknown(conversation_id)
    if action == "rename":
        title = clean_title(args.title)
        if not title:
            return fail("TITLE must not be empty", EXIT_USAGE)
        async with _notes(settings, create=True) as notes:
            notes.set_title(conversation_id, title)
        print(for_terminal(f"renamed {conversation_id}: {title}"))
        return EXIT_OK
    if action == "export":
        record = await _read_notes(settings, lambda notes: notes.get(conversation_id))
        title = (record.title if record else None) or found.title
        system = record.system_prompt if record else None
        messages = load_conversation(daily_log, conversation_id, found.days)
        return export_to(found, title, system, messages, args.format, args.output, settings.home)
    return await _delete(settings, daily_log, found, assume_yes=args.yes)


def _find(daily_log: DailyLog, conversation_id: str) -> ConversationInfo | None:
    return conversation_info(daily_log, conversation_id)


@asynccontextmanager
async def _notes(settings: Settings, *, create: bool) -> AsyncIterator[Any]:
    """The conversation notes of the data dir (None when there is no database and `create`
    is False: nothing was ever set, and a read creates nothing). A read (`create` False)
    outside the data dir's owner opens the database alone, read-only: no lock file, no
    word or vector index, nothing written (a backup on a read-only mount lists too)."""
    from store.database import database_path

    if not create and not database_path(settings.home).exists():
        yield None
        return
    from agent.ollama_gateway import OllamaGateway
    from memory.conversation_notes import ConversationNotes
    from store.data_dir_lock import held_here
    from tui.memory_session import MemorySession, open_store
    from tui.owner_server import serving

    home = settings.home
    if not create and open_store(home) is None and not serving(home) and not held_here(home):
        from memory.database_only import read_conversation_records

        with read_conversation_records(home, settings.clock) as records:
            yield records  # `get` and `all`, as the notes answer them
        return
    gateway = OllamaGateway.from_config(settings.ollama)
    try:
        with MemorySession(settings, gateway) as memory:
            yield ConversationNotes(memory.store)
    finally:
        await gateway.aclose()


async def _read_notes(settings: Settings, read: Callable[[Any], _T]) -> _T | None:
    """`read(notes)` of the data dir's conversation notes (set titles, system prompts); None
    when there are none, or, with one warning line, when the database is damaged: the
    conversations are in the daily logs, so they are still listed and exported, as `history`
    still reads them."""
    from store.database_errors import CorruptDatabase, DatabaseNotPermitted

    try:
        async with _notes(settings, create=False) as notes:
            return read(notes) if notes is not None else None
    except (CorruptDatabase, DatabaseNotPermitted) as damaged:
        warning = f"{damaged}; set titles and system prompts are left out"
        print(f"{PROG}: warning: {one_line(warning)}", file=sys.stderr)
        return None


def _titles(notes: Any) -> dict[str, str]:
    return {cid: record.title for cid, record in notes.all().items() if record.title}


def _unknown(conversation_id: str) -> int:
    """Exit 1 for an unknown id, as `history --conversation`, `forget` and `facts get` say it;
    exit 2 for a value no conversation id can be, not repeated (a pasted token)."""
    from store.conversation_id import ID_FORMAT
    from tui.cli_ask import conversation_option

    try:
        conversation_option(conversation_id)
    except ValueError:
        return fail(f"ID wants {ID_FORMAT} (the value is not repeated here)", EXIT_USAGE)
    return fail(
        f"no conversation {conversation_id!r} (straylight conversations lists them)",
        EXIT_NOT_FOUND,
    )


def _print_list(infos: Sequence[ConversationInfo], *, as_json: bool) -> int:
    if as_json:
        print_json([info.to_json() for info in infos])
        return EXIT_OK
    if not infos:
        print("no conversations yet", file=sys.stderr)  # stdout stays the list: empty
        return EXIT_OK
    for info in infos:
        last = f"{info.last.astimezone():%Y-%m-%d %H:%M}" if info.last else "----------------"
        count = f"{info.messages} msg"
        print(for_terminal(f"{info.conversation_id:<22} {last}  {count:>7}  {info.title}"))
    return EXIT_OK


# ---- delete -----------------------------------------------------------------------------
async def _delete(
    settings: Settings, daily_log: DailyLog, info: ConversationInfo, *, assume_yes: bool
) -> int:
    from store.daily_log_rewrite import drop_conversation
    from tui.open_chat import open_conversation

    cid = info.conversation_id
    if open_conversation(settings.home) == cid:  # run inside the TUI, for another client
        return fail(
            f"{cid} is the conversation open in the chat: start a new one there (Ctrl+N) first",
            EXIT_USAGE,
        )
    if not assume_yes and not sys.stdin.isatty():
        return _no_terminal(cid)  # before the database is opened for nothing
    async with _notes(settings, create=True) as notes:
        if not assume_yes:  # asked here, with the title the user set (the database is ours)
            record = notes.get(cid)
            declined = ask_before_delete(info, (record.title if record else None) or info.title)
            if declined is not None:
                return declined
        # the database first: a crash before the logs are rewritten leaves the id listed,
        # so the same command finishes the job
        day_names = [day.isoformat() for day in info.days]
        removed = notes.remove(cid, messages=info.messages, days=day_names)
        dropped, days_changed = drop_conversation(daily_log, cid, days_from_start(daily_log, cid))
    if not dropped:  # another client deleted it meanwhile (both ran in the data dir's owner)
        return _unknown(cid)
    kept = f" ({removed.pinned_kept} pinned kept)" if removed.pinned_kept else ""
    print(
        f"deleted {cid}: {counted(dropped, 'message')} from "
        f"{counted(len(days_changed), 'daily log')}, "
        f"{counted(len(removed.forgotten), 'memory point')} forgotten{kept}"
    )
    return EXIT_OK


def _no_terminal(cid: str) -> int:
    return fail(
        f"conversations delete asks first, and there is no terminal to ask on: "
        f"run `straylight conversations delete {cid} --yes`",
        EXIT_USAGE,
    )


def ask_before_delete(info: ConversationInfo, title: str) -> int | None:
    """The `[y/N]` question of `conversations delete` on the user's terminal, naming the
    conversation by `title` (the one set by `rename` or `/title`, else the proposed one):
    None to go on, else the exit code (no terminal to ask on: 2; declined: 1). Asked by the
    process the user typed in, before the command may be forwarded to the data dir's owner."""
    cid = info.conversation_id
    if not sys.stdin.isatty():
        return _no_terminal(cid)
    days = len(info.days)
    question = (
        f"Delete conversation {cid} ({title!r}): {counted(info.messages, 'message')} on "
        f"{counted(days, 'day')} and its unpinned memory points? [y/N] "
    )
    sys.stderr.write(for_terminal(question))
    sys.stderr.flush()
    if sys.stdin.readline().strip().lower() not in ("y", "yes"):
        print("nothing deleted", file=sys.stderr)
        return EXIT_DECLINED
    return None


def confirmed_argv(args: Any, resolved: ResolvedSettings, argv: list[str]) -> list[str] | int:
    """`conversations delete ID` without `--yes`, about to be forwarded: ask here, where the
    terminal is, and forward it with `--yes` (or the exit code when not confirmed). A
    confirmed `args` gets `yes` too, so a run here does not ask again.

    The question names the title the owner's database holds (read by forwarding
    `conversations list --json` first). With no owner, nothing is asked here: the command
    runs in this process, which asks once it holds the database (`_delete`). A process that
    holds the data dir without serving it (a short `facts` command, an owner starting) is
    waited for, as a forwarded command waits: until it serves or lets go; after
    `RETRY_SECONDS`, exit 6 naming it, before anything is asked (a "yes" could not be
    acted on, and only the owner's database knows the title)."""
    if args.command != "conversations" or args.action != "delete" or args.yes or args.json:
        return argv  # (`--json delete`: refused where it runs, before anything is asked)
    settings = resolved.settings
    info = _find(DailyLog(settings.home / "conversation"), args.id)
    if info is None:
        return argv  # the owner names the unknown id
    if not sys.stdin.isatty():
        return _no_terminal(info.conversation_id)
    served = _owners_listing(resolved, settings.home)
    if isinstance(served, int):
        return served
    if served is None:
        return argv  # runs here: `_delete` asks with the database's title
    declined = ask_before_delete(info, _title_in(served, info.conversation_id) or info.title)
    if declined is not None:
        return declined
    args.yes = True
    return [*argv, "--yes"]


def _owners_listing(resolved: ResolvedSettings, home: Path) -> list[Any] | int | None:
    """The owner's `conversations list --json` rows; None when nobody holds the data dir
    (now, or once a holder that does not serve let go within `RETRY_SECONDS`, or
    `BRIEF_HOLDER_SECONDS` for a brief one); exit 6
    (its one line printed) when it is still held then and nobody answers."""
    import time

    from store.data_dir_check import check_not_in_use
    from store.data_dir_lock import DataDirLocked
    from tui.owner_client import EXIT_DATA_DIR_IN_USE, RETRY_SECONDS, give_up_at, output_of_owner

    deadline = time.monotonic() + RETRY_SECONDS
    while True:
        listed = output_of_owner(["conversations", "list", "--json"], resolved)
        if listed is not None:
            try:
                rows = json.loads(listed[1]) if listed[0] == EXIT_OK else []
            except ValueError:
                rows = []
            return rows if isinstance(rows, list) else []
        try:
            check_not_in_use(home)
        except DataDirLocked as held:  # held, not served (yet): wait as a forward would
            if time.monotonic() >= give_up_at(deadline, held):
                return fail(str(held), EXIT_DATA_DIR_IN_USE)
            time.sleep(0.05)
            continue
        return None


def _title_in(rows: list[Any], cid: str) -> str | None:
    """The title of conversation `cid` in a `conversations list --json` listing."""
    for row in rows:
        if isinstance(row, dict) and row.get("id") == cid and isinstance(row.get("title"), str):
            return str(row["title"])
    return None
