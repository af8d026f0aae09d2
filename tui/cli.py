"""`straylight` — the TUI with no subcommand; the headless commands otherwise.

Exit codes: 0 ok, 1 unexpected error, 2 usage or configuration, 3 Ollama unreachable,
4 model not pulled, 5 timeout or other model error. Errors are one line on stderr; details
go to `straylight.log` in the data dir.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import os
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, NoReturn

from agent.gateway_errors import EXIT_OK, EXIT_USAGE
from agent.settings import ResolvedSettings, SettingsError, load_settings
from agent.settings_models import THINK_CHOICES
from tui.cli_output import EXIT_UNEXPECTED, PROG, fail, one_line, read_stdin_text

log = logging.getLogger("straylight.cli")
EXIT_INTERRUPTED = 130
EXIT_BROKEN_PIPE = 141
# Commands that may create the data dir; the others only read it.
COMMANDS_THAT_WRITE = frozenset(
    {None, "ask", "remember", "forget", "import-doc", "facts", "candidates", "reflect", "jobs"}
)
# Sub-commands that only read: they never create the data dir (a mistyped --home is reported).
READ_ACTIONS = frozenset({"list", "get", "history", "search"})
# Commands that write nothing to the data dir (issue 15 §5): not even the lock file.
READ_ONLY_COMMANDS = frozenset(
    {
        ("status", None),
        ("recall", None),
        ("facts", "list"),
        ("candidates", "list"),
        ("jobs", "list"),
    }
)
EXIT_DATA_DIR_IN_USE = 6


def may_create_data_dir(args: argparse.Namespace) -> bool:
    """Whether the command may create the data dir: one that writes, not a reading action."""
    return args.command in COMMANDS_THAT_WRITE and getattr(args, "action", None) not in READ_ACTIONS


class UsageError(Exception):
    """Bad command-line use; exit 2 with the message."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_USAGE, f"{PROG}: {message} (try '{self.prog} --help')\n")

    def parse_args(  # type: ignore[override]
        self, args: Sequence[str] | None = None, namespace: None = None
    ) -> argparse.Namespace:
        """As argparse parses, but words left over are named with the command they were given
        to (argparse's own line sends every one to `straylight --help`), and a stray word
        (`straylight ask hello world`) most likely wanted quotes: the line says so."""
        parsed, extras = self.parse_known_args(args, namespace)
        if extras:
            words = (getattr(parsed, name, None) for name in ("command", "action"))
            prog = " ".join([self.prog, *(w for w in words if isinstance(w, str))])
            quote = "" if extras[0].startswith("-") else "; a value with spaces needs quotes"
            self.exit(
                EXIT_USAGE,
                f"{PROG}: unrecognized arguments: {' '.join(extras)}{quote} "
                f"(try '{prog} --help')\n",
            )
        return parsed


GLOBAL_OPTIONS = frozenset({"--home", "--ollama-host", "--model", "--config", "--workspace"})
"""The options every command takes (`_common_options`), before or after its name; each takes
a value."""


def _common_options(parser: argparse.ArgumentParser, *, top: bool) -> None:
    default = None if top else argparse.SUPPRESS
    parser.add_argument("--home", metavar="DIR", default=default, help="data dir")
    parser.add_argument("--ollama-host", metavar="HOST", default=default, help="Ollama address")
    parser.add_argument("--model", metavar="NAME", default=default, help="chat model")
    parser.add_argument("--config", metavar="FILE", default=default, help="config.toml to read")
    parser.add_argument(
        "--workspace",
        metavar="NAME",
        default=default,
        help="workspace of the facts (default: the git root of the current directory)",
    )


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog=PROG,
        allow_abbrev=False,
        description="Terminal chat for local Ollama models, with a memory that lasts.",
        epilog="Without a command, the chat TUI starts.",
    )
    _common_options(parser, top=True)
    parser.add_argument("--version", action="version", version=f"{PROG} {_version()}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)

    ask = commands.add_parser(
        "ask", allow_abbrev=False, help="run one turn and stream the reply to stdout"
    )
    _common_options(ask, top=False)
    ask.add_argument("text", metavar="TEXT", help="the message ('-' reads standard input)")
    ask.add_argument(
        "--conversation", "-c", metavar="ID", help="continue this conversation (default: new)"
    )
    ask.add_argument(
        "--think",
        choices=THINK_CHOICES,
        help=(
            "whether a thinking model thinks, or how hard"
            " (default: STRAYLIGHT_THINK or config.toml's think, else the model's)"
        ),
    )
    ask.add_argument(
        "--show-thinking", action="store_true", help="write the model's thinking to stderr"
    )
    ask.add_argument(
        "--system",
        metavar="TEXT",
        help="this conversation's system prompt (kept with it; '' clears it)",
    )

    history = commands.add_parser(
        "history", allow_abbrev=False, help="print the messages of one day's log"
    )
    _common_options(history, top=False)
    history.add_argument("--date", metavar="YYYY-MM-DD", help="the day (default: today)")
    history.add_argument("--conversation", "-c", metavar="ID", help="only this conversation")
    history.add_argument("--json", action="store_true", help="print JSON")

    status = commands.add_parser(
        "status",
        allow_abbrev=False,
        help="the data dir, Ollama and its models, memory, headroom, facts, hypotheses",
        description=(
            "What Straylight sees now: the data dir; Ollama's host, reachability and version, "
            "the chat model and the embedding model (pulled or not); longterm.md's size and "
            "budget; today's messages; the memory's points, skips, vector index, RAM estimate "
            "and headroom (ok/warn/critical); hypotheses; facts and pending candidates of this "
            "workspace; the last prompt's context window. Reads only: a missing data dir is "
            "not created. --json prints the fields the README lists."
        ),
    )
    _common_options(status, top=False)
    status.add_argument("--json", action="store_true", help="print JSON")

    remember = commands.add_parser(
        "remember", allow_abbrev=False, help="pin a memory (bypasses the save filter)"
    )
    _common_options(remember, top=False)
    remember.add_argument("text", metavar="TEXT", help="what to remember ('-' reads stdin)")
    remember.add_argument("--json", action="store_true", help="print JSON")

    forget = commands.add_parser("forget", allow_abbrev=False, help="delete a memory point")
    _common_options(forget, top=False)
    forget.add_argument("id", metavar="ID", type=int, help="the point id")
    forget.add_argument("--json", action="store_true", help="print JSON")

    recall = commands.add_parser(
        "recall", allow_abbrev=False, help="what would be recalled for a message"
    )
    _common_options(recall, top=False)
    recall.add_argument("query", metavar="QUERY", help="the message")
    recall.add_argument("--k", type=int, metavar="N", help="hits per group (default MEMORY_TOP_K)")
    recall.add_argument(
        "--role", choices=("user", "assistant", "doc"), help="only points of this role"
    )
    recall.add_argument("--json", action="store_true", help="print JSON")

    import_doc = commands.add_parser(
        "import-doc", allow_abbrev=False, help="ingest a Markdown file as pinned doc memories"
    )
    _common_options(import_doc, top=False)
    import_doc.add_argument("path", metavar="PATH", help="a Markdown file")
    import_doc.add_argument("--json", action="store_true", help="print JSON")

    _fact_commands(commands)
    from tui import cli_jobs

    cli_jobs.register(commands, _common_options, _Parser)
    from tui import cli_hypotheses

    cli_hypotheses.register(commands, _common_options, _Parser)
    from tui import cli_models

    cli_models.register(commands, _common_options, _Parser)
    from tui import cli_conversations

    cli_conversations.register(commands, _common_options, _Parser)

    mcp = commands.add_parser(
        "mcp", allow_abbrev=False, help="serve the memory to other agents (MCP over stdio)"
    )
    _common_options(mcp, top=False)

    config = commands.add_parser(
        "config", allow_abbrev=False, help="print every effective setting and its source"
    )
    _common_options(config, top=False)
    config.add_argument("--json", action="store_true", help="print JSON")
    return parser


def _fact_commands(commands: Any) -> None:
    """`facts …`, `candidates …` and `reflect`: layer 4 from the shell."""
    from memory.fact_types import FACT_STATUSES, FACT_TYPES

    def leaf(group: Any, name: str, text: str) -> argparse.ArgumentParser:
        sub: argparse.ArgumentParser = group.add_parser(name, allow_abbrev=False, help=text)
        _common_options(sub, top=False)
        sub.add_argument("--json", action="store_true", help="print JSON")
        return sub

    facts = commands.add_parser("facts", allow_abbrev=False, help="the fact drawer (layer 4)")
    _common_options(facts, top=False)
    actions = facts.add_subparsers(
        dest="action", metavar="ACTION", parser_class=_Parser, required=True
    )
    from tui import cli_fact_agent

    fact_set = leaf(actions, "set", "write a fact now (overwrites the key)")
    cli_fact_agent.add_fact_arguments(fact_set)
    fact_set.add_argument(
        "--requires",
        action="extend",
        nargs="*",
        default=[],
        metavar="KEY",
        help="keys a procedure needs",
    )
    leaf(actions, "get", "show a fact (revives a stale one)").add_argument("key", metavar="KEY")
    fact_list = leaf(actions, "list", "list the facts of this workspace and the global ones")
    fact_list.add_argument("--type", choices=FACT_TYPES)
    fact_list.add_argument(
        "--status",
        choices=(*FACT_STATUSES, "all"),
        default="active",
        help="active (default, as in the TUI), stale, retired or all",
    )
    fact_list.add_argument(
        "--all-workspaces", action="store_true", help="facts of every workspace, each named"
    )
    leaf(actions, "retire", "retire a fact").add_argument("key", metavar="KEY")
    leaf(actions, "history", "every version of a key").add_argument("key", metavar="KEY")
    leaf(actions, "undo", "undo the last write of a key").add_argument("key", metavar="KEY")

    candidates = commands.add_parser(
        "candidates", allow_abbrev=False, help="facts waiting for approval"
    )
    _common_options(candidates, top=False)
    verbs = candidates.add_subparsers(
        dest="action", metavar="ACTION", parser_class=_Parser, required=True
    )
    leaf(verbs, "list", "the pending candidates").add_argument(
        "--all-workspaces", action="store_true", help="candidates of every workspace, each named"
    )
    approve = leaf(verbs, "approve", "make a candidate a fact")
    approve.add_argument("id", metavar="ID", type=int)
    approve.add_argument("--body", help="edit the body first")
    approve.add_argument("--key", help="edit the key first")
    leaf(verbs, "reject", "reject a candidate (not proposed again)").add_argument(
        "id", metavar="ID", type=int
    )
    cli_fact_agent.register(actions, verbs, leaf)

    reflect = leaf(commands, "reflect", "run the reflection pass over a conversation now")
    reflect.add_argument(
        "--conversation", "-c", metavar="ID", help="the conversation (default: the latest)"
    )


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("straylight")
    except PackageNotFoundError:
        return "unknown"


def setting_flags(args: argparse.Namespace) -> dict[str, Any]:
    """The settings the command line gives (None: not given)."""
    return {
        "home": args.home,
        "ollama_host": args.ollama_host,
        "model": args.model,
        "workspace": args.workspace,
        "think": getattr(args, "think", None),
    }


def _resolve(
    args: argparse.Namespace, environ: Mapping[str, str] | None = None
) -> ResolvedSettings:
    if args.config is not None and not args.config.strip():  # `Path("")` is the folder
        raise SettingsError(
            f"option --config: the config file must not be empty (got {args.config!r})"
        )
    config = Path(args.config) if args.config else None
    return load_settings(
        flags=setting_flags(args),
        environ=environ,
        config_path=config,
        require_config=config is not None,
    )


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:  # the workspace, relative paths and a served command's folder all start here
        os.getcwd()
    except FileNotFoundError:  # a shell still in a folder that was deleted (`rm -rf build`)
        return fail("the current directory no longer exists: cd to another one", EXIT_USAGE)
    try:
        resolved = _resolve(args)
    except SettingsError as error:
        return fail(str(error), EXIT_USAGE)
    settings = resolved.settings
    from store.data_dir_check import check_data_dir
    from store.private_files import UnsafeDataDir
    from tui.logging_setup import setup_file_logging, silence_logging

    if args.command != "config":  # `config` shows the settings even for an unusable data dir
        try:  # links, odd files, a data dir others can write to: one line, exit 2
            check_data_dir(settings.home)
        except UnsafeDataDir as error:
            return fail(str(error), EXIT_USAGE)
        except OSError as error:  # a data dir (or its conversation/) this user may not enter
            where = f" ({error.filename})" if error.filename else ""
            return fail(f"cannot use data dir {settings.home}: {error.strerror}{where}", 2)
    if may_create_data_dir(args):
        try:
            setup_file_logging(settings.log_file)
        except OSError as error:
            return fail(f"cannot use data dir {settings.home}: {error.strerror or error}", 2)
    else:  # read-only commands never create the data dir, nor write it: errors only
        try:
            if settings.home.is_dir():
                setup_file_logging(settings.log_file, level=logging.ERROR, delay=True)
            else:
                silence_logging()
        except OSError:
            silence_logging()
    from tui import owner_client

    if owner_client.forwards(args):  # the data dir's owner runs it, if another process owns it
        raw = list(sys.argv[1:] if argv is None else argv)
        if args.command == "conversations":
            from tui.cli_conversations import confirmed_argv

            confirmed = confirmed_argv(args, resolved, raw)
            if isinstance(confirmed, int):
                return confirmed
            raw = confirmed
        reads = (args.command, getattr(args, "action", None)) in READ_ONLY_COMMANDS
        return owner_client.run_or_forward(
            raw, resolved, lambda: _run(args, resolved), args.command, reads_only=reads
        )
    return _run(args, resolved)


def _run(args: argparse.Namespace, resolved: ResolvedSettings, *, forwarded: bool = False) -> int:
    """Dispatch a parsed command; every error becomes one line and its exit code. A command
    `forwarded` from another process runs in a thread of the owner (tui/owner_request.py)."""
    settings = resolved.settings
    try:
        code = _dispatch(args, resolved)
        if code == 0:  # a failed command says its own one line
            _hint_missing_home(args, resolved)
        return code
    except UsageError as error:
        return fail(str(error), EXIT_USAGE)
    except KeyboardInterrupt:
        return fail("interrupted", EXIT_INTERRUPTED)
    except Exception as error:
        from store.data_dir_lock import DataDirLocked
        from store.database import DatabaseError, DataDirInUse
        from store.private_files import UnsafeDataDir

        if isinstance(error, DataDirLocked):
            return fail(str(error), EXIT_DATA_DIR_IN_USE)
        if isinstance(error, UnsafeDataDir):  # a link planted while the command ran
            return fail(str(error), EXIT_USAGE)
        if isinstance(error, DataDirInUse):  # a reading command meets DuckDB's lock
            return fail(str(error), EXIT_DATA_DIR_IN_USE)
        from tui.data_dir_access import unwritable_data_dir

        if (unwritable := unwritable_data_dir(error, settings.home)) is not None:
            return fail(unwritable, EXIT_USAGE)
        if isinstance(error, DatabaseError):
            log.error("database error: %s", error)
            return fail(str(error), EXIT_UNEXPECTED)
        if isinstance(error, BrokenPipeError):
            # `straylight history | head`: the reader left; that is not an error.
            if not forwarded:  # (a forwarded command's client has gone: nothing to quiet)
                devnull = os.open(os.devnull, os.O_WRONLY)
                os.dup2(devnull, sys.stdout.fileno())
            return EXIT_BROKEN_PIPE
        log.exception("unexpected error")
        return fail(
            f"unexpected error: {type(error).__name__}: {error} (details in {settings.log_file})",
            EXIT_UNEXPECTED,
        )


# Commands that read the data dir and print what is there: an empty answer from a data dir
# that does not exist is most often a mistyped --home, so they say so (exit code unchanged).
READS_DATA_DIR = frozenset(
    {"status", "history", "recall", "facts", "candidates", "jobs", "conversations", "hypotheses"}
)


def _hint_missing_home(args: argparse.Namespace, resolved: ResolvedSettings) -> None:
    """One stderr line when a read-only command looks at a data dir that does not exist:
    `no data dir at … — mistyped --home?`; exit 0 is kept (an empty store is a valid answer,
    and scripts polling `status` before the first chat must not fail)."""
    if args.command not in READS_DATA_DIR:
        return
    if args.command in COMMANDS_THAT_WRITE and getattr(args, "action", None) not in READ_ACTIONS:
        return
    if args.command == "conversations" and getattr(args, "action", None) not in (None, "list"):
        return  # rename/export/delete already say "no conversation …"
    if args.command == "hypotheses" and getattr(args, "action", None) != "list":
        return  # validate/refute/delete already say "no hypothesis #N"
    home = resolved.settings.home
    if home.exists():
        return
    where = resolved.provenance.get("home")
    if where is not None and where.source != "default":
        named = where.origin if where.source != "file" else f"home in {where.origin}"
        print(f"{PROG}: no data dir at {one_line(str(home))} — mistyped {named}?", file=sys.stderr)
    else:
        print(
            f"{PROG}: no data dir at {one_line(str(home))} yet (nothing stored so far)",
            file=sys.stderr,
        )


def _dispatch(args: argparse.Namespace, resolved: ResolvedSettings) -> int:
    settings = resolved.settings
    if args.command is None:
        from tui.app import run_app
        from tui.owner_handover import HANDOVER_SECONDS, lock_for_chat

        def waiting() -> None:  # the screen stays blank until the lock is the chat's
            print(
                f"{PROG}: waiting up to {HANDOVER_SECONDS:.0f} s for the Straylight process "
                f"that has {settings.home} to hand it over",
                file=sys.stderr,
                flush=True,
            )

        # a second chat stops here, before painting; `straylight mcp` hands the dir over
        lock = lock_for_chat(settings.home, on_wait=waiting)
        try:
            return run_app(settings, resolved.config_path)
        finally:
            lock.release()
    if args.command == "ask":
        from tui.cli_ask import ask, conversation_option

        try:
            conversation = (
                None if args.conversation is None else conversation_option(args.conversation)
            )
        except ValueError as error:
            raise UsageError(str(error)) from None
        text = _ask_text(args.text)
        return asyncio.run(
            ask(settings, text, conversation, args.show_thinking, system=args.system)
        )
    if args.command == "history":
        from tui.cli_history import HistoryUsageError, history

        try:
            return history(settings, args.date, args.conversation, as_json=args.json)
        except HistoryUsageError as error:
            raise UsageError(str(error)) from None
    if args.command == "status":
        from tui.cli_status import status

        return asyncio.run(status(settings, as_json=args.json))
    if args.command == "config":
        return _config(resolved, as_json=args.json)
    if args.command == "mcp":
        from tui.mcp_server import serve

        return serve(settings, _global_options(args))
    if args.command == "hypotheses":
        from tui import cli_hypotheses

        return cli_hypotheses.dispatch(args, settings)
    if args.command == "jobs":
        from tui import cli_jobs

        return cli_jobs.dispatch(args, settings)
    if args.command == "conversations":
        from tui import cli_conversations

        return cli_conversations.dispatch(args, settings)
    if args.command in ("models", "pull"):
        from tui import cli_models

        return cli_models.dispatch(args, settings)
    if args.command in ("facts", "candidates", "reflect"):
        from tui import cli_facts

        return cli_facts.dispatch(args, settings)
    from tui import cli_memory

    if args.command == "remember":
        from memory.point_limits import text_size_problem

        text = _ask_text(args.text, "remember")
        if (too_long := text_size_problem(text)) is not None:  # before the store is opened
            raise UsageError(too_long)
        return asyncio.run(cli_memory.remember(settings, text, as_json=args.json))
    if args.command == "forget":
        return asyncio.run(cli_memory.forget(settings, args.id, as_json=args.json))
    if args.command == "recall":
        if not args.query.strip():  # as `facts search` and memory_search refuse one
            raise UsageError("recall needs a non-empty QUERY")
        if args.k is not None and args.k < 1:
            raise UsageError("--k must be at least 1")
        return asyncio.run(
            cli_memory.recall(settings, args.query, k=args.k, role=args.role, as_json=args.json)
        )
    if args.command == "import-doc":
        if not args.path.strip():  # Path("") is "." (the folder): named as a missing PATH
            raise UsageError("import-doc needs a PATH")
        from memory.point_limits import PointTooLarge, doc_size_problem
        from tui.memory_commands import import_path_problem

        path = Path(args.path).expanduser()
        if (problem := import_path_problem(path) or doc_size_problem(path)) is not None:
            raise UsageError(problem)
        try:
            return asyncio.run(cli_memory.import_doc(settings, path, as_json=args.json))
        except PointTooLarge as error:  # a section over the limit: nothing was stored
            raise UsageError(str(error)) from None
        except UnicodeDecodeError as error:
            raise UsageError(f"{path} is not UTF-8 text (byte {error.start})") from None
    raise UsageError(f"unknown command {args.command!r}")


def _global_options(args: argparse.Namespace) -> dict[str, str | None]:
    """The global options as given, for the commands a long-lived process runs."""
    return {
        "--home": args.home,
        "--ollama-host": args.ollama_host,
        "--model": args.model,
        "--config": args.config,
        "--workspace": args.workspace,
    }


def _ask_text(raw: str, command: str = "ask") -> str:
    text = read_stdin_text() if raw == "-" else raw
    if not text.strip():
        raise UsageError(f"{command} needs a non-empty TEXT")
    return text


def _config(resolved: ResolvedSettings, *, as_json: bool) -> int:
    from agent.workspace import resolve_workspace

    described = resolved.describe()
    workspace = described["workspace"]
    if workspace["value"] is None:  # derived: the workspace it is here (it said null)
        workspace["value"] = resolve_workspace(None)
    if as_json:
        print(json.dumps(described, ensure_ascii=False, indent=2))
        return EXIT_OK
    found = "" if resolved.config_found else " (not found; defaults apply)"
    print(f"# config file: {resolved.config_path}{found}")
    width = max(len(name) for name in described)
    for name, entry in described.items():
        origin = f" {entry['origin']}" if entry["origin"] else ""
        value = json.dumps(entry["value"], ensure_ascii=False)
        print(f"{name:<{width}} = {value}  # {entry['source']}{origin}")
    return EXIT_OK


def entry() -> None:
    if sys.stdin is None:  # started with stdin closed (`<&-`): it reads as empty, as /dev/null
        sys.stdin = open(os.devnull, encoding="utf-8")  # noqa: SIM115 - the process's stdin
    # started with stdout or stderr closed (`>&-`, a service): what they would print goes
    # nowhere, as into /dev/null; it was "unexpected error" (exit 1) after the work was done,
    # so a retried `remember` stored its point twice
    if sys.stdout is None:
        sys.stdout = open(os.devnull, "w", encoding="utf-8")  # noqa: SIM115 - the process's
    if sys.stderr is None:
        sys.stderr = open(os.devnull, "w", encoding="utf-8")  # noqa: SIM115 - the process's
    sys.exit(main())


if __name__ == "__main__":
    entry()
