"""Layer 4 in the TUI, driven by the pilot against the HTTP stand-in: the inline approval of a
model's memory_write (approve, edit, reject), /fact set, /candidates approve, the "can't"
reminder under the reply, and the workspace in the sidebar."""

from __future__ import annotations

import pytest

from agent.settings import Settings
from memory.fact_drawer import FactDrawer
from memory.fact_types import FactError
from memory.hypotheses import DUE_AFTER, SOURCE, START_CONFIDENCE
from store.database import database_path, open_database
from tests.support.ollama_standin import OllamaStandIn
from tests.support.pilot_helpers import notices, type_text, wait_until
from tui.app import StraylightApp
from tui.fact_commands import parse_fact_set
from tui.widgets.candidate_prompt import CandidatePrompt
from tui.widgets.chat_message import ChatMessage
from tui.widgets.status_sidebar import StatusSidebar

SIZE = (110, 32)
WRITE = {
    "name": "memory_write",
    "arguments": {"key": "build:npm", "body": "npm run dist builds blyck.", "type": "capability"},
}


def facts(app: StraylightApp) -> FactDrawer:
    assert app.engine.facts is not None
    return app.engine.facts


def last_reply_done(app: StraylightApp) -> bool:
    replies = [m for m in app.query(ChatMessage) if m.role == "assistant"]
    return bool(replies) and replies[-1].status == "complete"


async def opened(pilot, app: StraylightApp) -> None:
    await wait_until(pilot, lambda: app.engine.facts is not None, what="memory open")


async def send(pilot, text: str) -> None:
    await type_text(pilot, text)
    await pilot.press("enter")


async def test_approving_a_memory_write_inline_stores_the_fact_and_the_turn_goes_on(
    settings: Settings, standin: OllamaStandIn
) -> None:
    standin.script_reply("", tool_calls=[WRITE])
    standin.script_reply("Saved it.")
    app = StraylightApp(settings)
    async with app.run_test(size=SIZE) as pilot:
        await opened(pilot, app)
        await send(pilot, "remember how we build")
        await wait_until(pilot, lambda: len(app.query(CandidatePrompt)) == 1, what="prompt")
        assert facts(app).list_facts() == []  # nothing before the user says so
        await pilot.press("a")
        # the fact's write and embedding, then a second model call: slow on a loaded machine
        await wait_until(pilot, lambda: last_reply_done(app), timeout=20, what="the turn to finish")
        assert [(f.key, f.body) for f in facts(app).list_facts()] == [
            ("build:npm", "npm run dist builds blyck.")
        ]
        assert "Saved it." in [m.text for m in app.query(ChatMessage)]


async def test_a_memory_write_over_a_set_key_shows_what_it_replaces(
    settings: Settings, standin: OllamaStandIn
) -> None:
    """Inline and in /candidates list: approving overwrites the fact of that key."""
    standin.script_reply("", tool_calls=[WRITE])
    standin.script_reply("Noted.")
    app = StraylightApp(settings)
    async with app.run_test(size=SIZE) as pilot:
        await opened(pilot, app)
        facts(app).set("build:npm", "procedure", "npm ci, then npm run dist with NODE_ENV=prod.")
        await send(pilot, "remember how we build")
        await wait_until(pilot, lambda: len(app.query(CandidatePrompt)) == 1, what="prompt")
        shown = str(app.query_one(CandidatePrompt).query_one(".candidate-body").render())
        assert "replaces: npm ci, then npm run dist with NODE_ENV=prod." in shown, shown
        await pilot.press("l")
        await wait_until(pilot, lambda: last_reply_done(app), timeout=20, what="the turn")
        await send(pilot, "/candidates list")
        await wait_until(pilot, lambda: "Candidates" in notices(app)[-1], what="the list")
        assert "    replaces: npm ci, then npm run dist with NODE_ENV=prod." in notices(app)[-1]


async def test_editing_then_approving_stores_the_edited_body(
    settings: Settings, standin: OllamaStandIn
) -> None:
    standin.script_reply("", tool_calls=[WRITE])
    standin.script_reply("Saved.")
    app = StraylightApp(settings)
    async with app.run_test(size=SIZE) as pilot:
        await opened(pilot, app)
        await send(pilot, "remember how we build")
        await wait_until(pilot, lambda: len(app.query(CandidatePrompt)) == 1, what="prompt")
        await pilot.press("e")
        for _ in range(len("blyck.")):
            await pilot.press("backspace")
        await type_text(pilot, "the app.")
        await pilot.press("enter")
        await wait_until(pilot, lambda: last_reply_done(app), what="the turn to finish")
        assert [f.body for f in facts(app).list_facts()] == ["npm run dist builds the app."]
        # The card shows what was approved (it kept the model's words under "approved").
        shown = str(app.query_one(CandidatePrompt).query_one(".candidate-body").render())
        assert "npm run dist builds the app. (edited)" in shown and "blyck" not in shown


async def test_esc_in_the_cards_editor_leaves_the_edit_not_the_reply(
    settings: Settings, standin: OllamaStandIn
) -> None:
    """Esc while editing the inline card fell through to the chat: the whole reply was
    cancelled and the card left for later. It now leaves the edit only, as on F4."""
    standin.script_reply("", tool_calls=[WRITE])
    standin.script_reply("Saved.")
    app = StraylightApp(settings)
    async with app.run_test(size=SIZE) as pilot:
        await opened(pilot, app)
        await send(pilot, "remember how we build")
        await wait_until(pilot, lambda: len(app.query(CandidatePrompt)) == 1, what="prompt")
        card = app.query_one(CandidatePrompt)
        await pilot.press("e")
        await type_text(pilot, " (draft)")
        await pilot.press("escape")
        await pilot.pause()
        assert not card.result.done() and app.replying
        await pilot.press("a")
        await wait_until(pilot, lambda: last_reply_done(app), what="the turn to finish")
        assert [f.body for f in facts(app).list_facts()] == ["npm run dist builds blyck."]
        assert "Saved." in [m.text for m in app.query(ChatMessage)]


async def test_rejecting_inline_leaves_no_fact(settings: Settings, standin: OllamaStandIn) -> None:
    standin.script_reply("", tool_calls=[WRITE])
    standin.script_reply("Fine, forgotten.")
    app = StraylightApp(settings)
    async with app.run_test(size=SIZE) as pilot:
        await opened(pilot, app)
        await send(pilot, "remember how we build")
        await wait_until(pilot, lambda: len(app.query(CandidatePrompt)) == 1, what="prompt")
        await pilot.press("r")
        await wait_until(pilot, lambda: last_reply_done(app), what="the turn to finish")
        assert facts(app).list_facts() == [] and facts(app).pending() == []
        assert facts(app).store.candidates(status="rejected")[0].key == "build:npm"


async def test_fact_set_and_candidates_approve_by_slash_command(
    settings: Settings, standin: OllamaStandIn
) -> None:
    app = StraylightApp(settings)
    async with app.run_test(size=SIZE) as pilot:
        await opened(pilot, app)
        await send(pilot, "/fact set prod:db rule Don't touch the PROD database --proof incident")
        await wait_until(pilot, lambda: any("Fact set" in n for n in notices(app)), what="set")
        [rule] = facts(app).list_facts()
        assert (rule.key, rule.type, rule.body, rule.proof) == (
            "prod:db",
            "rule",
            "Don't touch the PROD database",
            "incident",
        )
        standin.script_reply("Congrats on the deploy.")
        await send(pilot, "I just deployed blyck to S3 with aws s3 cp and it worked.")
        await wait_until(pilot, lambda: bool(facts(app).pending()), what="a candidate")
        candidate = facts(app).pending()[0]
        await wait_until(pilot, lambda: last_reply_done(app), what="the reply")
        await send(pilot, f"/candidates approve {candidate.id}")
        await wait_until(pilot, lambda: facts(app).pending() == [], what="approval")
        assert candidate.key in {f.key for f in facts(app).list_facts()}
        state = app.query_one(StatusSidebar).state
        assert state is not None and state.workspace == "demo"


async def test_a_second_retire_says_already_retired_and_undo_brings_the_fact_back(
    settings: Settings, standin: OllamaStandIn
) -> None:
    """`/fact retire` twice named the fact unknown ("No fact"), as for a typo; and `/fact
    undo` after a retire by mistake deleted a fact written once."""
    app = StraylightApp(settings)
    async with app.run_test(size=SIZE) as pilot:
        await opened(pilot, app)
        await send(pilot, "/fact set deploy:box fact build-1 is the box")
        await wait_until(pilot, lambda: any("Fact set" in n for n in notices(app)), what="set")
        await send(pilot, "/fact retire deploy:box")
        await wait_until(pilot, lambda: any("Retired:" in n for n in notices(app)), what="retire")
        await send(pilot, "/fact retire Deploy:Box")
        already = "Fact 'Deploy:Box' is already retired."
        await wait_until(pilot, lambda: already in notices(app), what="already retired")
        await send(pilot, "/fact retire nothing:here")
        await wait_until(pilot, lambda: "No fact 'nothing:here'." in notices(app), what="no fact")
        await send(pilot, "/fact undo deploy:box")
        await wait_until(pilot, lambda: any("Restored:" in n for n in notices(app)), what="undo")
        [fact] = facts(app).list_facts()
        assert (fact.status, fact.body) == ("active", "build-1 is the box")


async def test_a_cant_claim_shows_the_capability_under_the_reply(
    settings: Settings, standin: OllamaStandIn
) -> None:
    app = StraylightApp(settings)
    async with app.run_test(size=SIZE) as pilot:
        await opened(pilot, app)
        facts(app).set("deploy:blyck", "capability", "This PC deploys blyck with aws s3 cp.")
        standin.script_reply("Sorry, I can't deploy blyck: I don't have access to the bucket.")
        await send(pilot, "deploy blyck")
        await wait_until(pilot, lambda: any("Known fact" in n for n in notices(app)), what="hint")
        assert any("deploy:blyck" in n for n in notices(app))


async def test_quitting_after_a_turn_runs_the_reflection_pass_first(
    settings: Settings, standin: OllamaStandIn
) -> None:
    reflection = (
        '{"facts": [{"type": "decision", "key": "db:blyck", "body": "blyck uses Postgres 16.",'
        ' "scope": "workspace", "proof": "blyck uses Postgres 16 from now on"}]}'
    )
    standin.script_reply("Noted.")
    standin.script_reply(reflection)
    app = StraylightApp(settings)
    async with app.run_test(size=SIZE) as pilot:
        await opened(pilot, app)
        await send(pilot, "We decided: blyck uses Postgres 16 from now on.")
        await wait_until(pilot, lambda: last_reply_done(app), what="the reply")
        await pilot.press("ctrl+q")
        await wait_until(pilot, lambda: not app.is_running, what="the app to exit")
    with open_database(database_path(settings.home), clock=settings.clock) as db:
        [candidate] = FactDrawer(db, "demo").pending()
    assert (candidate.key, candidate.origin) == ("db:blyck", "reflection")
    assert standin.chat_requests()[-1].get("format")  # the structured reflection call


async def test_hypotheses_by_slash_command_and_the_palette_entries(
    settings: Settings, standin: OllamaStandIn
) -> None:
    from store.hypothesis_store import HypothesisStore

    app = StraylightApp(settings)
    async with app.run_test(size=SIZE) as pilot:
        await opened(pilot, app)
        card = HypothesisStore(facts(app).db).create(
            statement="Saves slow down when the word index is large.",
            source_ids=("fact:1", "point:2"),
            prediction="save p95 grows above 5 ms at 200k points",
            measurement="run bench.memory_scale at 200k points and compare p95",
            workspace="demo",
            confidence=START_CONFIDENCE,
            source=SOURCE,
            due_at=facts(app).db.clock.now() + DUE_AFTER,
        )
        app.chat.refresh_fact_status()
        await wait_until(
            pilot,
            lambda: app.query_one(StatusSidebar).state.hypotheses == (1, 0),  # type: ignore[union-attr]
            what="the sidebar's card count",
        )
        await send(pilot, "/hypotheses list")
        await wait_until(
            pilot, lambda: any(f"#{card.id} [open" in n for n in notices(app)), what="list"
        )
        await send(pilot, f"/hypotheses validate {card.id}")
        await wait_until(
            pilot, lambda: any("Validated" in n for n in notices(app)), what="validate"
        )
        assert HypothesisStore(facts(app).db).get(card.id).status == "validated"  # type: ignore[union-attr]
        assert [c.origin for c in facts(app).pending()] == ["hypothesis"]
        await wait_until(
            pilot,
            lambda: app.query_one(StatusSidebar).state.hypotheses == (0, 0),  # type: ignore[union-attr]
            what="the validated card leaves the open count",
        )
        titles = {c.title for c in app.get_system_commands(app.screen)}
        assert {"Facts", "Fact candidates", "Hypotheses", "Dream now", "Memory status"} <= titles


# ---- the sidebar at once (issue 16) -----------------------------------------------------


def facts_line(app: StraylightApp) -> str:
    state = app.query_one(StatusSidebar).state
    return state.facts_line if state else ""


async def test_the_sidebar_counts_an_inline_approval_before_the_turn_ends(
    settings: Settings, standin: OllamaStandIn
) -> None:
    """It said "0 active · 1 pending" until the next turn."""
    standin.script_reply("", tool_calls=[WRITE])
    standin.script_reply("Saved it.")
    app = StraylightApp(settings)
    async with app.run_test(size=SIZE) as pilot:
        await opened(pilot, app)
        await send(pilot, "remember how we build")
        await wait_until(pilot, lambda: len(app.query(CandidatePrompt)) == 1, what="prompt")
        await wait_until(pilot, lambda: facts_line(app).endswith("1 pending"), what="pending")
        standin.fail_next("delay", path="/api/chat", seconds=4.0)  # the turn's second request
        await pilot.press("a")
        await wait_until(
            pilot, lambda: facts_line(app) == "1 active, 0 stale · 0 pending", what="approved"
        )
        assert not last_reply_done(app)  # counted while the reply is still on its way
        await wait_until(pilot, lambda: last_reply_done(app), timeout=15, what="the turn")


async def test_the_sidebar_counts_a_change_made_on_a_memory_screen(
    settings: Settings, standin: OllamaStandIn
) -> None:
    from tui.screens.facts_screen import FactsScreen

    app = StraylightApp(settings)
    async with app.run_test(size=SIZE) as pilot:
        await opened(pilot, app)
        await wait_until(pilot, lambda: facts_line(app).startswith("0 active"), what="counts")
        await pilot.press("f3")
        await wait_until(pilot, lambda: isinstance(app.screen, FactsScreen), what="facts screen")
        await pilot.pause()
        await app.workers.wait_for_complete()
        facts(app).set("db:port", "fact", "The staging database listens on 5433.")
        await pilot.press("escape")
        await wait_until(pilot, lambda: facts_line(app).startswith("1 active"), what="counted")


async def test_a_refused_fact_command_reads_as_a_sentence_like_the_others(
    settings: Settings, standin: OllamaStandIn
) -> None:
    """The chat's notices start with a capital (`No hypothesis #5.`); the drawer's errors
    (`no candidate #9`) were shown as they are raised."""
    app = StraylightApp(settings)
    async with app.run_test(size=SIZE) as pilot:
        await opened(pilot, app)
        await send(pilot, "/candidates approve 9")
        await wait_until(pilot, lambda: bool(notices(app)), what="the refusal")
        assert notices(app)[-1] == "No candidate #9."


@pytest.mark.parametrize(
    ("line", "refused"),
    [
        ("prod:db rule Never touch it --proof", "--proof needs a TEXT"),
        ("prod:db rule Never touch it --proof   ", "--proof needs a TEXT"),
        ("prod:db rule Never touch it --scope", "--scope needs workspace or global"),
    ],
)
def test_a_flag_with_nothing_after_it_is_refused_not_kept_in_the_body(
    line: str, refused: str
) -> None:
    """`/fact set … --proof` with no text stored "--proof" as the body's last word."""
    with pytest.raises(FactError, match=refused):
        parse_fact_set(line)
    assert parse_fact_set("k rule Check the --proofreading rules") == (
        "k",
        "rule",
        "Check the --proofreading rules",
        "workspace",
        "",
    )
