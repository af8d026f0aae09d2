"""End to end (issue 13, "done when"): a conversation of any length against a server whose
default window is 4,096 tokens never loses a message without Straylight saying so.

Each turn is checked against what the model really saw (the stand-in's `chat_outcomes`):
- Straylight cut it: every history message of the conversation that is missing from the
  request is counted in the turn's `history: N oldest messages left out` line;
- Ollama cut it anyway (a window Straylight could not know: `/api/show` failing, a model
  smaller than the fallback window): the turn names it (`Ollama cut the prompt …`);
- Ollama refused it (HTTP 400 naming the context): the turn fails with that line, and the
  message stays in the log.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

import pytest

from agent.settings import Settings
from tests.support.cli import NOW, Env, printed_json, run_cli
from tests.support.ollama_standin import OllamaStandIn

PARAGRAPH = (
    "We compared the two deploy scripts line by line: the staging one pins the node version, "
    "copies the build into /srv/app and restarts the service with systemctl. "
)
HISTORY_TURNS = 20  # the default `history_turns`
CUT_RE = re.compile(r"history: (\d+) oldest messages? left out")


@dataclass(frozen=True)
class Turn:
    number: int
    returncode: int
    stderr: str

    @property
    def history_cut(self) -> int:
        match = CUT_RE.search(self.stderr)
        return int(match.group(1)) if match else 0


@pytest.fixture
def server(standin: OllamaStandIn) -> OllamaStandIn:
    standin.context_mode = "truncate"  # Ollama's silent cut of the oldest messages
    standin.default_num_ctx = 4096
    return standin


@pytest.fixture
def env(cli_env: Callable[..., Env], server: OllamaStandIn) -> Env:
    return cli_env(OLLAMA_HOST=server.host, STRAYLIGHT_NOW=NOW)


def converse(env: Env, server: OllamaStandIn, turns: int, size: int) -> list[Turn]:
    """`turns` long turns of one conversation through `ask`, `size` paragraphs a message."""
    done = []
    for number in range(turns):
        server.script_reply(f"Answer {number}: {PARAGRAPH * size}")
        proc = run_cli(env, "ask", "-c", "the-long-one", f"Turn {number}: {PARAGRAPH * size}")
        done.append(Turn(number, proc.returncode, proc.stderr))
    return done


def sent_history(request: dict[str, object]) -> int:
    messages = request["messages"]
    assert isinstance(messages, list)
    return len(messages) - 2  # the system prompt and the new message are not history


def test_default_settings_long_conversation_every_missing_message_is_reported(
    env: Env, server: OllamaStandIn
) -> None:
    """No num_ctx setting: the window is the model's maximum capped (16,384), sent on every
    request, so the 4,096 default never applies; what does not fit is cut by Straylight."""
    turns = converse(env, server, turns=16, size=20)
    assert all(turn.returncode == 0 for turn in turns), [t.stderr for t in turns]
    outcomes = server.chat_outcomes()
    requests = server.chat_requests()
    assert len(outcomes) == len(requests) == 16
    assert [o.dropped_messages for o in outcomes] == [0] * 16  # Ollama never cut
    assert {r["options"]["num_ctx"] for r in requests} == {16_384}
    for turn, request in zip(turns, requests, strict=True):
        before = min(HISTORY_TURNS, 2 * turn.number)  # the conversation's messages so far
        assert sent_history(request) + turn.history_cut == before, turn
        assert request["messages"][-1]["content"].startswith(f"Turn {turn.number}:")
    assert any(turn.history_cut for turn in turns)  # the budget did have to cut
    logged = printed_json(run_cli(env, "history", "--json"), quiet=True)
    assert len(logged) == 32 and {m["status"] for m in logged} == {"complete"}


def converse_after_a_long_first(env: Env, server: OllamaStandIn, turns: int) -> list[Turn]:
    """A first message too long for a 2,048 window (fits the 4,096 fallback), then
    `turns - 1` short ones; each turn its own `ask` process."""
    done = []
    for number in range(turns):
        size = 60 if number == 0 else 2
        server.script_reply(f"Answer {number}: {PARAGRAPH * 2}")
        proc = run_cli(env, "ask", "-c", "the-long-one", f"Turn {number}: {PARAGRAPH * size}")
        done.append(Turn(number, proc.returncode, proc.stderr))
    return done


def test_a_window_straylight_cannot_know_is_cut_by_ollama_named_and_kept(
    env: Env, server: OllamaStandIn
) -> None:
    """/api/show fails, so Straylight budgets against the 4,096 fallback; the model holds only
    2,048 and Ollama cuts the first, long prompt: the turn names it, and the window Ollama
    runs (`/api/ps`) is kept in the data dir, so every later `ask` budgets against 2,048 and
    Ollama never cuts again (each `ask` started at 4,096 and was cut again)."""
    server.configure_model("small:1b", context_length=2048)
    server.set_models(["small:1b", "nomic-embed-text"])
    server.fail_next("status", status=500, message="boom", path="/api/show", count=None)
    env = {**env, "STRAYLIGHT_MODEL": "small:1b"}
    turns = converse_after_a_long_first(env, server, turns=10)
    assert all(turn.returncode == 0 for turn in turns), [t.stderr for t in turns]
    outcomes = server.chat_outcomes()
    assert outcomes[0].dropped_messages > 0 or outcomes[0].runner_truncated  # it happened
    assert "Ollama cut the prompt" in turns[0].stderr
    assert "the model runs with a 2,048-token window" in turns[0].stderr
    assert "set num_ctx to 2,048" in turns[0].stderr
    sent = [r["options"]["num_ctx"] for r in server.chat_requests()]
    assert sent == [4096] + [2048] * 9
    assert all(o.dropped_messages == 0 and not o.runner_truncated for o in outcomes[1:])
    assert not any("Ollama cut the prompt" in turn.stderr for turn in turns[1:])
    assert any(turn.history_cut for turn in turns[1:])  # Straylight cut, and said so
    context = printed_json(run_cli(env, "status", "--json"))["context"]
    assert context["window"] == 2048, context


def test_a_server_that_answers_400_names_it_keeps_the_message_and_the_window(
    env: Env, server: OllamaStandIn
) -> None:
    """The same unknown small window, on a model that answers HTTP 400 instead of cutting:
    the first turn fails with the line naming the window, its message stays in the log, and
    the window from the 400 is kept for the next `ask` processes."""
    server.context_mode = "error"
    server.configure_model("small:1b", context_length=2048)
    server.set_models(["small:1b", "nomic-embed-text"])
    server.fail_next("status", status=500, message="boom", path="/api/show", count=None)
    env = {**env, "STRAYLIGHT_MODEL": "small:1b"}
    turns = converse_after_a_long_first(env, server, turns=8)
    refused = [turn for turn in turns if turn.returncode != 0]
    assert [turn.number for turn in refused] == [0], [t.stderr for t in turns]
    assert [o.dropped_messages for o in server.chat_outcomes()] == [0] * len(server.chat_outcomes())
    lines = [line for line in refused[0].stderr.splitlines() if line.strip()]
    assert refused[0].returncode == 5
    assert len(lines) == 1 and "window" in lines[0] and "num_ctx" in lines[0], lines
    assert {r["options"]["num_ctx"] for r in server.chat_requests()[1:]} == {2048}
    logged = printed_json(run_cli(env, "history", "--json"), quiet=True)
    users = [m for m in logged if m["role"] == "user"]
    assert len(users) == 8  # every message is in the log, answered or not
    failed = [m for m in logged if m["role"] == "assistant" and m["status"] == "failed"]
    assert len(failed) == 1 and "window" in failed[0]["reason"]


async def run_turns(
    engine: object, texts: list[str], conversation: str, server: OllamaStandIn
) -> list[str]:
    """Each turn's outcome: refused (a 400), named (Ollama cut it), cut (Straylight cut and
    reported it) or ok."""
    from agent.turn_events import ContextBudgeted, ContextNotice, ReplyFailed

    outcomes = []
    for number, text in enumerate(texts):
        server.script_reply(f"Answer {number}: {PARAGRAPH * 2}")
        events = [
            event
            async for event in engine.run(  # type: ignore[attr-defined]
                text, conversation_id=conversation, model="small:1b"
            )
        ]
        budget = next(e for e in events if isinstance(e, ContextBudgeted))
        if any(isinstance(e, ReplyFailed) for e in events):
            outcomes.append("refused")
        elif any(isinstance(e, ContextNotice) for e in events):
            outcomes.append("named")
        else:
            outcomes.append("cut" if budget.cut.get("history") else "ok")
    return outcomes


@pytest.mark.parametrize("mode", ["truncate", "error"])
async def test_in_one_session_the_window_ollama_reveals_is_used_from_the_next_turn(
    make_settings: Callable[..., Settings], server: OllamaStandIn, mode: str
) -> None:
    """The TUI's engine lives on: the window Ollama really runs (`/api/ps` after a reply, or
    the 400's numbers) is budgeted against from the next turn, so Straylight cuts and says
    so, and Ollama never has to."""
    from agent.ollama_gateway import OllamaGateway
    from agent.turn import TurnEngine

    server.context_mode = mode  # type: ignore[assignment]
    server.configure_model("small:1b", context_length=2048)
    server.set_models(["small:1b"])
    server.fail_next("status", status=500, message="boom", path="/api/show", count=None)
    settings = make_settings(ollama_host=server.host, memory_enabled=False)
    gateway = OllamaGateway.from_config(settings.ollama)
    engine = TurnEngine(settings, gateway)
    try:
        # a first message too long for the real window, then a conversation of normal ones
        texts = [f"Turn 0: {PARAGRAPH * 60}"] + [f"Turn {n}: {PARAGRAPH * 2}" for n in range(1, 14)]
        outcomes = await run_turns(engine, texts, f"session-{mode}", server)
        await engine.drain()
    finally:
        await gateway.aclose()
    assert outcomes[0] == ("refused" if mode == "error" else "named"), outcomes
    assert "cut" in outcomes and set(outcomes[1:]) <= {"ok", "cut"}, outcomes
    later = server.chat_outcomes()[1:]
    assert later and all(o.dropped_messages == 0 and not o.runner_truncated for o in later)


def test_a_prompt_ollama_cut_anyway_is_critical_in_status(env: Env, server: OllamaStandIn) -> None:
    """/api/show fails, so the budget fits the prompt into the 4,096 fallback; the model holds
    2,048 and Ollama cuts it. The turn named the cut, but `status` still called the last
    prompt `ok` (or `warn`), as if it had fitted; it is `critical` now, as a refused one is."""
    server.configure_model("small:1b", context_length=2048)
    server.set_models(["small:1b", "nomic-embed-text"])
    server.fail_next("status", status=500, message="boom", path="/api/show", count=None)
    env = {**env, "STRAYLIGHT_MODEL": "small:1b"}
    (turn,) = converse(env, server, turns=1, size=70)
    assert turn.returncode == 0 and "Ollama cut the prompt" in turn.stderr, turn
    assert server.chat_outcomes()[-1].runner_truncated  # the scenario happened
    context = printed_json(run_cli(env, "status", "--json"))["context"]
    assert (context["window"], context["headroom"]) == (4096, "critical"), context


def converse_then_finer(env: Env, server: OllamaStandIn, turns: int, finer_from: int) -> list[Turn]:
    """`converse` on `dense:1b`, whose text tokenizes three times finer than estimated from
    turn `finer_from` on (the stand-in's `token_scale`: pasted code or hex, or another model
    pulled under the same name), after the calibration has learnt the plain text."""
    done = []
    for number in range(turns):
        scale = 3.0 if number >= finer_from else 1.0
        server.configure_model("dense:1b", context_length=4096, token_scale=scale)
        server.script_reply(f"Answer {number}: {PARAGRAPH * 4}")
        proc = run_cli(env, "ask", "-c", "the-long-one", f"Turn {number}: {PARAGRAPH * 4}")
        done.append(Turn(number, proc.returncode, proc.stderr))
    return done


def test_a_prompt_that_counts_far_more_tokens_than_estimated_is_never_cut_silently(
    env: Env, server: OllamaStandIn
) -> None:
    """From turn 5 the model counts three times what the calibrated estimate says: the
    budget still sends the whole conversation, which no longer fits the 4,096 window, and
    Ollama drops its oldest messages (before, without a word: the count was far above the
    estimate, and the calibration rejected it as implausible). The turn names the possible
    cut, and from the next turn Straylight counts higher and leaves out old messages itself."""
    server.set_models(["dense:1b", "nomic-embed-text"])
    env = {**env, "STRAYLIGHT_MODEL": "dense:1b"}
    turns = converse_then_finer(env, server, turns=11, finer_from=5)
    assert all(turn.returncode == 0 for turn in turns), [t.stderr for t in turns]
    outcomes = server.chat_outcomes()
    cut_by_ollama = [n for n, o in enumerate(outcomes) if o.dropped_messages or o.runner_truncated]
    assert cut_by_ollama and cut_by_ollama[0] == 5, cut_by_ollama
    warned = [turn.number for turn in turns if "Ollama may have cut the prompt" in turn.stderr]
    assert warned == cut_by_ollama  # every cut named, and nothing else
    # each named cut raises the estimate to at least what Ollama read; it soon fits again
    assert cut_by_ollama[-1] < 9 and all(turn.history_cut for turn in turns[9:])


@pytest.mark.parametrize("counts", [True, False], ids=["llama-server's 400", "Ollama's 400"])
def test_a_400_that_counts_the_prompt_is_fitted_again_in_the_same_turn(
    env: Env, server: OllamaStandIn, counts: bool
) -> None:
    """The same change on a server that refuses an over-long prompt with HTTP 400 and its
    token count (llama-server's JSON), or with Ollama's own `the input length exceeds the
    context length` (no count: the prompt was longer than the window, at least): the turn
    learns it, leaves out old messages and sends it again, so no turn fails (before, every
    turn from the refusal on failed with exit 5: the estimate never learnt, and each failed
    message made the history longer)."""
    server.context_mode = "error"
    server.configure_model("dense:1b", counts_refusal=counts)
    server.set_models(["dense:1b", "nomic-embed-text"])
    env = {**env, "STRAYLIGHT_MODEL": "dense:1b"}
    turns = converse_then_finer(env, server, turns=9, finer_from=5)
    assert all(turn.returncode == 0 for turn in turns), [t.stderr for t in turns]
    refused = [n for n, o in enumerate(server.chat_outcomes()) if o.error]
    told = [turn.number for turn in turns if "Ollama refused the prompt" in turn.stderr]
    assert "sent it again" in turns[5].stderr and turns[5].history_cut, turns[5]
    if counts:  # the size learnt at once: one refusal, resent once
        assert refused == [5] and told == [5], (refused, told)
    else:  # each refusal teaches only "longer than the window": a few tries, each named
        assert told[0] == 5 and len(refused) <= 3 * len(told), (refused, told)
    logged = printed_json(run_cli(env, "history", "--json"), quiet=True)
    assert len(logged) == 18 and {m["status"] for m in logged} == {"complete"}


def test_a_server_that_does_not_apply_num_ctx_is_found_out_by_ps_and_named(
    env: Env, server: OllamaStandIn
) -> None:
    """/api/show tells the model's maximum (131,072), so Straylight sends 16,384, but the
    server runs its 4,096 default whatever num_ctx says and drops the oldest messages. A
    count far short of the estimate makes Straylight ask /api/ps: the turn names the cut and
    the window the model runs with, and the next turns of the process budget against it
    (before, every cut was silent and each cut count pulled the estimate down)."""
    server.configure_model("deaf:3b", applies_num_ctx=False)
    server.set_models(["deaf:3b", "nomic-embed-text"])
    env = {**env, "STRAYLIGHT_MODEL": "deaf:3b"}
    turns = converse(env, server, turns=6, size=20)
    assert all(turn.returncode == 0 for turn in turns), [t.stderr for t in turns]
    outcomes = server.chat_outcomes()
    cut = [n for n, o in enumerate(outcomes) if o.dropped_messages or o.runner_truncated]
    assert cut, "the scenario did not happen: Ollama never cut"
    for number in cut:
        assert "the model runs with a 4,096-token window" in turns[number].stderr, turns[number]
        assert "Ollama did not apply it" in turns[number].stderr
    # Each `ask` is a process of its own: the window learnt is kept, and the next ones fit
    # the turn to it themselves (every later `ask` was cut by Ollama again, unnamed counts).
    assert len(cut) == 1, cut
    later = turns[cut[0] + 1 :]
    assert later and all(turn.history_cut for turn in later[1:]), [t.stderr for t in later]
    sent = [r.get("options", {}).get("num_ctx") for r in server.chat_requests()]
    assert sent[-len(later) :] == [4096] * len(later), sent


def test_a_server_that_does_not_apply_num_ctx_and_refuses_is_fitted_to_its_window(
    env: Env, server: OllamaStandIn
) -> None:
    """The server runs its 4,096 default whatever num_ctx says (8,192 here, the model's
    maximum known) and answers an over-long prompt with a 400 naming its window: every turn
    from the first refusal on failed with exit 5. The window it names is learnt and the
    turn is fitted to it and sent again."""
    server.context_mode = "error"
    server.configure_model("deaf:3b", applies_num_ctx=False)
    server.set_models(["deaf:3b", "nomic-embed-text"])
    env = {**env, "STRAYLIGHT_MODEL": "deaf:3b", "STRAYLIGHT_NUM_CTX": "8192"}
    turns = converse(env, server, turns=8, size=12)
    assert all(turn.returncode == 0 for turn in turns), [t.stderr for t in turns]
    refused = [turn.number for turn in turns if "Ollama refused the prompt" in turn.stderr]
    assert refused, "the scenario did not happen: the server never refused"
    assert all(turns[n].history_cut for n in refused)
