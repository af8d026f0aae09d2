"""Every time a `--json` output carries is written one way: UTC ISO 8601 to the second with a
`Z` (`2031-02-03T04:05:06Z`), as the daily logs and `conversations --json` write them — facts,
their history, candidates, recall hits, history rows, conversations and jobs alike."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from tests.support.cli import NOW, assert_ok, cli_env, printed_json, run_cli
from tests.support.ollama_standin import OllamaStandIn

INSTANT = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ")
TIME_KEYS = {
    "at",
    "created_at",
    "updated_at",
    "decided_at",
    "last_seen",
    "last_verified",
    "last_run",
    "next_run",
    "started",
    "last",
    "time",
}


def times_in(data: Any) -> Iterator[tuple[str, Any]]:
    """(key, value) of every time field, at any depth."""
    if isinstance(data, dict):
        for key, value in data.items():
            if key in TIME_KEYS and value is not None:
                yield key, value
            yield from times_in(value)
    elif isinstance(data, list):
        for item in data:
            yield from times_in(item)


def test_every_json_time_is_utc_with_a_z(tmp_path: Path, standin: OllamaStandIn) -> None:
    env = cli_env(tmp_path / "home", tmp_path, OLLAMA_HOST=standin.host, STRAYLIGHT_NOW=NOW)
    assert_ok(run_cli(env, "ask", "Remember that the harbour opens at six."))
    fact = ["--type", "capability", "--body", "npm run dist", "--json"]
    assert_ok(run_cli(env, "facts", "set", "deploy", *fact))
    assert_ok(run_cli(env, "candidates", "propose", "port", "--type", "fact", "--body", "8080"))
    assert_ok(run_cli(env, "jobs", "run", "decay"))
    outputs = {
        name: printed_json(run_cli(env, *command, "--json"))
        for name, command in {
            "facts list": ["facts", "list"],
            "facts history": ["facts", "history", "deploy"],
            "candidates list": ["candidates", "list"],
            "recall": ["recall", "harbour"],
            "history": ["history"],
            "conversations": ["conversations"],
            "jobs list": ["jobs", "list"],
        }.items()
    }
    seen: set[str] = set()
    for name, data in outputs.items():
        for key, value in times_in(data):
            assert isinstance(value, str) and INSTANT.fullmatch(value), (name, key, value)
            seen.add(key)
    assert seen >= {"at", "created_at", "updated_at", "last_seen", "last_run", "next_run"}
    assert seen >= {"started", "last", "time", "last_verified"}
