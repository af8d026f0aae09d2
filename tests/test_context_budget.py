"""The context budget: what fits a window, what gives way first, and what the user is told."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from typing import Any

import ollama
import pytest

from agent.context_budget import (
    BudgetedPrompt,
    HistoryMessage,
    PromptParts,
    budget_prompt,
    format_tokens,
)
from agent.context_window import detect_truncation, reply_reserve
from agent.prompt import PERSONA
from agent.token_estimate import PromptEstimate, TokenEstimator
from tests.support.ollama_standin import OllamaStandIn

MODEL = "llama3.2"
PARAGRAPH = (
    "We planned the garden again: tomatoes along the south wall, beans on the trellis, "
    "and the herbs close to the kitchen door so they are easy to reach when cooking.\n"
)
RULE = "- [rule] Always answer in English, even when asked in German."


def long_history(messages: int, text: str = PARAGRAPH * 3) -> tuple[HistoryMessage, ...]:
    return tuple(
        HistoryMessage("user" if i % 2 == 0 else "assistant", f"Message {i}: {text}")
        for i in range(messages)
    )


def full_parts(history: int = 20, user: str = "What did we plan for the herbs?") -> PromptParts:
    """The issue's full budget: longterm.md near 8 KiB, 20 facts, 10 hits, ``history`` messages."""
    longterm = "\n\n".join(f"## Note {i}\n{PARAGRAPH * 3}" for i in range(16))
    return PromptParts(
        system=PERSONA,
        user=user,
        rules=(RULE,),
        longterm=longterm,
        facts=tuple(
            f"- [fact] garden.bed{i} = raised bed number {i} holds peppers" for i in range(20)
        ),
        recall=tuple(
            f"[#{i} · user · 2026-05-0{i % 9 + 1} · 0.8{i}]\n> {PARAGRAPH}" for i in range(10)
        ),
        recall_head="Memories from earlier conversations, most relevant first.",
        history=long_history(history),
    )


def test_a_4096_window_keeps_the_newest_messages_and_says_how_many_were_cut() -> None:
    parts = PromptParts(system=PERSONA, user="And the herbs?", history=long_history(40))
    result = budget_prompt(parts, window=4096, reply_reserve=512)

    kept = result.kept.history
    assert 0 < len(kept) < 40
    assert kept == parts.history[-len(kept) :]  # the newest, contiguous
    assert result.cut == {"history": 40 - len(kept)}
    assert result.notes == (f"history: {40 - len(kept)} oldest messages left out",)
    assert result.total <= 4096 - 512
    assert result.fits
    assert result.headroom == "warn"  # old history cut is the budget working, not an alarm


def test_persona_rules_and_the_new_message_are_never_cut() -> None:
    parts = full_parts(history=30)
    result = budget_prompt(parts, window=2048, reply_reserve=512)

    assert result.kept.system == PERSONA
    assert result.kept.rules == (RULE,)
    assert result.kept.user == parts.user
    assert result.fits
    assert result.headroom == "critical"  # memory had to give way
    assert set(result.cut) >= {"recall", "facts", "history"}
    assert result.total <= 2048 - 512


def test_the_issues_priorities_history_goes_first_and_longterm_md_last() -> None:
    """Issue 13: persona, rules and the new message are never cut; then longterm.md, known
    facts, recalled context, history (newest kept first). The budget kept the last four
    messages before everything else, and gave a section room only when the ones above it
    were kept whole: a long recent message dropped all of longterm.md with room to spare."""
    parts = full_parts(history=20)
    fits_all = budget_prompt(parts, window=32768, reply_reserve=2048)
    assert fits_all.cut == {} and fits_all.headroom == "ok"
    reached_longterm = False
    for window in range(fits_all.total + 2048, 600, -64):
        result = budget_prompt(parts, window=window, reply_reserve=256)
        cut = result.cut
        kept = result.kept
        assert kept.history == parts.history[len(parts.history) - len(kept.history) :]
        if cut.get("recall"):  # what ranks below recall went first
            assert cut.get("history") == 20, (window, cut)
        if cut.get("facts"):
            assert cut.get("history") == 20 and cut.get("recall") == 10, (window, cut)
        if cut.get("longterm"):
            reached_longterm = True
            # (a fact shorter than longterm.md's next line may take the room that line left)
            assert (cut.get("history"), cut.get("recall")) == (20, 10), (window, cut)
            assert kept.longterm and parts.longterm.startswith(kept.longterm.split("\n")[0])
    assert reached_longterm  # the loop got down to longterm.md


def test_a_long_recent_message_leaves_longterm_md_in_the_prompt() -> None:
    """The review's case: a 3 KB longterm.md and a conversation of long messages in a 4,096
    window; longterm.md went whole while old messages stayed."""
    parts = PromptParts(
        system=PERSONA,
        user="And the herbs?",
        longterm="\n\n".join(f"Note {i}: {PARAGRAPH}" for i in range(12)),
        history=long_history(8, PARAGRAPH * 40),
    )
    result = budget_prompt(parts, window=4096, reply_reserve=512, margin=0.15)
    assert result.kept.longterm == parts.longterm.strip()
    assert "longterm" not in result.cut and result.cut.get("history")


def test_longterm_is_cut_by_whole_paragraphs_from_the_end() -> None:
    parts = full_parts(history=0)
    window = budget_prompt(parts, window=32768, reply_reserve=0).total - 800
    result = budget_prompt(parts, window=window, reply_reserve=0)

    assert result.cut.get("longterm", 0) > 0
    assert parts.longterm.startswith(result.kept.longterm)  # a prefix: the end went first
    paragraphs = parts.longterm.split("\n\n")
    note = result.notes[-1]
    assert note.startswith("long-term memory: last ") and f"of {len(paragraphs)}" in note


def test_a_paragraph_kept_in_part_is_named_as_cut_short_not_left_out() -> None:
    """A longterm.md without blank lines (a bullet list) is one paragraph: when part of it
    fits, that part is sent, and the note said "last 1 of 1 paragraph left out"."""
    lines = [f"- note {n}: the staging deploy runs on Fridays" for n in range(400)]
    parts = replace(full_parts(history=0), longterm="\n".join(lines))
    window = budget_prompt(parts, window=32768, reply_reserve=0).total - 1000
    result = budget_prompt(parts, window=window, reply_reserve=0)

    kept = result.kept.longterm.splitlines()
    assert 0 < len(kept) < len(lines) and result.cut["longterm"] == 1
    note = f"long-term memory: cut short, {len(kept):,} of {len(lines):,} lines kept"
    assert result.notes[-1] == note

    two = replace(parts, longterm="Paragraph one is short.\n\n" + "\n".join(lines))
    result = budget_prompt(two, window=window, reply_reserve=0)
    kept_lines = len(result.kept.longterm.split("\n\n")[-1].splitlines())
    assert result.notes[-1] == (
        "long-term memory: cut short in paragraph 2 of 2, "
        f"{kept_lines:,} of {len(lines):,} lines kept"
    )


def test_tool_definitions_are_counted_and_never_cut() -> None:
    tools = '[{"type": "function", "function": {"name": "memory_read", "parameters": {}}}]' * 20
    bare = budget_prompt(full_parts(history=0), window=32768, reply_reserve=0)
    with_tools = budget_prompt(
        replace(full_parts(history=0), tools=tools), window=32768, reply_reserve=0
    )
    assert with_tools.tokens["tools"] > 200
    assert abs(with_tools.total - bare.total - with_tools.tokens["tools"]) <= 1
    tight = budget_prompt(
        replace(full_parts(history=0), tools=tools), window=bare.total, reply_reserve=0
    )
    assert tight.kept.tools == tools and tight.cut  # memory gave way to the tools


def test_a_message_too_long_for_the_window_is_refused_with_the_fix() -> None:
    parts = PromptParts(system=PERSONA, user=PARAGRAPH * 200, rules=(RULE,))
    result = budget_prompt(parts, window=4096, reply_reserve=512)

    assert not result.fits
    assert result.headroom == "critical"
    assert result.kept.user == parts.user  # never cut, not sent either
    assert "raise num_ctx" in result.refusal() and "4,096-token window" in result.refusal()
    # A window already at the model's maximum is not raised (num_ctx is capped there): the
    # line said "raise num_ctx", which changed nothing.
    at_most = result.refusal(model_max=4096)
    assert "num_ctx" not in at_most
    assert at_most.endswith(
        "Shorten it or use a model with a larger window (this one holds 4,096)."
    )
    assert "raise num_ctx" in result.refusal(model_max=131_072)


def test_a_window_too_small_for_the_persona_alone_asks_for_num_ctx() -> None:
    """`num_ctx = 512` with the tools: "hi" is not what is too long; the line says so."""
    tools = '[{"type": "function", "function": {"name": "memory_read"}}]' * 12
    parts = PromptParts(system=PERSONA, user="hi", rules=(RULE,), tools=tools)
    result = budget_prompt(parts, window=512, reply_reserve=256)

    assert not result.fits
    line = result.refusal()
    assert "Shorten" not in line and "1 tokens" not in line
    assert "the persona, rules and tool definitions alone" in line
    assert "Raise num_ctx (or set memory_tools = false: the tools take about" in line
    assert line.endswith(").") and "512-token window" in line


def test_a_conversation_system_prompt_too_long_for_the_window_is_named() -> None:
    """`/system` with a long text: the line blamed "the persona, rules and tool definitions"
    and asked only for num_ctx, while the text the user can shorten was their own."""
    parts = PromptParts(system=PARAGRAPH * 200, user="hi", rules=(RULE,))
    result = budget_prompt(parts, window=4096, reply_reserve=512)

    assert not result.fits
    line = result.refusal(own_system=True)
    assert line.startswith("Not sent: this conversation's system prompt alone takes about ")
    assert line.endswith("Shorten or clear it, or raise num_ctx.") and "persona" not in line
    assert "the persona, rules and tool definitions alone" in result.refusal()


def test_headroom_thresholds() -> None:
    small = PromptParts(system=PERSONA + "\n\n" + PARAGRAPH * 100, user="hi")
    assert budget_prompt(small, window=16384, reply_reserve=1024).headroom == "ok"
    total = budget_prompt(small, window=16384, reply_reserve=0).total
    assert total > 2500
    assert budget_prompt(small, window=int(total / 0.85), reply_reserve=0).headroom == "warn"
    assert budget_prompt(small, window=int(total / 0.97), reply_reserve=0).headroom == "critical"


def test_the_summary_reads_like_the_sidebar() -> None:
    assert format_tokens(3100) == "3.1k"
    assert format_tokens(8192) == "8k"
    assert format_tokens(950) == "950"
    result = budget_prompt(full_parts(history=4), window=8192, reply_reserve=1024)
    assert result.summary().startswith("context ") and result.summary().endswith(" / 8k")


def test_blocks_render_like_the_turns_sections() -> None:
    kept = full_parts(history=2)
    assert kept.known_facts_block().splitlines()[0] == RULE
    assert kept.recall_block().startswith(kept.recall_head + "\n\n[#0")
    assert PromptParts(system="x", user="y").recall_block() == ""
    system, *history, user = kept.chat_messages()
    assert system["role"] == "system" and system["content"].startswith(PERSONA)
    assert "\n\n## Long-term memory\n\n## Note 0" in system["content"]
    assert "\n\n## Known facts\n\n" + RULE in system["content"]
    assert system["content"].index("## Known facts") < system["content"].index("## Recalled")
    assert [m["role"] for m in history] == ["user", "assistant"]
    assert user == {"role": "user", "content": kept.user}


# ------------------------------------------------------- against the stand-in, real client


def to_messages(result: BudgetedPrompt) -> list[dict[str, Any]]:
    """What the turn will send: `agent.prompt`'s system prompt, history, the new message."""
    return list(result.kept.chat_messages())


@pytest.fixture
def srv() -> Iterator[OllamaStandIn]:
    with OllamaStandIn(models=(MODEL,), port=0, context_mode="truncate") as server:
        yield server


@pytest.mark.asyncio
async def test_a_long_conversation_in_4096_tokens_is_never_cut_by_ollama(
    srv: OllamaStandIn, client: ollama.AsyncClient
) -> None:
    estimator = TokenEstimator()
    window = 4096
    reserve = reply_reserve(window)
    history: list[HistoryMessage] = []
    reported: list[tuple[str, ...]] = []
    for turn in range(24):
        user = f"Turn {turn}: {PARAGRAPH * (1 + turn % 3)}"
        parts = PromptParts(
            system=PERSONA,
            user=user,
            rules=(RULE,),
            longterm="\n\n".join([PARAGRAPH * 2] * 4),
            facts=tuple(f"- [fact] bed{i} = peppers" for i in range(20)),
            history=tuple(history),
        )
        result = budget_prompt(
            parts,
            window=window,
            reply_reserve=reserve,
            factor=estimator.factor(MODEL),
            margin=estimator.margin(MODEL),
        )
        assert result.fits
        messages = to_messages(result)
        response = await client.chat(MODEL, messages, options={"num_ctx": window})
        outcome = srv.chat_outcomes()[-1]
        assert outcome.window == window
        assert outcome.dropped_messages == 0 and not outcome.runner_truncated, turn
        assert detect_truncation(result.total, response.prompt_eval_count, window) is None
        estimator.observe(MODEL, PromptEstimate.of_messages(messages), response.prompt_eval_count)
        reported.append(result.notes)
        history += [HistoryMessage("user", user), HistoryMessage("assistant", PARAGRAPH * 2)]

    assert any(note.startswith("history: ") for note in reported[-1])  # cuts were named
    assert estimator.models[MODEL].observations >= 20


@pytest.mark.asyncio
async def test_without_the_budget_the_same_conversation_loses_messages_silently(
    srv: OllamaStandIn, client: ollama.AsyncClient
) -> None:
    """The control: the stand-in really truncates what the budget kept it from truncating,
    and the calibrated estimate sees the cut in ``prompt_eval_count``."""
    estimator = TokenEstimator()
    for size in (6, 8, 10):
        parts = PromptParts(system=PERSONA, user="And now?", history=long_history(size))
        sent = to_messages(budget_prompt(parts, window=32768, reply_reserve=0))
        reply = await client.chat(MODEL, sent, options={"num_ctx": 32768})
        estimator.observe(MODEL, PromptEstimate.of_messages(sent), reply.prompt_eval_count)
    parts = PromptParts(system=PERSONA, user="And now?", history=long_history(40))
    unbudgeted = budget_prompt(
        parts, window=1_000_000, reply_reserve=0, factor=estimator.factor(MODEL)
    )
    response = await client.chat(MODEL, to_messages(unbudgeted), options={"num_ctx": 4096})
    assert response.done
    assert srv.chat_outcomes()[-1].dropped_messages > 0
    overflow = detect_truncation(unbudgeted.total, response.prompt_eval_count, 4096, 131_072)
    assert overflow is not None and "raise num_ctx" in overflow.message


def test_the_refusals_numbers_add_up_to_what_it_says_is_left() -> None:
    """ "… 763 of the model's 1,024-token window, leaving under 256 for the reply" was seen:
    1,024 − 763 is 261. The count named must be the one `fits` judged (the chat template's
    tokens included), so the window minus it is under 256 whenever a message is refused."""
    import re

    from agent.context_budget import MIN_REPLY_TOKENS

    refused = 0
    for words in range(600, 900, 3):
        parts = PromptParts(system=PERSONA, user="word " * words, rules=(RULE,))
        result = budget_prompt(parts, window=1024, reply_reserve=512)
        if result.fits:
            continue
        refused += 1
        line = result.refusal()
        match = re.search(r"persona and rules, ([\d,]+) of the model's ([\d,]+)-token", line)
        assert match is not None, line
        needed, window = (int(group.replace(",", "")) for group in match.groups())
        assert window - needed < MIN_REPLY_TOKENS, line
    assert refused
