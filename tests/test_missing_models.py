"""A configured chat or embedding model that Ollama does not have is named with its fix in
`status` (plain and JSON), in the sidebar, in the memory screens and in a chat notice whose
button opens the models screen ready to pull it."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest
from textual.widgets import Button, Input, Static

from agent.model_catalog import MissingModel, missing_models
from agent.settings import Settings
from tests.support.cli import Env, printed_json, run_cli
from tests.support.ollama_standin import OllamaStandIn
from tests.support.pilot_helpers import wait_until
from tui.app import StraylightApp
from tui.screens.memory_browser import MemoryBrowserScreen
from tui.screens.models_screen import ModelsScreen
from tui.widgets.missing_model import MissingModelNotice
from tui.widgets.status_sidebar import StatusSidebar

SIZE = (110, 40)


@pytest.fixture
def chat_only() -> Iterator[OllamaStandIn]:
    """Ollama with the chat model but without the embedding model."""
    with OllamaStandIn(models=("llama3.2",), embed_dim=8) as server:
        yield server


def test_missing_models_names_each_role_with_both_fixes() -> None:
    missing = missing_models(
        ["llama3.2:latest"], chat_model="llama3.2", embed_model="nomic-embed-text"
    )
    assert missing == (MissingModel("embedding", "nomic-embed-text"),)
    assert missing[0].to_json() == {
        "role": "embedding",
        "model": "nomic-embed-text",
        "fix": ["ollama pull nomic-embed-text", "straylight pull nomic-embed-text"],
    }
    both = missing_models([], chat_model="qwen3:8b", embed_model="all-minilm")
    assert [m.role for m in both] == ["chat", "embedding"]
    assert "`straylight pull qwen3:8b`" in both[0].line()


def test_status_names_the_missing_models_with_their_fix(
    cli_env: Callable[..., Env], chat_only: OllamaStandIn
) -> None:
    env = cli_env(OLLAMA_HOST=chat_only.host)
    report = printed_json(run_cli(env, "status", "--json", "--model", "phi9"))
    ollama = report["ollama"]
    assert ollama["model_pulled"] is False and ollama["embed_model_pulled"] is False
    assert ollama["missing_models"] == [
        {"role": "chat", "model": "phi9", "fix": ["ollama pull phi9", "straylight pull phi9"]},
        {
            "role": "embedding",
            "model": "nomic-embed-text",
            "fix": ["ollama pull nomic-embed-text", "straylight pull nomic-embed-text"],
        },
    ]
    plain = run_cli(env, "status").stdout
    assert (
        "missing    The embedding model nomic-embed-text is not pulled (memories are saved "
        "without a vector and recalled by their words only): run `ollama pull "
        "nomic-embed-text` or `straylight pull nomic-embed-text`." in plain
    )
    chat_only.stop()
    assert printed_json(run_cli(env, "status", "--json"))["ollama"]["missing_models"] is None


def test_status_lists_nothing_missing_when_both_are_pulled(
    cli_env: Callable[..., Env], standin: OllamaStandIn
) -> None:
    env = cli_env(OLLAMA_HOST=standin.host)
    assert printed_json(run_cli(env, "status", "--json"))["ollama"]["missing_models"] == []
    assert "missing" not in run_cli(env, "status").stdout


async def test_the_tui_names_a_missing_embedding_model_and_offers_to_pull_it(
    make_settings: Callable[..., Settings], chat_only: OllamaStandIn
) -> None:
    app = StraylightApp(make_settings(ollama_host=chat_only.host, jobs_enabled=False))
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(pilot, lambda: bool(app.query(MissingModelNotice)), what="notice")
        state = app.query_one(StatusSidebar).state
        assert state is not None and state.embed_pulled is False
        block = str(app.query_one("#sidebar-ollama", Static).render())
        assert "embeddings nomic-embed-text" in block
        assert "straylight pull nomic-embed-text" in block
        notice = app.query_one(MissingModelNotice)
        assert "ollama pull nomic-embed-text" in str(notice.query_one(Static).render())

        await wait_until(pilot, lambda: app.engine.memory is not None, what="memory open")
        await pilot.press("f2")  # a memory screen names it too
        await wait_until(pilot, lambda: isinstance(app.screen, MemoryBrowserScreen))
        line = app.screen.query_one("#screen-missing", Static)
        assert line.display and "nomic-embed-text is not pulled" in str(line.render())
        await pilot.press("escape")
        await wait_until(pilot, lambda: app.screen is app.chat, what="back")

        titles = {c.title for c in app.get_system_commands(app.screen)}
        assert "Pull missing embedding model: nomic-embed-text" in titles

        await pilot.press("f8")  # the button's key: the pull box is filled as by a click
        await wait_until(pilot, lambda: isinstance(app.screen, ModelsScreen), what="models")
        assert app.screen.query_one(Input).value == "nomic-embed-text"
        await pilot.press("escape")
        await wait_until(pilot, lambda: app.screen is app.chat, what="back again")

        await pilot.click(notice.query_one(Button))
        await wait_until(pilot, lambda: isinstance(app.screen, ModelsScreen), what="models")
        box = app.screen.query_one(Input)
        assert box.value == "nomic-embed-text" and app.focused is box
        await pilot.press("enter")
        await wait_until(
            pilot, lambda: not app.missing_models, timeout=10, what="pulled and re-checked"
        )
        await wait_until(
            pilot, lambda: app.query_one(StatusSidebar).state.embed_pulled is True, what="ok"
        )
        assert "nomic-embed-text:latest" in chat_only.catalog.installed
