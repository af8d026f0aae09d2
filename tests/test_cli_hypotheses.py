"""`hypotheses list|validate|refute|delete` through `tui.cli_hypotheses.register` + `dispatch`
(an argparse parser built here, as `tui.cli` builds it), on a real data dir and DuckDB file."""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from agent.settings import Settings
from memory.dream import CardDraft
from memory.hypotheses import Hypotheses
from store.database import database_path, open_database
from store.hypothesis_store import HYPOTHESIS_STATUSES, Hypothesis
from tests.conftest import FIXED_NOW
from tests.support.ollama_standin import OllamaStandIn
from tui.cli_hypotheses import STATUSES, register
from tui.cli_hypotheses import dispatch as run_dispatch

CARD_FIELDS = {
    "id",
    "statement",
    "source_ids",
    "prediction",
    "measurement",
    "confidence",
    "status",
    "created_at",
    "due_at",
    "overdue",
    "workspace",
    "source",  # issue 5: a card starts "with source generated-hypothesis"
}


def common_options(parser: argparse.ArgumentParser, *, top: bool) -> None:
    default = None if top else argparse.SUPPRESS
    parser.add_argument("--home", metavar="DIR", default=default)


def parse(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="straylight")
    common_options(parser, top=True)
    commands = parser.add_subparsers(dest="command", parser_class=argparse.ArgumentParser)
    register(commands, common_options, argparse.ArgumentParser)
    return parser.parse_args(["hypotheses", *argv])


class Cli:
    def __init__(self, make_settings: Callable[..., Settings], host: str) -> None:
        self.make_settings = make_settings
        self.host = host
        self.now = FIXED_NOW

    def settings(self) -> Settings:
        return self.make_settings(ollama_host=self.host, now=self.now)

    def run(self, capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
        capsys.readouterr()
        code = run_dispatch(parse(*argv), self.settings())
        out, err = capsys.readouterr()
        return code, out, err

    def json(self, capsys: pytest.CaptureFixture[str], *argv: str) -> Any:
        code, out, err = self.run(capsys, *argv, "--json")
        assert code == 0, err
        return json.loads(out)

    def add_card(self, statement: str, workspace: str = "demo") -> Hypothesis:
        settings = self.settings()
        with open_database(database_path(settings.home), clock=settings.clock) as db:
            draft = CardDraft(
                statement=statement,
                source_ids=("fact:1", "point:2"),
                prediction="At least 3 of the next 5 deploys will fail while the VPN is up.",
                measurement="Count failed deploys in deploy.log over the next 14 days.",
            )
            return Hypotheses(db).create(draft, workspace=workspace, reason="")


@pytest.fixture
def cli(make_settings: Callable[..., Settings], standin: OllamaStandIn) -> Cli:
    return Cli(make_settings, standin.host)


def test_list_without_a_data_dir_is_empty_and_creates_nothing(
    cli: Cli, home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli.json(capsys, "list") == []
    code, out, err = cli.run(capsys, "list")
    assert (code, out, err) == (0, "", "no hypothesis cards\n")
    assert not home.exists()


def test_list_json_shape_and_overdue_flag(cli: Cli, capsys: pytest.CaptureFixture[str]) -> None:
    card = cli.add_card("Blyck deploys time out because the office VPN drops AWS connections.")
    cli.add_card("A card of another workspace about the same deploys.", workspace="other")
    [listed] = cli.json(capsys, "list")
    assert set(listed) == CARD_FIELDS
    assert listed["id"] == card.id
    assert listed["source_ids"] == ["fact:1", "point:2"]
    assert listed["source"] == "generated-hypothesis"
    assert (listed["confidence"], listed["status"], listed["overdue"]) == (0.3, "open", False)
    assert listed["due_at"] == "2026-12-13T21:04:38Z"
    assert listed["workspace"] == "demo"
    every = cli.json(capsys, "list", "--all-workspaces")
    assert sorted(c["workspace"] for c in every) == ["demo", "other"]  # which is whose
    code, out, _ = cli.run(capsys, "list", "--all-workspaces")
    assert code == 0 and "due 2026-12-13 (workspace other): A card of another" in out

    cli.now = "2026-12-13T21:04:38Z"  # exactly 14 days later
    [listed] = cli.json(capsys, "list")
    assert listed["overdue"] is True
    code, out, _ = cli.run(capsys, "list")
    assert code == 0 and out.startswith(f"#{card.id} [overdue] 0.30, due 2026-12-13: Blyck")


def test_validate_prints_the_card_and_its_candidate(
    cli: Cli, capsys: pytest.CaptureFixture[str]
) -> None:
    card = cli.add_card("Blyck deploys time out because the office VPN drops AWS connections.")
    data = cli.json(capsys, "validate", str(card.id))
    assert set(data) == CARD_FIELDS | {"candidate"}
    assert (data["status"], data["confidence"], data["overdue"]) == ("validated", 0.6, False)
    candidate = data["candidate"]
    assert candidate["origin"] == "hypothesis" and candidate["status"] == "pending"
    assert candidate["body"] == card.statement
    assert candidate["proof"].startswith(f"hypothesis #{card.id} validated: Count failed")

    code, _, err = cli.run(capsys, "validate", str(card.id))
    assert code == 2
    assert err.count("\n") == 1 and "cannot be validated" in err


def test_refute_and_delete(cli: Cli, capsys: pytest.CaptureFixture[str]) -> None:
    first = cli.add_card("Blyck deploys time out because the office VPN drops AWS connections.")
    second = cli.add_card("Staging gets slow when the nightly backup job of Postgres runs.")
    refuted = cli.json(capsys, "refute", str(first.id))
    assert (refuted["status"], refuted["confidence"]) == ("refuted", 0.0)
    assert "candidate" not in refuted
    code, out, _ = cli.run(capsys, "delete", str(second.id))
    assert code == 0 and out.startswith(f"deleted #{second.id} (confidence 0.30)")
    assert [c["id"] for c in cli.json(capsys, "list")] == [first.id]  # deleted cards hidden
    assert [c["id"] for c in cli.json(capsys, "list", "--status", "deleted")] == [second.id]


@pytest.mark.parametrize("action", ["validate", "refute", "delete"])
def test_an_unknown_id_exits_1_with_one_line(
    cli: Cli, capsys: pytest.CaptureFixture[str], action: str
) -> None:
    code, out, err = cli.run(capsys, action, "7", "--json")
    assert (code, out, err) == (1, "", "straylight: no hypothesis #7\n")
    cli.add_card("Blyck deploys time out because the office VPN drops AWS connections.")
    code, out, err = cli.run(capsys, action, "7")
    assert (code, out, err) == (1, "", "straylight: no hypothesis #7\n")


def test_the_parser_requires_an_action_and_an_integer_id() -> None:
    with pytest.raises(SystemExit):
        parse()
    with pytest.raises(SystemExit):
        parse("validate", "seven")
    assert parse("list", "--json", "--home", "/tmp/x").home == "/tmp/x"


def test_registering_loads_nothing_heavy() -> None:
    import subprocess
    import sys

    probe = (
        "import sys, argparse; from tui import cli_hypotheses as c; "
        "p = argparse.ArgumentParser(); s = p.add_subparsers(dest='command'); "
        "c.register(s, lambda parser, *, top: None, argparse.ArgumentParser); "
        "print(sorted(m for m in ('duckdb', 'numpy', 'ollama', 'httpx') if m in sys.modules))"
    )
    root = Path(__file__).resolve().parent.parent
    result = subprocess.run(
        [sys.executable, "-c", probe], cwd=root, capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"
    assert STATUSES == HYPOTHESIS_STATUSES
