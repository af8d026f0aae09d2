"""Nothing the TUI shows from the store, the logs or the model can drive the terminal."""

from __future__ import annotations

from agent.settings import Settings
from tests.support.ollama_standin import OllamaStandIn
from tests.support.pilot_helpers import wait_until
from tui.app import StraylightApp
from tui.display_text import printable

HOSTILE = "green \x1b[32mtext\x1b[0m, a title \x1b]0;PWNED\x07 and OSC 52 \x1b]52;c;aGk=\x07"


def test_control_characters_become_visible_symbols() -> None:
    shown = printable(HOSTILE + "\x7f\x9b\r\nnext\tline")
    assert "\x1b" not in shown and "\x07" not in shown and "\x9b" not in shown
    assert "␛[32mtext" in shown and "␇" in shown and "␡" in shown
    assert "\nnext\tline" in shown  # newlines and tabs stay
    assert printable("plain text\n") == "plain text\n"


def test_bidi_overrides_are_shown_and_the_marks_kept() -> None:
    """An override would make a terminal that lays out right-to-left text show `invoice
    \u202excod.exe` as `invoice exe.docx`; the left-to-right and right-to-left marks that
    Hebrew or Arabic text needs pass."""
    for hidden in ("\u202a", "\u202b", "\u202c", "\u202d", "\u202e", "\u2066", "\u2069"):
        assert printable(f"invoice {hidden}xcod.exe") == "invoice \ufffdxcod.exe"
    assert printable("שלום\u200f world \u200e") == "שלום\u200f world \u200e"


async def test_a_hostile_point_is_drawn_harmlessly_in_the_browser_and_the_chat(
    settings: Settings, standin: OllamaStandIn
) -> None:
    from tui.screens.memory_browser import MemoryBrowserScreen
    from tui.widgets.chat_message import ChatMessage

    standin.script_reply(HOSTILE)
    app = StraylightApp(settings)
    async with app.run_test(size=(110, 32)) as pilot:
        await wait_until(pilot, lambda: app.engine.memory is not None, what="memory open")
        memory = app.engine.memory
        assert memory is not None
        point = await memory.remember(HOSTILE)
        assert memory.store.points.get(point).content == HOSTILE  # stored as given
        app.push_screen(MemoryBrowserScreen(memory, point_id=point))
        await wait_until(
            pilot, lambda: getattr(app.screen, "preview_id", None) == point, what="preview"
        )
        await pilot.pause()
        frame = app.export_screenshot()
        assert "␛[32mtext" in frame and "\x1b]0;PWNED" not in frame
        await pilot.press("escape")
        app.query_one("#input").text = "say it"  # type: ignore[attr-defined]
        await pilot.press("enter")
        await wait_until(
            pilot,
            lambda: any(
                m.status == "complete" and m.role == "assistant" for m in app.query(ChatMessage)
            ),
            what="the reply",
        )
        await pilot.pause()
        assert "\x1b]52" not in app.export_screenshot()
