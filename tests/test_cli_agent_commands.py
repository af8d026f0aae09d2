"""The commands `straylight mcp` runs that are new with it: `recall --role` and the hits'
`date`, `candidates propose --origin`, `facts search`, and the `mcp_doc_roots` setting — each
through `tui.cli.main` in-process against the HTTP stand-in and a real DuckDB file."""

from __future__ import annotations

from pathlib import Path

import pytest

from agent.settings import SettingsError, load_settings
from tests.support.cli import (
    DAY,
    NOW,
    Env,
    assert_ok,
    assert_one_line,
    cli_env,
    printed_json,
    run_cli,
)
from tests.support.ollama_standin import OllamaStandIn


@pytest.fixture
def env(tmp_path: Path, standin: OllamaStandIn) -> Env:
    return cli_env(
        tmp_path / "home",
        tmp_path,
        OLLAMA_HOST=standin.host,
        STRAYLIGHT_NOW=NOW,
        STRAYLIGHT_WORKSPACE="demo",
    )


def test_recall_role_keeps_only_that_role_and_every_hit_has_its_date(
    env: Env, tmp_path: Path
) -> None:
    doc = tmp_path / "deploy.md"
    doc.write_text("# Deploy\n\nThe blyck deploy runs just deploy on the build box.\n")
    printed_json(run_cli(env, "import-doc", str(doc), "--json"))
    pinned = printed_json(run_cli(env, "remember", "blyck deploy happens on fridays", "--json"))
    every = printed_json(run_cli(env, "recall", "blyck deploy", "--json"))
    assert {hit["role"] for hit in every["hits"]} == {"user", "doc"}
    assert all(hit["date"] == DAY and "created_at" in hit for hit in every["hits"])
    docs = printed_json(run_cli(env, "recall", "blyck deploy", "--role", "doc", "--json"))
    assert [hit["role"] for hit in docs["hits"]] == ["doc"]
    assert "fridays" not in docs["block"] and "build box" in docs["block"]
    users = printed_json(run_cli(env, "recall", "blyck deploy", "--role", "user", "--json"))
    assert [hit["id"] for hit in users["hits"]] == [pinned["id"]]
    none = printed_json(run_cli(env, "recall", "blyck deploy", "--role", "assistant", "--json"))
    assert none == {"hits": [], "block": ""}
    assert_one_line(run_cli(env, "recall", "x", "--role", "tool"), 2, "invalid choice")


def test_candidates_propose_waits_for_approval_and_names_its_origin(env: Env) -> None:
    args = ("candidates", "propose", "Deploy: Blyck", "--type", "procedure")
    made = printed_json(
        run_cli(env, *args, "--body", "just deploy", "--origin", "mcp:zed\x1b[2J[bold]", "--json")
    )
    assert (made["key"], made["status"], made["origin"]) == (
        "deploy:blyck",
        "pending",
        "mcp:zed 2J bold",
    )
    listed = run_cli(env, "candidates", "list")
    assert "from mcp:zed 2J bold" in listed.stdout
    assert_one_line(run_cli(env, *args, "--body", "just deploy"), 1, "already pending")
    assert_one_line(run_cli(env, *args, "--body", "   "), 2, "body")
    assert_one_line(run_cli(env, *args, "--body", "x", "--origin", "tool"), 2, "origin")
    default = printed_json(run_cli(env, *args, "--body", "make deploy", "--json"))
    assert default["origin"] == "cli"
    printed_json(run_cli(env, "candidates", "reject", str(default["id"]), "--json"))
    assert_one_line(run_cli(env, *args, "--body", "make deploy"), 1, "rejected before")
    assert printed_json(run_cli(env, "facts", "list", "--json")) == []  # never a fact by itself
    # the origin is stored text too: a token in it (a client name) is masked (issue 15)
    token = "AKIAZ7Q3XK4PLM2RT9WB"
    other = ("candidates", "propose", "ferry:pier", "--type", "fact", "--body", "Pier four.")
    leaked = printed_json(run_cli(env, *other, "--origin", f"mcp:{token}", "--json"))
    assert leaked["origin"] == "mcp:[REDACTED:aws_key]"
    # masked before the `=` is cleaned away (it was: `bot token sk-…` kept the key); only the
    # marker keeps its brackets, and a marker the 60-character cut would halve is dropped
    other = ("candidates", "propose", "ferry:dock", "--type", "fact", "--body", "Dock two.")
    keyed = printed_json(run_cli(env, *other, "--origin", "bot<1> password=hunter22", "--json"))
    assert keyed["origin"] == "bot 1 password [REDACTED:password]"
    other = ("candidates", "propose", "ferry:quay", "--type", "fact", "--body", "Quay one.")
    cut = printed_json(run_cli(env, *other, "--origin", f"{'a' * 50} {token}", "--json"))
    assert cut["origin"] == "a" * 50


def test_facts_search_puts_the_exact_key_first(env: Env, tmp_path: Path) -> None:
    assert printed_json(run_cli(env, "facts", "search", "deploy", "--json")) == []
    assert not (tmp_path / "home").exists()  # a read creates no data dir
    for key, body in (
        ("deploy:blyck", "Deploy blyck with just deploy; the deploy box is build-1"),
        ("deploy", "Deploys happen on fridays"),
    ):
        printed_json(run_cli(env, "facts", "set", key, "--type", "fact", "--body", body, "--json"))
    found = printed_json(run_cli(env, "facts", "search", "deploy", "--json"))
    assert [f["key"] for f in found] == ["deploy", "deploy:blyck"]
    listed = run_cli(env, "facts", "search", "deploy").stdout.splitlines()
    assert listed[0] == "deploy  fact (workspace, 1.00): Deploys happen on fridays", listed
    assert_one_line(run_cli(env, "facts", "search", " "), 2, "non-empty")


def test_facts_search_finds_a_fact_by_one_word_of_its_body(env: Env) -> None:
    """A short query holds too few of a body's words for injection's rule, and its cosine may
    be low: a fact holding every word of the query is found all the same."""
    for key, body in (
        ("deploy:host", "blue-7 runs staging and the nightly builds"),
        ("editor", "Use helix for quick edits"),
    ):
        printed_json(run_cli(env, "facts", "set", key, "--type", "fact", "--body", body, "--json"))
    found = printed_json(run_cli(env, "facts", "search", "staging", "--json"))
    assert [f["key"] for f in found] == ["deploy:host"]
    assert [f["key"] for f in printed_json(run_cli(env, "facts", "search", "host", "--json"))] == [
        "deploy:host"
    ]
    assert printed_json(run_cli(env, "facts", "search", "staging purple", "--json")) == []


def test_mcp_doc_roots_from_the_file_and_the_environment(tmp_path: Path) -> None:
    config = tmp_path / "config.toml"
    config.write_text('mcp_doc_roots = ["~/notes", "/srv/docs"]\n')
    from_file = load_settings(environ={"HOME": str(tmp_path)}, config_path=config).settings
    assert from_file.mcp_doc_roots[1] == Path("/srv/docs")
    assert from_file.mcp_doc_roots[0].name == "notes" and from_file.mcp_doc_roots[0].is_absolute()
    from_env = load_settings(environ={"STRAYLIGHT_MCP_DOC_ROOTS": "/a:/b"}, config_path=config)
    assert from_env.settings.mcp_doc_roots == [Path("/a"), Path("/b")]
    assert from_env.describe()["mcp_doc_roots"]["value"] == ["/a", "/b"]
    config.write_text('mcp_doc_roots = "/srv/docs"\n')
    with pytest.raises(SettingsError, match=r"mcp_doc_roots.*list of directories"):
        load_settings(environ={}, config_path=config)


def test_a_path_longer_than_any_file_can_have_is_refused_at_once(tmp_path: Path) -> None:
    """`memory_load_doc` with `"a/" * 1_000_000` resolved the path for minutes (each part
    re-joins the growing string) while the server answered no other call. A path longer
    than Linux opens is refused before it is resolved."""
    from tui.mcp_doc_roots import PATH_MAX, allowed_doc

    longest = str(tmp_path / ("a/" * ((PATH_MAX - len(str(tmp_path))) // 2 - 1)))
    with pytest.raises(ValueError, match=r"^no such file: "):
        allowed_doc(longest, [tmp_path])  # still looked for
    too_long = str(tmp_path / ("a/" * 5_000))
    with pytest.raises(ValueError, match=r"^the path is 1\d,\d\d\d characters; a path holds at"):
        allowed_doc(too_long, [tmp_path])


def test_doc_roots_are_the_workspace_and_the_configured_folders_never_slash_or_home(
    tmp_path: Path,
) -> None:
    from tui.mcp_doc_roots import allowed_doc, doc_roots

    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    (repo / "src").mkdir()
    notes = tmp_path / "notes"
    notes.mkdir()
    assert doc_roots([notes], cwd=repo / "src") == [repo, notes]
    assert doc_roots([notes], cwd=Path("/")) == [notes]
    assert doc_roots([], cwd=tmp_path, home=tmp_path) == []
    (tmp_path / "x.md").write_text("# x\n")
    with pytest.raises(ValueError, match=r"outside the folders .*: there are none"):
        allowed_doc(str(tmp_path / "x.md"), [])


def test_a_fact_said_again_in_another_case_or_with_a_full_stop_is_already_a_fact(
    env: Env,
) -> None:
    """The gate's rejected, pending and approved checks compare bodies case-folded and
    without closing marks; its "already a fact" check compared them as typed, so the same
    fact came back as a candidate that "replaces" itself."""
    body = "This PC can deploy blyck: npm run dist, aws s3 sync"
    assert_ok(run_cli(env, "facts", "set", "deploy:blyck", "--type", "capability", "--body", body))
    args = ("candidates", "propose", "deploy:blyck", "--type", "capability", "--body")
    for again in (body, body.lower() + ".", body.upper() + "!"):
        assert_one_line(run_cli(env, *args, again), 1, "already a fact")
    assert printed_json(run_cli(env, "candidates", "list", "--json")) == []
