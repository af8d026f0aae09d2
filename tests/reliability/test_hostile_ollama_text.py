"""Issue 7, parts 3 and 4: what Ollama says is hostile input too. An error message from
Ollama (an HTTP error body, an `{"error": …}` line) can hold a line break or an ESC sequence
that retitles the window, clears the screen or writes the clipboard. README (exit codes):
errors are one line, an ESC or a line break shown as `␛`, `␊`; the notes an embedding
failure leaves (`ask`, `remember`, `recall`, `import-doc`) and `status`'s Ollama line repeat
Ollama's message, so they show it the same way, whether or not the output is a terminal;
so do the chat's notices.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from agent.settings import Settings
from tests.reliability import fault_support
from tests.reliability.fault_support import Workspace, assert_ok
from tests.support.ollama_standin import OllamaStandIn
from tests.support.pilot_helpers import notices, type_text, wait_until
from tui.app import StraylightApp

seeded_template = fault_support.seeded_template
world = fault_support.world

HOSTILE = "boom \x1b]0;PWNED\x07\x1b[2J\x1b]52;c;aGk=\x07\nsecond line"
SHOWN = "boom ␛]0;PWNED␇␛[2J␛]52;c;aGk=␇"


def _embed_fails(w: Workspace) -> None:
    w.standin.fail_next("status", status=500, message=HOSTILE, count=None, path="/api/embed")


def _assert_shown_as_symbols(text: str) -> None:
    assert "\x1b" not in text and "\x07" not in text, text
    assert SHOWN in text and "second line" in text, text


@pytest.mark.parametrize(
    "args",
    [
        ("ask", "what do we know about the staging cluster?"),
        ("recall", "staging cluster"),
    ],
    ids=["ask", "recall"],
)
def test_an_embedding_error_note_shows_control_characters_as_symbols(
    world: Workspace, args: tuple[str, ...]
) -> None:
    _embed_fails(world)
    proc = world.run(*args)
    assert_ok(proc)
    note = [line for line in proc.stderr.splitlines() if line.startswith("straylight: note:")]
    assert len(note) == 1, proc.stderr
    _assert_shown_as_symbols(note[0])


def test_remember_and_import_doc_name_the_embedding_error_in_one_clean_line(
    world: Workspace, tmp_path: Path
) -> None:
    _embed_fails(world)
    remembered = world.run("remember", "the staging cluster runs on three nodes")
    assert_ok(remembered)
    assert len(remembered.stdout.splitlines()) == 1, remembered.stdout
    _assert_shown_as_symbols(remembered.stdout)
    doc = tmp_path / "doc.md"
    doc.write_text("# Runbook\n\n## Deploy\nrun just deploy-blue\n", encoding="utf-8")
    imported = world.run("import-doc", str(doc))
    assert_ok(imported)
    _assert_shown_as_symbols(imported.stderr)


def test_status_shows_an_ollama_error_on_one_clean_line(world: Workspace) -> None:
    world.standin.fail_next("status", status=500, message=HOSTILE, count=None, path="/api/tags")
    proc = world.run("status")
    assert_ok(proc)
    line = next(line for line in proc.stdout.splitlines() if line.startswith("ollama "))
    _assert_shown_as_symbols(line)


async def test_the_chat_shows_an_ollama_error_notice_with_control_characters_as_symbols(
    make_settings: Callable[..., Settings], standin: OllamaStandIn
) -> None:
    """The chat's notices repeat Ollama's error text too (a reply cut off by an `{"error": …}`
    line): drawn as symbols, as the chat's messages are (README, Hostile input)."""
    from tests.test_tui_pilot import SIZE, messages, sidebar

    standin.script_reply("alpha beta gamma delta")
    standin.fail_next("error_line", after=2, message=HOSTILE, path="/api/chat")
    app = StraylightApp(make_settings(ollama_host=standin.host))
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(pilot, lambda: sidebar(app).ollama == "online", what="online")
        await type_text(pilot, "count for me")
        await pilot.press("enter")
        await wait_until(
            pilot, lambda: [m.status for m in messages(app)][-1:] == ["cut_off"], what="cut"
        )
        await wait_until(pilot, lambda: bool(notices(app)), what="the notice")
        said = notices(app)[-1]
        _assert_shown_as_symbols(said)


def test_a_logged_reply_header_shows_its_reason_with_control_characters_as_symbols() -> None:
    """A continued conversation's cut-off reply names its reason in its header line."""
    from tui.widgets.chat_message import ChatMessage

    reply = ChatMessage("assistant", "alpha beta", model="llama3.2", status="cut_off")
    reply.reason = f"the reply was cut off mid-stream: Ollama reported: {HOSTILE}"
    _assert_shown_as_symbols(str(reply._title_text()))


async def test_the_sidebar_shows_an_ollama_error_with_control_characters_as_symbols(
    make_settings: Callable[..., Settings], standin: OllamaStandIn
) -> None:
    """An Ollama that answers /api/tags with an error: the sidebar names it (and the folded
    one-line summary too), drawn as symbols."""
    from tests.test_tui_pilot import SIZE, sidebar
    from tui.widgets.status_sidebar import SidebarSummary, StatusSidebar

    standin.fail_next("status", status=500, message=HOSTILE, count=None, path="/api/tags")
    app = StraylightApp(make_settings(ollama_host=standin.host))
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(pilot, lambda: sidebar(app).ollama == "error", what="the error")
        await pilot.pause()
        state = sidebar(app)
        drawn = str(StatusSidebar._ollama_block(state))
        _assert_shown_as_symbols(drawn)
        summary = app.query_one(SidebarSummary)
        assert "\x1b" not in str(summary.render())


def test_a_conversation_header_shows_a_logged_model_name_with_control_characters_as_symbols() -> (
    None
):
    """The conversation reader's header lists the models the day file's metadata names; a
    hand-edited log can put an ESC sequence there, which must not reach the terminal."""
    from datetime import UTC, datetime

    from store.daily_log import LogMessage
    from tui.screens.conversation_views import describe

    when = datetime(2026, 12, 5, 9, 0, tzinfo=UTC)
    messages = [
        LogMessage("user", "hi", conversation_id="c1", time=when),
        LogMessage("assistant", "hello", conversation_id="c1", time=when, model=HOSTILE),
    ]
    header = str(describe("c1", messages, current=False))
    _assert_shown_as_symbols(header)
    # the title proposed from "hi", the id, the facts: the model's line break adds no line
    _title, _id_line, facts = header.split("\n")
    assert facts.startswith("2 messages · ") and facts.endswith("␊second line"), facts
