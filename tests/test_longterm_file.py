"""longterm.md's comments: closed ones never reach the prompt; one that is never closed is
sent with everything after it, and `straylight status` says so (an editor's Markdown preview
hides that text, so the user believes it is left out)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from store.longterm_file import LongtermFile
from tests.support.cli import NOW, Env, assert_ok, run_cli
from tests.support.ollama_standin import OllamaStandIn


def _load(tmp_path: Path, text: str) -> LongtermFile:
    path = tmp_path / "longterm.md"
    path.write_text(text, encoding="utf-8")
    return LongtermFile(path, 8192)


def test_closed_comments_are_left_out_and_nothing_is_flagged(tmp_path: Path) -> None:
    state = _load(tmp_path, "<!-- a note -->\n- I use fish.\n<!--\nsecond\n-->\n").load()
    assert state.text == "- I use fish."
    assert state.unclosed_comment_line is None


def test_an_unclosed_comment_is_sent_and_its_line_is_named(tmp_path: Path) -> None:
    text = "<!-- template -->\n- I use fish.\n\n<!-- draft: not sure yet\n- I use vim.\n"
    state = _load(tmp_path, text).load()
    assert state.unclosed_comment_line == 4
    assert state.text.endswith("<!-- draft: not sure yet\n- I use vim.")  # sent, as before


def test_status_warns_of_an_unclosed_comment_in_text_and_json(
    cli_env: Callable[..., Env], standin: OllamaStandIn, home: Path
) -> None:
    env = cli_env(OLLAMA_HOST=standin.host, STRAYLIGHT_NOW=NOW)
    home.mkdir(parents=True, exist_ok=True)
    (home / "longterm.md").write_text("- I use fish.\n<!-- half a thought\n", encoding="utf-8")
    out = run_cli(env, "status")
    assert_ok(out)
    [warning] = [line for line in out.stdout.splitlines() if line.startswith("warning")]
    assert "comment opened on line 2 is never closed with -->" in warning, warning
    report = json.loads(run_cli(env, "status", "--json").stdout)
    assert "line 2 is never closed" in report["longterm"]["warning"]
