"""The fact commands another agent calls (what `straylight mcp`'s `memory_read` and
`memory_write` run): `facts search QUERY` and `candidates propose KEY …`.

`candidates propose` puts a would-be fact at the approval gate, never in the drawer: the user
approves it (the TUI's prompt or candidates screen, `candidates approve`) before it is a fact.
`--origin` names who proposed it (`mcp:claude-code`); it is shown wherever candidates are.
Exit codes: 0 ok, 1 the gate refused it (rejected before, already pending, already a fact,
approved before), 2 invalid input (type, scope, key, empty body).
"""

from __future__ import annotations

import argparse
import asyncio
import re
import sys
from typing import TYPE_CHECKING, Any, get_args

from agent.settings import Settings
from memory.fact_types import FactError, FactProposal, Origin, check_scope, check_type
from tui.cli_output import fail, print_json, read_stdin_text

if TYPE_CHECKING:  # the drawer and the store pull in numpy and duckdb: not at parse time
    from store.fact_records import Fact

EXIT_OK = 0
EXIT_REFUSED = 1
EXIT_INVALID = 2
ORIGIN_MAX_CHARS = 60
_NOT_IN_ORIGIN = re.compile(r"[^\w.:@/+\- ]+")
_REDACTION = re.compile(r"(\[REDACTED:\w+\])")
_CUT_MARKER = re.compile(r"\[[^\]]*$")  # brackets are left only in markers
PROPOSED_CONFIDENCE = 0.7  # as the chat model's memory_write: a claim to be approved
# `FactDrawer.propose`'s reasons for turning a valid proposal away
GATE_REFUSALS = frozenset(
    {"rejected before", "already pending", "already a fact", "approved before"}
)


def add_fact_arguments(parser: Any) -> None:
    """KEY, --type, --body, --scope, --proof: what `facts set` and `candidates propose` take."""
    from memory.fact_types import FACT_TYPES, SCOPES

    parser.add_argument("key", metavar="KEY", help="e.g. deploy:blyck")
    parser.add_argument("--type", required=True, choices=FACT_TYPES, help="the fact's type")
    parser.add_argument("--body", required=True, help="the fact ('-' reads stdin)")
    parser.add_argument("--scope", choices=SCOPES, default="workspace")
    parser.add_argument("--proof", default="", help="the evidence")


def register(facts_actions: Any, candidate_actions: Any, leaf: Any) -> None:
    """Add `facts search` and `candidates propose` to the parsers of `tui/cli.py`."""
    search = leaf(facts_actions, "search", "active facts for a query, an exact key match first")
    search.add_argument("query", metavar="QUERY", help="a key or words to search for")
    propose = leaf(candidate_actions, "propose", "propose a fact; it waits for your approval")
    add_fact_arguments(propose)
    propose.add_argument(
        "--origin", default="cli", help="who proposes it (shown with the candidate; default cli)"
    )


def origin_label(text: str, max_chars: int = ORIGIN_MAX_CHARS) -> str:
    """A proposer's name as a short label on one line: secrets masked first, on the text as
    given (a client name is stored text like any other; `token=…` is found only before its
    `=` goes), then letters, digits and `. : @ / + -` kept around each `[REDACTED:kind]`,
    anything else (control characters, markup brackets) a space, spaces joined; a marker the
    length cut would halve is dropped."""
    from memory.secret_masking import mask_secrets

    pieces = _REDACTION.split(str(mask_secrets(text)))  # text, marker, text, marker, …
    kept = [piece if n % 2 else _NOT_IN_ORIGIN.sub(" ", piece) for n, piece in enumerate(pieces)]
    label = " ".join("".join(kept).split())[:max_chars]
    return _CUT_MARKER.sub("", label).strip()


def clean_origin(text: str) -> str:
    """`--origin` as stored (`origin_label`); Straylight's own origins (`tool`, `promotion`,
    …) cannot be claimed from outside."""
    origin = origin_label(text)
    if origin in get_args(Origin):
        raise FactError(f"origin {origin!r} is Straylight's own; name the proposer instead")
    return origin or "cli"


def dispatch(args: argparse.Namespace, settings: Settings) -> int:
    try:
        if args.action == "search":
            return _search(settings, args.query, as_json=args.json)
        return _propose(args, settings)
    except FactError as error:
        return fail(str(error), EXIT_INVALID)


def _propose(args: argparse.Namespace, settings: Settings) -> int:
    from memory.fact_json import candidate_json, with_replaces
    from tui.cli_facts import open_drawer

    body = read_stdin_text() if args.body == "-" else args.body
    proposal = FactProposal(
        type=check_type(args.type),
        key=args.key,
        body=body,
        scope=check_scope(args.scope),
        proof=args.proof,
        confidence=PROPOSED_CONFIDENCE,
        source="external",
    )
    with open_drawer(settings) as drawer:
        outcome = drawer.propose(proposal, origin=clean_origin(args.origin))
        candidate = outcome.candidate
        replaces = drawer.replaces(candidate) if candidate is not None else None
    if candidate is None:
        if outcome.reason in GATE_REFUSALS:
            return fail(f"not proposed: {outcome.reason}", EXIT_REFUSED)
        return fail(outcome.reason, EXIT_INVALID)  # the drawer's check (key, body, size)
    if args.json:
        print_json(with_replaces(candidate_json(candidate), replaces))
    else:
        print(
            f"proposed #{candidate.id} {candidate.key} ({candidate.type}, from "
            f"{candidate.origin}); it waits for approval: straylight candidates approve "
            f"{candidate.id}"
        )
    return EXIT_OK


def _search(settings: Settings, query: str, *, as_json: bool) -> int:
    from memory.fact_json import fact_json
    from store.database import database_path
    from tui.cli_facts import fact_line

    if not query.strip():
        return fail("facts search needs a non-empty QUERY", EXIT_INVALID)
    facts: list[Fact] = []
    if database_path(settings.home).exists():
        facts = _found(settings, query)
    if as_json:
        print_json([fact_json(f) for f in facts])
    else:
        for fact in facts:
            print(fact_line(fact))  # as `facts list`: where it lives and its confidence
        if not facts:
            print("no facts found", file=sys.stderr)
    return EXIT_OK


def _found(settings: Settings, query: str) -> list[Fact]:
    """The fact whose key is `query` (an explicit read: a stale one is revived), then the
    active facts ranked for it like injection's matches."""
    from memory.fact_types import normalise_key
    from tui.cli_facts import open_drawer

    vector = asyncio.run(_query_vector(settings, query))
    with open_drawer(settings, counts_use=True) as drawer:
        try:
            exact = [f for f in drawer.get(normalise_key(query)) if f.status != "retired"]
        except FactError:  # not shaped like a key: words only
            exact = []
        seen = {f.id for f in exact}
        ranked = [f for f in drawer.search(query, vector) if f.id not in seen]
    return exact + ranked


async def _query_vector(settings: Settings, query: str) -> list[float] | None:
    """The query's embedding for the semantic half (fail-soft: words only without it).
    Sent as every text goes to /api/embed (`stored_text`: secrets masked, no NUL), and an
    unusable vector (`embedding_check`) counts as none."""
    from agent.ollama_gateway import OllamaGateway
    from memory.embedding_check import vector_problem
    from memory.stored_text import stored_text
    from memory.turn_memory import QUERY_EMBED_SECONDS

    gateway = OllamaGateway.from_config(settings.ollama)
    try:
        vectors = await asyncio.wait_for(
            gateway.embed(settings.memory.embed_model, [stored_text(query)]),
            QUERY_EMBED_SECONDS,
        )
        if len(vectors) != 1 or vector_problem(vectors[0]) is not None:
            return None
        return vectors[0]
    except Exception:  # noqa: BLE001 - fail-soft, logged by the gateway
        return None
    finally:
        await gateway.aclose()
