"""The chat's "Thinking" block: it appears while a thinking model thinks, streams, folds when
the answer starts, and t on the selected reply opens it again; `/think` sets the field."""

from __future__ import annotations

from collections.abc import Callable

from agent.settings import Settings
from tests.support.ollama_standin import OllamaStandIn
from tests.support.pilot_helpers import type_text, wait_until
from tui.app import StraylightApp
from tui.widgets.chat_input import ChatInput
from tui.widgets.chat_message import ChatMessage

SIZE = (110, 32)
THINKER = "qwen3:8b"
THOUGHT = "The user asks for a capital. France: Paris. Say it briefly and kindly."
ANSWER = "Paris is the capital of France."


def reply_of(app: StraylightApp) -> ChatMessage | None:
    messages = [m for m in app.query(ChatMessage) if m.role == "assistant"]
    return messages[-1] if messages else None


def notices(app: StraylightApp) -> str:
    return " ".join(str(n.render()) for n in app.query(".chat-notice"))


async def send_and_wait(pilot, app: StraylightApp, text: str, status: str = "complete") -> None:
    """`text` sent from the message box; back when its reply has `status`."""
    await type_text(pilot, text)
    await pilot.press("enter")
    await wait_until(pilot, lambda: (r := reply_of(app)) is not None and r.status == status)


def block_state(app: StraylightApp) -> str:
    reply = reply_of(app)
    if reply is None or reply.thinking_block is None:
        return "none"
    return "folded" if reply.thinking_block.collapsed else "open"


async def test_the_thinking_block_streams_folds_and_opens_again(
    make_settings: Callable[..., Settings], standin: OllamaStandIn
) -> None:
    standin.set_models(["llama3.2", THINKER, "nomic-embed-text"])
    settings = make_settings(ollama_host=standin.host, model=THINKER, jobs_enabled=False)
    standin.script_reply(ANSWER, thinking=THOUGHT)
    standin.token_delay = 0.05  # slow enough to see the model think
    app = StraylightApp(settings)
    async with app.run_test(size=SIZE) as pilot:
        await type_text(pilot, "capital of France?")
        await pilot.press("enter")
        await wait_until(pilot, lambda: block_state(app) == "open", what="thinking shown")
        reply = reply_of(app)
        assert reply is not None and reply.status == "thinking" and reply.text == ""
        await wait_until(pilot, lambda: reply.status == "complete", timeout=10, what="the answer")
        assert block_state(app) == "folded"
        assert reply.thinking == THOUGHT and reply.text == ANSWER
        shown = str(reply.query_one(".thinking-text").render())
        assert shown == THOUGHT

        await pilot.press("ctrl+up")
        assert app.focused is reply
        await pilot.press("t")
        assert block_state(app) == "open"
        await pilot.press("t")
        assert block_state(app) == "folded"
        await pilot.press("escape")
        assert isinstance(app.focused, ChatInput)


async def test_a_reply_without_thinking_has_no_block(
    settings: Settings, standin: OllamaStandIn
) -> None:
    standin.script_reply(ANSWER)
    app = StraylightApp(settings)
    async with app.run_test(size=SIZE) as pilot:
        await send_and_wait(pilot, app, "capital?")
        assert block_state(app) == "none"
        await pilot.press("ctrl+up")
        await pilot.press("t")  # nothing to open: it says so
        assert block_state(app) == "none"
        await wait_until(
            pilot,
            lambda: any("no thinking" in str(n.message) for n in app._notifications),
            what="the notice",
        )


async def test_blank_thinking_opens_no_block(
    make_settings: Callable[..., Settings], standin: OllamaStandIn
) -> None:
    """A model that thinks nothing (`<think>\n\n</think>`, or a blank `message.thinking`)
    showed an empty "Thinking" block above its reply."""
    standin.set_models(["llama3.2", THINKER, "nomic-embed-text"])
    settings = make_settings(ollama_host=standin.host, model=THINKER, jobs_enabled=False)
    standin.script_reply(ANSWER, thinking="\n\n")
    app = StraylightApp(settings)
    async with app.run_test(size=SIZE) as pilot:
        await send_and_wait(pilot, app, "capital?")
        assert block_state(app) == "none"
        reply = reply_of(app)
        assert reply is not None and reply.text == ANSWER


async def test_slash_think_sets_the_field_for_the_session(
    make_settings: Callable[..., Settings], standin: OllamaStandIn
) -> None:
    standin.set_models(["llama3.2", THINKER, "nomic-embed-text"])
    settings = make_settings(ollama_host=standin.host, model=THINKER, jobs_enabled=False)
    app = StraylightApp(settings)
    async with app.run_test(size=SIZE) as pilot:
        assert app.engine.think is None
        await type_text(pilot, "/think")
        await pilot.press("enter")
        await type_text(pilot, "/think low")
        await pilot.press("enter")
        await wait_until(pilot, lambda: app.engine.think == "low", what="think low")
        await type_text(pilot, "/think maybe")
        await pilot.press("enter")
        await pilot.pause()
        assert app.engine.think == "low"
        notices = [str(n.render()) for n in app.query(".chat-notice")]
        assert any(n.startswith("Thinking: unset") for n in notices), notices
        assert any(n.startswith("Thinking: low") for n in notices), notices
        assert any(n.startswith("Usage: /think") for n in notices), notices
        await type_text(pilot, "hi")
        await pilot.press("enter")
        await wait_until(pilot, lambda: any(r.path == "/api/chat" for r in standin.requests))
        await wait_until(pilot, lambda: not app.chat.replying, what="reply done")
        assert standin.chat_requests()[-1]["think"] == "low"


async def test_a_model_that_takes_no_thinking_level_is_asked_with_true(
    make_settings: Callable[..., Settings], standin: OllamaStandIn
) -> None:
    """Ollama answers some thinking models' `think: "high"` with HTTP 400 `think value
    "high" is not supported for this model`: every message failed with that line. The turn
    asks again with `true`, says so once, and the model is asked with `true` from then on."""
    from tests.support.ollama_standin import ModelSpec

    standin.set_models(["llama3.2", THINKER, "nomic-embed-text"])
    standin.catalog.update_specs({THINKER: ModelSpec(takes_levels=False)})
    settings = make_settings(ollama_host=standin.host, model=THINKER, jobs_enabled=False)
    app = StraylightApp(settings)
    async with app.run_test(size=SIZE) as pilot:
        await type_text(pilot, "/think high")
        await pilot.press("enter")
        await wait_until(pilot, lambda: app.engine.think == "high", what="think high")
        standin.script_reply(ANSWER, thinking=THOUGHT)
        await send_and_wait(pilot, app, "capital of France?")
        assert reply_of(app).text == ANSWER
        notices = [str(n.render()) for n in app.query(".chat-notice")]
        said = [n for n in notices if "takes no thinking level" in n]
        assert len(said) == 1 and "thinking is on (think true) instead" in said[0], notices
        assert [r["think"] for r in standin.chat_requests()] == ["high", True]
        await type_text(pilot, "and of Spain?")
        await pilot.press("enter")
        await wait_until(pilot, lambda: len(standin.chat_requests()) == 3 and not app.replying)
        assert standin.chat_requests()[-1]["think"] is True
        notices = [str(n.render()) for n in app.query(".chat-notice")]
        assert sum("takes no thinking level" in n for n in notices) == 1


async def test_a_reply_stopped_at_num_predict_is_marked_cut_off(
    make_settings: Callable[..., Settings], standin: OllamaStandIn
) -> None:
    """A thinking model that spends `num_predict` thinking gives no answer: the bubble said
    nothing was wrong (and the log said `complete`). It is marked cut off, and the notice
    names the limit."""
    standin.set_models(["llama3.2", THINKER, "nomic-embed-text"])
    settings = make_settings(
        ollama_host=standin.host,
        model=THINKER,
        jobs_enabled=False,
        model_options={"num_predict": 3},
    )
    standin.script_reply(ANSWER, thinking=THOUGHT)
    app = StraylightApp(settings)
    async with app.run_test(size=SIZE) as pilot:
        await send_and_wait(pilot, app, "capital of France?", status="cut_off")
        reply = reply_of(app)
        title = str(reply.query_one(".message-title").render()) if reply else ""
        assert reply is not None and reply.text == "" and "⚠ cut off" in title
        assert reply.has_class("-problem")
        await wait_until(pilot, lambda: "num_predict = 3" in notices(app), what="the limit named")
