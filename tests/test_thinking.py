"""Thinking models and model parameters through the real ollama client and the stand-in:
`think` only for models that can think, thinking streamed as `ThinkingDelta` and kept nowhere
(daily log, straylight.log, points, the next prompt, `ask`'s stdout), `--show-thinking`,
inline `<think>` split across chunks, `options` and `keep_alive` on every chat request."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from agent.ollama_gateway import OllamaGateway
from agent.settings import Settings
from agent.turn import TurnEngine
from agent.turn_events import ReplyDelta, ReplyFinished, ThinkingDelta
from memory.memory_store import MemoryStore
from tests.support.cli import REPO_ROOT, TIMEOUT, Env, assert_one_line, cli_command, run_cli
from tests.support.ollama_standin import ModelSpec, OllamaStandIn, split_tokens

PLAIN = "llama3.2"
THINKER = "qwen3:8b"
EMBEDDER = "nomic-embed-text"
INLINE = "r1-distill"
THOUGHT = "The user wants the capital; Paris, obviously, zebra-tangerine."
MARK = "zebra-tangerine"  # a word only the thinking has
ANSWER = "Paris is the capital of France, and it has been for a very long time now."


@pytest.fixture
def standin() -> Iterator[OllamaStandIn]:
    specs = {INLINE: ModelSpec(capabilities=("completion",), inline_thinking=True)}
    models = (PLAIN, THINKER, INLINE, EMBEDDER)
    with OllamaStandIn(models=models, specs=specs) as server:
        yield server


async def run_turn(engine: TurnEngine, text: str, model: str, conversation: str = "c1"):
    return [e async for e in engine.run(text, conversation_id=conversation, model=model)]


def engine_for(settings: Settings) -> TurnEngine:
    return TurnEngine(settings, OllamaGateway.from_config(settings.ollama))


# ----------------------------------------------------------------------------- the turn


@pytest.mark.parametrize("think", ["true", "false", "low", "high"])
async def test_think_is_sent_only_to_models_that_can_think(
    make_settings: Callable[..., Settings], standin: OllamaStandIn, think: str
) -> None:
    settings = make_settings(ollama_host=standin.host, think=think)
    engine = engine_for(settings)
    events = await run_turn(engine, "hi", PLAIN)
    assert isinstance(events[-1], ReplyFinished)  # no 400 "does not support thinking"
    await run_turn(engine, "hi", THINKER)
    plain, thinker = (r for r in standin.requests if r.path == "/api/chat")
    assert plain.think is None
    assert thinker.think == {"true": True, "false": False}.get(think, think)


async def test_unset_think_sends_nothing_and_the_model_decides(
    settings: Settings, standin: OllamaStandIn
) -> None:
    standin.script_reply(ANSWER, thinking=THOUGHT)
    events = await run_turn(engine_for(settings), "capital of France?", THINKER)
    assert [r.think for r in standin.requests if r.path == "/api/chat"] == [None]
    thinking = "".join(e.text for e in events if isinstance(e, ThinkingDelta))
    assert thinking == THOUGHT
    assert "".join(e.text for e in events if isinstance(e, ReplyDelta)) == ANSWER
    first_answer = next(i for i, e in enumerate(events) if isinstance(e, ReplyDelta))
    assert all(not isinstance(e, ThinkingDelta) for e in events[first_answer:])
    finished = events[-1]
    assert isinstance(finished, ReplyFinished) and finished.text == ANSWER


async def test_think_false_gets_no_thinking(
    make_settings: Callable[..., Settings], standin: OllamaStandIn
) -> None:
    engine = engine_for(make_settings(ollama_host=standin.host, think="false"))
    standin.script_reply(ANSWER, thinking=THOUGHT)
    events = await run_turn(engine, "capital?", THINKER)
    assert not [e for e in events if isinstance(e, ThinkingDelta)]


async def test_inline_think_tags_split_across_chunks_become_thinking(
    settings: Settings, standin: OllamaStandIn
) -> None:
    text = f"<think>{THOUGHT}</think>\n\n{ANSWER}"
    cuts = [
        "<th",
        "ink>The user ",
        "wants the capital; Paris, obviously, zebra-tangerine.</",
        "thi",
    ]
    cuts.append(text[len("".join(cuts)) :])
    standin.script_reply(text, tokens=cuts)  # a model without the thinking parser
    events = await run_turn(engine_for(settings), "capital?", PLAIN)
    assert "".join(e.text for e in events if isinstance(e, ThinkingDelta)) == THOUGHT
    finished = events[-1]
    assert isinstance(finished, ReplyFinished) and finished.text == ANSWER
    logged = engine_for(settings).daily_log.read_day(settings.clock.now().date())
    assert logged[-1].content == ANSWER


async def test_an_inline_thinker_of_the_stand_in_gets_the_same_treatment(
    settings: Settings, standin: OllamaStandIn
) -> None:
    standin.script_reply(ANSWER, thinking=THOUGHT)
    events = await run_turn(engine_for(settings), "capital?", INLINE)
    assert "".join(e.text for e in events if isinstance(e, ThinkingDelta)) == THOUGHT
    assert events[-1] == ReplyFinished(ANSWER, events[-1].stats, events[-1].turn)  # type: ignore[union-attr]


async def test_options_and_keep_alive_reach_every_chat_request(
    make_settings: Callable[..., Settings], standin: OllamaStandIn, tmp_path: Path
) -> None:
    config = tmp_path / "options.toml"
    config.write_text(
        'keep_alive = "30m"\n[model_options]\ntemperature = 0.2\nseed = 7\n'
        '[model_options."qwen3:8b"]\ntemperature = 0.6\nnum_predict = 64\n',
        encoding="utf-8",
    )
    from agent.settings import load_settings

    settings = load_settings(
        flags={"home": str(tmp_path / "h"), "ollama_host": standin.host},
        environ={},
        config_path=config,
    ).settings
    gateway = OllamaGateway.from_config(settings.ollama)
    engine = TurnEngine(settings, gateway)
    await run_turn(engine, "hi", PLAIN)
    await run_turn(engine, "hi", THINKER)
    await gateway.chat_structured(THINKER, [{"role": "user", "content": "x"}], {"type": "object"})
    await gateway.embed(EMBEDDER, ["a memory"])
    plain, thinker, structured = (r for r in standin.requests if r.path == "/api/chat")
    (embedding,) = (r for r in standin.requests if r.path == "/api/embed")
    # The turn adds the context budget's num_ctx (both models' maximum capped at 16,384).
    assert plain.options == {"temperature": 0.2, "seed": 7, "num_ctx": 16384}
    assert thinker.options == {"temperature": 0.6, "seed": 7, "num_predict": 64, "num_ctx": 16384}
    assert structured.options == {
        "temperature": 0.6,
        "seed": 7,
        "num_predict": 64,
        "num_ctx": 16384,
    }
    assert {plain.keep_alive, thinker.keep_alive, structured.keep_alive} == {"30m"}
    assert embedding.keep_alive == "30m"  # the setting is for the embedding model too


async def test_the_callers_options_go_over_the_model_options(standin: OllamaStandIn) -> None:
    gateway = OllamaGateway(standin.host, model_options={"temperature": 0.1, "seed": 3})
    events = [
        e
        async for e in gateway.stream_chat(
            PLAIN, [{"role": "user", "content": "x"}], options={"num_ctx": 8192, "seed": 4}
        )
    ]
    assert events
    assert standin.requests[-1].options == {"temperature": 0.1, "seed": 4, "num_ctx": 8192}
    assert standin.requests[-1].keep_alive is None  # unset: Ollama's default
    await gateway.aclose()


# ----------------------------------------------------------------------------- ask


@pytest.fixture
def env(cli_env: Callable[..., Env], standin: OllamaStandIn) -> Env:
    return cli_env(OLLAMA_HOST=standin.host, STRAYLIGHT_MODEL=THINKER)


def test_thinking_is_kept_nowhere(env: Env, standin: OllamaStandIn, home: Path) -> None:
    standin.script_reply(ANSWER, thinking=THOUGHT)
    first = run_cli(env, "ask", "What is the capital of France?")
    assert (first.returncode, first.stdout) == (0, ANSWER + "\n"), first.stderr
    assert MARK not in first.stderr

    daily = "".join(p.read_text("utf-8") for p in (home / "conversation").glob("*.md"))
    assert ANSWER in daily and MARK not in daily
    log_text = (home / "straylight.log").read_text("utf-8")
    assert MARK not in log_text
    assert "thought" in log_text  # only its size is logged

    stored = Settings(home=home)
    store = MemoryStore.open(home, stored.memory, clock=stored.clock)
    try:
        contents = [p.content for p in store.points.list_points(limit=100)]
    finally:
        store.close()
    assert ANSWER in contents and not any(MARK in c for c in contents)

    conversation = json.loads(run_cli(env, "history", "--json").stdout)[0]["conversation_id"]
    second = run_cli(env, "ask", "--conversation", conversation, "And of Italy?")
    assert second.returncode == 0, second.stderr
    history = standin.chat_requests()[-1]["messages"]
    assert any(m["content"] == ANSWER for m in history)
    assert not any(MARK in str(m) for m in history)


def test_show_thinking_writes_it_to_stderr(env: Env, standin: OllamaStandIn) -> None:
    standin.script_reply(ANSWER, thinking=THOUGHT)
    proc = run_cli(env, "ask", "--show-thinking", "--think", "high", "capital?")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == ANSWER + "\n"
    assert proc.stderr == THOUGHT + "\n"  # plain into a pipe: no escape sequences
    assert standin.chat_requests()[-1]["think"] == "high"


def test_a_think_not_sent_because_show_failed_is_said(env: Env, standin: OllamaStandIn) -> None:
    """/api/show fails, so nobody knows whether the model can think: `--think high` is not
    sent (a model that cannot would refuse the chat), and `ask` says so on stderr instead of
    dropping it silently. The reply still comes."""
    standin.fail_next("status", path="/api/show", count=None, status=500, message="boom")
    proc = run_cli(env, "ask", "--model", THINKER, "--think", "high", "capital?")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip()
    assert "think = high not sent: Ollama did not say whether qwen3:8b can think" in proc.stderr
    assert standin.chat_requests()[-1].get("think") is None
    standin.clear_faults()
    again = run_cli(env, "ask", "--model", THINKER, "--think", "high", "capital?")
    assert "not sent" not in again.stderr and standin.chat_requests()[-1]["think"] == "high"


def test_a_bad_think_flag_is_a_usage_error(env: Env) -> None:
    proc = run_cli(env, "ask", "--think", "hard", "hi")
    assert_one_line(proc, 2, "--think")


def test_the_think_flag_takes_any_case_as_the_setting_does(
    env: Env, standin: OllamaStandIn
) -> None:
    """`STRAYLIGHT_THINK=HIGH` and `/think HIGH` were taken, `ask --think HIGH` refused."""
    standin.script_reply(ANSWER, thinking=THOUGHT)
    proc = run_cli(env, "ask", "--think", "HIGH", "capital?")
    assert proc.returncode == 0, proc.stderr
    assert standin.chat_requests()[-1]["think"] == "high"


def test_an_unknown_model_option_stops_ask_with_one_line(env: Env, tmp_path: Path) -> None:
    config = tmp_path / "bad.toml"
    config.write_text("[model_options]\ntempurature = 0.7\n", encoding="utf-8")
    proc = run_cli(env, "ask", "--config", str(config), "hi")
    assert_one_line(proc, 2, "key 'model_options.tempurature'", "unknown model option")


def test_a_reply_stopped_by_num_predict_is_named(env: Env, standin: OllamaStandIn, tmp_path: Path):
    """Ollama ends a reply at `options.num_predict` with done_reason "length"; a thinking
    model may spend all of it thinking, so `ask` printed nothing and exited 0 without a word.
    Now one stderr line names the limit (the answer, if any, still goes to stdout)."""
    config = tmp_path / "short.toml"
    config.write_text("[model_options]\nnum_predict = 3\n", encoding="utf-8")
    standin.script_reply(ANSWER, thinking=THOUGHT)
    thought_out = run_cli(env, "ask", "--config", str(config), "capital?")
    assert (thought_out.returncode, thought_out.stdout) == (0, "")
    assert_one_line(thought_out, 0, "num_predict = 3 in [model_options]", "before any answer")
    assert standin.chat_requests()[-1]["options"]["num_predict"] == 3

    standin.script_reply(ANSWER)
    cut = run_cli(env, "ask", "--config", str(config), "--model", PLAIN, "capital?")
    assert cut.returncode == 0 and cut.stdout.strip() and cut.stdout != ANSWER + "\n"
    assert_one_line(cut, 0, "stopped at its length limit (num_predict = 3")

    standin.script_reply(ANSWER)
    whole = run_cli(env, "ask", "--model", PLAIN, "capital?")
    assert (whole.returncode, whole.stdout, whole.stderr) == (0, ANSWER + "\n", "")

    # The log says which replies were stopped: the thinking one had no answer at all.
    logged = json.loads(run_cli(env, "history", "--json").stdout)
    replies = [(m["status"], m["reason"] or "") for m in logged if m["role"] == "assistant"]
    assert [status for status, _ in replies] == ["cut_off", "cut_off", "complete"]
    assert "before any answer" in replies[0][1] and "may be cut short" in replies[1][1]


def test_a_reply_that_is_only_thinking_is_named(env: Env, standin: OllamaStandIn) -> None:
    """A thinking model can end (done_reason "stop") having only thought: the thinking is
    never shown as the reply, so `ask` printed nothing, exit 0, without a word, and the chat
    showed an empty bubble. One line now says the model gave no answer."""
    standin.script_reply("", thinking=THOUGHT)
    proc = run_cli(env, "ask", "capital?")
    assert (proc.returncode, proc.stdout) == (0, "")
    assert_one_line(proc, 0, "gave no answer", f"{len(THOUGHT)} characters of thinking")
    assert MARK not in proc.stderr

    standin.script_reply(" \n")
    blank = run_cli(env, "ask", "--model", PLAIN, "capital?")
    assert_one_line(blank, 0, "gave no answer")


def test_a_model_not_pulled_is_named_alone_not_as_a_think_not_sent(env: Env) -> None:
    """/api/show of a model Ollama does not have answers 404: the turn said `think = high not
    sent: Ollama did not say whether qwen3 can think` before the real reason, that qwen3 is
    not pulled (exit 4). Only the real reason is said now."""
    proc = run_cli(env, "ask", "--model", "qwen3:14b", "--think", "high", "capital?")
    assert_one_line(proc, 4, "'qwen3:14b' is not pulled")


@pytest.mark.parametrize("model", [INLINE, THINKER])
def test_blank_thinking_is_not_shown(env: Env, standin: OllamaStandIn, model: str) -> None:
    """deepseek-r1 distills answer a greeting with `<think>\n\n</think>\n\n…`, and thinking
    models can stream a blank thought: `--show-thinking` wrote blank lines to stderr (the chat
    an empty "Thinking" block). Blank thinking is nothing to show."""
    standin.script_reply(ANSWER, thinking="\n\n")
    proc = run_cli(env, "ask", "--model", model, "--show-thinking", "capital?")
    assert (proc.returncode, proc.stdout, proc.stderr) == (0, ANSWER + "\n", "")


def test_a_warning_after_the_answer_starts_its_own_line(
    env: Env, standin: OllamaStandIn, tmp_path: Path
) -> None:
    """On a terminal stdout and stderr share one screen: the warning after a reply (its
    length limit, a prompt Ollama cut) ran on from the answer's last word
    (`…the capitalstraylight: warning: …`) and a blank line followed. The answer's line
    now ends before the warning; stdout still holds the answer and one newline."""
    config = tmp_path / "short.toml"
    config.write_text("[model_options]\nnum_predict = 3\n", encoding="utf-8")
    standin.script_reply(ANSWER)
    command = cli_command("ask", "--config", str(config), "--model", PLAIN, "capital?")
    merged = subprocess.run(
        command,
        env=env,
        cwd=REPO_ROOT,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,  # one screen, as on a terminal
        text=True,
        timeout=TIMEOUT,
        check=False,
    )
    cut = "".join(split_tokens(ANSWER)[:3])
    assert merged.returncode == 0
    assert merged.stdout.startswith(cut + "\nstraylight: warning: the reply stopped"), merged.stdout
    assert merged.stdout.count("\n") == 2, merged.stdout


def test_a_single_stop_string_reaches_ollama_as_a_list(
    env: Env, standin: OllamaStandIn, tmp_path: Path
) -> None:
    """The README allows `stop = "STRING"`; Ollama's options parser takes only a JSON array
    for `stop` (HTTP 500 `option "stop" must be of type array`), so every `ask` failed."""
    config = tmp_path / "stop.toml"
    config.write_text('[model_options]\nstop = "<|im_end|>"\n', encoding="utf-8")
    standin.script_reply(ANSWER)
    proc = run_cli(env, "ask", "--config", str(config), "--model", PLAIN, "capital?")
    assert (proc.returncode, proc.stdout, proc.stderr) == (0, ANSWER + "\n", "")
    assert standin.chat_requests()[-1]["options"]["stop"] == ["<|im_end|>"]
