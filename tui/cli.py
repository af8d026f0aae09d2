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
from typing import Any

from agent.gateway_errors import EXIT_OK, EXIT_USAGE
from agent.settings import ResolvedSettings, SettingsError, load_settings, misnamed_variables
from tui.cli_output import (
    EXIT_UNEXPECTED,
    FULL_OR_FAILING,
    PROG,
    cannot_write,
    fail,
    read_stdin_text,
    stdin_kept,
)
from tui.cli_parser import build_parser
from tui.cli_shorthands import expand_shorthands
from tui.command_kinds import may_create_data_dir, reads_only
from tui.data_dir_access import data_dir_problem, hint_missing_home, shut_data_dir

log = logging.getLogger("straylight.cli")
EXIT_INTERRUPTED = 130
EXIT_BROKEN_PIPE = 141
EXIT_DATA_DIR_IN_USE = 6


def empty_argument(args: argparse.Namespace) -> str | None:
    """The one line for a text the command needs given empty: `ask ""`, `remember ""`,
    `recall ""`, `import-doc ""`, an empty fact key, body or title, or `-` with nothing on
    stdin. Checked before anything is created, so a mistyped command leaves no data dir
    behind; the commands check the same again (another client's forwarded command)."""

    def blank(value: object, *, stdin: bool = False) -> bool:
        """Empty; `stdin`: an argument where `-` reads standard input (a TEXT or a body)."""
        if stdin and value == "-":
            return not stdin_kept().strip()
        return isinstance(value, str) and not value.strip()

    if args.command in ("ask", "remember") and blank(args.text, stdin=True):
        return f"{args.command} needs a non-empty TEXT"
    if args.command == "recall" and blank(args.query):
        return "recall needs a non-empty QUERY"
    if args.command == "import-doc" and blank(args.path):
        return "import-doc needs a PATH"
    action = (args.command, getattr(args, "action", None))
    if action == ("conversations", "rename") and blank(args.title):
        return "TITLE must not be empty"
    if action not in _KEY_NEEDED and action != ("candidates", "approve"):
        return None
    from memory.fact_types import EMPTY_BODY, FactError, normalise_key

    key, body = getattr(args, "key", None), getattr(args, "body", None)
    if action in _KEY_NEEDED or key is not None:  # approve: `--key` only when given
        try:
            normalise_key(key or "")
        except FactError as error:
            return str(error)
    if body is not None and blank(body, stdin=action in _BODY_FROM_STDIN):
        return EMPTY_BODY
    return None


_BODY_FROM_STDIN = frozenset({("facts", "set"), ("candidates", "propose")})
"""The actions whose `--body -` reads standard input (approve's `--body -` is the word)."""
_KEY_NEEDED = _BODY_FROM_STDIN | {
    ("facts", action) for action in ("retire", "undo", "get", "history")
}
"""The actions that take a fact KEY (candidates approve takes `--key` optionally)."""


class UsageError(Exception):
    """Bad command-line use; exit 2 with the message."""


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
    given = expand_shorthands(sys.argv[1:] if argv is None else argv)  # `help`, bare `facts`
    args = build_parser().parse_args(given)
    try:  # the workspace, relative paths and a served command's folder all start here
        os.getcwd()
    except FileNotFoundError:  # a shell still in a folder that was deleted (`rm -rf build`)
        return fail("the current directory no longer exists: cd to another one", EXIT_USAGE)
    try:
        resolved = _resolve(args)
    except SettingsError as error:
        return fail(str(error), EXIT_USAGE)
    settings = resolved.settings
    for note in misnamed_variables(os.environ):
        print(f"{PROG}: note: {note}", file=sys.stderr)
    if (empty := empty_argument(args)) is not None:  # before the data dir is made or locked
        return fail(empty, EXIT_USAGE)
    if args.command is None and (no_terminal := chat_terminal_problem()) is not None:
        return _refuse_chat(settings.home, no_terminal)  # before the dir is made or locked
    from tui.logging_setup import setup_file_logging, silence_logging

    # `config` shows the settings even for an unusable data dir
    problem = None if args.command == "config" else data_dir_problem(settings.home)
    if problem is not None and args.command == "mcp":  # a client would see "connection closed"
        from tui.mcp_server import serve

        print(f"{PROG}: {problem} (every tool says so until it is fixed)", file=sys.stderr)
        silence_logging()
        return serve(settings, _global_options(args), unusable=data_dir_problem)
    if problem is not None:  # links, odd files, a data dir others can write to: one line
        return fail(problem, EXIT_USAGE)
    if may_create_data_dir(args):
        if (shut := shut_data_dir(settings.home)) is not None:  # before anything is written
            return fail(shut, EXIT_USAGE)
        try:
            setup_file_logging(settings.log_file)
        except OSError as error:
            from tui.data_dir_access import unwritable_data_dir

            line = unwritable_data_dir(error, settings.home)
            where = f" ({error.filename})" if error.filename else ""
            fallback = f"cannot use data dir {settings.home}: {error.strerror or error}{where}"
            return fail(line or fallback, 2)
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
        raw = given
        if args.command == "conversations":
            from tui.cli_conversations import confirmed_argv

            confirmed = confirmed_argv(args, resolved, raw)
            if isinstance(confirmed, int):
                return confirmed
            raw = confirmed
        reads = reads_only(args)
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
            hint_missing_home(args, resolved)
        return code
    except UsageError as error:
        return fail(str(error), EXIT_USAGE)
    except KeyboardInterrupt:
        return fail("interrupted", EXIT_INTERRUPTED)
    except Exception as error:
        from store.data_dir_lock import DataDirLocked
        from store.database import DatabaseError, DataDirInUse
        from store.database_errors import DatabaseNotPermitted
        from store.private_files import UnsafeDataDir

        if isinstance(error, DataDirLocked):
            return fail(str(error), EXIT_DATA_DIR_IN_USE)
        if isinstance(error, UnsafeDataDir):  # a link planted while the command ran
            return fail(str(error), EXIT_USAGE)
        if isinstance(error, DataDirInUse):  # a reading command meets DuckDB's lock
            return fail(str(error), EXIT_DATA_DIR_IN_USE)
        from store.database_errors import as_os_error
        from tui.data_dir_access import unusable_data_dir, unwritable_data_dir

        if (inside := as_os_error(error)) is not None:  # DuckDB's commit met a full disk
            log.error("database write failed: %s", error)
            error = inside
        if (unwritable := unwritable_data_dir(error, settings.home)) is not None:
            return fail(unwritable, EXIT_USAGE)
        if isinstance(error, OSError) and error.errno in FULL_OR_FAILING:  # a full disk: 1
            log.error("cannot write: %s", error)
            return fail(cannot_write(error), EXIT_UNEXPECTED)
        if (unusable := unusable_data_dir(error, settings.home)) is not None:
            return fail(unusable, EXIT_USAGE)
        if isinstance(error, DatabaseNotPermitted):  # the file's mode: a usage error
            return fail(str(error), EXIT_USAGE)
        if isinstance(error, DatabaseError):
            log.error("database error: %s", error)
            return fail(str(error), EXIT_UNEXPECTED)
        if _only(error, BrokenPipeError):  # (the MCP SDK's task group wraps it in a group)
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


"""A write that failed for the device's sake (a full disk, a quota or file-size limit, an I/O
error): a file's (named) or the output's (stdout on /dev/full), exit 1."""


def _only(error: BaseException, kind: type[BaseException]) -> bool:
    """Whether `error` is a `kind`, or a group (of groups) of nothing else."""
    if isinstance(error, BaseExceptionGroup):
        return all(_only(inner, kind) for inner in error.exceptions)
    return isinstance(error, kind)


def chat_terminal_problem() -> str | None:
    """Why the chat cannot run here: it reads keys from stdin and draws on stderr (Textual's
    choice; stdout stays free), so either one a pipe or a file (`echo hi | straylight`, a
    cron job, `straylight 2> log`) left it drawing into nothing and waiting for ever."""
    missing = [name for name, stream in _CHAT_STREAMS.items() if not _is_terminal(stream())]
    if not missing:
        return None
    which = f"{missing[0]} is not one" if len(missing) == 1 else "neither stdin nor stderr is one"
    return f'the chat needs a terminal: {which} (one turn without one: straylight ask "TEXT")'


_CHAT_STREAMS = {"stdin": lambda: sys.__stdin__, "stderr": lambda: sys.__stderr__}


def _is_terminal(stream: object) -> bool:
    try:
        return stream is not None and bool(stream.isatty())  # type: ignore[attr-defined]
    except (OSError, ValueError):  # a closed stream
        return False


def _refuse_chat(home: Path, no_terminal: str) -> int:
    """The chat cannot run without a terminal (exit 2); a data dir another process holds is
    named first, as for a second chat in a terminal (exit 6). Asked, not taken: nothing is
    made, locked or logged for a refusal."""
    from store.data_dir_check import check_not_in_use
    from store.data_dir_lock import DataDirLocked

    try:
        if home.is_dir():
            check_not_in_use(home)
    except DataDirLocked as locked:
        return fail(str(locked), EXIT_DATA_DIR_IN_USE)
    except OSError:
        pass
    return fail(no_terminal, EXIT_USAGE)


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
