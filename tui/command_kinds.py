"""Which commands write the data dir and which only read it: the sets `tui.cli` decides by
(whether a command may create the data dir, takes the lock, opens DuckDB read-only, is
forwarded to the owner as a reading command, says "no data dir at …")."""

from __future__ import annotations

import argparse

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
        ("facts", "history"),
        ("candidates", "list"),
        ("jobs", "list"),
        ("hypotheses", "list"),
        ("conversations", None),
        ("conversations", "list"),
        ("conversations", "export"),
    }
)

# Commands that read the data dir and print what is there: an empty answer from a data dir
# that does not exist is most often a mistyped --home, so they say so (exit code unchanged).
READS_DATA_DIR = frozenset(
    {"status", "history", "recall", "facts", "candidates", "jobs", "conversations", "hypotheses"}
)


def may_create_data_dir(args: argparse.Namespace) -> bool:
    """Whether the command may create the data dir: one that writes, not a reading action."""
    return args.command in COMMANDS_THAT_WRITE and getattr(args, "action", None) not in READ_ACTIONS


def reads_only(args: argparse.Namespace) -> bool:
    """Whether the parsed command writes nothing to the data dir (`READ_ONLY_COMMANDS`)."""
    return (args.command, getattr(args, "action", None)) in READ_ONLY_COMMANDS
