"""The memory browser, driven by the pilot against the real app, its real DuckDB store in tmp
and the HTTP stand-in: listing, search, filters, pin/unpin, forget after y/n, opening on a
point, bad dates, paging through 1,000 points, a narrow terminal, and one SVG snapshot."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from textual.pilot import Pilot
from textual.widgets import Input, Static

from agent.settings import Settings
from memory.memory_store import MemoryStore
from store.point_store import NewPoint
from tests.conftest import FIXED_NOW
from tests.support.ollama_standin import OllamaStandIn
from tests.support.pilot_helpers import type_text, wait_until
from tui.app import StraylightApp
from tui.screens.confirm_screen import ConfirmScreen
from tui.screens.memory_browser import PAGE_SIZE, MemoryBrowserScreen, PointTable

SIZE = (120, 36)
SNAPSHOT_PORT = 28435  # fixed, so a sidebar in the picture would show the same host
NOW = datetime(2026, 11, 29, 21, 4, 38, tzinfo=UTC)

SAMPLE = [  # (role, text, days ago, pinned)
    ("user", "How do I rotate the nginx logs every night?", 40, False),
    ("assistant", "Use logrotate with a daily rule in /etc/logrotate.d/nginx.", 40, False),
    ("user", "The espresso machine descaling takes twenty minutes.", 12, True),
    ("doc", "Deploy blyck: npm run dist, then aws s3 cp to the bucket.", 5, True),
    ("user", "My sister's birthday is on the 3rd of March.", 2, False),
    ("assistant", "Noted: your sister's birthday is on 3 March.", 2, False),
]


def calm(settings: Settings) -> Settings:
    """No background jobs: nothing else touches the points while a test looks at them."""
    return settings.model_copy(update={"jobs": settings.jobs.model_copy(update={"enabled": False})})


def store_of(app: StraylightApp) -> MemoryStore:
    assert app.engine.memory is not None
    return app.engine.memory.store


def add_sample(store: MemoryStore) -> dict[str, int]:
    """The SAMPLE points, oldest first; their ids by the first word of the text."""
    ids: dict[str, int] = {}
    for role, text, days, pinned in SAMPLE:
        result = store.save(
            role,  # type: ignore[arg-type]
            text,
            created_at=NOW - timedelta(days=days),
            pinned=pinned,
            use_filter=False,
            source="doc:notes.md#deploy" if role == "doc" else "turn",
            conversation_id="" if role == "doc" else "c-1",
        )
        assert result.point_id is not None
        ids[text.split()[0] + str(len(ids))] = result.point_id
    return ids


def browser(app: StraylightApp) -> MemoryBrowserScreen:
    screen = app.screen
    assert isinstance(screen, MemoryBrowserScreen)
    return screen


def listed_ids(app: StraylightApp) -> list[int]:
    return [int(str(key.value)) for key in browser(app).query_one(PointTable).rows]


def preview(app: StraylightApp) -> str:
    return str(browser(app).query_one("#preview-body", Static).content)


def status(app: StraylightApp) -> str:
    return str(browser(app).query_one("#screen-status", Static).content)


async def open_memory(pilot: Pilot, app: StraylightApp) -> MemoryStore:
    await wait_until(pilot, lambda: app.engine.memory is not None, what="memory open")
    return store_of(app)


async def open_browser(
    pilot: Pilot, app: StraylightApp, point_id: int | None = None, *, rows: int | None = None
) -> MemoryBrowserScreen:
    """Push the browser and wait for its first page (and preview)."""
    assert app.engine.memory is not None
    screen = MemoryBrowserScreen(app.engine.memory, point_id=point_id)
    app.push_screen(screen)
    await wait_until(pilot, lambda: app.screen is screen and not screen.fetching, what="a page")
    if rows is not None:
        await wait_until(pilot, lambda: len(listed_ids(app)) == rows, what=f"{rows} rows")
    if screen.rows:
        await wait_until(pilot, lambda: screen.preview_id is not None, what="the preview")
    return screen


async def settled(pilot: Pilot, app: StraylightApp) -> None:
    screen = browser(app)
    await wait_until(pilot, lambda: not screen.fetching, what="the list")
    await wait_until(
        pilot,
        lambda: screen.preview_id == screen.cursor_point_id(),
        what="the preview of the cursor row",
    )


async def search(pilot: Pilot, app: StraylightApp, query: str) -> None:
    await pilot.press("slash")
    assert isinstance(app.focused, Input) and app.focused.id == "browser-search"
    app.focused.value = ""
    await type_text(pilot, query)
    await pilot.press("enter")
    screen = browser(app)
    await wait_until(
        pilot, lambda: screen.query_text == query and not screen.fetching, what="the hits"
    )
    await settled(pilot, app)


async def test_the_list_shows_every_point_newest_first_with_a_preview(
    settings: Settings,
) -> None:
    app = StraylightApp(calm(settings))
    async with app.run_test(size=SIZE) as pilot:
        ids = add_sample(await open_memory(pilot, app))
        await open_browser(pilot, app, rows=len(SAMPLE))
        assert listed_ids(app) == sorted(ids.values(), reverse=True)
        newest = max(ids.values())
        assert f"#{newest}" in preview(app) and "3 March" in preview(app)
        title = str(browser(app).query_one("#screen-title", Static).content)
        assert "6 points" in title
        await pilot.press("down")
        await settled(pilot, app)
        assert "sister's birthday is on the 3rd" in preview(app)
        await pilot.press("escape")
        await wait_until(pilot, lambda: not isinstance(app.screen, MemoryBrowserScreen))


async def test_search_runs_recall_and_puts_the_right_point_first(settings: Settings) -> None:
    app = StraylightApp(calm(settings))
    async with app.run_test(size=SIZE) as pilot:
        ids = add_sample(await open_memory(pilot, app))
        await open_browser(pilot, app, rows=len(SAMPLE))
        await search(pilot, app, "logrotate nginx")
        found = listed_ids(app)
        assert found and found[0] == ids["Use1"]
        assert "logrotate" in preview(app)
        cells = browser(app).query_one(PointTable).get_row_at(0)
        assert str(cells[1]).strip()  # a score while searching
        await search(pilot, app, "")  # an empty search browses again
        assert listed_ids(app) == sorted(ids.values(), reverse=True)


async def test_role_pinned_and_date_filters_narrow_the_list(settings: Settings) -> None:
    app = StraylightApp(calm(settings))
    async with app.run_test(size=SIZE) as pilot:
        ids = add_sample(await open_memory(pilot, app))
        screen = await open_browser(pilot, app, rows=len(SAMPLE))
        await pilot.press("r")  # role: user
        await wait_until(pilot, lambda: len(listed_ids(app)) == 3, what="user rows")
        assert {screen.rows[i].row.role for i in listed_ids(app)} == {"user"}
        await pilot.press("o")  # … and pinned only
        await wait_until(pilot, lambda: listed_ids(app) == [ids["The2"]], what="one row")
        await pilot.press("r", "r", "r")  # assistant, doc, all: pinned only stays
        await wait_until(
            pilot, lambda: listed_ids(app) == [ids["Deploy3"], ids["The2"]], what="pins"
        )
        await pilot.press("o")
        await pilot.press("d")  # from 2026-11-20 to 2026-11-28: the points 5 and 2 days old
        assert isinstance(app.focused, Input) and app.focused.id == "date-from"
        await type_text(pilot, "2026-11-20")
        await pilot.press("enter")
        await wait_until(pilot, lambda: len(listed_ids(app)) == 3, what="the date range")
        assert sorted(listed_ids(app)) == [ids["Deploy3"], ids["My4"], ids["Noted:5"]]
        assert app.focused is screen.query_one(PointTable)
        await search(pilot, app, "birthday sister")  # filters apply to search hits as well
        assert set(listed_ids(app)) == {ids["My4"], ids["Noted:5"]}


async def test_the_title_counts_one_hit_in_the_singular(settings: Settings) -> None:
    app = StraylightApp(calm(settings))
    async with app.run_test(size=SIZE) as pilot:
        ids = add_sample(await open_memory(pilot, app))
        screen = await open_browser(pilot, app, rows=len(SAMPLE))
        await pilot.press("r", "o")  # user, pinned only: the espresso point alone
        await wait_until(pilot, lambda: listed_ids(app) == [ids["The2"]], what="one row")
        await search(pilot, app, "espresso descaling")
        assert listed_ids(app) == [ids["The2"]]
        title = str(screen.query_one("#screen-title", Static).content)
        assert "“espresso descaling”: 1 hit ·" in title, title


async def test_a_bad_date_is_named_and_nothing_breaks(settings: Settings) -> None:
    app = StraylightApp(calm(settings))
    async with app.run_test(size=SIZE) as pilot:
        add_sample(await open_memory(pilot, app))
        screen = await open_browser(pilot, app, rows=len(SAMPLE))
        await pilot.press("d")
        await type_text(pilot, "2026-13-45")
        await pilot.press("enter")
        await pilot.pause()
        assert "not a date" in status(app)
        assert screen.query_one("#screen-status").has_class("-error")
        assert len(listed_ids(app)) == len(SAMPLE)
        await pilot.press("escape")  # Esc in a box goes back to the list …
        assert app.focused is screen.query_one(PointTable)
        assert app.screen is screen
        await pilot.press("tab", "tab")  # … reversed ranges are refused too
        to_box = screen.query_one("#date-to", Input)
        to_box.focus()
        screen.query_one("#date-from", Input).value = "2026-11-20"
        await type_text(pilot, "2026-11-01")
        await pilot.press("enter")
        await pilot.pause()
        assert "before it starts" in status(app)
        await pilot.press("escape")  # a refused range is not applied by another filter key
        await pilot.press("r")
        await wait_until(pilot, lambda: screen.filters.role == "user", what="the role filter")
        assert (screen.filters.since, screen.filters.until) == (None, None)


async def test_the_widest_dates_mean_no_end(settings: Settings) -> None:
    """ "to 9999-12-31" (no end, as typed by someone who wants one) failed the list with
    "Cannot read the points: date value out of range"."""
    app = StraylightApp(calm(settings))
    async with app.run_test(size=SIZE) as pilot:
        add_sample(await open_memory(pilot, app))
        screen = await open_browser(pilot, app, rows=len(SAMPLE))
        screen.query_one("#date-from", Input).value = "0001-01-01"
        screen.query_one("#date-to", Input).focus()
        await type_text(pilot, "9999-12-31")
        await pilot.press("enter")
        await wait_until(pilot, lambda: len(listed_ids(app)) == len(SAMPLE), what="every row")
        assert not screen.query_one("#screen-status").has_class("-error"), status(app)
        assert screen.filters.until is not None


async def test_typing_in_a_box_types_letters_instead_of_running_bindings(
    settings: Settings,
) -> None:
    app = StraylightApp(calm(settings))
    async with app.run_test(size=SIZE) as pilot:
        store = await open_memory(pilot, app)
        ids = add_sample(store)
        screen = await open_browser(pilot, app, rows=len(SAMPLE))
        await pilot.press("slash")
        await type_text(pilot, "pfrod/")
        assert screen.query_one("#browser-search", Input).value == "pfrod/"
        assert screen.filters.role is None and not screen.filters.pinned_only
        assert store.points.get(max(ids.values())) is not None
        assert not isinstance(app.screen, ConfirmScreen)


async def test_pin_then_unpin_changes_the_store_and_the_row(settings: Settings) -> None:
    app = StraylightApp(calm(settings))
    async with app.run_test(size=SIZE) as pilot:
        store = await open_memory(pilot, app)
        ids = add_sample(store)
        screen = await open_browser(pilot, app, rows=len(SAMPLE))
        newest = max(ids.values())
        assert screen.cursor_point_id() == newest and not store.points.get(newest).pinned
        await pilot.press("p")
        await wait_until(pilot, lambda: store.points.get(newest).pinned, what="pinned")
        await wait_until(pilot, lambda: screen.rows[newest].row.pinned, what="the row")
        await wait_until(pilot, lambda: "pinned" in preview(app), what="the preview")
        assert status(app) == f"Pinned #{newest}."
        await pilot.press("p")
        await wait_until(pilot, lambda: not store.points.get(newest).pinned, what="unpinned")
        await wait_until(pilot, lambda: status(app) == f"Unpinned #{newest}.", what="said")


async def test_forget_asks_first_n_keeps_and_y_forgets(settings: Settings) -> None:
    app = StraylightApp(calm(settings))
    async with app.run_test(size=SIZE) as pilot:
        store = await open_memory(pilot, app)
        ids = add_sample(store)
        screen = await open_browser(pilot, app, rows=len(SAMPLE))
        target = max(ids.values())
        await pilot.press("f")
        await wait_until(pilot, lambda: isinstance(app.screen, ConfirmScreen), what="question")
        assert f"#{target}" in app.screen.question  # type: ignore[attr-defined]
        await pilot.press("n")
        await wait_until(pilot, lambda: app.screen is screen, what="back")
        assert store.points.get(target) is not None
        assert status(app) == f"Kept #{target}."
        await pilot.press("f")
        await wait_until(pilot, lambda: isinstance(app.screen, ConfirmScreen), what="question")
        await pilot.press("y")
        await wait_until(pilot, lambda: store.points.get(target) is None, what="forgotten")
        await wait_until(pilot, lambda: target not in listed_ids(app), what="row gone")
        assert status(app) == f"Forgot #{target}."
        await settled(pilot, app)
        assert screen.cursor_point_id() in ids.values()
        assert f"#{screen.cursor_point_id()}" in preview(app)


async def test_a_point_forgotten_elsewhere_leaves_the_list_and_the_count(
    settings: Settings,
) -> None:
    """`straylight forget N` in another terminal, then p on #N: the row went, but the title
    kept counting it."""
    app = StraylightApp(calm(settings))
    async with app.run_test(size=SIZE) as pilot:
        store = await open_memory(pilot, app)
        ids = add_sample(store)
        screen = await open_browser(pilot, app, rows=len(SAMPLE))
        title = screen.query_one("#screen-title", Static)
        assert f"{len(SAMPLE)} points" in str(title.render())
        target = screen.cursor_point_id()
        assert target is not None and store.forget(target)  # (the shell's forget)
        await pilot.press("p")
        await wait_until(pilot, lambda: target not in listed_ids(app), what="row gone")
        assert status(app) == f"#{target} is not in the memory any more."
        assert f"{len(SAMPLE) - 1} points" in str(title.render()), str(title.render())
        assert set(listed_ids(app)) == set(ids.values()) - {target}


async def test_esc_after_a_search_keeps_the_browser_and_the_keys_go_to_the_list(
    settings: Settings,
) -> None:
    """Issue 16: search, Enter, Esc closed the browser and "Down Down f y" went into the chat
    box. Esc after a search now clears it (the list, newest first, keeps the focus); a
    second Esc closes the browser."""
    from tui.widgets.chat_input import ChatInput

    app = StraylightApp(calm(settings))
    async with app.run_test(size=SIZE) as pilot:
        store = await open_memory(pilot, app)
        ids = add_sample(store)
        screen = await open_browser(pilot, app, rows=len(SAMPLE))
        await search(pilot, app, "logrotate nginx")
        await pilot.press("escape")
        await wait_until(
            pilot, lambda: screen.query_text == "" and not screen.fetching, what="search cleared"
        )
        assert app.screen is screen and app.focused is screen.query_one(PointTable)
        assert "Esc again closes" in status(app)
        await wait_until(pilot, lambda: len(listed_ids(app)) == len(SAMPLE), what="every row")
        await pilot.press("down", "down")
        await settled(pilot, app)
        third = listed_ids(app)[2]
        assert screen.cursor_point_id() == third
        await pilot.press("f")
        await wait_until(pilot, lambda: isinstance(app.screen, ConfirmScreen), what="question")
        await pilot.press("y")
        await wait_until(pilot, lambda: store.points.get(third) is None, what="forgotten")
        assert set(ids.values()) - set(listed_ids(app)) == {third}
        await pilot.press("escape")
        await wait_until(pilot, lambda: not isinstance(app.screen, MemoryBrowserScreen))
        assert app.screen.query_one(ChatInput).text == ""


async def test_opening_on_a_point_selects_it_and_shows_it(settings: Settings) -> None:
    app = StraylightApp(calm(settings))
    async with app.run_test(size=SIZE) as pilot:
        ids = add_sample(await open_memory(pilot, app))
        target = ids["Use1"]
        screen = await open_browser(pilot, app, point_id=target)
        await settled(pilot, app)
        assert screen.cursor_point_id() == target
        assert "logrotate" in preview(app)
        assert listed_ids(app) == sorted(ids.values(), reverse=True)  # newer rows above it


async def test_opening_on_a_forgotten_point_says_so_and_lists_the_rest(
    settings: Settings,
) -> None:
    app = StraylightApp(calm(settings))
    async with app.run_test(size=SIZE) as pilot:
        ids = add_sample(await open_memory(pilot, app))
        await open_browser(pilot, app, point_id=9999, rows=len(SAMPLE))
        assert "No point #9999" in status(app)
        assert listed_ids(app)[0] == max(ids.values())


async def test_paging_loads_a_page_at_a_time_and_reaches_the_oldest(
    settings: Settings,
) -> None:
    app = StraylightApp(calm(settings))
    async with app.run_test(size=SIZE) as pilot:
        store = await open_memory(pilot, app)
        ids = store.points.add_many(
            NewPoint(
                role=("user", "assistant")[i % 2],
                content=f"message number {i}",
                source="turn",
                created_at=NOW - timedelta(minutes=1000 - i),
            )
            for i in range(1000)
        )
        screen = await open_browser(pilot, app, rows=PAGE_SIZE)
        assert "1,000 points" in str(screen.query_one("#screen-title", Static).content)
        await pilot.pause(0.2)
        assert len(listed_ids(app)) == PAGE_SIZE  # nothing more until the cursor comes near
        for _ in range(40):
            if ids[0] in listed_ids(app):
                break
            await pilot.press("end")
            await wait_until(pilot, lambda: not screen.fetching, what="the next page")
        assert listed_ids(app) == sorted(ids, reverse=True)
        await pilot.press("end")
        await settled(pilot, app)
        assert screen.cursor_point_id() == ids[0] and "message number 0" in preview(app)


async def test_a_narrow_terminal_stacks_the_preview_under_the_list(settings: Settings) -> None:
    app = StraylightApp(calm(settings))
    async with app.run_test(size=(80, 24)) as pilot:
        add_sample(await open_memory(pilot, app))
        screen = await open_browser(pilot, app, rows=len(SAMPLE))
        assert screen.has_class("-narrow")
        table = screen.query_one(PointTable)
        pane = screen.query_one("#browser-preview")
        assert pane.region.height >= 4 and pane.region.y >= table.region.bottom
        assert table.region.width == pane.region.width == 80
        await pilot.press("down", "p")
        await wait_until(pilot, lambda: status(app).startswith("Pinned"), what="pinned")


# ---- snapshot ----------------------------------------------------------------------------


@pytest.fixture
def fixed_standin() -> Iterator[OllamaStandIn]:
    with OllamaStandIn(port=SNAPSHOT_PORT) as server:
        yield server


def test_snapshot_of_the_browser(
    snap_compare, make_settings: Callable[..., Settings], fixed_standin: OllamaStandIn
) -> None:
    from tests.test_snapshots import frozen

    app = StraylightApp(frozen(make_settings, fixed_standin.host))
    assert FIXED_NOW.startswith(NOW.date().isoformat())

    async def run_before(pilot: Pilot) -> None:
        store = await open_memory(pilot, app)
        await app.engine.drain()
        ids = add_sample(store)
        await open_browser(pilot, app, point_id=ids["The2"], rows=len(SAMPLE))
        await settled(pilot, app)
        await pilot.pause()

    assert snap_compare(app, terminal_size=(110, 30), run_before=run_before)


async def test_a_documents_sections_are_listed_by_their_heading_paths(
    settings: Settings, tmp_path: Path
) -> None:
    """Each section of an imported document starts with its parents' headings (the context
    recall needs): the list shows them with the section's own heading, not the document's
    title on every row."""
    guide = tmp_path / "guide.md"
    guide.write_text(
        "# Deploy guide\n\nWhat a deploy needs.\n\n## Staging\n\nPush with make stage.\n\n"
        "## Production\n\nTag a release, then make prod.\n"
    )
    app = StraylightApp(calm(settings))
    async with app.run_test(size=SIZE) as pilot:
        await open_memory(pilot, app)
        assert app.engine.memory is not None
        await app.engine.memory.ingest_doc(guide)
        await open_browser(pilot, app, rows=3)
        table = browser(app).query_one(PointTable)
        lines = [str(table.get_row_at(i)[-1]) for i in range(3)]
        assert sorted(lines) == [
            "# Deploy guide",
            "Deploy guide > Production",
            "Deploy guide > Staging",
        ]
        await settled(pilot, app)
        assert "Deploy guide\n## Production\n" in preview(app)  # the content as it is stored
