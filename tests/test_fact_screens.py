"""The Facts, Candidates and Hypotheses screens, driven by the pilot on the real app with a real
DuckDB: every key is checked against what the store holds afterwards; plus an 80×24 run of
each screen and one SVG snapshot per screen (frozen clock, deterministic data)."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from typing import Any

from textual.pilot import Pilot

from agent.settings import Settings
from memory.fact_drawer import FactDrawer
from memory.fact_types import FactProposal
from memory.hypotheses import SOURCE, START_CONFIDENCE
from store.hypothesis_store import Hypothesis, HypothesisStore
from tests.conftest import FIXED_NOW
from tests.support.pilot_helpers import type_text, wait_until
from tui.app import StraylightApp
from tui.screens.candidates_screen import CandidatesScreen
from tui.screens.confirm_screen import ConfirmScreen
from tui.screens.fact_rows import RecordScreen
from tui.screens.facts_screen import FactsScreen
from tui.screens.hypotheses_screen import HypothesesScreen

SIZE = (110, 32)
SMALL = (80, 24)
OFFLINE_HOST = "127.0.0.1:9"  # the discard port: nothing listens, and no screen here shows it
WS = "demo"


# ---- helpers ------------------------------------------------------------------------------


def frozen(make_settings: Callable[..., Settings]) -> Settings:
    """Settings with the clock frozen at FIXED_NOW and no background jobs."""
    from store.clock import parse_instant

    settings = make_settings(ollama_host=OFFLINE_HOST, jobs_enabled=False)
    return settings.model_copy(update={"now": parse_instant(FIXED_NOW)})


def offline_app(settings: Settings) -> StraylightApp:
    return StraylightApp(settings, poll_offline_seconds=3600)


def drawer_of(app: StraylightApp) -> FactDrawer:
    assert app.engine.facts is not None
    return app.engine.facts


async def opened(pilot: Pilot[int], app: StraylightApp) -> FactDrawer:
    await wait_until(pilot, lambda: app.engine.facts is not None, what="memory open")
    return drawer_of(app)


async def show(pilot: Pilot[int], app: StraylightApp, screen: RecordScreen[Any]) -> None:
    """Push the screen and wait for its first read."""
    app.push_screen(screen)
    await wait_until(pilot, lambda: screen.loaded, what="the screen's records")
    await pilot.pause()


async def reloaded(pilot: Pilot[int], screen: RecordScreen[Any], count: int) -> None:
    await wait_until(pilot, lambda: len(screen.records) == count, what=f"{count} rows")


def status_line(screen: RecordScreen[Any]) -> str:
    from textual.widgets import Static

    return str(screen.query_one("#screen-status", Static).render())


def detail_text(screen: RecordScreen[Any]) -> str:
    from textual.widgets import Static

    return str(screen.query_one("#detail-text", Static).render())


async def answer(pilot: Pilot[int], app: StraylightApp, key: str) -> None:
    await wait_until(pilot, lambda: isinstance(app.screen, ConfirmScreen), what="the question")
    await pilot.press(key)


async def clear_and_type(pilot: Pilot[int], text: str) -> None:
    await pilot.press("ctrl+u")
    await type_text(pilot, text)


def seed_facts(drawer: FactDrawer) -> None:
    drawer.set("prod:db", "rule", "Never touch the PROD database.", proof="incident 2026-03")
    drawer.set("deploy:blyck", "capability", "npm run dist, then aws s3 cp to the bucket.")
    drawer.set("editor", "decision", "Use any editor you like.", scope="global")
    FactDrawer(drawer.db, "other", drawer.config).set("db:other", "fact", "Other runs MySQL.")


def propose(drawer: FactDrawer, key: str, body: str, kind: str = "capability") -> int:
    outcome = drawer.propose(
        FactProposal(type=kind, key=key, body=body, proof=f"said: {body}"),  # type: ignore[arg-type]
        origin="tool",
    )
    assert outcome.candidate is not None, outcome.reason
    return outcome.candidate.id


def make_card(drawer: FactDrawer, statement: str, due_in_days: float) -> Hypothesis:
    return HypothesisStore(drawer.db).create(
        statement=statement,
        source_ids=("fact:1", "point:7"),
        prediction="save p95 grows above 5 ms at 200k points",
        measurement="run bench.memory_scale at 200k points and compare p95",
        due_at=drawer.db.clock.now() + timedelta(days=due_in_days),
        workspace=WS,
        confidence=START_CONFIDENCE,
        source=SOURCE,
    )


def card(drawer: FactDrawer, card_id: int) -> Hypothesis:
    found = HypothesisStore(drawer.db).get(card_id)
    assert found is not None
    return found


# ---- facts --------------------------------------------------------------------------------


async def test_facts_edit_writes_the_users_version_with_history(settings: Settings) -> None:
    app = StraylightApp(settings)
    async with app.run_test(size=SIZE) as pilot:
        drawer = await opened(pilot, app)
        seed_facts(drawer)
        screen = FactsScreen(drawer)
        await show(pilot, app, screen)
        assert [f.key for f in screen.records] == ["deploy:blyck", "editor", "prod:db"]
        await pilot.press("down", "down")  # prod:db
        await pilot.press("e")
        await clear_and_type(pilot, "Never write to the prod database, read replicas are fine.")
        await pilot.press("ctrl+t")  # rule → procedure
        await pilot.press("enter")
        fact = lambda: drawer.store.find("workspace", WS, "prod:db")  # noqa: E731
        await wait_until(pilot, lambda: fact().body.startswith("Never write"), what="the edit")
        edited = fact()
        assert edited is not None
        assert (edited.type, edited.source, edited.proof) == (
            "procedure",
            "user",
            "incident 2026-03",
        )
        versions = drawer.history("prod:db")
        assert len(versions) == 2 and versions[-1].reason == "edited by the user"
        await wait_until(pilot, lambda: "Saved" in status_line(screen), what="the status line")
        await wait_until(pilot, lambda: "2 versions" in detail_text(screen), what="the history")


async def test_escape_cancels_an_edit_and_then_closes_the_screen(settings: Settings) -> None:
    app = StraylightApp(settings)
    async with app.run_test(size=SIZE) as pilot:
        drawer = await opened(pilot, app)
        seed_facts(drawer)
        screen = FactsScreen(drawer)
        await show(pilot, app, screen)
        await pilot.press("e")
        await type_text(pilot, " trevs")  # t, r, e, v, s type text: no filter, retire, revive
        await pilot.press("escape")
        await pilot.pause()
        assert app.screen is screen and screen.editing is None
        assert screen.filters.type == "all" and screen.filters.status == "active"
        assert drawer.store.find("workspace", WS, "deploy:blyck").body == (  # type: ignore[union-attr]
            "npm run dist, then aws s3 cp to the bucket."
        )
        assert len(drawer.history("deploy:blyck")) == 1
        await pilot.press("escape")
        await wait_until(pilot, lambda: app.screen is not screen, what="the screen to close")


async def test_facts_retire_after_yes_and_kept_after_no(settings: Settings) -> None:
    app = StraylightApp(settings)
    async with app.run_test(size=SIZE) as pilot:
        drawer = await opened(pilot, app)
        seed_facts(drawer)
        screen = FactsScreen(drawer)
        await show(pilot, app, screen)
        await pilot.press("r")
        await answer(pilot, app, "n")
        await wait_until(pilot, lambda: "Kept" in status_line(screen), what="kept")
        assert drawer.store.find("workspace", WS, "deploy:blyck").status == "active"  # type: ignore[union-attr]
        await pilot.press("r")
        await answer(pilot, app, "y")
        await reloaded(pilot, screen, 2)  # the active filter hides it now
        assert drawer.store.find("workspace", WS, "deploy:blyck").status == "retired"  # type: ignore[union-attr]
        assert "Retired capability deploy:blyck" in status_line(screen)


async def test_facts_revive_makes_a_retired_fact_active(settings: Settings) -> None:
    app = StraylightApp(settings)
    async with app.run_test(size=SIZE) as pilot:
        drawer = await opened(pilot, app)
        seed_facts(drawer)
        drawer.retire("prod:db")
        screen = FactsScreen(drawer)
        await show(pilot, app, screen)
        await pilot.press("s", "s")  # active → stale → retired
        await wait_until(pilot, lambda: [f.key for f in screen.records] == ["prod:db"])
        await pilot.press("v")
        await reloaded(pilot, screen, 0)
        assert drawer.store.find("workspace", WS, "prod:db").status == "active"  # type: ignore[union-attr]
        assert drawer.history("prod:db")[-1].reason == "revived by the user"
        assert "Revived rule prod:db" in status_line(screen)


async def test_filters_narrow_the_table(settings: Settings) -> None:
    app = StraylightApp(settings)
    async with app.run_test(size=SIZE) as pilot:
        drawer = await opened(pilot, app)
        seed_facts(drawer)
        screen = FactsScreen(drawer)
        await show(pilot, app, screen)

        def keys() -> list[str]:
            return [f.key for f in screen.records]

        await pilot.press("t")  # all → capability
        await wait_until(pilot, lambda: keys() == ["deploy:blyck"], what="capabilities")
        await pilot.press("t", "t", "t", "t", "t")  # → decision → rule → procedure → fact → all
        await wait_until(pilot, lambda: len(keys()) == 3, what="every type")
        await pilot.press("w")  # global only
        await wait_until(pilot, lambda: keys() == ["editor"], what="global only")
        await pilot.press("w")  # every workspace
        await wait_until(pilot, lambda: "db:other" in keys(), what="every workspace")
        assert len(keys()) == 4
        await pilot.press("s", "s", "s")  # active → stale → retired → all
        await wait_until(pilot, lambda: screen.filters.status == "all" and len(keys()) == 4)


async def test_facts_screen_at_80_by_24(settings: Settings) -> None:
    app = StraylightApp(settings)
    async with app.run_test(size=SMALL) as pilot:
        drawer = await opened(pilot, app)
        seed_facts(drawer)
        screen = FactsScreen(drawer)
        await show(pilot, app, screen)
        assert len(screen.records) == 3
        await pilot.press("ctrl+end")
        await wait_until(pilot, lambda: "Never touch the PROD" in detail_text(screen))
        await pilot.press("r")
        await answer(pilot, app, "y")
        await reloaded(pilot, screen, 2)
        assert drawer.store.find("workspace", WS, "prod:db").status == "retired"  # type: ignore[union-attr]


# ---- candidates ---------------------------------------------------------------------------


async def test_candidates_approve_with_one_key(settings: Settings) -> None:
    app = StraylightApp(settings)
    async with app.run_test(size=SIZE) as pilot:
        drawer = await opened(pilot, app)
        first = propose(drawer, "build:npm", "npm run dist builds blyck.")
        propose(drawer, "test:pytest", "just test runs the suite.")
        screen = CandidatesScreen(drawer)
        await show(pilot, app, screen)
        assert screen.records[0].id == first
        await pilot.press("a")
        await reloaded(pilot, screen, 1)
        assert [(f.key, f.body) for f in drawer.list_facts()] == [
            ("build:npm", "npm run dist builds blyck.")
        ]
        assert first not in [c.id for c in drawer.pending()]
        assert drawer.store.candidate(first).status == "approved"  # type: ignore[union-attr]
        assert f"Approved #{first}" in status_line(screen)


async def test_a_candidate_over_a_set_key_shows_the_body_it_replaces(settings: Settings) -> None:
    app = StraylightApp(settings)
    async with app.run_test(size=SIZE) as pilot:
        drawer = await opened(pilot, app)
        drawer.set("build:npm", "procedure", "npm ci, then npm run dist with NODE_ENV=prod.")
        propose(drawer, "build:npm", "npm run dist builds blyck.")
        screen = CandidatesScreen(drawer)
        await show(pilot, app, screen)
        shown = detail_text(screen)
        assert "replaces: npm ci, then npm run dist with NODE_ENV=prod." in shown, shown


async def test_candidates_edit_then_enter_approves_the_edited_body(settings: Settings) -> None:
    app = StraylightApp(settings)
    async with app.run_test(size=SIZE) as pilot:
        drawer = await opened(pilot, app)
        cid = propose(drawer, "build:npm", "npm run dist builds blyck.")
        screen = CandidatesScreen(drawer)
        await show(pilot, app, screen)
        await pilot.press("e")
        await clear_and_type(pilot, "npm run dist builds the app; are tests extra?")
        await pilot.press("enter")
        await reloaded(pilot, screen, 0)
        assert [f.body for f in drawer.list_facts()] == [
            "npm run dist builds the app; are tests extra?"
        ]
        assert drawer.store.candidate(cid).status == "approved"  # type: ignore[union-attr]
        assert "(edited)" in status_line(screen)


async def test_a_refused_edit_keeps_the_typed_text_in_the_box(settings: Settings) -> None:
    """Too long a body is refused with one line; what was typed stays to be fixed."""
    from textual.widgets import Input

    app = StraylightApp(settings)
    async with app.run_test(size=SIZE) as pilot:
        drawer = await opened(pilot, app)
        cid = propose(drawer, "build:npm", "npm run dist builds blyck.")
        screen = CandidatesScreen(drawer)
        await show(pilot, app, screen)
        await pilot.press("e")
        editor = screen.query_one("#editor-input", Input)
        editor.value = "x" * 3000
        await pilot.press("enter")
        await wait_until(pilot, lambda: "at most" in status_line(screen), what="the refusal")
        assert screen.editing is not None and editor.value == "x" * 3000
        assert drawer.store.candidate(cid).status == "pending"  # type: ignore[union-attr]


async def test_candidates_reject_leaves_no_fact(settings: Settings) -> None:
    app = StraylightApp(settings)
    async with app.run_test(size=SIZE) as pilot:
        drawer = await opened(pilot, app)
        cid = propose(drawer, "build:npm", "npm run dist builds blyck.")
        screen = CandidatesScreen(drawer)
        await show(pilot, app, screen)
        await pilot.press("r")
        await reloaded(pilot, screen, 0)
        assert drawer.list_facts() == [] and drawer.pending() == []
        assert drawer.store.candidate(cid).status == "rejected"  # type: ignore[union-attr]
        assert "No candidates wait for approval" in detail_text(screen)


async def test_candidates_screen_at_80_by_24(settings: Settings) -> None:
    app = StraylightApp(settings)
    async with app.run_test(size=SMALL) as pilot:
        drawer = await opened(pilot, app)
        propose(drawer, "build:npm", "npm run dist builds blyck.")
        cid = propose(drawer, "prod:db", "Never touch the PROD database.", kind="rule")
        screen = CandidatesScreen(drawer)
        await show(pilot, app, screen)
        await pilot.press("down")
        await wait_until(pilot, lambda: "PROD" in detail_text(screen), what="the detail")
        await pilot.press("e", "escape")
        assert app.screen is screen and screen.editing is None
        await pilot.press("r")
        await reloaded(pilot, screen, 1)
        assert drawer.store.candidate(cid).status == "rejected"  # type: ignore[union-attr]


async def test_an_mcp_clients_origin_is_shown_whole_or_marked_cut_at_80_by_24(
    settings: Settings,
) -> None:
    """`mcp:claude-code` cut to `mcp:claude` named another client, with no sign of the cut."""
    app = StraylightApp(settings)
    async with app.run_test(size=SMALL) as pilot:
        drawer = await opened(pilot, app)
        for key, origin in (("build:npm", "mcp:claude-code"), ("ci:x", "mcp:cursor-vscode-v2")):
            outcome = drawer.propose(
                FactProposal(type="capability", key=key, body="npm run dist."),
                origin=origin,
            )
            assert outcome.candidate is not None, outcome.reason
        screen = CandidatesScreen(drawer)
        await show(pilot, app, screen)
        table = screen.table
        column = list(table.columns.values())[3]
        shown = [str(table.get_row_at(row)[3]) for row in range(table.row_count)]
        assert all(len(cell) <= column.width for cell in shown), (shown, column.width)
        assert shown[0] == "mcp:claude-code"
        assert shown[1].endswith("…") and "mcp:cursor-vscode-v2".startswith(shown[1][:-1])


# ---- hypotheses ---------------------------------------------------------------------------


async def test_overdue_cards_come_first(make_settings: Callable[..., Settings]) -> None:
    app = offline_app(frozen(make_settings))
    async with app.run_test(size=SIZE) as pilot:
        drawer = await opened(pilot, app)
        later = make_card(drawer, "Recall gets worse past 100k points.", 10)
        soon = make_card(drawer, "Longer keys match fewer messages.", 3)
        done = make_card(drawer, "Pinned points are recalled more often.", -30)
        HypothesisStore(drawer.db).set_status(done.id, "validated")
        overdue = make_card(drawer, "Saves slow down when the word index is large.", -2)
        screen = HypothesesScreen(drawer)
        await show(pilot, app, screen)
        assert [c.id for c in screen.records] == [overdue.id, soon.id, later.id, done.id]
        assert "overdue" in detail_text(screen)


async def test_validate_proposes_a_fact_candidate(settings: Settings) -> None:
    app = StraylightApp(settings)
    async with app.run_test(size=SIZE) as pilot:
        drawer = await opened(pilot, app)
        made = make_card(drawer, "Saves slow down when the word index is large.", 14)
        screen = HypothesesScreen(drawer)
        await show(pilot, app, screen)
        await pilot.press("v")
        await wait_until(pilot, lambda: card(drawer, made.id).status == "validated")
        await wait_until(pilot, lambda: "Validated" in status_line(screen), what="the message")
        assert [c.origin for c in drawer.pending()] == ["hypothesis"]
        assert "fact candidate" in status_line(screen)


async def test_refute_sets_the_card_refuted(settings: Settings) -> None:
    app = StraylightApp(settings)
    async with app.run_test(size=SIZE) as pilot:
        drawer = await opened(pilot, app)
        made = make_card(drawer, "Saves slow down when the word index is large.", 14)
        screen = HypothesesScreen(drawer)
        await show(pilot, app, screen)
        await pilot.press("x")
        await wait_until(pilot, lambda: card(drawer, made.id).status == "refuted")
        assert card(drawer, made.id).confidence == 0.0
        await wait_until(pilot, lambda: screen.records[0].status == "refuted", what="the row")


async def test_delete_after_yes_and_kept_after_no(settings: Settings) -> None:
    app = StraylightApp(settings)
    async with app.run_test(size=SIZE) as pilot:
        drawer = await opened(pilot, app)
        made = make_card(drawer, "Saves slow down when the word index is large.", 14)
        screen = HypothesesScreen(drawer)
        await show(pilot, app, screen)
        await pilot.press("d")
        await answer(pilot, app, "n")
        await wait_until(pilot, lambda: "Kept" in status_line(screen), what="kept")
        assert card(drawer, made.id).status == "open"
        await pilot.press("d")
        await answer(pilot, app, "y")
        await reloaded(pilot, screen, 0)
        assert card(drawer, made.id).status == "deleted"
        assert "No hypothesis cards" in detail_text(screen)


async def test_hypotheses_screen_at_80_by_24(settings: Settings) -> None:
    app = StraylightApp(settings)
    async with app.run_test(size=SMALL) as pilot:
        drawer = await opened(pilot, app)
        made = make_card(drawer, "Saves slow down when the word index is large.", -1)
        screen = HypothesesScreen(drawer)
        await show(pilot, app, screen)
        await wait_until(pilot, lambda: "measure" in detail_text(screen), what="the detail")
        await pilot.press("v")
        await wait_until(pilot, lambda: card(drawer, made.id).status == "validated")
        await wait_until(pilot, lambda: screen.records[0].status == "validated", what="the row")


# ---- snapshots ----------------------------------------------------------------------------


def seed_snapshot_cards(drawer: FactDrawer) -> None:
    index = drawer.set("index:words", "fact", "The word index is rebuilt on every save.")
    saves = drawer.set("save:p95", "fact", "A save takes 2 ms at p95 with 50k points.")
    store = HypothesisStore(drawer.db)
    now = drawer.db.clock.now()
    for statement, days in (
        ("Recall gets worse past 100k points unless the score floor is raised.", 10),
        ("Saves slow down when the word index is large.", -2),
    ):
        store.create(
            statement=statement,
            source_ids=(f"fact:{index.id}", f"fact:{saves.id}"),
            prediction="save p95 grows above 5 ms at 200k points",
            measurement="run bench.memory_scale at 200k points and compare p95",
            due_at=now + timedelta(days=days),
            workspace=WS,
            confidence=START_CONFIDENCE,
            source=SOURCE,
        )
    refuted = store.create(
        statement="Pinned points are recalled more often than others.",
        source_ids=("point:3", "point:9"),
        prediction="pinned hits make up over half of the recalled context",
        measurement="count pinned hits in the sidebar over 50 turns",
        due_at=now - timedelta(days=20),
        workspace=WS,
        confidence=START_CONFIDENCE,
        source=SOURCE,
    )
    store.set_status(refuted.id, "refuted", 0.0)


def snapshot_run(
    app: StraylightApp,
    make_screen: Callable[[FactDrawer], RecordScreen[Any]],
    seed: Callable[[FactDrawer], None],
    ready: Callable[[RecordScreen[Any]], bool],
) -> Callable[[Pilot[int]], object]:
    async def run_before(pilot: Pilot[int]) -> None:
        drawer = await opened(pilot, app)
        seed(drawer)
        screen = make_screen(drawer)
        await show(pilot, app, screen)
        await wait_until(pilot, lambda: ready(screen), what="the detail pane")
        await pilot.pause()

    return run_before


def test_snapshot_facts_screen(
    snap_compare: Callable[..., bool], make_settings: Callable[..., Settings]
) -> None:
    app = offline_app(frozen(make_settings))
    run_before = snapshot_run(
        app, FactsScreen, seed_facts, lambda s: "history: 1 version" in detail_text(s)
    )
    assert snap_compare(app, terminal_size=SIZE, run_before=run_before)


def test_snapshot_candidates_screen(
    snap_compare: Callable[..., bool], make_settings: Callable[..., Settings]
) -> None:
    def seed(drawer: FactDrawer) -> None:
        propose(drawer, "build:npm", "npm run dist builds blyck into dist/.")
        propose(drawer, "prod:db", "Never touch the PROD database without a ticket.", "rule")
        propose(drawer, "deploy:blyck", "aws s3 cp dist/ s3://blyck-site --recursive", "procedure")

    app = offline_app(frozen(make_settings))
    run_before = snapshot_run(app, CandidatesScreen, seed, lambda s: "proof" in detail_text(s))
    assert snap_compare(app, terminal_size=SIZE, run_before=run_before)


def test_snapshot_hypotheses_screen(
    snap_compare: Callable[..., bool], make_settings: Callable[..., Settings]
) -> None:
    app = offline_app(frozen(make_settings))
    run_before = snapshot_run(
        app,
        HypothesesScreen,
        seed_snapshot_cards,
        lambda s: "index:words" in detail_text(s),
    )
    assert snap_compare(app, terminal_size=SIZE, run_before=run_before)


async def test_validating_an_overdue_card_clears_its_sidebar_alert(settings: Settings) -> None:
    """The overdue alert (issue 5: cards past due, neither validated nor deleted) goes when
    the card is validated: it stayed until the hourly job ran, beside '0 overdue'."""
    from tui.widgets.status_sidebar import StatusSidebar

    app = StraylightApp(settings)
    async with app.run_test(size=SIZE) as pilot:
        drawer = await opened(pilot, app)
        made = make_card(drawer, "Saves slow down when the word index is large.", -2)
        app.run_job_now("overdue-hypotheses")
        bar = app.query_one(StatusSidebar)
        await wait_until(pilot, lambda: bool(bar.state and bar.state.alerts), what="the alert")
        screen = HypothesesScreen(drawer)
        await show(pilot, app, screen)
        await pilot.press("v")
        await wait_until(pilot, lambda: card(drawer, made.id).status == "validated")
        await pilot.press("escape")
        await wait_until(pilot, lambda: bar.state.hypotheses == (0, 0), what="the counts")
        await wait_until(pilot, lambda: bar.state.alerts == (), what="no alert")


async def test_setting_a_missing_required_fact_clears_the_bindings_alert(
    settings: Settings,
) -> None:
    """A procedure's broken binding is an alert until the daily job runs again; once the
    missing fact is written in the chat, the alert goes at once (it stayed up to a day)."""
    from tui.widgets.status_sidebar import StatusSidebar

    app = StraylightApp(settings)
    async with app.run_test(size=SIZE) as pilot:
        drawer = await opened(pilot, app)
        drawer.set("deploy:steps", "procedure", "Build, then copy.", requires=["build:cmd"])
        app.run_job_now("bindings")
        bar = app.query_one(StatusSidebar)
        await wait_until(pilot, lambda: bool(bar.state and bar.state.alerts), what="the alert")
        assert "build:cmd" in bar.state.alerts[0]
        await type_text(pilot, "/fact set build:cmd fact npm run dist builds it")
        await pilot.press("enter")
        await wait_until(pilot, lambda: drawer.get("build:cmd") is not None, what="the fact")
        await wait_until(pilot, lambda: bar.state.alerts == (), what="no alert")
