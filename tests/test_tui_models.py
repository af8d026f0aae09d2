"""The models screen (F8) against the Ollama stand-in: the list with capabilities, window,
size and what is loaded; a pull whose bar moves while the chat goes on; delete after y/n;
use as the chat or the embedding model."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from textual.pilot import Pilot
from textual.widgets import DataTable, Input, ProgressBar

from agent.settings import Settings
from tests.support.ollama_standin import OllamaStandIn
from tests.support.pilot_helpers import notices, type_text, wait_until
from tui.app import StraylightApp
from tui.screens.chat_screen import ChatScreen
from tui.screens.confirm_screen import ConfirmScreen
from tui.screens.models_screen import ModelsScreen
from tui.widgets.chat_input import ChatInput
from tui.widgets.chat_message import ChatMessage

SIZE = (110, 32)
MODELS = ("llama3.2", "qwen3:8b", "nomic-embed-text", "all-minilm")


@pytest.fixture
def srv() -> Iterator[OllamaStandIn]:
    with OllamaStandIn(models=MODELS, embed_dim=8) as server:
        yield server


@pytest.fixture
def app_settings(make_settings, srv: OllamaStandIn) -> Settings:
    return make_settings(ollama_host=srv.host, jobs_enabled=False)


def rows(screen: ModelsScreen) -> dict[str, list[str]]:
    table = screen.query_one(DataTable)
    return {
        str(key.value): [str(cell) for cell in table.get_row(key)]
        for key in (row.key for row in table.ordered_rows)
    }


async def open_models(pilot, app: StraylightApp) -> ModelsScreen:
    await wait_until(pilot, lambda: app.engine.memory is not None, what="memory open")
    await pilot.press("f8")
    await wait_until(pilot, lambda: isinstance(app.screen, ModelsScreen), what="models screen")
    screen = app.screen
    assert isinstance(screen, ModelsScreen)
    await wait_until(pilot, lambda: screen.loaded and bool(screen.records), what="the list")
    return screen


def highlight(screen: ModelsScreen, name: str) -> None:
    table = screen.query_one(DataTable)
    names = [record.name for record in screen.records]
    table.move_cursor(row=names.index(name))


async def test_f8_lists_models_with_capabilities_window_size_and_loaded_memory(
    app_settings: Settings, srv: OllamaStandIn
) -> None:
    app = StraylightApp(app_settings)
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(pilot, lambda: app.chat.ollama_status is not None, what="status")
        await type_text(pilot, "hello")
        await pilot.press("enter")  # the chat model serves a request: /api/ps lists it
        await wait_until(pilot, lambda: not app.replying and bool(srv.chat_requests()))
        screen = await open_models(pilot, app)
        table = rows(screen)
        assert set(table) == {
            "llama3.2:latest",
            "qwen3:8b",
            "nomic-embed-text:latest",
            "all-minilm:latest",
        }
        name, caps, window, size, loaded = table["llama3.2:latest"]
        assert "◆chat" in name and caps == "completion,tools" and window == "131,072"
        assert size == "2.0 GB" and loaded.endswith(" GB GPU")  # all of it in VRAM
        assert table["qwen3:8b"][1] == "completion,tools,thinking"
        assert table["qwen3:8b"][4] == "no"
        assert "◆embed" in table["nomic-embed-text:latest"][0]
        assert table["nomic-embed-text:latest"][1:3] == ["embedding", "2,048"]
        await pilot.press("escape")
        await wait_until(pilot, lambda: not isinstance(app.screen, ModelsScreen), what="closed")
        titles = {command.title for command in app.get_system_commands(app.screen)}
        assert "Models" in titles


async def test_a_pull_runs_in_the_background_while_the_chat_replies(
    app_settings: Settings, srv: OllamaStandIn
) -> None:
    srv.fail_next("stall", path="/api/pull", after=3, seconds=4.0)
    app = StraylightApp(app_settings)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_models(pilot, app)
        await pilot.press("p")
        assert isinstance(app.focused, Input)
        await type_text(pilot, "llava")
        await pilot.press("enter")
        bar = screen.query_one(ProgressBar)
        await wait_until(pilot, lambda: bar.display and bool(bar.progress), what="the bar")
        pulls = app.model_pulls
        assert not pulls.states["llava"].done
        await pilot.press("escape")  # the pull goes on without the screen
        await wait_until(pilot, lambda: app.screen is app.chat, what="back in the chat")
        srv.script_reply("Still here.")
        await type_text(pilot, "are you there")
        await pilot.press("enter")
        await wait_until(
            pilot, lambda: [m.status for m in app.query(ChatMessage)][-1:] == ["complete"]
        )
        assert not pulls.states["llava"].done  # the reply finished during the pull
        await wait_until(pilot, lambda: pulls.states["llava"].done, timeout=10, what="pulled")
        assert pulls.states["llava"].error is None
        screen = await open_models(pilot, app)
        await wait_until(pilot, lambda: "llava:latest" in rows(screen), what="llava listed")
        assert rows(screen)["llava:latest"][1] == "completion,vision"


async def test_a_failed_pull_is_named(app_settings: Settings) -> None:
    app = StraylightApp(app_settings)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_models(pilot, app)
        await pilot.press("p")
        await type_text(pilot, "no-such-model")
        await pilot.press("enter")
        pulls = app.model_pulls
        await wait_until(pilot, lambda: pulls.states["no-such-model"].done, what="failed")
        assert "file does not exist" in (pulls.states["no-such-model"].error or "")
        await wait_until(
            pilot,
            lambda: "file does not exist" in str(screen.query_one("#screen-status").render()),
            what="the error on the screen",
        )


async def test_delete_asks_first_and_removes_the_model(
    app_settings: Settings, srv: OllamaStandIn
) -> None:
    app = StraylightApp(app_settings)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_models(pilot, app)
        highlight(screen, "qwen3:8b")
        await pilot.press("d")
        await wait_until(pilot, lambda: isinstance(app.screen, ConfirmScreen), what="y/n")
        await pilot.press("n")
        await wait_until(pilot, lambda: app.screen is screen, what="declined")
        assert not [r for r in srv.requests if r.path == "/api/delete"]
        await pilot.press("d")
        await wait_until(pilot, lambda: isinstance(app.screen, ConfirmScreen), what="y/n")
        await pilot.press("y")
        await wait_until(pilot, lambda: "qwen3:8b" not in rows(screen), what="deleted")
        assert [r.path for r in srv.requests].count("/api/delete") == 1


async def test_use_as_chat_model_and_embedding_only_for_embedding_models(
    app_settings: Settings, srv: OllamaStandIn
) -> None:
    app = StraylightApp(app_settings)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_models(pilot, app)
        highlight(screen, "nomic-embed-text:latest")
        await pilot.press("c")  # an embedding model cannot chat
        assert app.screen is screen and "cannot chat" in str(
            screen.query_one("#screen-status").render()
        )
        highlight(screen, "qwen3:8b")
        await pilot.press("e")  # a chat model does not embed
        assert app.screen is screen
        assert "not an embedding model" in str(screen.query_one("#screen-status").render())
        await pilot.press("c")
        await wait_until(pilot, lambda: app.chat.model == "qwen3:8b", what="chat model")
        assert app.screen is app.chat

        screen = await open_models(pilot, app)
        highlight(screen, "nomic-embed-text:latest")  # the one in use, set without its tag
        await pilot.press("e")
        await pilot.pause()
        assert app.screen is screen and app.settings.memory.embed_model == "nomic-embed-text"
        assert "the embedding model already" in str(screen.query_one("#screen-status").render())
        highlight(screen, "all-minilm:latest")
        await pilot.press("e")
        await wait_until(pilot, lambda: isinstance(app.screen, ConfirmScreen), what="y/n")
        await pilot.press("y")
        await wait_until(
            pilot,
            lambda: (
                app.settings.memory.embed_model == "all-minilm:latest"
                and app.engine.memory is not None
            ),
            what="memory reopened",
        )
        assert app.engine.memory.store.config.embed_model == "all-minilm:latest"
        assert app.settings.facts.embed_model == "all-minilm:latest"
        srv.clear_requests()
        await type_text(pilot, "remember the blue door")
        await pilot.press("enter")
        await wait_until(pilot, lambda: not app.replying and bool(srv.chat_requests()))
        await app.engine.drain()
        embeds = [r for r in srv.requests if r.path == "/api/embed"]
        assert embeds and {r.body["model"] for r in embeds} == {"all-minilm:latest"}


async def test_with_ollama_down_the_screen_says_so_in_one_line(
    app_settings: Settings, srv: OllamaStandIn
) -> None:
    app = StraylightApp(app_settings)
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(pilot, lambda: app.engine.memory is not None, what="memory open")
        srv.stop()
        await pilot.press("f8")
        await wait_until(pilot, lambda: isinstance(app.screen, ModelsScreen), what="models")
        screen = app.screen
        assert isinstance(screen, ModelsScreen)
        await wait_until(pilot, lambda: screen.loaded, what="the attempt")
        status = str(screen.query_one("#screen-status").render())
        assert "not reachable" in status and "\n" not in status.strip()
        assert screen.records == [] and screen.query_one(DataTable).row_count == 0
        await pilot.press("d", "c", "e")  # nothing highlighted: nothing happens
        assert app.screen is screen


async def capabilities_known(pilot: Pilot, app: StraylightApp) -> ChatScreen:
    """The chat, once its Ollama check has learned what each pulled model can do."""
    chat = app.chat
    await wait_until(
        pilot,
        lambda: chat.ollama_status is not None and bool(chat.ollama_status.capabilities),
        what="the models' capabilities",
    )
    return chat


async def test_slash_model_refuses_a_model_that_cannot_chat(
    app_settings: Settings, srv: OllamaStandIn
) -> None:
    """`/model NAME` says no to an embedding model, like c on the models screen, rather than
    switching to it and failing every turn with Ollama's HTTP 400."""
    app = StraylightApp(app_settings)
    async with app.run_test(size=SIZE) as pilot:
        await capabilities_known(pilot, app)
        await type_text(pilot, "/model nomic-embed-text")
        await pilot.press("enter")
        await wait_until(pilot, lambda: bool(notices(app)), what="the refusal")
        assert "nomic-embed-text cannot chat (capabilities: embedding)" in notices(app)[-1]
        assert app.chat.model == app_settings.ollama.model
        await type_text(pilot, "/model qwen3:8b")
        await pilot.press("enter")
        await wait_until(pilot, lambda: app.chat.model == "qwen3:8b", what="the switch")


async def test_models_listed_without_capabilities_can_be_chosen_for_chat(
    app_settings: Settings, srv: OllamaStandIn
) -> None:
    """An Ollama that lists no capabilities (no field, or an empty list): the screen shows
    "-", c switches to the model (unknown is allowed, as `/model` allows it), the palette
    offers it, and e says Ollama lists nothing rather than naming empty capabilities."""
    srv.configure_model("qwen3:8b", lists_capabilities="empty")
    srv.configure_model("llama3.2", lists_capabilities="absent")
    app = StraylightApp(app_settings)
    async with app.run_test(size=SIZE) as pilot:
        chat = await capabilities_known(pilot, app)
        assert {"qwen3:8b", "llama3.2:latest"} <= set(chat.ollama_status.chat_models)
        screen = await open_models(pilot, app)
        assert rows(screen)["qwen3:8b"][1] == "-"
        highlight(screen, "qwen3:8b")
        await pilot.press("e")
        said = str(screen.query_one("#screen-status").render())
        assert "lists no capabilities for qwen3:8b" in said and "capabilities: )" not in said
        await pilot.press("c")
        await wait_until(pilot, lambda: app.chat.model == "qwen3:8b", what="chat model")


async def test_a_start_model_that_cannot_chat_is_refused_before_anything_is_logged(
    make_settings, srv: OllamaStandIn
) -> None:
    """`straylight --model nomic-embed-text` (or STRAYLIGHT_MODEL, config.toml): the first
    message was logged and failed with Ollama's bare `HTTP 400: … does not support chat`.
    Now it is refused as `ask --model` and `/model` refuse it: named with the fix, nothing
    logged or sent, the text kept in the box."""
    settings = make_settings(ollama_host=srv.host, jobs_enabled=False, model="nomic-embed-text")
    app = StraylightApp(settings)
    async with app.run_test(size=SIZE) as pilot:
        await capabilities_known(pilot, app)
        await type_text(pilot, "hello there")
        await pilot.press("enter")
        await wait_until(pilot, lambda: bool(notices(app)), what="the refusal")
        assert "nomic-embed-text cannot chat (capabilities: embedding)" in notices(app)[-1]
        assert "/model" in notices(app)[-1]
        assert not app.query(ChatMessage)
        assert app.query_one(ChatInput).text == "hello there"
    assert srv.chat_requests() == []
    assert not list((settings.home / "conversation").glob("*.md"))


async def test_the_dream_asks_the_model_switched_to(make_settings, srv: OllamaStandIn) -> None:
    """The job scheduler kept the start model: after `/model qwen3:8b`, `/dream` (and the
    nightly dream) still asked llama3.2 — one that may not even be pulled."""
    app = StraylightApp(make_settings(ollama_host=srv.host))
    async with app.run_test(size=SIZE) as pilot:
        await capabilities_known(pilot, app)
        for line in (
            "/remember the deploy of blyck takes four minutes with npm run dist",
            "/remember the blyck build fails when node is older than twenty",
            "/fact set deploy:blyck procedure npm run dist then aws s3 cp",
        ):
            count = len(notices(app)) + 1
            await type_text(pilot, line)
            await pilot.press("enter")
            await wait_until(pilot, lambda n=count: len(notices(app)) >= n, what=line)
        await wait_until(pilot, lambda: app.scheduler is not None, what="the jobs")
        await type_text(pilot, "/model qwen3:8b")
        await pilot.press("enter")
        await wait_until(pilot, lambda: app.chat.model == "qwen3:8b", what="the switch")
        srv.clear_requests()
        before = len(notices(app))
        await type_text(pilot, "/dream")
        await pilot.press("enter")
        await wait_until(pilot, lambda: len(notices(app)) > before, what="the dream's end")
        assert [r["model"] for r in srv.chat_requests()] == ["qwen3:8b"]


def shown_lines(table: DataTable) -> list[str]:
    """The table's lines as the terminal shows them."""
    return [
        "".join(segment.text for segment in table.render_line(y)) for y in range(table.size.height)
    ]


def shown_row(table: DataTable, name: str) -> str:
    return next(line for line in shown_lines(table) if name in line)


async def test_at_80_columns_the_capabilities_give_way_and_the_loaded_memory_shows_whole(
    make_settings, srv: OllamaStandIn
) -> None:
    """A loaded model's memory read `yes 2.2 GB (2.2 GB VRAM)` and ran past an 80-column
    terminal behind the long capabilities, cut without a mark. Now it is `… GB GPU`, and the
    capabilities column gives way: `completion` left out first, then cut with `…`."""
    app = StraylightApp(make_settings(ollama_host=srv.host, jobs_enabled=False))
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_until(pilot, lambda: app.chat.ollama_status is not None, what="status")
        await type_text(pilot, "hello")
        await pilot.press("enter")  # llama3.2 serves a request: /api/ps lists it
        await wait_until(pilot, lambda: not app.replying and bool(srv.chat_requests()))
        screen = await open_models(pilot, app)
        await pilot.pause()
        loaded = rows(screen)["llama3.2:latest"][4]
        assert loaded.endswith(" GB GPU")
        table = screen.query_one(DataTable)
        assert loaded in shown_row(table, "llama3.2:latest")
        qwen = shown_row(table, "qwen3:8b")
        assert "tools,thinking" in qwen and "completion" not in qwen
        assert all(len(line) <= 80 for line in shown_lines(table))
        await pilot.resize_terminal(76, 24)
        await wait_until(
            pilot, lambda: "…" in shown_row(table, "qwen3:8b"), what="cut at 76 columns"
        )
        assert loaded in shown_row(table, "llama3.2:latest")
        await pilot.resize_terminal(120, 30)
        await wait_until(
            pilot,
            lambda: "completion,tools,thinking" in shown_row(table, "qwen3:8b"),
            what="the capabilities whole at 120 columns",
        )


async def test_a_model_pulled_from_the_open_screen_takes_its_warning_away(
    make_settings, srv: OllamaStandIn
) -> None:
    """F8 with the chat model missing: the pull box is filled and Enter pulls it, but the
    line "The chat model … is not pulled (the chat cannot reply)" stayed on the open screen
    after the pull (the sidebar already said pulled); only reopening F8 cleared it."""
    app = StraylightApp(make_settings(ollama_host=srv.host, jobs_enabled=False, model="llava"))
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(pilot, lambda: bool(app.missing_models), what="the missing model")
        await pilot.press("f8")
        await wait_until(pilot, lambda: isinstance(app.screen, ModelsScreen), what="models")
        screen = app.screen
        assert isinstance(screen, ModelsScreen)
        line = screen.query_one("#screen-missing")
        assert line.display and "llava is not pulled" in str(line.render())
        assert isinstance(app.focused, Input) and app.focused.value == "llava"
        await pilot.press("enter")
        await wait_until(pilot, lambda: app.model_pulls.states["llava"].done, what="pulled")
        await wait_until(pilot, lambda: not app.missing_models, what="checked again")
        await wait_until(pilot, lambda: not line.display, what="the warning gone")
        assert app.screen is screen


async def test_at_80_columns_a_long_name_gives_way_and_size_and_loaded_stay_whole(
    make_settings,
) -> None:
    """With an `hf.co/…` name at 80 columns the size read `2.0 G` and `loaded` was off the
    screen, though the capabilities had given way as far as they could."""
    long_name = "hf.co/bartowski/Llama-3.2-3B-Instruct-GGUF:Q4_K_M"
    models = ("llama3.2", "nomic-embed-text", long_name, "deepseek-r1:8b-0528-qwen3-q4_K_M")
    with OllamaStandIn(models=models, embed_dim=8) as server:
        app = StraylightApp(make_settings(ollama_host=server.host, jobs_enabled=False))
        async with app.run_test(size=(80, 24)) as pilot:
            screen = await open_models(pilot, app)
            await pilot.pause()
            table = screen.query_one(DataTable)
            assert all(len(line) <= 80 for line in shown_lines(table))
            for name, (_n, _caps, window, size, loaded) in rows(screen).items():
                line = shown_row(table, name[:12])
                assert line.rstrip().endswith(loaded), (line, loaded)
                assert f" {size} " in line and window in line, line
            assert "…" in shown_row(table, "hf.co/")
