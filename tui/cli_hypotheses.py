"""`straylight hypotheses list|validate ID|refute ID|delete ID`: the dream run's cards.

`list` shows the cards of this workspace (`--all-workspaces`: every card), overdue first, then
by due date; `--status` limits it to one status (default: every status but deleted). The actions
print the changed card; `validate` also proposes a fact candidate (see `straylight candidates
list`). `--json` prints the data: a list of cards, or one card (`validate` adds
``"candidate": {…}`` or ``null``). A card is
``{"id", "statement", "source_ids", "prediction", "measurement", "confidence", "status",
"created_at", "due_at", "overdue", "workspace", "source"}`` (times ISO 8601 UTC; `source`
is always ``generated-hypothesis``); with
`--all-workspaces` each plain card names its workspace, as `facts list` does.

Exit codes: 0 ok, 1 no such card, 2 a change the card's status does not allow.
These commands open only the database and hold the data-dir lock while they run. Importing
this module and `register` load nothing heavy (no DuckDB, no numpy): `dispatch` does.
"""

from __future__ import annotations

import argparse
import sys
from datetime import datetime
from typing import TYPE_CHECKING, Any, Protocol

from agent.gateway_errors import EXIT_NOT_FOUND
from store.clock import format_instant
from tui.cli_output import fail, for_terminal, print_json, record_id

if TYPE_CHECKING:
    from agent.settings import Settings
    from store.hypothesis_store import Hypothesis

COMMAND = "hypotheses"
# `store.hypothesis_store.HYPOTHESIS_STATUSES` (a test keeps them equal): registering the
# parser must not import DuckDB, it runs on the way to the TUI's first frame.
STATUSES = ("open", "validated", "refuted", "deleted")
EXIT_OK = 0
EXIT_INVALID = 2


class CommonOptions(Protocol):
    """`tui.cli._common_options`: adds --home, --workspace, … to a sub-parser."""

    def __call__(self, parser: argparse.ArgumentParser, *, top: bool) -> None: ...


def register(
    commands: Any, common_options: CommonOptions, parser_class: type[argparse.ArgumentParser]
) -> None:
    """Add `hypotheses` and its actions to the `commands` sub-parsers action."""
    group = commands.add_parser(
        COMMAND, allow_abbrev=False, help="hypothesis cards of the dream run"
    )
    common_options(group, top=False)
    group.add_argument("--json", action="store_true", help="print JSON")
    actions = group.add_subparsers(
        dest="action", metavar="ACTION", parser_class=parser_class, required=True
    )

    def leaf(name: str, text: str) -> argparse.ArgumentParser:
        sub: argparse.ArgumentParser = actions.add_parser(name, allow_abbrev=False, help=text)
        common_options(sub, top=False)
        # SUPPRESS: `hypotheses --json list` keeps the group's --json
        sub.add_argument(
            "--json", action="store_true", default=argparse.SUPPRESS, help="print JSON"
        )
        return sub

    listing = leaf("list", "the cards, overdue first")
    listing.add_argument(
        "--status", choices=STATUSES, help="only this status (default: not deleted)"
    )
    listing.add_argument("--all-workspaces", action="store_true", help="cards of every workspace")
    for name, text in (
        ("validate", "validate a card: confidence up, and a fact candidate for approval"),
        ("refute", "refute a card (confidence 0)"),
        ("delete", "delete a card (kept in the audit trail)"),
    ):
        leaf(name, text).add_argument("id", metavar="ID", type=record_id, help="the card's id")


def card_json(card: Hypothesis, now: datetime) -> dict[str, Any]:
    """The JSON shape of one card in `hypotheses … --json`."""
    from memory.hypotheses import SOURCE as HYPOTHESIS_SOURCE

    return {
        "id": card.id,
        "statement": card.statement,
        "source_ids": list(card.source_ids),
        "prediction": card.prediction,
        "measurement": card.measurement,
        "confidence": round(card.confidence, 4),
        "status": card.status,
        "created_at": format_instant(card.created_at),
        "due_at": format_instant(card.due_at),
        "overdue": card.is_overdue(now),
        "workspace": card.workspace,
        "source": HYPOTHESIS_SOURCE,  # every card is the dream's (issue 5): a hypothesis
    }


def _lines(card: Hypothesis, now: datetime, *, workspace: bool = False) -> list[str]:
    state = "overdue" if card.is_overdue(now) else card.status
    where = f" (workspace {card.workspace})" if workspace else ""
    return [
        f"#{card.id} [{state}] {card.confidence:.2f}, due {card.due_at:%Y-%m-%d}{where}: "
        f"{card.statement}",
        f"    sources: {', '.join(card.source_ids)}",
        f"    prediction: {card.prediction}",
        f"    measurement: {card.measurement}",
    ]


def dispatch(args: argparse.Namespace, settings: Settings) -> int:
    """Run `hypotheses <action>`; the exit code."""
    from store.database import database_path

    now = settings.clock.now()
    if args.action == "list":
        return _list(args, settings, now)
    if not database_path(settings.home).exists():
        return fail(f"no hypothesis #{args.id}", EXIT_NOT_FOUND)
    from memory.fact_json import candidate_json
    from memory.hypotheses import CardStateError, Hypotheses
    from tui.cli_facts import open_drawer

    candidate: dict[str, Any] | None = None
    try:
        with open_drawer(settings) as drawer:
            book = Hypotheses.of(drawer)
            if args.action == "validate":
                card, made = book.validate(args.id)
                candidate = candidate_json(made) if made is not None else None
            elif args.action == "refute":
                card = book.refute(args.id)
            else:
                card = book.delete(args.id)
    except LookupError as error:
        return fail(str(error), EXIT_NOT_FOUND)
    except CardStateError as error:
        return fail(str(error), EXIT_INVALID)
    if args.json:
        data = card_json(card, now)
        if args.action == "validate":
            data["candidate"] = candidate
        print_json(data)
        return EXIT_OK
    verb = {"validate": "validated", "refute": "refuted", "delete": "deleted"}[args.action]
    print(for_terminal(f"{verb} #{card.id} (confidence {card.confidence:.2f}): {card.statement}"))
    if args.action == "validate":
        if candidate is not None:
            print(
                f"proposed fact candidate #{candidate['id']} ({candidate['key']}); "
                "approve it with `straylight candidates approve "
                f"{candidate['id']}`"
            )
        else:
            print("no new fact candidate (already pending or already a fact)", file=sys.stderr)
    return EXIT_OK


def _list(args: argparse.Namespace, settings: Settings, now: datetime) -> int:
    from memory.hypotheses import Hypotheses
    from store.database import database_path
    from tui.cli_facts import open_drawer

    cards: list[Hypothesis] = []
    if database_path(settings.home).exists():
        statuses = [args.status] if args.status else ["open", "validated", "refuted"]
        with open_drawer(settings, read_only=True) as drawer:  # writes nothing
            book = Hypotheses.of(drawer)
            cards = book.cards(statuses, now=now, all_workspaces=args.all_workspaces)
    if args.json:
        print_json([card_json(card, now) for card in cards])
        return EXIT_OK
    for card in cards:
        print(for_terminal("\n".join(_lines(card, now, workspace=args.all_workspaces))))
    if not cards:
        print("no hypothesis cards", file=sys.stderr)
    return EXIT_OK
