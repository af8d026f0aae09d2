"""The chat TUI driven by Textual's pilot against the Ollama stand-in, over real HTTP."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from agent.settings import Settings
from tests.support.ollama_standin import OllamaStandIn
from tests.support.pilot_helpers import notices, type_text, wait_until
from tui.app import StraylightApp
from tui.widgets.chat_input import ChatInput
from tui.widgets.chat_message import ChatMessage
from tui.widgets.status_sidebar import StatusSidebar

SIZE = (110, 32)


def messages(app: StraylightApp) -> list[ChatMessage]:
    return list(app.query(ChatMessage))


def logged(app: StraylightApp):
    return app.engine.daily_log.read_day(app.settings.clock.now().date())


def sidebar(app: StraylightApp):
    state = app.query_one(StatusSidebar).state
    assert state is not None
    return state


async def test_send_streams_the_reply_and_logs_both_messages(
    settings: Settings, standin: OllamaStandIn
) -> None:
    standin.script_reply("Hello **Ada**, nice to meet you.")
    app = StraylightApp(settings)
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(pilot, lambda: sidebar(app).ollama == "online", what="online")
        await type_text(pilot, "Hi, I am Ada")
        await pilot.press("enter")
        await wait_until(
            pilot,
            lambda: len(messages(app)) == 2 and messages(app)[1].status == "complete",
            what="reply",
        )
        user, reply = messages(app)
        assert (user.role, user.text) == ("user", "Hi, I am Ada")
        assert reply.text == "Hello **Ada**, nice to meet you."
        assert app.query_one(ChatInput).text == ""
        assert [(m.role, m.content) for m in logged(app)] == [
            ("user", "Hi, I am Ada"),
            ("assistant", "Hello **Ada**, nice to meet you."),
        ]
        assert "tokens" in (sidebar(app).last_reply or "")


async def test_ctrl_j_makes_a_new_line_and_enter_sends_once(
    settings: Settings, standin: OllamaStandIn
) -> None:
    app = StraylightApp(settings)
    async with app.run_test(size=SIZE) as pilot:
        await type_text(pilot, "line one\nline two")
        assert app.query_one(ChatInput).text == "line one\nline two"
        await pilot.press("enter")
        await wait_until(pilot, lambda: len(logged(app)) == 2, what="two logged messages")
        assert logged(app)[0].content == "line one\nline two"
        assert len(standin.chat_requests()) == 1


async def test_escape_cancels_a_running_reply_and_keeps_what_arrived(
    settings: Settings, standin: OllamaStandIn
) -> None:
    standin.token_delay = 0.03
    standin.script_reply(" ".join(f"token{i}" for i in range(300)))
    app = StraylightApp(settings)
    async with app.run_test(size=SIZE) as pilot:
        await type_text(pilot, "go")
        await pilot.press("enter")
        await wait_until(
            pilot, lambda: len(messages(app)) == 2 and "token3" in messages(app)[1].text
        )
        await pilot.press("escape")
        await wait_until(pilot, lambda: not app.replying, what="the reply to stop")
        reply = messages(app)[1]
        assert reply.status == "cancelled"
        kept = logged(app)[-1]
        assert kept.status == "cancelled" and kept.content.startswith("token0 token1")
        assert len(kept.content.split()) < 300
        # The app stays usable: the next message goes through.
        standin.token_delay = 0
        await type_text(pilot, "again")
        await pilot.press("enter")
        await wait_until(pilot, lambda: len(logged(app)) == 4, what="the next turn")


async def test_a_failing_ollama_reads_error_not_offline_and_recovers(
    settings: Settings, standin: OllamaStandIn
) -> None:
    """A server that answers /api/tags with HTTP 500 is up and broken: the sidebar says
    "error" with its message (it said "offline", sending the user to start it)."""
    standin.fail_next("status", count=None, path="/api/tags", message="runner terminated")
    app = StraylightApp(settings, poll_offline_seconds=0.2)
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(pilot, lambda: sidebar(app).ollama == "error", what="error")
        assert "HTTP 500: runner terminated" in (sidebar(app).ollama_detail or "")
        standin.clear_faults()
        await wait_until(pilot, lambda: sidebar(app).ollama == "online", what="recovery")


async def test_ollama_down_at_start_then_up_recovers_without_restart(
    make_settings: Callable[..., Settings],
) -> None:
    server = OllamaStandIn().start()
    server.stop()  # the port is known, nothing listens on it
    settings = make_settings(ollama_host=server.host)
    app = StraylightApp(settings, poll_offline_seconds=0.2)
    try:
        async with app.run_test(size=SIZE) as pilot:
            await wait_until(pilot, lambda: sidebar(app).ollama == "offline", what="offline")
            assert "not reachable" in (sidebar(app).ollama_detail or "")
            # Usable while offline: sending names the problem and keeps the message.
            await type_text(pilot, "are you there?")
            await pilot.press("enter")
            await wait_until(pilot, lambda: bool(notices(app)), what="error notice")
            assert "ollama serve" in notices(app)[-1]
            assert [(m.content, m.status) for m in logged(app)] == [
                ("are you there?", "complete"),
                ("", "failed"),
            ]
            server.start()
            await wait_until(pilot, lambda: sidebar(app).ollama == "online", what="recovery")
            await type_text(pilot, "now?")
            await pilot.press("enter")
            await wait_until(pilot, lambda: len(logged(app)) == 4, what="a reply after recovery")
            assert logged(app)[-1].content == "Stand-in reply to: now?"
    finally:
        server.stop()


async def test_a_model_that_is_not_pulled_is_named_with_the_fix(
    make_settings: Callable[..., Settings], standin: OllamaStandIn
) -> None:
    app = StraylightApp(make_settings(ollama_host=standin.host, model="mistral"))
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(pilot, lambda: sidebar(app).model_pulled is False, what="not pulled")
        await type_text(pilot, "hello")
        await pilot.press("enter")
        await wait_until(pilot, lambda: bool(notices(app)), what="error notice")
        assert "ollama pull mistral" in notices(app)[-1]
        assert [m.role for m in messages(app)] == ["user"]
        # `/model` switches to a pulled one and the next turn works.
        await type_text(pilot, "/model llama3.2")
        await pilot.press("enter")
        await wait_until(pilot, lambda: sidebar(app).model == "llama3.2", what="model switch")
        assert sidebar(app).model_pulled is True
        await type_text(pilot, "hello again")
        await pilot.press("enter")
        await wait_until(pilot, lambda: len(logged(app)) == 4, what="reply")
        assert logged(app)[-1].model == "llama3.2"


async def test_new_conversation_clears_the_chat_and_starts_fresh_history(
    settings: Settings, standin: OllamaStandIn
) -> None:
    app = StraylightApp(settings)
    async with app.run_test(size=SIZE) as pilot:
        await type_text(pilot, "first conversation")
        await pilot.press("enter")
        await wait_until(pilot, lambda: len(logged(app)) == 2)
        first_id = app.chat.conversation_id
        await type_text(pilot, "/new")
        await pilot.press("enter")
        await wait_until(pilot, lambda: app.chat.conversation_id != first_id, what="new id")
        assert messages(app) == []
        await type_text(pilot, "second")
        await pilot.press("enter")
        await wait_until(pilot, lambda: len(logged(app)) == 4)
        sent = standin.chat_requests()[-1]["messages"]
        assert [m["content"] for m in sent[1:]] == ["second"]  # no history from the old one
        await pilot.press("ctrl+n")
        await wait_until(pilot, lambda: messages(app) == [], what="ctrl+n clears")


async def test_help_and_unknown_commands(settings: Settings, standin: OllamaStandIn) -> None:
    from tui.screens.help_screen import HelpScreen

    app = StraylightApp(settings)
    async with app.run_test(size=SIZE) as pilot:
        await type_text(pilot, "/help")
        await pilot.press("enter")
        await wait_until(pilot, lambda: isinstance(app.screen, HelpScreen), what="help")
        await pilot.press("escape")
        await wait_until(pilot, lambda: not isinstance(app.screen, HelpScreen))
        await pilot.press("f1")
        await wait_until(pilot, lambda: isinstance(app.screen, HelpScreen), what="F1 help")
        await pilot.press("escape")
        app.query_one(ChatInput).focus()
        await type_text(pilot, "/frobnicate")
        await pilot.press("enter")
        await wait_until(pilot, lambda: bool(notices(app)))
        assert "Unknown command /frobnicate" in notices(app)[-1]
        assert logged(app) == []  # slash commands are not chat messages


async def test_an_unknown_slash_line_stays_in_the_box(
    settings: Settings, standin: OllamaStandIn
) -> None:
    """A message that starts with a path is not a command: it is named, and not lost."""
    app = StraylightApp(settings)
    async with app.run_test(size=SIZE) as pilot:
        box = app.query_one(ChatInput)
        box.focus()
        typed = "/etc/hosts has a line I do not understand:\n127.0.1.1 box"
        box.load_text(typed)
        await pilot.press("enter")
        await wait_until(pilot, lambda: bool(notices(app)), what="the refusal")
        assert notices(app)[-1].startswith("Unknown command /etc/hosts (your text stays")
        assert box.text == typed
        box.load_text("/conversations yesterday")  # opens a screen, takes no argument
        await pilot.press("enter")
        await wait_until(pilot, lambda: len(notices(app)) == 2, what="the second refusal")
        assert notices(app)[-1].startswith("/conversations takes no argument")
        assert box.text == "/conversations yesterday"
        box.load_text("/new chat about the deploy")  # runs, takes no argument: not dropped
        await pilot.press("enter")
        await wait_until(pilot, lambda: len(notices(app)) == 3, what="the third refusal")
        assert notices(app)[-1].startswith("/new takes no argument")
        assert box.text == "/new chat about the deploy"
        assert logged(app) == [] and standin.chat_requests() == []
        box.load_text("/" + typed)  # `//`: the escape that sends it as a message
        await pilot.press("enter")
        await wait_until(pilot, lambda: len(logged(app)) == 2, what="the message and its reply")
        assert logged(app)[0].content == typed and box.text == ""


async def test_a_remember_over_the_limit_is_refused_and_stays_in_the_box(
    settings: Settings, standin: OllamaStandIn
) -> None:
    """`/remember` of a paste over 65,536 characters: one notice naming the limit, the text
    kept in the box, nothing stored."""
    app = StraylightApp(settings)
    async with app.run_test(size=SIZE) as pilot:
        box = app.query_one(ChatInput)
        box.focus()
        typed = "/remember " + "crane log line " * 4_400  # 65,999 once stripped
        box.load_text(typed)
        await pilot.press("enter")
        await wait_until(pilot, lambda: bool(notices(app)), what="the refusal")
        assert notices(app)[-1].startswith("Not remembered: /remember: the text is 65,999")
        assert "65,536" in notices(app)[-1]
        assert box.text == typed
        assert app.chat.engine.memory.store.status()["points"]["total"] == 0


async def test_a_remember_whose_embedding_fails_says_it_has_no_vector_yet(
    settings: Settings, standin: OllamaStandIn
) -> None:
    """`straylight remember` names an embedding that failed ("no vector yet: …; found by
    its words until backfill"); `/remember` only said "Remembered #1 (pinned)."."""
    app = StraylightApp(settings)
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(pilot, lambda: app.engine.memory is not None, what="memory open")
        standin.fail_next("status", path="/api/embed", status=500, count=None)
        box = app.query_one(ChatInput)
        box.focus()
        box.load_text("/remember the crane inspection is due on the fifth")
        await pilot.press("enter")
        await wait_until(pilot, lambda: bool(notices(app)), what="the notice")
        said = notices(app)[-1]
        assert said.startswith("Remembered #1 (pinned; no vector yet: ")
        assert "HTTP 500" in said and said.endswith("found by its words until backfill).")


async def test_a_slash_command_waiting_on_ollama_leaves_the_chat_usable(
    settings: Settings, standin: OllamaStandIn
) -> None:
    """`/recall` (or `/import`, `/remember`) waited on the embedding inside the screen's
    message handler: typing, F1 and Ctrl+Q did nothing until it ended (20 s for a stalled
    embedding, minutes for an import). It runs in a worker now."""
    app = StraylightApp(settings)
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(pilot, lambda: app.engine.memory is not None, what="memory open")
        standin.fail_next("delay", seconds=3.0, path="/api/embed")
        box = app.query_one(ChatInput)
        box.focus()
        box.load_text("/recall the harbour crane")
        await pilot.press("enter")
        await type_text(pilot, "typed meanwhile")
        assert box.text == "typed meanwhile"
        assert not any("recall" in n.lower() for n in notices(app)), notices(app)
        await wait_until(pilot, lambda: bool(notices(app)), timeout=10, what="the recall")
        assert box.text == "typed meanwhile"


async def test_ctrl_q_lets_a_running_slash_command_finish_first(
    settings: Settings, standin: OllamaStandIn
) -> None:
    """Slash commands run in a worker; Ctrl+Q right after `/remember` (its embedding slow, a
    model loading from disk) cancelled it with the app: no point, no word, exit 0."""
    import duckdb

    app = StraylightApp(settings)
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(pilot, lambda: app.engine.memory is not None, what="memory open")
        standin.fail_next("delay", seconds=2.0, path="/api/embed")
        box = app.query_one(ChatInput)
        box.focus()
        box.load_text("/remember the ferry leaves from pier four")
        await pilot.press("enter")
        await pilot.press("ctrl+q")
        await wait_until(pilot, lambda: not app.is_running, timeout=15, what="the quit")
    with duckdb.connect(str(settings.home / "straylight.duckdb"), read_only=True) as db:
        rows = db.execute("SELECT content, pinned FROM points").fetchall()
    assert rows == [("the ferry leaves from pier four", True)]


async def test_ctrl_q_again_while_a_slash_command_finishes_quits_now(
    settings: Settings, standin: OllamaStandIn
) -> None:
    """The notice says "Ctrl+Q again quits now": with turns not yet reflected on, the second
    press started the reflection instead (up to 30 s more)."""
    standin.script_reply("Noted.")
    app = StraylightApp(settings)
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(pilot, lambda: app.engine.memory is not None, what="memory open")
        await type_text(pilot, "the harbour crane is red")
        await pilot.press("enter")
        await wait_until(pilot, lambda: app.chat.unreflected_turns == 1, what="a turn")
        standin.fail_next("delay", seconds=20.0, path="/api/embed")
        standin.fail_next("delay", seconds=20.0, path="/api/chat")  # a reflection would wait
        box = app.query_one(ChatInput)
        box.load_text("/remember the ferry leaves from pier four")
        await pilot.press("enter")
        await pilot.press("ctrl+q")
        told = lambda: any("Finishing" in n.message for n in app._notifications)  # noqa: E731
        await wait_until(pilot, told, what="told")
        await pilot.press("ctrl+q")
        await wait_until(pilot, lambda: not app.is_running, timeout=10, what="the quit")


async def test_a_screen_command_with_an_unknown_word_stays_in_the_box(
    settings: Settings, standin: OllamaStandIn
) -> None:
    """`/facts bogus` (or `/hypotheses list x`) is refused in one line, the text kept: it ran
    as `/facts list` (and `/candidates bogus` printed a usage line and dropped the text)."""
    app = StraylightApp(settings)
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(pilot, lambda: app.engine.facts is not None, what="memory open")
        box = app.query_one(ChatInput)
        box.focus()
        refusals = {
            "/facts bogus": "/facts takes no 'bogus'",
            "/facts list extra": "/facts takes nothing after list",
            "/candidates aprove 3": "/candidates takes no 'aprove'",
            "/hypotheses list x": "/hypotheses takes nothing after list",
            "/hypotheses valdate 2": "/hypotheses takes no 'valdate'",
        }
        for count, (typed, refusal) in enumerate(refusals.items(), start=1):
            box.load_text(typed)
            await pilot.press("enter")
            await wait_until(pilot, lambda n=count: len(notices(app)) == n, what=typed)
            assert notices(app)[-1].startswith(refusal) and "stays in the box" in notices(app)[-1]
            assert box.text == typed
        box.load_text("/facts list")  # the right words still run
        await pilot.press("enter")
        await wait_until(pilot, lambda: len(notices(app)) == len(refusals) + 1, what="the list")
        assert notices(app)[-1].startswith("No facts yet") and box.text == ""
        assert logged(app) == [] and standin.chat_requests() == []


async def test_a_second_message_while_streaming_is_refused_not_lost(
    settings: Settings, standin: OllamaStandIn
) -> None:
    standin.token_delay = 0.02
    standin.script_reply(" ".join(["slow"] * 100))
    app = StraylightApp(settings)
    async with app.run_test(size=SIZE) as pilot:
        await type_text(pilot, "first")
        await pilot.press("enter")
        await wait_until(pilot, lambda: app.replying)
        # Under the pilot, key presses wait for an idle app, i.e. for the stream to end:
        # fill the box and submit directly instead.
        box = app.query_one(ChatInput)
        box.text = "second"
        box.action_submit()
        await wait_until(pilot, lambda: bool(app._notifications), what="refusal notice")
        assert app.replying
        assert app.query_one(ChatInput).text == "second"  # kept in the box
        await wait_until(pilot, lambda: not app.replying, timeout=10)
        assert [m.content for m in logged(app) if m.role == "user"] == ["first"]


async def test_sidebar_toggles(settings: Settings, standin: OllamaStandIn) -> None:
    app = StraylightApp(settings)
    async with app.run_test(size=SIZE) as pilot:
        bar = app.query_one(StatusSidebar)
        assert bar.display
        await pilot.press("ctrl+b")
        assert not bar.display
        await pilot.press("ctrl+b")
        assert bar.display


async def test_a_multi_line_user_message_is_shown_as_typed(
    settings: Settings, standin: OllamaStandIn
) -> None:
    from textual.widgets import Static

    app = StraylightApp(settings)
    async with app.run_test(size=SIZE) as pilot:
        await type_text(pilot, "first line\nsecond line")
        await pilot.press("enter")
        await wait_until(pilot, lambda: len(messages(app)) == 2)
        body = messages(app)[0].query_one(".message-body", Static)
        assert str(body.render()).splitlines() == ["first line", "second line"]


async def test_at_80_columns_the_sidebar_folds_into_one_line(
    settings: Settings, standin: OllamaStandIn
) -> None:
    from tui.widgets.status_sidebar import SidebarSummary

    app = StraylightApp(settings)
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_until(pilot, lambda: sidebar(app).ollama == "online", what="online")
        summary = app.query_one(SidebarSummary)
        assert not app.query_one(StatusSidebar).display and summary.display
        await wait_until(pilot, lambda: "online" in str(summary.render()), what="summary")
        await pilot.press("ctrl+b")
        assert app.query_one(StatusSidebar).display and not summary.display
        await pilot.press("ctrl+b")
        assert not app.query_one(StatusSidebar).display and summary.display
        await type_text(pilot, "still typing")
        assert app.query_one(ChatInput).text == "still typing"


async def test_import_of_a_long_document_shows_progress_and_names_missing_vectors(
    settings: Settings, standin: OllamaStandIn, tmp_path: Path
) -> None:
    """`/import` of many sections says how far it got, and when an embedding batch failed,
    how many sections wait for backfill (the CLI says both on stderr)."""
    doc = tmp_path / "long.md"
    doc.write_text(
        "\n".join(f"## Part {i}\nThe body of part {i} names gadget {i * 7}.\n" for i in range(80)),
        encoding="utf-8",
    )
    app = StraylightApp(settings)
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(pilot, lambda: app.engine.memory is not None, what="memory")
        standin.fail_next("status", status=500, path="/api/embed")  # the first batch only
        await type_text(pilot, f"/import {doc}")
        await pilot.press("enter")
        await wait_until(
            pilot, lambda: any("sections stored without" in n for n in notices(app)), what="note"
        )
        said = notices(app)
        assert any(n.startswith("Embedding 16/80 sections") for n in said), said
        assert any(n.startswith("Embedding 80/80 sections") for n in said), said
        done = next(i for i, n in enumerate(said) if n.startswith("Imported"))
        assert "80 added" in said[done]
        assert said[done + 1].startswith("16 sections stored without a vector"), said


async def test_at_80_columns_the_folded_sidebar_stays_one_line(
    make_settings: Callable[..., Settings], standin: OllamaStandIn, home: Path
) -> None:
    """The summary of an online chat is one line whatever it holds (a long model name, a
    damaged database's reason): it is cut, never wrapped over the chat (issue 6)."""
    from tui.widgets.status_sidebar import SidebarSummary

    home.mkdir(parents=True, exist_ok=True)
    (home / "straylight.duckdb").write_bytes(b"not a database " * 100)
    model = "qwen2.5-coder:32b-instruct-q4_K_M-with-a-long-tag"
    app = StraylightApp(make_settings(ollama_host=standin.host, model=model))
    async with app.run_test(size=(80, 24)) as pilot:
        summary = app.query_one(SidebarSummary)
        await wait_until(pilot, lambda: "unavailable" in str(summary.render()), what="why")
        await wait_until(pilot, lambda: summary.region.height > 0, what="the layout")
        await pilot.pause()
        assert summary.region.height == 1


async def test_textuals_own_notices_show_their_text_not_their_markup(
    settings: Settings, standin: OllamaStandIn
) -> None:
    """Ctrl+C's hint is Textual's, written in markup, and every notice is shown as plain text
    (paths and Ollama's words hold `[…]`): it read "Press [b]ctrl+q[/b] to quit the app"."""
    app = StraylightApp(settings)
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(pilot, lambda: sidebar(app).ollama == "online", what="online")
        app.action_help_quit()
        await wait_until(pilot, lambda: bool(app._notifications), what="the hint")
        (hint,) = [n for n in app._notifications if n.title == "Do you want to quit?"]
        assert hint.message == "Press ctrl+q to quit the app", hint.message
