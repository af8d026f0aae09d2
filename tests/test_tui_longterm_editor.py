"""Ctrl+G / `/longterm`: longterm.md opens in $VISUAL / $EDITOR and is re-read after; a
missing editor is one line and nothing changes."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import pytest

from agent.settings import Settings
from tests.support.cli import cli_env, read_terminal_for, screen_text, start_tui
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


async def test_an_edit_from_another_terminal_reaches_the_sidebar_without_a_focus_event(
    settings: Settings, standin: OllamaStandIn
) -> None:
    """A terminal that reports no focus (tmux's default) left an outside edit of
    longterm.md unshown in the sidebar until the next turn or Ollama poll (30 s); the file's
    size and time are looked at every 2 s now. (The headless test terminal sends no focus
    events either.)"""
    path = settings.home / "longterm.md"
    app = StraylightApp(settings)
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(pilot, lambda: longterm_bytes(app) > 0, what="longterm.md read")
        with path.open("a", encoding="utf-8") as handle:  # the other terminal's editor
            handle.write("- " + "the harbour crane is red. " * 400 + "\n")
        size = path.stat().st_size
        await wait_until(pilot, lambda: longterm_bytes(app) == size, timeout=8, what="shown")


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


@pytest.mark.parametrize("editor", ["false", "no-such-editor-here"])
def test_a_failing_editor_on_a_real_terminal_gives_one_line_and_the_chat_goes_on(
    tmp_path: Path, standin: OllamaStandIn, editor: str
) -> None:
    """On a real terminal the app suspends for the editor. An editor that failed (or was not
    found) raised inside Textual's `suspend()`, which resumes the app only when its block ends
    normally: the chat froze, the terminal stayed cooked and Ctrl+Q did nothing."""
    env = cli_env(
        tmp_path / "home",
        tmp_path,
        OLLAMA_HOST=standin.host,
        STRAYLIGHT_JOBS_ENABLED="false",
        TERM="xterm",
        EDITOR=editor,
    )
    env.pop("VISUAL", None)
    process, leader = start_tui(env)
    try:
        deadline = time.monotonic() + 30
        while not any(r.path == "/api/tags" for r in standin.requests):
            assert time.monotonic() < deadline, "the TUI did not start"
            read_terminal_for(leader, 0.1)
        os.write(leader, b"\x07")  # Ctrl+G
        text = screen_text(read_terminal_for(leader, 3.0))  # the toast wraps its line
        named = "exitedwithstatus1" if editor == "false" else "notfoundonPATH"
        assert named in text, text[-2000:]
        os.write(leader, b"\x11")  # Ctrl+Q
        process.wait(timeout=15)
        assert process.returncode == 0
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        os.close(leader)


def test_a_full_disk_in_the_chat_names_the_file_as_ask_does(
    tmp_path: Path, standin: OllamaStandIn
) -> None:
    """A day log that cannot grow (a file-size limit: EFBIG, as a full disk's ENOSPC) showed
    `⚠ OSError: [Errno 27] File too large: '…' (details in …)`; `ask` says
    `cannot write …: File too large`, and so does the chat now."""
    import resource

    from tests.support.cli import run_cli

    home = tmp_path / "home"
    env = cli_env(
        home, tmp_path, OLLAMA_HOST=standin.host, STRAYLIGHT_JOBS_ENABLED="false", TERM="xterm"
    )
    standin.script_reply("Noted.")
    assert run_cli(env, "ask", "A first message so the day file exists.").returncode == 0
    (day_file,) = (home / "conversation").glob("*.md")
    with day_file.open("a", encoding="utf-8") as padding:
        padding.write("<!-- padding -->\n" * 4000)
    limit = day_file.stat().st_size + 16  # the next message does not fit

    def limited() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    asked_before = sum(r.path == "/api/tags" for r in standin.requests)
    process, leader = start_tui(env, preexec_fn=limited)  # the limit for the child alone
    try:
        deadline = time.monotonic() + 30
        while sum(r.path == "/api/tags" for r in standin.requests) <= asked_before:
            assert time.monotonic() < deadline, "the TUI did not start"
            read_terminal_for(leader, 0.1)
        os.write(leader, b"Where does the ferry leave from?\r")
        text = screen_text(read_terminal_for(leader, 4.0))
        assert "cannotwrite" in text and "Filetoolarge" in text, text[-2000:]
        assert "OSError" not in text
        os.write(leader, b"\x11")
        process.wait(timeout=15)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        os.close(leader)
