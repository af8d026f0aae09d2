"""Issue 16: at 80x24 the footer ended in a cut `f2 M` label. Every screen's footer shows only
the keys whose labels fit whole, `f1 Keys` first on the chat; wider terminals show more."""

from __future__ import annotations

import pytest
from textual.widgets._footer import FooterKey

from agent.settings import Settings
from tests.support.pilot_helpers import wait_until
from tui.app import StraylightApp
from tui.screens.chat_screen import ChatScreen
from tui.widgets.fitting_footer import PALETTE_CLASS, FittingFooter

SCREENS = {  # key → the screen class that must become active
    "f1": "HelpScreen",
    "f2": "MemoryBrowserScreen",
    "f3": "FactsScreen",
    "f4": "CandidatesScreen",
    "f5": "HypothesesScreen",
    "f8": "ModelsScreen",
    "ctrl+o": "ConversationsScreen",
}


def shown_keys(app: StraylightApp) -> list[FooterKey]:
    """The footer's keys on screen (not the palette's), checked to be whole: each one's
    region lies inside the footer, left of the palette's key."""
    footer = app.screen.query_one(FittingFooter)
    palette = [key for key in footer.query(FooterKey) if key.has_class(PALETTE_CLASS)]
    right_edge = palette[0].region.x if palette else footer.region.right
    shown = [
        key for key in footer.query(FooterKey) if key.display and not key.has_class(PALETTE_CLASS)
    ]
    for key in shown:
        assert key.region.width > 0, key.description
        assert key.region.right <= right_edge, f"{key.key_display} {key.description} is cut"
        rendered = str(key.render())
        assert key.description in rendered and key.region.width >= len(rendered.rstrip())
    return shown


async def footer_settled(pilot: object, app: StraylightApp) -> None:
    await wait_until(
        pilot,  # type: ignore[arg-type]
        lambda: bool(app.screen.query_one(FittingFooter).query(FooterKey)),
        what="the footer's keys",
    )
    await pilot.pause()  # type: ignore[attr-defined]


@pytest.mark.parametrize("width", [80, 120])
async def test_no_footer_label_is_cut_on_any_screen(settings: Settings, width: int) -> None:
    app = StraylightApp(settings)
    async with app.run_test(size=(width, 24)) as pilot:
        await wait_until(pilot, lambda: app.engine.memory is not None, what="memory open")
        chat = app.screen
        assert isinstance(chat, ChatScreen)
        await footer_settled(pilot, app)
        labels = [f"{key.key_display} {key.description}" for key in shown_keys(app)]
        assert labels[0] == "f1 Keys"  # the help with every key is always offered
        if width == 80:
            assert len(labels) < len(app.screen.query_one(FittingFooter).query(FooterKey)) - 1
        for key, name in SCREENS.items():
            await pilot.press(key)
            await wait_until(pilot, lambda n=name: type(app.screen).__name__ == n, what=name)
            await footer_settled(pilot, app)
            assert shown_keys(app), f"{name}: no key shown at all"
            await pilot.press("escape")
            await wait_until(pilot, lambda: app.screen is chat, what="back to the chat")


async def test_a_wider_terminal_shows_the_keys_a_narrow_one_hid(settings: Settings) -> None:
    app = StraylightApp(settings)
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_until(pilot, lambda: app.engine.memory is not None, what="memory open")
        await footer_settled(pilot, app)
        narrow = [key.description for key in shown_keys(app)]
        await pilot.resize_terminal(120, 24)
        await pilot.pause()
        wide = [key.description for key in shown_keys(app)]
        assert wide[: len(narrow)] == narrow and len(wide) > len(narrow)
        await pilot.resize_terminal(80, 24)
        await pilot.pause()
        assert [key.description for key in shown_keys(app)] == narrow
