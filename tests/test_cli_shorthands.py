"""Two spellings a new user types: `straylight help [COMMAND [ACTION]]` (as `git help`), and a
group without an action (`straylight facts`, `jobs --json`), which lists, as `conversations`
alone does. Both were exit 2: `invalid choice: 'help'`, `the following arguments are
required: ACTION`."""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest

from tests.support.cli import NOW, Env, assert_ok, printed_json, run_cli
from tests.support.ollama_standin import OllamaStandIn


@pytest.fixture
def env(cli_env: Callable[..., Env], standin: OllamaStandIn) -> Env:
    return cli_env(OLLAMA_HOST=standin.host, STRAYLIGHT_NOW=NOW)


def test_help_prints_the_help_of_what_it_names(env: Env) -> None:
    for words, usage in (
        ((), "usage: straylight [-h]"),
        (("facts",), "usage: straylight facts [-h]"),
        (("facts", "list"), "usage: straylight facts list [-h]"),
    ):
        shown = run_cli(env, "help", *words)
        assert shown.returncode == 0 and shown.stderr == "", shown
        assert shown.stdout.startswith(usage), shown.stdout
        assert shown.stdout == run_cli(env, *words, "--help").stdout
    unknown = run_cli(env, "help", "fcts")
    assert unknown.returncode == 2 and "invalid choice: 'fcts'" in unknown.stderr


def test_a_group_without_an_action_lists(env: Env) -> None:
    body = ("--type", "rule", "--body", "Deploys happen on Thursdays")
    assert_ok(run_cli(env, "facts", "set", "deploy-day", *body))
    assert_ok(
        run_cli(env, "candidates", "propose", "--type", "fact", "--body", "VPN is wg0", "vpn")
    )
    for group, options in (
        ("facts", ["--type", "rule"]),
        ("candidates", []),
        ("hypotheses", ["--status", "open"]),
        ("jobs", []),
    ):
        bare = printed_json(run_cli(env, group, *options, "--json"))
        assert bare == printed_json(run_cli(env, group, "list", *options, "--json")), group
        plain = run_cli(env, group)
        assert_ok(plain)
        assert plain.stdout == run_cli(env, group, "list").stdout, group
    assert [fact["key"] for fact in json.loads(run_cli(env, "facts", "--json").stdout)] == [
        "deploy-day"
    ]
    stray = run_cli(env, "facts", "deploy-day")  # a word that is not an action is still named
    assert stray.returncode == 2 and "invalid choice: 'deploy-day'" in stray.stderr
    group_help = run_cli(env, "facts", "--help")
    assert group_help.stdout.startswith("usage: straylight facts [-h]"), group_help.stdout
