"""The command line's grammar: every command, its options and its help (`build_parser`).

What each command does is tui/cli.py's dispatch and the `cli_*` modules; several of those
register their own sub-commands here (`register(commands, common_options, parser_class)`).
A usage error exits 2 with one line naming the command's `--help`.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterator, Sequence
from typing import Any, NoReturn

from agent.gateway_errors import EXIT_USAGE
from agent.settings_models import THINK_CHOICES
from tui.cli_output import PROG, record_id


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_USAGE, f"{PROG}: {message} (try '{self.prog} --help')\n")

    def parse_args(  # type: ignore[override]
        self, args: Sequence[str] | None = None, namespace: None = None
    ) -> argparse.Namespace:
        """As argparse parses, but words left over are named with the command they were given
        to (argparse's own line sends every one to `straylight --help`), and a stray word
        (`straylight ask hello world`) most likely wanted quotes: the line says so."""
        given = list(sys.argv[1:] if args is None else args)
        if (early := _option_before_command(self, given)) is not None:
            self.exit(EXIT_USAGE, f"{PROG}: {early}\n")
        parsed, extras = self.parse_known_args(args, namespace)
        if extras:
            words = [getattr(parsed, name, None) for name in ("command", "action")]
            named = [word for word in words if isinstance(word, str)]
            prog = " ".join([self.prog, *named])
            if (line := _option_too_early(self, given, named, extras[0])) is not None:
                self.exit(EXIT_USAGE, f"{PROG}: {line} (try '{prog} --help')\n")
            quote = "" if extras[0].startswith("-") else "; a value with spaces needs quotes"
            self.exit(
                EXIT_USAGE,
                f"{PROG}: unrecognized arguments: {' '.join(extras)}{quote} "
                f"(try '{prog} --help')\n",
            )
        return parsed


def _option_too_early(
    parser: argparse.ArgumentParser, argv: list[str], named: list[str], option: str
) -> str | None:
    """The line for an option the command (or its action) takes but that stands before its
    name (`straylight --json status`), where argparse reads it as the group's and calls it
    unrecognized while the help it points to lists it; None for any other leftover."""
    if not option.startswith("-") or option not in argv:
        return None
    flag = option.split("=", 1)[0]
    level: argparse.ArgumentParser | None = parser
    for word in named:
        level = _sub_parser(level, word) if level is not None else None
        if level is None or word not in argv:
            return None
        if argv.index(option) < argv.index(word) and flag in level._option_string_actions:
            return f"{flag} goes after '{word}': {PROG} {' '.join(named)} … {flag}"
    return None


def _option_before_command(parser: argparse.ArgumentParser, argv: list[str]) -> str | None:
    """The line for a command's option given before the command's name with its value apart
    (`straylight --k 3 recall x`), where argparse would take the value for the command and
    name it an invalid choice; None when the words before the command are the global ones."""
    early: list[str] = []
    for at, word in enumerate(argv):
        command = _sub_parser(parser, word)
        if command is not None:
            break
        if not word.startswith("-"):
            before = argv[at - 1] if at else ""
            if before.startswith("-") and "=" not in before:
                continue  # the value of the option before it
            return None  # a word argparse names itself (an unknown command)
        flag = word.split("=", 1)[0]
        if flag in ("-h", "--help", "--version"):
            return None  # the top level's own: its help or version, as argparse gives them
        if flag not in GLOBAL_OPTIONS:
            early.append(flag)
    else:
        return None
    for flag in early:
        for path, level in _parsers_below(command, [word]):
            if flag in level._option_string_actions:
                return (
                    f"{flag} goes after '{path[-1]}': {PROG} {' '.join(path)} … {flag} "
                    f"(try '{PROG} {' '.join(path)} --help')"
                )
    return None


def _parsers_below(
    parser: argparse.ArgumentParser, path: list[str]
) -> Iterator[tuple[list[str], argparse.ArgumentParser]]:
    """`parser` (named by `path`) and its actions' parsers, each with its path."""
    yield path, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                if isinstance(sub, argparse.ArgumentParser):
                    yield [*path, name], sub


def _sub_parser(parser: argparse.ArgumentParser, word: str) -> argparse.ArgumentParser | None:
    """The sub-parser `parser` hands `word` to (a command or an action), if any."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            found = action.choices.get(word)
            return found if isinstance(found, argparse.ArgumentParser) else None
    return None


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
        epilog=(
            "Without a command, the chat TUI starts. `straylight help COMMAND [ACTION]` is "
            "that command's --help."
        ),
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
        type=str.lower,  # `--think HIGH` as STRAYLIGHT_THINK=HIGH and `/think HIGH` take it
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
    forget.add_argument("id", metavar="ID", type=record_id, help="the point id")
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

    def leaf(group: Any, name: str, text: str, *, grouped: bool = True) -> argparse.ArgumentParser:
        sub: argparse.ArgumentParser = group.add_parser(name, allow_abbrev=False, help=text)
        _common_options(sub, top=False)
        # SUPPRESS in a group: `facts --json list` keeps the group's --json, as `conversations`
        default = argparse.SUPPRESS if grouped else False
        sub.add_argument("--json", action="store_true", default=default, help="print JSON")
        return sub

    facts = commands.add_parser("facts", allow_abbrev=False, help="the fact drawer (layer 4)")
    _common_options(facts, top=False)
    facts.add_argument("--json", action="store_true", help="print JSON")
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
    for name, help_text in (
        ("retire", "retire a fact"),
        ("undo", "undo the last write of a key"),
    ):
        picked = leaf(actions, name, help_text)
        picked.add_argument("key", metavar="KEY")
        picked.add_argument(
            "--scope",
            choices=("workspace", "global"),
            help="the fact of this scope, when the workspace and the global facts share the "
            "key (default: the workspace one, else the global one)",
        )
    leaf(actions, "history", "every version of a key").add_argument("key", metavar="KEY")

    candidates = commands.add_parser(
        "candidates", allow_abbrev=False, help="facts waiting for approval"
    )
    _common_options(candidates, top=False)
    candidates.add_argument("--json", action="store_true", help="print JSON")
    verbs = candidates.add_subparsers(
        dest="action", metavar="ACTION", parser_class=_Parser, required=True
    )
    leaf(verbs, "list", "the pending candidates").add_argument(
        "--all-workspaces", action="store_true", help="candidates of every workspace, each named"
    )
    approve = leaf(verbs, "approve", "make a candidate a fact")
    approve.add_argument("id", metavar="ID", type=record_id)
    approve.add_argument("--body", help="edit the body first")
    approve.add_argument("--key", help="edit the key first")
    leaf(verbs, "reject", "reject a candidate (not proposed again)").add_argument(
        "id", metavar="ID", type=record_id
    )
    cli_fact_agent.register(actions, verbs, leaf)

    reflect = leaf(
        commands, "reflect", "run the reflection pass over a conversation now", grouped=False
    )
    reflect.add_argument(
        "--conversation", "-c", metavar="ID", help="the conversation (default: the latest)"
    )


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("straylight")
    except PackageNotFoundError:
        return "unknown"
