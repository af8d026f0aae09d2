"""Two spellings people type that the grammar (tui/cli_parser.py) does not have, rewritten
before it parses: `straylight help [COMMAND [ACTION]]` is that level's `--help`, and a group
without an action (`straylight facts`, `jobs --json`) is its `list`, as `conversations` alone
already is. Nothing else is touched: a word that is not an action still gets argparse's line."""

from __future__ import annotations

from collections.abc import Sequence

from tui.cli_parser import GLOBAL_OPTIONS

LISTING_GROUPS = frozenset({"facts", "candidates", "hypotheses", "jobs"})
"""The groups whose first action is `list`: read-only, so a bare group never writes."""

_LIST_VALUE_OPTIONS = frozenset({"--type", "--status"})
"""Options of a `list` action that take a value (facts, hypotheses)."""

_HELP = frozenset({"-h", "--help"})


def expand_shorthands(argv: Sequence[str]) -> list[str]:
    """`argv` with `help …` and a bare listing group spelled out; otherwise as given."""
    words = list(argv)
    at = _first_word(words, 0, GLOBAL_OPTIONS)
    if at is None:
        return words
    if words[at] == "help":
        return words[:at] + words[at + 1 :] + ["--help"]
    if words[at] not in LISTING_GROUPS or _HELP.intersection(words[at + 1 :]):
        return words
    if _first_word(words, at + 1, GLOBAL_OPTIONS | _LIST_VALUE_OPTIONS) is not None:
        return words  # an action (or a stray word argparse will name)
    return [*words[: at + 1], "list", *words[at + 1 :]]


def _first_word(words: list[str], start: int, takes_value: frozenset[str]) -> int | None:
    """The index of the first word from `start` that is neither an option nor the value of
    one in `takes_value` (`--home DIR`; `--home=DIR` is one word); `--` ends the options."""
    skip = False
    for index in range(start, len(words)):
        word = words[index]
        if skip:
            skip = False
        elif word == "--":
            return index + 1 if index + 1 < len(words) else None
        elif word.startswith("-") and word != "-":
            skip = word in takes_value
        else:
            return index
    return None
