"""The turn engine: log first, prompt from longterm.md and the log, stream, log the reply."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from datetime import UTC, datetime

import pytest

from agent.ollama_gateway import OllamaGateway
from agent.settings import Settings
from agent.turn import TurnEngine
from agent.turn_events import (
    LongtermWarning,
    ReplyDelta,
    ReplyFailed,
    ReplyFinished,
    TurnEvent,
)
from tests.support.ollama_standin import OllamaStandIn


def engine_for(settings: Settings) -> TurnEngine:
    return TurnEngine(settings, OllamaGateway(settings.ollama.host, read_timeout=5))


async def run_turn(engine: TurnEngine, text: str, conversation: str = "c1") -> list[TurnEvent]:
    return [
        event async for event in engine.run(text, conversation_id=conversation, model="llama3.2")
    ]


def today(engine: TurnEngine):
    return engine.daily_log.read_day(engine.clock.now().date())


async def test_a_turn_logs_both_messages_in_order(
    settings: Settings, standin: OllamaStandIn
) -> None:
    standin.script_reply("Paris is the capital of France.")
    engine = engine_for(settings)
    events = await run_turn(engine, "What is the capital of France?")
    assert (
        "".join(e.text for e in events if isinstance(e, ReplyDelta))
        == "Paris is the capital of France."
    )
    assert isinstance(events[-1], ReplyFinished)
    logged = today(engine)
    assert [(m.role, m.content, m.status) for m in logged] == [
        ("user", "What is the capital of France?", "complete"),
        ("assistant", "Paris is the capital of France.", "complete"),
    ]
    assert logged[1].model == "llama3.2" and logged[1].conversation_id == "c1"


async def test_the_user_message_is_logged_before_the_model_answers(
    settings: Settings, standin: OllamaStandIn
) -> None:
    standin.fail_next("delay", seconds=5.0, path="/api/chat")
    engine = engine_for(settings)
    stream = engine.run("typed and safe", conversation_id="c1", model="llama3.2")

    async def first_reply_text() -> object:  # (the budget's events come before the model's)
        async for event in stream:
            if isinstance(event, ReplyDelta):
                return event
        return None

    answered = asyncio.ensure_future(first_reply_text())  # the model takes 5 s to answer
    for _ in range(200):
        if today(engine):
            break
        await asyncio.sleep(0.01)
    assert not answered.done()
    assert [m.content for m in today(engine)] == ["typed and safe"]
    answered.cancel()
    with pytest.raises(asyncio.CancelledError):
        await answered
    await stream.aclose()


async def test_history_is_the_last_n_messages_of_this_conversation(
    make_settings: Callable[..., Settings], standin: OllamaStandIn
) -> None:
    settings = make_settings(ollama_host=standin.host)
    settings = settings.model_copy(update={"history_turns": 3})
    engine = engine_for(settings)
    for index in range(3):
        await run_turn(engine, f"question {index}", conversation="a")
    await run_turn(engine, "unrelated", conversation="b")
    standin.clear_requests()
    await run_turn(engine, "question 3", conversation="a")
    messages = standin.chat_requests()[-1]["messages"]
    assert messages[0]["role"] == "system"
    assert [m["content"] for m in messages[1:]] == [
        "Stand-in reply to: question 1",
        "question 2",
        "Stand-in reply to: question 2",
        "question 3",
    ]


async def test_longterm_md_is_in_every_prompt_and_reread_when_it_changes(
    settings: Settings, standin: OllamaStandIn
) -> None:
    engine = engine_for(settings)
    assert engine.longterm.ensure_template()
    await run_turn(engine, "hi")
    system = standin.chat_requests()[-1]["messages"][0]["content"]
    assert "Long-term memory" not in system  # the template is only comments
    (settings.home / "longterm.md").write_text("<!-- note to self -->\nMy name is Ada.\n")
    await run_turn(engine, "who am I?")
    system = standin.chat_requests()[-1]["messages"][0]["content"]
    assert "## Long-term memory\n\nMy name is Ada." in system
    assert "note to self" not in system
    (settings.home / "longterm.md").write_text("My name is Grace, really.\n")
    await run_turn(engine, "and now?")
    assert "Grace" in standin.chat_requests()[-1]["messages"][0]["content"]


async def test_a_huge_longterm_md_is_masked_and_budgeted_off_the_event_loop(
    settings: Settings, standin: OllamaStandIn, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A longterm.md of megabytes: masking it (~0.1 s a MB) and fitting it into the window
    (~1.6 s at 18 MB) ran on the event loop, and the chat froze for that long every turn.
    Both run in a thread now; the prompt is masked as before."""
    import threading

    import agent.turn
    import agent.turn_context

    on_loop: list[tuple[str, int]] = []  # what ran on the event loop, and its size

    def spying(name: str, real: Callable[..., object]) -> Callable[..., object]:
        def spy(*args: object, **kwargs: object) -> object:
            if threading.current_thread() is threading.main_thread():
                on_loop.append((name, len(str(args[0]))))
            return real(*args, **kwargs)

        return spy

    monkeypatch.setattr(agent.turn, "mask_secrets", spying("mask", agent.turn.mask_secrets))
    budget = spying("budget", agent.turn_context.budget_prompt)
    monkeypatch.setattr(agent.turn_context, "budget_prompt", budget)
    token = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
    notes = "".join(f"- note {n}: the ferry leaves pier {n % 9} at dawn\n" for n in range(40_000))
    (settings.home / "longterm.md").parent.mkdir(parents=True, exist_ok=True)
    (settings.home / "longterm.md").write_text(f"My token is {token}.\n\n{notes}")
    engine = engine_for(settings)
    await run_turn(engine, "hi")
    system = standin.chat_requests()[-1]["messages"][0]["content"]
    assert "My token is [REDACTED:github_token]." in system and token not in system
    assert [name for name, _ in on_loop] == ["mask", "mask"]  # the message and the reply
    assert max(size for _, size in on_loop) < 1_000  # longterm.md is masked off the loop


async def test_a_longterm_md_saved_with_a_bom_and_crlf_reads_like_plain_utf8(
    settings: Settings, standin: OllamaStandIn
) -> None:
    """Windows editors save UTF-8 with a byte-order mark and CRLF line ends: the template of
    comments then sent an empty `## Long-term memory` section holding only U+FEFF, and
    notes went to the model with the BOM and every `\r`."""
    settings.home.mkdir(parents=True)
    longterm = settings.home / "longterm.md"
    longterm.write_bytes("\ufeff<!-- notes to self -->\r\n".encode())
    engine = engine_for(settings)
    await run_turn(engine, "hi")
    assert "Long-term memory" not in standin.chat_requests()[-1]["messages"][0]["content"]
    longterm.write_bytes("\ufeff# Me\r\nMy name is Ada.\r\n".encode())
    await run_turn(engine, "who am I?")
    system = standin.chat_requests()[-1]["messages"][0]["content"]
    assert system.endswith("## Long-term memory\n\n# Me\nMy name is Ada.")


async def test_unreadable_longterm_warns_and_the_turn_proceeds(
    settings: Settings, standin: OllamaStandIn
) -> None:
    settings.home.mkdir(parents=True)
    (settings.home / "longterm.md").write_bytes(b"caf\xe9 latin-1 bytes")
    events = await run_turn(engine_for(settings), "hello")
    warnings = [e for e in events if isinstance(e, LongtermWarning)]
    assert len(warnings) == 1 and "not UTF-8" in warnings[0].text
    assert isinstance(events[-1], ReplyFinished)


async def test_a_reply_cut_off_mid_stream_is_kept_and_marked(
    settings: Settings, standin: OllamaStandIn
) -> None:
    standin.script_reply("The first part arrives and then the line dies")
    standin.fail_next("drop", after=3)
    engine = engine_for(settings)
    events = await run_turn(engine, "tell me")
    failure = events[-1]
    assert isinstance(failure, ReplyFailed) and failure.partial == "The first part "
    reply = today(engine)[-1]
    assert (reply.role, reply.content, reply.status) == ("assistant", "The first part ", "cut_off")
    assert "cut off" in (reply.reason or "")


async def test_a_failure_before_any_text_is_logged_as_an_empty_failed_reply(
    settings: Settings, standin: OllamaStandIn
) -> None:
    engine = engine_for(settings)
    events = [e async for e in engine.run("hi", conversation_id="c", model="not-pulled")]
    assert isinstance(events[-1], ReplyFailed) and events[-1].error.kind == "model_missing"
    user, reply = today(engine)
    assert (user.role, user.content) == ("user", "hi")
    assert (reply.role, reply.content, reply.status) == ("assistant", "", "failed")
    assert "ollama pull not-pulled" in (reply.reason or "")
    # The empty failed reply never reaches a later prompt.
    standin.clear_requests()
    await run_turn(engine, "again", conversation="c")
    sent = standin.chat_requests()[-1]["messages"]
    assert [m["content"] for m in sent[1:]] == ["hi", "again"]


async def test_cancelling_keeps_what_arrived_marked_cancelled(
    settings: Settings, standin: OllamaStandIn
) -> None:
    standin.token_delay = 0.05
    standin.script_reply(" ".join(f"word{i}" for i in range(200)))
    engine = engine_for(settings)
    shown: list[str] = []
    three_words = asyncio.Event()

    async def consume() -> None:
        async for event in engine.run("long please", conversation_id="c", model="llama3.2"):
            if isinstance(event, ReplyDelta):
                shown.append(event.text)
                if len(shown) >= 3:
                    three_words.set()

    task = asyncio.create_task(consume())
    await asyncio.wait_for(three_words.wait(), 10)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    reply = today(engine)[-1]
    assert reply.status == "cancelled" and reply.content.startswith("".join(shown))
    assert reply.content.startswith("word0 word1 word2 ")
    assert len(reply.content.split()) < 200


async def test_the_fixed_clock_decides_times_and_file_names(
    make_settings: Callable[..., Settings], standin: OllamaStandIn
) -> None:
    settings = make_settings(ollama_host=standin.host)
    settings = settings.model_copy(update={"now": datetime(2031, 2, 3, 4, 5, 6, tzinfo=UTC)})
    await run_turn(engine_for(settings), "hello from the future")
    path = settings.home / "conversation" / "2031-02-03.md"
    assert path.is_file()
    assert '"time": "2031-02-03T04:05:06Z"' in path.read_text()
