"""A workspace name with a control character (a newline, a tab, ESC, a Unicode line
separator) would break the one-line outputs that name it (`facts list --all-workspaces`,
`status`): it is refused wherever it enters — `--workspace`, STRAYLIGHT_WORKSPACE, the
config key, `straylight mcp` — with one line, exit 2, the value shown escaped."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from tests.support.cli import NOW, Env, assert_one_line, printed_json, run_cli

BAD_NAMES = ["a\nb", "tab\there", "esc\x1b[31m", "line\u2028sep", "cr\r"]


@pytest.fixture
def env(cli_env: Callable[..., Env]) -> Env:
    return cli_env(STRAYLIGHT_NOW=NOW)


@pytest.mark.parametrize("name", BAD_NAMES)
def test_the_flag_refuses_a_control_character(env: Env, name: str, home: Path) -> None:
    result = run_cli(env, "--workspace", name, "facts", "set", "k", "--type", "fact", "--body", "b")
    line = assert_one_line(result, 2, "option --workspace", "control character")
    assert repr(name) in line
    assert not home.exists()  # refused before the data dir is made


def test_the_environment_and_the_config_key_refuse_it_too(env: Env, tmp_path: Path) -> None:
    result = run_cli(dict(env, STRAYLIGHT_WORKSPACE="x\ny"), "facts", "list")
    assert_one_line(result, 2, "environment variable STRAYLIGHT_WORKSPACE", "control character")
    config = tmp_path / "xdg-config" / "straylight" / "config.toml"
    config.parent.mkdir(parents=True)
    config.write_text('workspace = "x\\ny"\n', encoding="utf-8")
    result = run_cli(env, "facts", "list")
    assert_one_line(result, 2, f"config file {config}: key 'workspace'", "control character")


def test_mcp_refuses_it_before_serving(env: Env) -> None:
    result = run_cli(dict(env, STRAYLIGHT_WORKSPACE="x\x07y"), "mcp", stdin="")
    assert_one_line(result, 2, "STRAYLIGHT_WORKSPACE", "control character")


def test_names_with_spaces_and_letters_of_any_script_are_kept(env: Env) -> None:
    name = "my project · Ünïcode"
    run_cli(env, "--workspace", name, "facts", "set", "k", "--type", "fact", "--body", "b")
    facts = printed_json(run_cli(env, "facts", "list", "--all-workspaces", "--json"))
    assert [fact["workspace"] for fact in facts] == [name]


@pytest.mark.parametrize(
    ("dirname", "shown"),
    [
        ("bad\nname\x1b[31m", "bad\\nname\\x1b[31m"),
        ("tab\there\u2028", "tab\\there\\u2028"),
        (b"latin\xe9".decode("utf-8", "surrogateescape"), "latin\\xe9"),  # not UTF-8
    ],
)
def test_a_workspace_derived_from_a_directory_name_is_made_safe(
    env: Env, tmp_path: Path, dirname: str, shown: str
) -> None:
    """The user did not type a derived name, so it is not refused: each control character
    (and each byte that is not UTF-8) is written escaped, the same way every time, so the
    directory keeps its facts and every output stays one line."""
    directory = tmp_path / "work" / dirname
    directory.mkdir(parents=True)
    expected = str(tmp_path / "work" / shown)
    for key in ("k1", "k2"):
        result = run_cli(env, "facts", "set", key, "--type", "fact", "--body", "b", cwd=directory)
        assert result.returncode == 0 and result.stderr == "", result
    facts = printed_json(run_cli(env, "facts", "list", "--json", cwd=directory))
    assert [(f["key"], f["workspace"]) for f in facts] == [("k1", expected), ("k2", expected)]
    listed = run_cli(env, "facts", "list", "--all-workspaces", cwd=tmp_path)
    assert len(listed.stdout.splitlines()) == 2 and "\x1b" not in listed.stdout, listed.stdout
    status = run_cli(env, "status", cwd=directory)
    assert f"({expected})" in status.stdout, status.stdout


def test_a_secret_as_the_workspace_is_refused_and_not_echoed(env: Env, home: Path) -> None:
    """A workspace name is stored with every fact and was never masked: a token pasted as
    `--workspace` went into the database as it was. It is refused (exit 2) like a control
    character, and the line shows the value masked."""
    token = "ghp_" + "ZZZZYYYYXXXXWWWWVVVVUUUUTTTTSSSSRRRR"
    result = run_cli(
        env, "--workspace", token, "facts", "set", "k", "--type", "fact", "--body", "b"
    )
    line = assert_one_line(result, 2, "option --workspace", "may not hold a secret")
    assert token not in line and "[REDACTED:" in line
    assert not home.exists()
    plain = run_cli(dict(env, STRAYLIGHT_WORKSPACE="password-reset-flow"), "facts", "list")
    assert plain.returncode == 0, plain.stderr  # a name that only mentions a password is fine


@pytest.mark.parametrize(
    ("given", "named"),
    [(("--model",), "option --model"), ((), "STRAYLIGHT_EMBED_MODEL")],
)
def test_a_secret_as_a_model_name_is_refused_and_not_written(
    env: Env, home: Path, given: tuple[str, ...], named: str
) -> None:
    """The model's name is written with every message into the daily log, which was never
    masked there: `--model ghp_…` (not pulled, exit 4) left the token in the day file."""
    token = "ghp_" + "ZZZZYYYYXXXXWWWWVVVVUUUUTTTTSSSSRRRR"
    if given:
        result = run_cli(env, *given, token, "ask", "hi")
    else:
        result = run_cli(dict(env, STRAYLIGHT_EMBED_MODEL=token), "ask", "hi")
    line = assert_one_line(result, 2, named, "may not hold a secret")
    assert token not in line and "[REDACTED:" in line
    assert not home.exists()
