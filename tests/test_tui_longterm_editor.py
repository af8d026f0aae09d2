"""Ctrl+G / `/longterm`: longterm.md opens in $VISUAL / $EDITOR and is re-read after; a
missing editor is one line and nothing changes."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from agent.settings import Settings
from tests.support.ollama_standin import OllamaStandIn
from tests.support.pilot_helpers import type_text, wait_until
from tui.app import StraylightApp
from tui.external_editor import EditorError, edit_file, editor_command
from tui.widgets.status_sidebar import StatusSidebar

SIZE = (110, 32)
ADDED = "\n- The staging server is nebula-7.\n"


def editor_script(tmp_path: Path) -> str:
    """An 'editor' that appends a line to the file it is given, as a user would."""
    script = tmp_path / "fake_editor.py"
    script.write_text(
        "import sys\n"
        "with open(sys.argv[1], 'a', encoding='utf-8') as f:\n"
        f"    f.write({ADDED!r})\n",
        encoding="utf-8",
    )
    return f"{sys.executable} {script}"


def longterm_bytes(app: StraylightApp) -> int:
    state = app.query_one(StatusSidebar).state
    return state.longterm_bytes if state else -1


async def test_ctrl_g_edits_longterm_md_and_the_sidebar_reloads_it(
    settings: Settings, standin: OllamaStandIn, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("VISUAL", raising=False)
    monkeypatch.setenv("EDITOR", editor_script(tmp_path))
    path = settings.home / "longterm.md"
    app = StraylightApp(settings)
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(pilot, lambda: longterm_bytes(app) > 0, what="longterm.md read")
        before = path.stat().st_size
        await pilot.press("ctrl+g")
        await wait_until(pilot, lambda: longterm_bytes(app) > before, what="the reload")
        assert path.read_text(encoding="utf-8").endswith(ADDED)
        assert longterm_bytes(app) == path.stat().st_size
        # the next prompt carries the edit
        assert "nebula-7" in app.engine.longterm.load().text

        await type_text(pilot, "/longterm")
        await pilot.press("enter")
        await wait_until(
            pilot, lambda: path.read_text(encoding="utf-8").count("nebula-7") == 2, what="/longterm"
        )


async def test_a_missing_editor_is_one_line_and_the_file_is_left_alone(
    settings: Settings, standin: OllamaStandIn, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("VISUAL", raising=False)
    monkeypatch.setenv("EDITOR", "no-such-editor-anywhere --wait")
    path = settings.home / "longterm.md"
    app = StraylightApp(settings)
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(pilot, lambda: longterm_bytes(app) > 0, what="longterm.md read")
        before = path.read_bytes()
        await pilot.press("ctrl+g")
        await wait_until(
            pilot,
            lambda: any("no-such-editor-anywhere" in str(n.message) for n in app._notifications),
            what="the editor error",
        )
        assert path.read_bytes() == before


def test_visual_wins_over_editor_and_is_split_like_a_shell() -> None:
    assert editor_command({"VISUAL": "code --wait", "EDITOR": "vi"}) == ["code", "--wait"]
    assert editor_command({"EDITOR": "'my editor' -n"}) == ["my editor", "-n"]
    with pytest.raises(EditorError, match="VISUAL"):
        editor_command({"VISUAL": "'unclosed"})


def test_an_editor_that_fails_is_reported(tmp_path: Path) -> None:
    target = tmp_path / "notes.md"
    target.write_text("x", encoding="utf-8")
    with pytest.raises(EditorError, match="exited with status 3"):
        edit_file(target, {"EDITOR": f"{sys.executable} -c 'raise SystemExit(3)'"})
    assert target.read_text(encoding="utf-8") == "x"


async def test_an_outside_edit_of_longterm_md_shows_at_the_next_turn_and_on_focus(
    settings: Settings, standin: OllamaStandIn
) -> None:
    """Issue 16: the sidebar kept the old size while the prompt already used the new text."""
    from textual import events

    path = settings.home / "longterm.md"
    standin.script_reply("Noted.")
    app = StraylightApp(settings)
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(pilot, lambda: longterm_bytes(app) > 0, what="longterm.md read")
        with path.open("a", encoding="utf-8") as handle:  # another editor, another window
            handle.write(ADDED)
        await type_text(pilot, "what is the staging server?")
        await pilot.press("enter")
        await wait_until(
            pilot, lambda: longterm_bytes(app) == path.stat().st_size, what="the new size"
        )
        with path.open("a", encoding="utf-8") as handle:
            handle.write(ADDED)
        app.screen.post_message(events.AppFocus())  # the user is back in this terminal
        await wait_until(
            pilot, lambda: longterm_bytes(app) == path.stat().st_size, what="size on focus"
        )


async def test_an_editor_quit_without_saving_says_longterm_md_is_unchanged(
    settings: Settings, standin: OllamaStandIn, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`:q!` (here `true`, which writes nothing) was announced as "longterm.md saved"."""
    monkeypatch.delenv("VISUAL", raising=False)
    monkeypatch.setenv("EDITOR", "true")
    app = StraylightApp(settings)
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(pilot, lambda: longterm_bytes(app) > 0, what="longterm.md read")
        await pilot.press("ctrl+g")
        await wait_until(
            pilot,
            lambda: any("longterm.md" in str(n.message) for n in app._notifications),
            what="the editor's outcome",
        )
        [said] = [str(n.message) for n in app._notifications if "longterm.md" in str(n.message)]
        assert said.startswith("longterm.md unchanged")
