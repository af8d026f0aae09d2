"""Secrets that escaped masking (issue 15 §2): longterm.md in the prompt, import-doc headings in
`points.source`, the text `remember` and `recall` send to /api/embed, and the user's own bubble
in the TUI. Each path is checked where the secret would have gone: the request the stand-in
received, the DuckDB file, the widget."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import duckdb

from agent.settings import Settings
from tests.support.cli import run_cli
from tests.support.ollama_standin import OllamaStandIn
from tests.support.pilot_helpers import type_text, wait_until
from tui.app import StraylightApp
from tui.widgets.chat_message import ChatMessage

Env = dict[str, str]
AWS = "AKIAZ7Q3XK4PLM2RT9WB"
GITHUB = "ghp_ZZZZYYYYXXXXWWWWVVVVUUUUTTTTSSSSRRRR"
OTHER = "ghp_AAAABBBBCCCCDDDDEEEEFFFFGGGGHHHHIIII"


def sent_anywhere(standin: OllamaStandIn, secret: str) -> list[str]:
    """The paths of the requests whose body carried `secret`."""
    return [r.path for r in standin.requests if secret in json.dumps(r.body)]


def test_longterm_md_goes_to_the_model_masked(
    cli_env: Callable[..., Env], standin: OllamaStandIn, home: Path
) -> None:
    home.mkdir(parents=True, exist_ok=True)
    (home / "longterm.md").write_text(f"AWS: {AWS}\nI prefer tea.\n", encoding="utf-8")
    proc = run_cli(cli_env(OLLAMA_HOST=standin.url), "ask", "hi")
    assert proc.returncode == 0, proc.stderr
    system = standin.chat_requests()[-1]["messages"][0]["content"]
    assert "I prefer tea." in system
    assert "[REDACTED" in system
    assert sent_anywhere(standin, AWS) == []
    assert AWS in (home / "longterm.md").read_text(encoding="utf-8")  # the file is the user's


def test_import_doc_headings_are_masked_in_points_source(
    cli_env: Callable[..., Env], standin: OllamaStandIn, home: Path, tmp_path: Path
) -> None:
    doc = tmp_path / "notes.md"
    doc.write_text(
        f"# Notes\n\n## Token {GITHUB}\n\nRotate it monthly.\n\n"
        f"## Token {OTHER}\n\nThe backup one, kept offline.\n",
        encoding="utf-8",
    )
    env = cli_env(OLLAMA_HOST=standin.url)
    proc = run_cli(env, "import-doc", str(doc), "--json")
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["added"] >= 2
    with duckdb.connect(str(home / "straylight.duckdb"), read_only=True) as db:
        rows = db.execute("SELECT source FROM points ORDER BY id").fetchall()
    sources = [row[0] for row in rows if "Token" in row[0]]
    assert len(sources) == 2 and len(set(sources)) == 2  # two headings stay two points
    assert all("[REDACTED" in source for source in sources)
    assert not any(GITHUB in s or OTHER in s for s in sources)
    assert sent_anywhere(standin, GITHUB) == [] and sent_anywhere(standin, OTHER) == []
    again = run_cli(env, "import-doc", str(doc), "--json")  # idempotent with masked keys
    assert json.loads(again.stdout)["unchanged"] == len(rows)


def test_remember_and_recall_embed_the_masked_text(
    cli_env: Callable[..., Env], standin: OllamaStandIn
) -> None:
    env = cli_env(OLLAMA_HOST=standin.url)
    assert (
        run_cli(env, "remember", f"the deploy token is {GITHUB} for the blue cluster").returncode
        == 0
    )
    assert run_cli(env, "recall", f"which token is {GITHUB}?").returncode == 0
    embeds = [r for r in standin.requests if r.path == "/api/embed"]
    assert len(embeds) == 2
    assert all("[REDACTED" in json.dumps(r.body) for r in embeds)
    assert sent_anywhere(standin, GITHUB) == []


def test_facts_search_embeds_the_masked_query(
    cli_env: Callable[..., Env], standin: OllamaStandIn
) -> None:
    """`facts search` asked /api/embed itself, with the query as typed: a pasted token
    reached the embedding server that remember, recall and MCP only ever send masked."""
    env = cli_env(OLLAMA_HOST=standin.url)
    set_fact = run_cli(env, "facts", "set", "deploy:blue", "--type", "fact", "--body", "Blue.")
    assert set_fact.returncode == 0, set_fact.stderr
    assert run_cli(env, "facts", "search", f"deploy token {GITHUB}").returncode == 0
    embeds = [r for r in standin.requests if r.path == "/api/embed"]
    assert embeds, "facts search asked for no query vector"
    assert "[REDACTED" in json.dumps(embeds[-1].body)
    assert sent_anywhere(standin, GITHUB) == []


async def test_the_users_bubble_shows_the_stored_masked_text(
    settings: Settings, standin: OllamaStandIn
) -> None:
    standin.script_reply("Noted.")
    app = StraylightApp(settings)
    typed = f"my key is {AWS} ok"
    async with app.run_test(size=(110, 32)) as pilot:
        await wait_until(pilot, lambda: app.engine.memory is not None, what="memory open")
        await type_text(pilot, typed)
        await pilot.press("enter")
        await wait_until(
            pilot,
            lambda: [m.status for m in app.query(ChatMessage)] == ["complete", "complete"],
            what="the reply",
        )
        user = app.query(ChatMessage).first()
        assert AWS not in user.text and "[REDACTED" in user.text
        shown = str(user.query_one(".message-body").render())
        assert AWS not in shown and "[REDACTED" in shown
        await app.engine.drain()
