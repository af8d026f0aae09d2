"""The context budget wired into the turn, `ask`, `status` and the sidebar, against the
stand-in with a 4,096-token default window that drops the oldest messages silently (issue 13):
Straylight sends `options.num_ctx` on every chat request, cuts what does not fit itself and
says so; Ollama never has to drop a message."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from agent.settings import Settings
from tests.support.cli import NOW, Env, assert_one_line, printed_json, run_cli
from tests.support.ollama_standin import OllamaStandIn, context_error
from tests.support.pilot_helpers import notices, type_text, wait_until
from tui.app import StraylightApp
from tui.widgets.chat_input import ChatInput
from tui.widgets.chat_message import ChatMessage
from tui.widgets.status_sidebar import SidebarSummary, StatusSidebar, summary_text

PARAGRAPH = (
    "We compared the two deploy scripts line by line: the staging one pins the node version, "
    "copies the build into /srv/app and restarts the service with systemctl. "
) * 5  # ~840 characters, ~180 tokens
CONTEXT_FIELDS = [
    "model",
    "window",
    "model_max",
    "last_prompt_tokens",
    "reply_reserve",
    "cut",
    "headroom",
]


@pytest.fixture
def truncating(standin: OllamaStandIn) -> OllamaStandIn:
    standin.context_mode = "truncate"
    standin.default_num_ctx = 4096
    return standin


@pytest.fixture
def env(cli_env: Callable[..., Env], truncating: OllamaStandIn) -> Env:
    return cli_env(OLLAMA_HOST=truncating.host, STRAYLIGHT_NOW=NOW)


def status_json(env: Env) -> dict[str, object]:
    return printed_json(run_cli(env, "status", "--json"))


def test_a_long_conversation_is_cut_by_straylight_never_by_ollama(
    env: Env, truncating: OllamaStandIn
) -> None:
    env = {**env, "STRAYLIGHT_NUM_CTX": "4096", "MEMORY_ENABLED": "false"}
    lines: list[str] = []
    for turn in range(14):
        truncating.script_reply(f"Answer {turn}: {PARAGRAPH}")
        args = ["ask", "--conversation", "long-one", f"Turn {turn}: {PARAGRAPH}"]
        proc = run_cli(env, *args)
        assert proc.returncode == 0, proc.stderr
        lines += proc.stderr.splitlines()

    outcomes = truncating.chat_outcomes()
    assert len(outcomes) == 14
    assert [o.dropped_messages for o in outcomes] == [0] * 14  # Ollama never cut
    assert all(o.window == 4096 for o in outcomes)
    assert [r["options"]["num_ctx"] for r in truncating.chat_requests()] == [4096] * 14
    # Straylight cut the oldest history itself, and said so on stderr (one line a turn).
    cut_lines = [line for line in lines if "oldest messages left out" in line]
    assert cut_lines, lines
    assert all(line.startswith("straylight: context ") for line in cut_lines)
    assert "/ 4k: history: " in cut_lines[-1]
    last = truncating.chat_requests()[-1]["messages"]
    assert last[-1]["content"].startswith("Turn 13:")
    assert len(last) - 2 < 20  # fewer than history_turns made it: the budget cut the rest

    context = status_json(env)["context"]
    assert isinstance(context, dict) and list(context) == CONTEXT_FIELDS
    assert context["model"] == "llama3.2"
    assert context["window"] == 4096
    assert context["model_max"] == 131072
    assert context["reply_reserve"] == 512
    assert isinstance(context["last_prompt_tokens"], int)
    assert 0 < context["last_prompt_tokens"] <= 4096 - 512
    assert context["cut"] == {"history": 20 - (len(last) - 2)}  # history_turns: 20
    assert context["headroom"] in ("warn", "critical")

    plain = run_cli(env, "status").stdout
    (line,) = [line for line in plain.splitlines() if line.startswith("context ")]
    assert " / 4k tokens (" in line and "oldest messages left out" in line


def test_memory_on_recall_gives_way_first_and_the_calibration_is_kept(
    env: Env, truncating: OllamaStandIn, home: Path
) -> None:
    env = {**env, "STRAYLIGHT_NUM_CTX": "4096"}
    for turn in range(8):
        truncating.script_reply(f"Answer {turn}: {PARAGRAPH}")
        proc = run_cli(env, "ask", "-c", "with-memory", f"Turn {turn}: {PARAGRAPH}")
        assert proc.returncode == 0, proc.stderr
    assert [o.dropped_messages for o in truncating.chat_outcomes()] == [0] * 8
    context = status_json(env)["context"]
    assert isinstance(context, dict) and context["window"] == 4096

    import duckdb

    with duckdb.connect(str(home / "straylight.duckdb"), read_only=True) as db:
        rows = dict(db.execute("SELECT key, value FROM meta").fetchall())
    calibration = json.loads(rows["tokens.calibration"])
    assert calibration["models"]["llama3.2"]["observations"] >= 1
    assert json.loads(rows["context.last_turn"])["window"] == 4096


def test_without_a_setting_the_window_is_the_model_max_capped(
    env: Env, truncating: OllamaStandIn
) -> None:
    truncating.configure_model("small:1b", context_length=8192)
    truncating.set_models(["llama3.2", "small:1b"])
    assert run_cli(env, "ask", "hello").returncode == 0
    assert run_cli({**env, "STRAYLIGHT_MODEL": "small:1b"}, "ask", "hello").returncode == 0
    sent = [r["options"]["num_ctx"] for r in truncating.chat_requests()]
    assert sent == [16384, 8192]  # llama3.2 holds 131,072: capped; small:1b its own maximum


def test_status_before_any_turn_has_null_context(env: Env) -> None:
    context = status_json(env)["context"]
    assert context == dict.fromkeys(CONTEXT_FIELDS) | {"cut": {}}
    plain = run_cli(env, "status").stdout
    assert "context    not known yet" in plain


def test_a_400_naming_the_context_is_named_with_the_fix(
    env: Env, truncating: OllamaStandIn
) -> None:
    truncating.context_mode = "error"
    truncating.fail_next("status", status=400, message=context_error(8889, 4096), path="/api/chat")
    proc = run_cli(env, "ask", "hello")
    assert "The prompt (8,889 tokens) is larger than the model's window (4,096)" in proc.stderr
    # it runs 4,096 where 16,384 was sent: the server does not apply num_ctx, so the fix is
    # to send what it runs (the model's maximum, 131,072, does not help)
    assert_one_line(proc, 5, "set num_ctx to 4,096")


def test_a_message_too_long_for_the_window_is_not_sent(env: Env, truncating: OllamaStandIn) -> None:
    env = {**env, "STRAYLIGHT_NUM_CTX": "1024"}
    proc = run_cli(env, "ask", PARAGRAPH * 12)
    assert proc.returncode == 5
    assert "Not sent: the message needs about" in proc.stderr
    assert "raise num_ctx" in proc.stderr
    assert truncating.chat_requests() == []
    logged = printed_json(run_cli(env, "history", "--json"), quiet=True)
    assert [(m["role"], m["status"]) for m in logged] == [
        ("user", "complete"),
        ("assistant", "failed"),
    ]


def test_a_message_not_sent_is_one_line_without_the_cut_of_a_prompt_never_sent(
    env: Env, truncating: OllamaStandIn
) -> None:
    """A conversation with history, then a message too long for the window: `ask` also
    printed `context 888 / 1k: history: 2 oldest messages left out` before its `Not sent`
    line, about a prompt that was never sent. One line; a prompt sent still names its cut."""
    env = {**env, "STRAYLIGHT_NUM_CTX": "1024"}
    for turn in range(2):
        assert run_cli(env, "ask", "-c", "long-one", f"Turn {turn}: {PARAGRAPH}").returncode == 0
    proc = run_cli(env, "ask", "-c", "long-one", PARAGRAPH * 12)
    assert_one_line(proc, 5, "Not sent: the message needs about")
    sent = run_cli(env, "ask", "-c", "long-one", "And now?")
    assert sent.returncode == 0
    assert "history: " in sent.stderr and "left out" in sent.stderr


def test_status_reports_a_turn_the_window_refused_as_critical(
    env: Env, truncating: OllamaStandIn
) -> None:
    """The message too long to send, and the HTTP 400 naming the context, are the last
    prompt `status` reports: `critical`, not the turn before (or nulls)."""
    env = {**env, "STRAYLIGHT_NUM_CTX": "1024"}
    assert run_cli(env, "ask", PARAGRAPH * 12).returncode == 5
    context = status_json(env)["context"]
    assert isinstance(context, dict)
    assert (context["window"], context["headroom"]) == (1024, "critical")
    assert isinstance(context["last_prompt_tokens"], int) and context["last_prompt_tokens"] > 1024
    assert "(critical)" in run_cli(env, "status").stdout

    assert run_cli(env, "ask", "hello").returncode == 0
    assert status_json(env)["context"]["headroom"] == "ok"  # type: ignore[index]
    truncating.fail_next("status", status=400, message=context_error(8889, 1024), path="/api/chat")
    assert run_cli(env, "ask", "hello again").returncode == 5
    assert status_json(env)["context"]["headroom"] == "critical"  # type: ignore[index]


async def test_the_sidebar_shows_the_context_line(
    make_settings: Callable[..., Settings], truncating: OllamaStandIn
) -> None:
    settings = make_settings(ollama_host=truncating.host, num_ctx=1024)
    app = StraylightApp(settings)
    async with app.run_test(size=(110, 32)) as pilot:
        sidebar = await send_once_online(pilot, app)
        await wait_until(
            pilot,
            lambda: [m.status for m in app.query(ChatMessage)] == ["complete", "complete"],
            what="reply",
        )
        state = sidebar.state
        assert state is not None and state.context is not None
        assert state.context.startswith("context ") and state.context.endswith(" / 1k")
        assert state.context_headroom == "ok" and state.context_notes == ()
        block = str(app.query_one("#sidebar-conversation").render())
        assert f"{state.context} · ok" in block
        # The folded summary shows the context only when it is worth a colour.
        assert "context" not in summary_text(state).plain
        warn = state.with_changes(context_headroom="warn")
        assert state.context in summary_text(warn).plain
        assert app.query_one(SidebarSummary) is not None


def refusing_settings(
    make_settings: Callable[..., Settings], truncating: OllamaStandIn
) -> Settings:
    """A 1,024-token window, and Ollama refusing the first chat for its context (HTTP 400)."""
    truncating.fail_next("status", status=400, message=context_error(1500, 1024), path="/api/chat")
    return make_settings(ollama_host=truncating.host, num_ctx=1024)


async def send_once_online(pilot, app: StraylightApp) -> StatusSidebar:
    """Once the sidebar says Ollama is online, send one message; the sidebar."""
    sidebar = app.query_one(StatusSidebar)
    await wait_until(pilot, lambda: sidebar.state and sidebar.state.ollama == "online")
    await type_text(pilot, "Hello there")
    await pilot.press("enter")
    return sidebar


async def refused_for_its_context(pilot, app: StraylightApp) -> StatusSidebar:
    """One message sent and refused for its context: the sidebar, its context line critical."""
    sidebar = await send_once_online(pilot, app)
    await wait_until(
        pilot,
        lambda: sidebar.state is not None and sidebar.state.context_headroom == "critical",
        what="the context line turning critical",
    )
    return sidebar


async def test_a_new_conversation_drops_the_last_conversations_context_line(
    make_settings: Callable[..., Settings], truncating: OllamaStandIn
) -> None:
    """Ctrl+N: the sidebar's Conversation block and the folded line kept the old prompt's
    `context … · critical` and its `history: … left out` under the new, empty one."""
    app = StraylightApp(refusing_settings(make_settings, truncating))
    async with app.run_test(size=(80, 24)) as pilot:
        sidebar = await refused_for_its_context(pilot, app)
        await pilot.press("ctrl+n")
        await wait_until(pilot, lambda: sidebar.state.context is None, what="the line dropped")
        assert sidebar.state.context_headroom == "ok" and sidebar.state.context_notes == ()
        assert "context" not in str(app.query_one(SidebarSummary).render())


async def test_the_sidebar_turns_critical_when_ollama_refuses_the_prompt(
    make_settings: Callable[..., Settings], truncating: OllamaStandIn
) -> None:
    """An HTTP 400 naming the context: the chat names it and the sidebar's context line,
    `ok` by the estimate before the send, turns `critical`."""
    app = StraylightApp(refusing_settings(make_settings, truncating))
    async with app.run_test(size=(110, 32)) as pilot:
        await refused_for_its_context(pilot, app)
        block = str(app.query_one("#sidebar-conversation").render())
        assert " · critical" in block


async def test_the_sidebar_turns_critical_when_ollama_cuts_the_prompt_anyway(
    make_settings: Callable[..., Settings], truncating: OllamaStandIn
) -> None:
    """/api/show fails, so the 4,096 fallback is budgeted; the model holds 2,048 and Ollama
    cuts the prompt. The chat named the cut, but the sidebar kept the estimate's `ok`, as if
    the prompt had fitted; it turns `critical`, as for a prompt Ollama refuses."""
    truncating.configure_model("small:1b", context_length=2048)
    truncating.set_models(["small:1b", "nomic-embed-text"])
    truncating.fail_next("status", status=500, message="boom", path="/api/show", count=None)
    settings = make_settings(ollama_host=truncating.host, model="small:1b", jobs_enabled=False)
    app = StraylightApp(settings)
    async with app.run_test(size=(110, 32)) as pilot:
        sidebar = app.query_one(StatusSidebar)
        await wait_until(pilot, lambda: sidebar.state and sidebar.state.ollama == "online")
        app.query_one(ChatInput).text = "We compared the deploy scripts line by line. " * 280
        await pilot.press("enter")
        await wait_until(
            pilot,
            lambda: any("Ollama cut the prompt" in n for n in notices(app)),
            what="the cut named",
        )
        assert truncating.chat_outcomes()[-1].runner_truncated  # the scenario happened
        await wait_until(
            pilot,
            lambda: sidebar.state is not None and sidebar.state.context_headroom == "critical",
            what="the context line turning critical",
        )


async def test_a_window_guessed_while_the_model_was_missing_is_chosen_again_once_it_is_there(
    make_settings: Callable[..., Settings], truncating: OllamaStandIn
) -> None:
    """The first message goes to a model not pulled yet (or to Ollama while it is down):
    /api/show cannot answer, the window is the 4,096 guess. Once the model is pulled the
    session asks again and sends the real window (qwen3's 40,960 capped at 16,384), rather than
    4,096 for the rest of the session."""
    truncating.set_models(["llama3.2", "nomic-embed-text"])
    settings = make_settings(ollama_host=truncating.host, model="qwen3:8b", jobs_enabled=False)
    app = StraylightApp(settings)
    async with app.run_test(size=(110, 32)) as pilot:
        await wait_until(pilot, lambda: app.engine.memory is not None, what="memory open")
        await type_text(pilot, "hello")
        await pilot.press("enter")
        await wait_until(
            pilot,
            lambda: any("not pulled" in n for n in notices(app)),
            what="the model named as not pulled",
        )
        await wait_until(pilot, lambda: not app.replying, what="the failed turn's end")
        truncating.set_models(["llama3.2", "nomic-embed-text", "qwen3:8b"])
        await type_text(pilot, "hello again")
        await pilot.press("enter")
        await wait_until(pilot, lambda: bool(truncating.chat_requests()), what="the reply")
        await wait_until(pilot, lambda: not app.replying, what="the turn's end")
    windows = [body["options"]["num_ctx"] for body in truncating.chat_requests()]
    assert windows[-1] == 16_384
