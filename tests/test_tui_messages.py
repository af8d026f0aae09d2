"""Selecting a message by keyboard and pinning, forgetting (confirmed) and copying it — the
store changes, checked through the real DuckDB file."""

from __future__ import annotations

from collections.abc import Callable

from textual.pilot import Pilot

from agent.settings import Settings
from store.point_store import content_hash
from tests.support.ollama_standin import OllamaStandIn
from tests.support.pilot_helpers import type_text, wait_until
from tui.app import StraylightApp
from tui.screens.confirm_screen import ConfirmScreen
from tui.widgets.chat_input import ChatInput
from tui.widgets.chat_message import ChatMessage
from tui.widgets.recalled_hits import RecalledHits

SIZE = (110, 32)
QUESTION = "Where does the blyck staging server live and what does it run these days?"
REPLY = "The blyck staging server is nebula-7 in the Frankfurt rack, running Debian 12."


def points_with(app: StraylightApp, text: str):
    assert app.engine.memory is not None
    return app.engine.memory.store.points.find_by_hash(content_hash(text))


async def first_turn(app: StraylightApp, pilot: Pilot[None], text: str) -> None:
    """Once the memory is open, send `text`; return when the reply and its save are done."""
    await wait_until(pilot, lambda: app.engine.memory is not None, what="memory open")
    await type_text(pilot, text)
    await pilot.press("enter")
    await wait_until(
        pilot,
        lambda: [m.status for m in app.query(ChatMessage)] == ["complete", "complete"],
        what="the reply",
    )
    await app.engine.drain()


async def test_select_pin_copy_and_forget_a_message(
    settings: Settings, standin: OllamaStandIn
) -> None:
    standin.script_reply(REPLY)
    app = StraylightApp(settings)
    async with app.run_test(size=SIZE) as pilot:
        await first_turn(app, pilot, QUESTION)
        assert [p.pinned for p in points_with(app, REPLY)] == [False]

        await pilot.press("ctrl+up")  # the last message: the reply
        assert isinstance(app.focused, ChatMessage) and app.focused.text == REPLY
        await pilot.press("p")
        await wait_until(pilot, lambda: points_with(app, REPLY)[0].pinned, what="pinned")

        await pilot.press("up")  # the question
        assert isinstance(app.focused, ChatMessage) and app.focused.text == QUESTION
        await pilot.press("c")
        assert app.clipboard == QUESTION

        await pilot.press("down")
        await pilot.press("f")
        await wait_until(pilot, lambda: isinstance(app.screen, ConfirmScreen), what="confirm")
        await pilot.press("n")  # declined: nothing happens
        await pilot.pause()
        assert len(points_with(app, REPLY)) == 1
        await pilot.press("f")
        await wait_until(pilot, lambda: isinstance(app.screen, ConfirmScreen), what="confirm")
        await pilot.press("y")
        await wait_until(pilot, lambda: points_with(app, REPLY) == [], what="forgotten")
        assert app.engine.daily_log.recent(app.chat.conversation_id, 5)[-1].content == REPLY

        await pilot.press("escape")
        assert isinstance(app.focused, ChatInput)


async def test_two_moves_in_one_frame_move_the_selection_twice(
    settings: Settings, standin: OllamaStandIn
) -> None:
    """A held arrow key (or two presses in one write) moved one message, not two: each
    move started from the focused message, and the focus of the first arrives later."""
    standin.script_reply(REPLY)
    app = StraylightApp(settings)
    async with app.run_test(size=SIZE) as pilot:
        await first_turn(app, pilot, QUESTION)
        standin.script_reply("A second reply.")
        await type_text(pilot, "and one more")
        await pilot.press("enter")
        await wait_until(pilot, lambda: len(list(app.query(ChatMessage))) == 4, what="4")
        await wait_until(pilot, lambda: not app.replying, what="the second reply")
        chat = list(app.query(ChatMessage))
        await pilot.press("ctrl+up")
        assert app.focused is chat[-1]
        screen = app.screen
        screen.action_select_message(-1)  # two Up presses before the focus moves
        screen.action_select_message(-1)
        await pilot.pause()
        assert app.focused is chat[-3]
        screen.action_select_message(1)
        screen.action_select_message(1)
        await pilot.pause()
        assert app.focused is chat[-1]
        # A click then moves from the clicked message, also after a move that went nowhere
        # (Ctrl+Up on the last message) or back to where a move came from.
        await pilot.press("ctrl+up")
        await pilot.pause()
        for clicked in (1, 3, 2):
            await pilot.click(chat[clicked])
            await pilot.pause()
            assert app.focused is chat[clicked]
            await pilot.press("up")
            await pilot.pause()
            assert app.focused is chat[clicked - 1], chat.index(app.focused)


async def test_pin_after_forget_makes_one_new_point_and_f_forgets_it(
    settings: Settings, standin: OllamaStandIn
) -> None:
    """After f forgot a message's point, every p made a new pinned copy of it (the message
    kept the forgotten id), and f then said "No memory point for it"."""
    standin.script_reply(REPLY)
    app = StraylightApp(settings)
    async with app.run_test(size=SIZE) as pilot:
        await first_turn(app, pilot, QUESTION)
        await pilot.press("ctrl+up")
        assert isinstance(app.focused, ChatMessage) and app.focused.text == REPLY
        await pilot.press("f")
        await wait_until(pilot, lambda: isinstance(app.screen, ConfirmScreen), what="confirm")
        await pilot.press("y")
        await wait_until(pilot, lambda: points_with(app, REPLY) == [], what="forgotten")
        for _ in range(2):
            await pilot.press("p")
            await wait_until(pilot, lambda: len(points_with(app, REPLY)) >= 1, what="pinned")
            await pilot.pause()
        assert [p.pinned for p in points_with(app, REPLY)] == [True]  # one, not one a press
        await pilot.press("f")
        await wait_until(pilot, lambda: isinstance(app.screen, ConfirmScreen), what="confirm")
        await pilot.press("y")
        await wait_until(pilot, lambda: points_with(app, REPLY) == [], what="forgotten again")


async def test_pinning_or_editing_a_message_whose_reply_streams_waits_for_it(
    settings: Settings, standin: OllamaStandIn
) -> None:
    """p on your message while its reply streamed made a pinned point of it at once, then
    the turn's save made a second one of the same text: two points, one pinned. Up (or e)
    to edit it did nothing and said nothing."""

    standin.token_delay = 0.03
    standin.script_reply(" ".join(f"word{i}" for i in range(120)))
    app = StraylightApp(settings)
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(pilot, lambda: app.engine.memory is not None, what="memory open")
        await type_text(pilot, QUESTION)
        await pilot.press("enter")
        await wait_until(pilot, lambda: app.chat.replying, what="the reply streams")
        # (under the pilot a key press waits for the stream: act directly)
        question = next(iter(app.query(ChatMessage)))
        question.focus()
        await wait_until(pilot, lambda: app.focused is question, what="the question focused")
        assert app.chat.replying and app.focused is question
        await app.chat.action_pin_message()
        await wait_until(
            pilot,
            lambda: any("pin or forget it then" in str(n.message) for n in app._notifications),
            what="the notice",
        )
        assert not points_with(app, QUESTION)  # nothing pinned before its save
        box = app.query_one(ChatInput)
        app.chat.on_chat_input_edit_last(ChatInput.EditLast(box))  # Up in the empty box
        await wait_until(
            pilot,
            lambda: any(
                "edit your last message once" in str(n.message) for n in app._notifications
            ),
            what="the edit's notice",
        )
        assert box.text == "" and not app.chat.editing_last
        await wait_until(pilot, lambda: not app.chat.replying, timeout=15, what="the reply")
        await app.engine.drain()
        await app.chat.action_pin_message()  # saved now: its own point is pinned
        await wait_until(pilot, lambda: points_with(app, QUESTION)[0].pinned, what="pinned")
        assert len(points_with(app, QUESTION)) == 1


async def test_the_sidebar_shows_what_the_last_prompt_carried(
    settings: Settings, standin: OllamaStandIn
) -> None:
    from tui.widgets.status_sidebar import StatusSidebar

    app = StraylightApp(settings)
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(pilot, lambda: app.engine.facts is not None, what="memory open")
        app.engine.facts.set("deploy:blyck", "capability", "This PC deploys blyck.")  # type: ignore[union-attr]
        point = await app.engine.memory.remember(REPLY)  # type: ignore[union-attr]
        standin.script_reply("It is nebula-7.")
        await type_text(pilot, "which server is blyck staging on")
        await pilot.press("enter")

        def state():
            return app.query_one(StatusSidebar).state

        await wait_until(pilot, lambda: bool(state() and state().recalled), what="recalled")
        assert any(line.text.startswith(f"#{point} ") for line in state().recalled)
        # the facts come a thread hop after the recall: wait for them too (a race under load)
        await wait_until(pilot, lambda: bool(state().injected), what="injected facts")
        assert state().injected == ("deploy:blyck",)


async def a_turn_with_recalled_hits(
    pilot: Pilot[None], app: StraylightApp, standin: OllamaStandIn
) -> tuple[int, RecalledHits]:
    """A pinned point, then a turn that recalls it: its id and the sidebar's hits list, once
    the reply is in."""
    await wait_until(pilot, lambda: app.engine.memory is not None, what="memory open")
    memory = app.engine.memory
    assert memory is not None
    point = await memory.remember(REPLY)
    standin.script_reply("It is nebula-7.")
    await type_text(pilot, "which server is blyck staging on")
    await pilot.press("enter")
    hits = app.query_one(RecalledHits)
    await wait_until(pilot, lambda: hits.option_count > 0, what="recalled hits listed")
    await wait_until(pilot, lambda: not app.replying, what="the reply")
    return point, hits


async def test_a_recalled_hit_in_the_sidebar_opens_in_the_browser_and_can_be_forgotten(
    settings: Settings, standin: OllamaStandIn
) -> None:
    app = StraylightApp(settings)
    async with app.run_test(size=SIZE) as pilot:
        point, hits = await a_turn_with_recalled_hits(pilot, app, standin)
        memory = app.engine.memory
        assert memory is not None
        await pilot.press("ctrl+r")
        assert app.focused is hits
        hits.highlighted = next(
            i for i in range(hits.option_count) if hits.get_option_at_index(i).id == str(point)
        )
        await pilot.press("enter")  # open: the memory browser shows that point
        from tui.screens.memory_browser import MemoryBrowserScreen

        await wait_until(
            pilot,
            lambda: isinstance(app.screen, MemoryBrowserScreen) and app.screen.preview_id == point,
            what="the browser at the hit",
        )
        await pilot.press("escape")
        await wait_until(pilot, lambda: len(app.screen_stack) == 1, what="back in the chat")
        await pilot.press("ctrl+r")
        assert app.focused is hits
        await pilot.press("f")
        await pilot.press("n")  # no: nothing changes
        assert memory.store.points.get(point) is not None
        await pilot.press("f")
        await pilot.press("y")
        await wait_until(pilot, lambda: memory.store.points.get(point) is None, what="forgotten")
        await wait_until(
            pilot,
            lambda: all(line.point_id != point for line in hits.state_lines),
            what="the hit gone from the sidebar",
        )
        if hits.option_count:
            await pilot.press("escape")
        assert isinstance(app.focused, ChatInput)


async def test_pin_and_forget_notices_quote_a_short_message_whole(
    settings: Settings, standin: OllamaStandIn
) -> None:
    """A message the filter skipped ("ok") is pinned as a new memory; the notice quotes it
    without a false ellipsis, and forgetting it counts one point, in the singular."""
    from tui.widgets.chat_message import ChatNotice

    app = StraylightApp(settings)
    async with app.run_test(size=SIZE) as pilot:
        await first_turn(app, pilot, "ok")

        def said() -> list[str]:
            return [str(n.render()) for n in app.query(ChatNotice)]

        await pilot.press("ctrl+up", "up", "p")  # the user's "ok"
        await wait_until(pilot, lambda: any("pinned" in n for n in said()), what="pinned")
        assert said()[-1].endswith("pinned as a new memory: ok"), said()
        await pilot.press("f")
        await wait_until(pilot, lambda: isinstance(app.screen, ConfirmScreen), what="confirm")
        await pilot.press("y")
        await wait_until(pilot, lambda: said()[-1].startswith("Forgot"), what="forgotten")
        assert said()[-1] == "Forgot 1 memory point."


async def test_pinning_a_message_over_a_points_limit_is_refused_and_the_chat_goes_on(
    make_settings: Callable[..., Settings], standin: OllamaStandIn
) -> None:
    """A pasted message too long for the window is logged but not sent nor saved; p on it
    (a new pinned point over the 65,536 characters a point holds) stopped the whole chat:
    "the TUI stopped on an unexpected error: PointTooLarge", exit 1."""
    from tui.widgets.chat_message import ChatNotice

    paste = "A very long paste about sourdough hydration and starters. " * 1_200  # ~70,000
    app = StraylightApp(make_settings(ollama_host=standin.host, num_ctx=4096))
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(pilot, lambda: app.engine.memory is not None, what="memory open")

        def said() -> list[str]:
            return [str(n.render()) for n in app.query(ChatNotice)]

        app.query_one(ChatInput).load_text(paste)
        await pilot.press("enter")
        await wait_until(pilot, lambda: any("Not sent" in n for n in said()), what="not sent")
        await app.engine.drain()
        await pilot.press("ctrl+up")
        assert isinstance(app.focused, ChatMessage) and app.focused.text == paste
        await pilot.press("p")
        await wait_until(pilot, lambda: "Not pinned" in said()[-1], what="the refusal")
        assert "a memory holds at most 65,536" in said()[-1]
        assert app.is_running and points_with(app, paste) == []


async def test_at_80x24_ctrl_r_unfolds_the_sidebar_and_shows_the_recalled_hits(
    settings: Settings, standin: OllamaStandIn
) -> None:
    """At 80 columns the sidebar is folded; Ctrl+R opens it with its recalled hits in view
    (they sit below the fold, and the list had the focus out of sight)."""
    from tui.widgets.status_sidebar import StatusSidebar

    app = StraylightApp(settings)
    async with app.run_test(size=(80, 24)) as pilot:
        _point, hits = await a_turn_with_recalled_hits(pilot, app, standin)
        await pilot.press("ctrl+r")
        assert app.focused is hits
        bar = app.query_one(StatusSidebar)
        await wait_until(
            pilot, lambda: bar.region.contains_region(hits.region), what="the hits in view"
        )


async def test_pinning_a_skipped_reply_stores_it_as_the_assistants_in_its_conversation(
    settings: Settings, standin: OllamaStandIn
) -> None:
    """A reply the filter skipped, pinned from the chat, becomes an assistant point of this
    conversation: recall must not quote the model's words as the user's."""
    standin.script_reply("Sure.")
    app = StraylightApp(settings)
    async with app.run_test(size=SIZE) as pilot:
        await first_turn(app, pilot, "ok")
        await pilot.press("ctrl+up", "p")  # the reply "Sure.", skipped by length_floor
        await wait_until(pilot, lambda: bool(points_with(app, "Sure.")), what="pinned")
        (point,) = points_with(app, "Sure.")
        assert (point.role, point.pinned) == ("assistant", True)
        assert point.conversation_id == app.chat.conversation_id


async def test_the_palette_pins_the_selected_message_and_prefills_remember(
    settings: Settings, standin: OllamaStandIn
) -> None:
    """Ctrl+P offers the selected message's actions (pin, forget, copy) and the commands
    that take an argument, which it puts in the message box to finish typing."""
    standin.script_reply(REPLY)
    app = StraylightApp(settings)
    async with app.run_test(size=SIZE) as pilot:
        await first_turn(app, pilot, QUESTION)
        titles = {c.title for c in app.get_system_commands(app.screen)}
        assert "Pin the selected message" not in titles  # nothing is selected
        assert {"Remember…", "Forget a memory point…", "Import a Markdown file…"} <= titles

        await pilot.press("ctrl+up")  # the reply
        titles = {c.title for c in app.get_system_commands(app.screen)}
        assert {"Pin the selected message", "Copy the selected message"} <= titles
        await pilot.press("ctrl+p")
        await type_text(pilot, "Pin the selected")
        await pilot.pause(0.3)
        await pilot.press("enter")
        await wait_until(pilot, lambda: points_with(app, REPLY)[0].pinned, what="pinned")

        await pilot.press("ctrl+p")
        await type_text(pilot, "Remember…")
        await pilot.pause(0.3)
        await pilot.press("enter")
        await wait_until(pilot, lambda: isinstance(app.focused, ChatInput), what="the box")
        assert app.focused.text == "/remember "
