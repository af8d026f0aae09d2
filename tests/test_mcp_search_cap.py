"""`memory_search` over MCP cuts each hit's content at `memory_max_chars` (the chat's own
recall-block cap) and says so in the content, naming the memory's id, its full length and
how to read it whole: a 2.5 MB pinned paste does not go to the agent in full. The result's
JSON shape is unchanged."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.cli import NOW, Env, cli_env
from tests.support.ollama_standin import OllamaStandIn
from tests.test_mcp_server import mcp_session, result_of
from tui.mcp_tools import MIN_HIT_CHARS, cut_content

CAP = 1000


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    (root / ".git").mkdir(parents=True)
    return root


@pytest.fixture
def env(tmp_path: Path, standin: OllamaStandIn) -> Env:
    return cli_env(
        tmp_path / "home",
        tmp_path,
        OLLAMA_HOST=standin.host,
        STRAYLIGHT_NOW=NOW,
        STRAYLIGHT_WORKSPACE="demo",
        MEMORY_MAX_CHARS=str(CAP),
    )


def test_cut_content_keeps_short_text_and_marks_a_cut() -> None:
    assert cut_content(7, "short", 100) == "short"
    assert cut_content(7, "x" * 100, 100) == "x" * 100
    cut = cut_content(7, "y" * 5000, 1000)
    assert cut.startswith("y" * 1000 + "\n[") and "y" * 1001 not in cut
    assert "memory #7" in cut and "5000 characters" in cut and "straylight recall" in cut
    assert cut_content(7, "z" * 5000, 0).startswith("z" * MIN_HIT_CHARS + "\n[")


async def test_a_huge_pinned_paste_comes_back_cut_with_a_marker(env: Env, workspace: Path) -> None:
    paste = "harbour crane log " + "0123456789abcdef " * 3000  # ~51k characters
    async with mcp_session(env, workspace) as session:
        big = result_of(await session.call_tool("memory_save", {"text": paste}))["id"]
        small = result_of(
            await session.call_tool("memory_save", {"text": "harbour crane shift at six"})
        )["id"]
        hits = result_of(await session.call_tool("memory_search", {"query": "harbour crane"}))[
            "hits"
        ]
    by_id = {hit["id"]: hit for hit in hits}
    assert set(by_id) == {big, small}
    assert all(set(hit) == {"id", "role", "date", "score", "pinned", "content"} for hit in hits)
    assert by_id[small]["content"] == "harbour crane shift at six"
    content = by_id[big]["content"]
    assert content.startswith(paste[:CAP] + "\n[")
    assert len(content) < CAP + 300
    assert f"memory #{big}" in content and f"{len(paste.strip())} characters" in content
