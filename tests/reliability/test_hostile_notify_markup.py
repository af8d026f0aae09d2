"""Issue 7, part 4: text from outside in the chat's pop-up notifications. Textual reads a
notification as markup: a `[/x]` in a path or in Ollama's error text stopped the chat with a
MarkupError, and `[num_ctx]` vanished from the line. They are shown as written."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from agent.settings import Settings
from tests.support.ollama_standin import OllamaStandIn
from tests.support.pilot_helpers import wait_until
from tui.app import StraylightApp

SIZE = (110, 32)


async def test_a_data_dir_path_with_brackets_is_shown_as_written(
    make_settings: Callable[..., Settings], standin: OllamaStandIn, tmp_path: Path
) -> None:
    home = tmp_path / "notes[" / "x]" / "home"
    home.mkdir(parents=True)
    (home / "straylight.duckdb").write_bytes(b"not a database " * 100)
    app = StraylightApp(make_settings(ollama_host=standin.host, home=str(home)))
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        await wait_until(pilot, lambda: "damaged" in (app.memory_problem or ""), what="why")
        await pilot.press("f2")  # the memory browser needs the memory: a notification says why
        await wait_until(pilot, lambda: bool(list(app._notifications)), what="the toast")
        await pilot.pause(0.3)
        [said] = [n.message for n in app._notifications]
        assert "notes[/x]/home" in said
        assert app.is_running and app.return_code is None
        from textual.widgets._toast import Toast

        toasts = [str(toast.render()) for toast in app.screen.query(Toast)]
        assert any("notes[/x]/home" in text for text in toasts), toasts
