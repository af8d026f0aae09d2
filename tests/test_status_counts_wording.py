"""`straylight status` and `import-doc` count in words a reader expects: one point, one
vector, one message, one embedding request — not "1 points" (a checker's first command on a
new store)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from tests.support.cli import NOW, Env, assert_ok, run_cli
from tests.support.ollama_standin import OllamaStandIn


def test_one_of_each_is_singular(
    cli_env: Callable[..., Env], standin: OllamaStandIn, tmp_path: Path
) -> None:
    env = cli_env(OLLAMA_HOST=standin.host, STRAYLIGHT_NOW=NOW)
    doc = tmp_path / "doc.md"
    doc.write_text("# Deploy\nRun npm run dist, then copy the bundle to the bucket.\n")
    imported = run_cli(env, "import-doc", str(doc))
    assert_ok(imported)
    assert "1 added, 0 updated, 0 unchanged, 0 removed (1 embedding request)" in imported.stdout
    out = run_cli(env, "status")
    assert_ok(out)
    lines = {line.split()[0]: line for line in out.stdout.splitlines() if line.strip()}
    assert lines["memory"].startswith("memory     1 point (0 user, 0 assistant, 1 doc;")
    assert lines["index"] == "index      in_sync, 1 vector"
    assert lines["embedding"].endswith(", 1 request so far")
    assert lines["today"].startswith("today      0 messages in ")
    assert "; 0 candidates pending (" in lines["facts"]
    proposed = ("candidates", "propose", "db:x", "--type", "fact", "--body", "Postgres 16.")
    assert_ok(run_cli(env, *proposed))
    facts = [x for x in run_cli(env, "status").stdout.splitlines() if x.startswith("facts")]
    assert "; 1 candidate pending (" in facts[0]  # not "1 candidates"


def test_one_section_left_without_a_vector_is_singular(
    cli_env: Callable[..., Env], tmp_path: Path
) -> None:
    """Ollama down: `import-doc` of a one-section file said "1 sections stored without a
    vector"."""
    env = cli_env(OLLAMA_HOST="http://127.0.0.1:9", STRAYLIGHT_NOW=NOW)
    doc = tmp_path / "doc.md"
    doc.write_text("# Deploy\nRun npm run dist, then copy the bundle to the bucket.\n")
    imported = run_cli(env, "import-doc", str(doc))
    assert_ok(imported)
    assert "note: 1 section stored without a vector (" in imported.stderr, imported.stderr


def test_longterm_sizes_are_grouped_as_the_sidebar_and_ask_print_them(
    cli_env: Callable[..., Env], standin: OllamaStandIn, home: Path
) -> None:
    """`status` printed `longterm   15001 / 8192 bytes` where the sidebar and `ask` say
    `15,001 / 8,192`."""
    env = cli_env(OLLAMA_HOST=standin.host, STRAYLIGHT_NOW=NOW)
    home.mkdir(parents=True, exist_ok=True)
    (home / "longterm.md").write_text("- a note worth keeping\n" * 600, encoding="utf-8")
    out = run_cli(env, "status")
    assert_ok(out)
    lines = {line.split()[0]: line for line in out.stdout.splitlines() if line.strip()}
    assert lines["longterm"] == "longterm   13,800 / 8,192 bytes"
    assert lines["warning"].startswith(
        "warning    longterm.md is 13,800 bytes, over its budget of 8,192 bytes"
    )


def test_the_memory_line_groups_every_count(
    cli_env: Callable[..., Env], standin: OllamaStandIn, tmp_path: Path
) -> None:
    """`memory     1,200 points (0 user, 0 assistant, 1200 doc; …)`: the total was grouped and
    the counts beside it were not; every count of the line reads alike."""
    env = cli_env(OLLAMA_HOST=standin.host, STRAYLIGHT_NOW=NOW)
    doc = tmp_path / "runbook.md"
    sections = (
        f"# Step {n}\nCheck the pump on rack {n} and note its pressure.\n" for n in range(1200)
    )
    doc.write_text("".join(sections))
    assert_ok(run_cli(env, "import-doc", str(doc)))
    out = run_cli(env, "status")
    assert_ok(out)
    lines = {line.split()[0]: line for line in out.stdout.splitlines() if line.strip()}
    assert lines["memory"].startswith("memory     1,200 points (0 user, 0 assistant, 1,200 doc;")
    assert lines["index"] == "index      in_sync, 1,200 vectors"
