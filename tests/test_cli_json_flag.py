"""`--json` before a group's action (`facts --json list`) prints what it prints after the
action (`facts list --json`), for every group whose actions all print JSON, as
`conversations --json list` does. It used to be `unrecognized arguments: --json (try
'straylight facts list --help')`, exit 2, pointing at a help that lists `--json`."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from tests.support.cli import NOW, Env, assert_ok, printed_json, run_cli
from tests.support.ollama_standin import OllamaStandIn


@pytest.fixture
def env(cli_env: Callable[..., Env], standin: OllamaStandIn) -> Env:
    return cli_env(OLLAMA_HOST=standin.host, STRAYLIGHT_NOW=NOW)


def test_json_before_the_action_is_the_json_after_it(env: Env) -> None:
    set_fact = (
        "facts",
        "set",
        "deploy-day",
        "--type",
        "rule",
        "--body",
        "Deploys happen on Thursdays",
    )
    assert_ok(run_cli(env, *set_fact))
    proposed = run_cli(
        env, "candidates", "propose", "--type", "fact", "--body", "The VPN is wg0", "vpn"
    )
    assert_ok(proposed)
    for group, action in (
        ("facts", ["list"]),
        ("facts", ["get", "deploy-day"]),
        ("facts", ["history", "deploy-day"]),
        ("candidates", ["list"]),
        ("hypotheses", ["list"]),
        ("jobs", ["list"]),
    ):
        after = printed_json(run_cli(env, group, *action, "--json"))
        before = printed_json(run_cli(env, group, "--json", *action))
        assert before == after, (group, action)
        # something to compare (no dream ran, so no cards: there, the same empty list)
        assert after or group == "hypotheses", (group, action)
    # without --json anywhere the action still prints its text
    text = run_cli(env, "facts", "list")
    assert_ok(text)
    assert "deploy-day" in text.stdout and not text.stdout.lstrip().startswith("[")


def test_reflect_takes_json_as_before(env: Env, standin: OllamaStandIn) -> None:
    """`reflect` is no group: its own --json, off unless given."""
    standin.script_reply("Noted.")
    assert_ok(run_cli(env, "ask", "We deploy the blyck service with `just ship` on Thursdays."))
    standin.script_reply("[]")
    plain = run_cli(env, "reflect")
    assert_ok(plain)
    assert not plain.stdout.lstrip().startswith("{")
    standin.script_reply("[]")
    assert isinstance(printed_json(run_cli(env, "reflect", "--json")), dict)
