"""`status` on a data dir whose `vectors.usearch` is not its own (another data dir's file
copied in): the reading command uses none of its vectors (state `stale`, size 0 — the JSON
fields as before) and the plain line says what the file is, how many vectors it holds and
what the next writing command rebuilds it from, instead of a bare `stale, 0 vectors`."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

from tests.support.cli import NOW, Env, assert_ok, printed_json, run_cli
from tests.support.ollama_standin import OllamaStandIn


def fill(env: Env, *texts: str) -> None:
    for text in texts:
        assert_ok(run_cli(env, "remember", text))


def index_line(env: Env) -> str:
    out = run_cli(env, "status")
    assert_ok(out)
    (line,) = [line for line in out.stdout.splitlines() if line.startswith("index ")]
    return line


def test_status_names_a_foreign_index_file(
    cli_env: Callable[..., Env], standin: OllamaStandIn, home: Path, tmp_path: Path
) -> None:
    env = cli_env(OLLAMA_HOST=standin.host, STRAYLIGHT_NOW=NOW)
    other_home = tmp_path / "other"
    other = dict(env, STRAYLIGHT_HOME=str(other_home))
    fill(env, "The staging box is called heron.", "Deploys happen on Tuesdays.")
    fill(other, "One.", "Two of them.", "Three of a kind.")
    assert index_line(env) == "index      in_sync, 2 vectors"
    shutil.copyfile(other_home / "vectors.usearch", home / "vectors.usearch")

    report = printed_json(run_cli(env, "status", "--json"))
    assert report["index"] == {"state": "stale", "size": 0}  # fields and meaning kept
    line = index_line(env)
    assert line == (
        "index      stale, 0 vectors (not used: vectors.usearch holds 3 vectors: made for "
        "another database or embedding model; recall searches the stored vectors exactly, "
        "and the next writing command rebuilds it from the database's 2 vectors)"
    )

    fill(env, "A writing command rebuilds it.")  # and then it is the data dir's own again
    assert index_line(env) == "index      in_sync, 3 vectors"


def test_status_of_a_damaged_index_file_says_why(
    cli_env: Callable[..., Env], standin: OllamaStandIn, home: Path
) -> None:
    env = cli_env(OLLAMA_HOST=standin.host, STRAYLIGHT_NOW=NOW)
    fill(env, "The staging box is called heron.")
    path = home / "vectors.usearch"
    path.write_bytes(path.read_bytes()[:-7])
    line = index_line(env)
    assert line.startswith("index      stale, 0 vectors (not used: vectors.usearch is not usable (")
    assert line.endswith("rebuilds it from the database's 1 vector)")
