"""What a new user sees first (issue 16): the first screen names the data dir and says whether
the embedding model is pulled (with the command when it is not); at 80x24 the folded sidebar
line gives the reason and the fix when Ollama is offline, the Footer starts with F1 (every key
and screen), and the memory browser's preview shows the point's text above the fold."""

from __future__ import annotations

from collections.abc import Callable

from textual.widgets import Static
from textual.widgets._footer import FooterKey

from agent.settings import Settings
from tests.support.ollama_standin import OllamaStandIn
from tests.support.pilot_helpers import type_text, wait_until
from tests.test_memory_browser import add_sample, calm, open_browser, open_memory, preview
from tui.app import StraylightApp
from tui.widgets.chat_message import EmptyChatHint
from tui.widgets.status_sidebar import SidebarSummary


def hint_text(app: StraylightApp) -> str:
    return str(app.query_one(EmptyChatHint).render())


async def test_the_first_screen_names_the_data_dir_and_the_embedding_model(
    settings: Settings,
) -> None:
    app = StraylightApp(settings)
    async with app.run_test(size=(120, 30)) as pilot:
        await wait_until(pilot, lambda: "pulled" in hint_text(app), what="the check")
        text = " ".join(hint_text(app).split())
        assert str(settings.home / "conversation") in text
        assert str(settings.home / "longterm.md") in text
        assert "Embedding model nomic-embed-text: ✓ pulled" in text


async def test_a_missing_embedding_model_is_named_with_the_command(
    make_settings: Callable[..., Settings], standin: OllamaStandIn
) -> None:
    app = StraylightApp(make_settings(ollama_host=standin.host, embed_model="bge-m3"))
    async with app.run_test(size=(120, 30)) as pilot:
        await wait_until(pilot, lambda: "not pulled" in hint_text(app), what="the check")
        assert "run `straylight pull bge-m3`" in " ".join(hint_text(app).split())


async def test_at_80x24_offline_says_why_and_the_footer_starts_with_f1(
    make_settings: Callable[..., Settings],
) -> None:
    app = StraylightApp(make_settings(ollama_host="127.0.0.1:9"))
    async with app.run_test(size=(80, 24)) as pilot:
        summary = app.query_one(SidebarSummary)
        # Generous timeouts and waits for the layout, not only the text: under load (after
        # the snapshot tests in one process) the first check and the re-layout come late.
        await wait_until(
            pilot, lambda: "offline" in str(summary.render()), timeout=20, what="offline"
        )
        line = " ".join(str(summary.render()).split())
        assert "not reachable at" in line and "ollama serve" in line
        await wait_until(pilot, lambda: summary.region.height >= 2, what="wrapped, not cut")
        await wait_until(pilot, lambda: bool(app.screen.query(FooterKey)), what="the footer")
        keys = [key.key for key in app.screen.query(FooterKey)]
        assert keys[0] == "f1", keys
        first = app.screen.query(FooterKey).first()
        assert first.region.right <= 80 and "Keys" in str(first.render())


async def test_at_80x24_the_browser_preview_shows_the_text_above_the_fold(
    settings: Settings,
) -> None:
    app = StraylightApp(calm(settings))
    async with app.run_test(size=(80, 24)) as pilot:
        add_sample(await open_memory(pilot, app))
        screen = await open_browser(pilot, app, rows=6)
        pane = screen.query_one("#browser-preview")
        visible = preview(app).splitlines()[: pane.region.height - 1]  # minus its top border
        assert any("3 March" in line for line in visible), (visible, pane.region)
        assert isinstance(screen.query_one("#preview-body"), Static)


async def test_at_80x24_the_folded_line_counts_one_fact_and_one_point_in_the_singular(
    settings: Settings,
) -> None:
    app = StraylightApp(calm(settings))
    async with app.run_test(size=(80, 24)) as pilot:
        store = await open_memory(pilot, app)
        store.save("user", "The espresso machine descaling takes twenty minutes.", pinned=True)
        assert app.engine.facts is not None
        app.engine.facts.set("build:npm", "capability", "npm run dist builds blyck.")
        app.chat.refresh_counts()
        summary = app.query_one(SidebarSummary)

        def line() -> str:
            return " ".join(str(summary.render()).split())

        # The points' and the facts' counts are read apart: the line must come to hold both.
        await wait_until(
            pilot,
            lambda: "1 point ·" in line() and "· 1 fact ·" in line(),
            what="one point and one fact, singular, in the folded line",
        )


async def test_at_80x24_the_folded_line_warns_of_a_longterm_md_left_out(
    settings: Settings,
) -> None:
    """A non-UTF-8 longterm.md is left out of every prompt; at 80 columns the full sidebar
    that names it is folded away, so the one line says so (it said nothing at all)."""
    settings.home.mkdir(parents=True, exist_ok=True)
    (settings.home / "longterm.md").write_bytes(b"caf\xe9 au lait\n")
    assert "⚠ longterm.md left out" in await folded_line_naming_longterm_md(settings)


async def test_at_80x24_the_folded_line_names_a_longterm_md_over_budget(
    make_settings: Callable[..., Settings], standin: OllamaStandIn
) -> None:
    settings = make_settings(ollama_host=standin.host, longterm_budget_bytes=100)
    settings.home.mkdir(parents=True, exist_ok=True)
    (settings.home / "longterm.md").write_text("I like tea. " * 20)
    assert "longterm.md over budget" in await folded_line_naming_longterm_md(settings)


async def folded_line_naming_longterm_md(settings: Settings) -> str:
    """The folded sidebar line at 80×24, once it names longterm.md."""
    app = StraylightApp(settings)
    async with app.run_test(size=(80, 24)) as pilot:
        summary = app.query_one(SidebarSummary)
        await wait_until(pilot, lambda: "longterm.md" in str(summary.render()), what="the warning")
        return str(summary.render())


async def test_at_80x24_the_folded_line_says_the_chat_model_is_not_pulled(
    make_settings: Callable[..., Settings],
) -> None:
    """The full sidebar keeps `not pulled: run ollama pull …` under the model until it is
    there; folded, the line read `● online · llama3.2 · …` as if the chat could reply."""
    with OllamaStandIn(["nomic-embed-text"]) as server:
        app = StraylightApp(make_settings(ollama_host=server.host))
        async with app.run_test(size=(80, 24)) as pilot:
            summary = app.query_one(SidebarSummary)
            await wait_until(pilot, lambda: "online" in str(summary.render()), what="online")
            await wait_until(
                pilot, lambda: "not pulled" in str(summary.render()), what="the model's state"
            )
            assert "llama3.2 not pulled (F8)" in str(summary.render())


async def test_a_reply_from_a_model_marked_not_pulled_clears_the_mark(
    make_settings: Callable[..., Settings],
) -> None:
    """Pulled in another terminal: the first reply shows it is there (the line said
    `not pulled` until the next check of Ollama, 30 s later)."""
    with OllamaStandIn(["nomic-embed-text"]) as server:
        app = StraylightApp(make_settings(ollama_host=server.host))
        async with app.run_test(size=(80, 24)) as pilot:
            summary = app.query_one(SidebarSummary)
            await wait_until(pilot, lambda: "not pulled" in str(summary.render()), what="mark")
            server.set_models(["llama3.2", "nomic-embed-text"])
            await type_text(pilot, "hello")
            await pilot.press("enter")
            await wait_until(
                pilot, lambda: "not pulled" not in str(summary.render()), what="the mark gone"
            )
