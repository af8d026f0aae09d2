"""The clock's instants (issue 15 §8): dates at the edge of what datetime can hold are refused
with one line (exit 2), not an OverflowError traceback in every command."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

import pytest

from store.clock import parse_instant
from tests.support.cli import CliResult, run_cli

REPO_ROOT = Path(__file__).resolve().parent.parent
EDGES = [
    "9999-12-31T23:59:59-12:00",  # past datetime.max once in UTC
    "9999-12-31T23:59:59Z",
    "9999-06-01T00:00:00Z",  # a year later does not exist
    "0001-01-01T00:00:00Z",
    "0001-01-01T00:00:00+14:00",  # before datetime.min once in UTC
    "0001-12-31T00:00:00Z",  # a year earlier does not exist
]

Env = dict[str, str]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("2026-11-29T21:04:38Z", datetime(2026, 11, 29, 21, 4, 38, tzinfo=UTC)),
        ("2026-11-29T22:04:38+01:00", datetime(2026, 11, 29, 21, 4, 38, tzinfo=UTC)),
        ("2026-11-29 21:04:38", datetime(2026, 11, 29, 21, 4, 38, tzinfo=UTC)),
        ("0002-06-01T00:00:00Z", datetime(2, 6, 1, tzinfo=UTC)),
        ("9998-06-01T00:00:00Z", datetime(9998, 6, 1, tzinfo=UTC)),
    ],
)
def test_instants_parse_to_aware_utc(text: str, expected: datetime) -> None:
    assert parse_instant(text) == expected


@pytest.mark.parametrize("text", EDGES)
def test_instants_without_a_year_either_side_are_refused(text: str) -> None:
    with pytest.raises(ValueError, match="out of range") as caught:
        parse_instant(text)
    assert "\n" not in str(caught.value)


def test_garbage_is_still_a_value_error() -> None:
    with pytest.raises(ValueError):
        parse_instant("yesterday-ish")


def assert_one_line_exit_2(proc: CliResult) -> None:
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr and "OverflowError" not in proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "out of range" in lines[0], proc.stderr


@pytest.mark.parametrize(
    ("now", "args"),
    [
        ("9999-12-31T23:59:59-12:00", ["config"]),
        ("9999-12-31T23:59:59-12:00", ["status"]),
        ("0001-01-01T00:00:00Z", ["jobs", "run", "decay"]),
    ],
)
def test_straylight_now_at_the_edge_of_time_is_one_line_exit_2(
    cli_env: Callable[..., Env], now: str, args: list[str]
) -> None:
    assert_one_line_exit_2(run_cli(cli_env(STRAYLIGHT_NOW=now), *args))


def test_now_in_config_toml_at_the_edge_of_time_is_one_line_exit_2(
    cli_env: Callable[..., Env], tmp_path: Path
) -> None:
    config = tmp_path / "xdg-config" / "straylight" / "config.toml"
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text("now = 9999-12-31T23:59:59-12:00\n", encoding="utf-8")
    assert_one_line_exit_2(run_cli(cli_env(), "config"))
