"""Seed 003, concept 1: confidence decay per 30 unverified days, boosts for used memories."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from memory.confidence import (
    ConfidenceReport,
    boost_used,
    confidence_of_points,
    decay_confidence,
    periods_without_verification,
    used_in_reply,
)
from memory.fact_drawer import FactDrawer
from store.clock import Clock
from store.database import Database, open_database
from store.fact_records import Fact, FactWrite
from store.fact_store import FactStore
from store.point_store import NewPoint, PointStore

BASE = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)

OpenAt = Callable[[float], AbstractContextManager[Database]]


def day(n: float) -> datetime:
    return BASE + timedelta(days=n)


@pytest.fixture
def open_at(tmp_path: Path) -> OpenAt:
    """Open the same database file with the clock frozen `n` days after BASE."""
    path = tmp_path / "home" / "straylight.duckdb"

    @contextmanager
    def opened(n: float) -> Iterator[Database]:
        with open_database(path, clock=Clock(day(n))) as db:
            yield db

    return opened


def write_fact(
    db: Database,
    key: str,
    *,
    type: str = "fact",
    confidence: float = 1.0,
    verified: bool = True,
    status: str = "active",
    workspace: str = "demo",
) -> Fact:
    new = FactWrite(
        type=type,
        scope="workspace",
        workspace=workspace,
        key=key,
        body=f"the body of {key}",
        confidence=confidence,
        proof="",
        status=status,
        source="user",
        last_verified=db.clock.now() if verified else None,
    )
    return FactStore(db).write(new, reason="test")


def fact(db: Database, key: str, workspace: str = "demo") -> Fact:
    found = FactStore(db).find("workspace", workspace, key)
    assert found is not None
    return found


def decay_periods(db: Database, fact_id: int) -> int:
    with db.cursor() as cur:
        return int(
            cur.execute("SELECT decay_periods FROM facts WHERE id = ?", [fact_id]).fetchall()[0][0]
        )


def decay_reasons(db: Database, key: str) -> list[str]:
    return [
        v.reason or ""
        for v in FactStore(db).history(key)
        if v.event == "fact_confidence" and (v.reason or "").startswith("decay:")
    ]


# ---- periods --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("elapsed", "periods"),
    [
        (timedelta(0), 0),
        (timedelta(days=-40), 0),
        (timedelta(days=29), 0),
        (timedelta(days=30) - timedelta(microseconds=1), 0),
        (timedelta(days=30), 1),
        (timedelta(days=59), 1),
        (timedelta(days=60), 2),
        (timedelta(days=365), 12),
    ],
)
def test_only_full_periods_count(elapsed: timedelta, periods: int) -> None:
    assert periods_without_verification(BASE, BASE + elapsed) == periods


# ---- fact decay -----------------------------------------------------------------------------


@pytest.mark.parametrize(("days", "expected"), [(29, 1.0), (30, 0.95), (59, 0.95), (60, 0.90)])
def test_boundaries_in_one_run(open_at: OpenAt, days: int, expected: float) -> None:
    with open_at(0) as db:
        write_fact(db, "deploy:blyck")
    with open_at(days) as db:
        decay_confidence(db, db.clock.now())
        assert fact(db, "deploy:blyck").confidence == expected


def test_boundaries_run_after_run(open_at: OpenAt) -> None:
    with open_at(0) as db:
        write_fact(db, "deploy:blyck")
    seen = []
    for n in (29, 30, 59, 60, 60):
        with open_at(n) as db:
            decay_confidence(db, db.clock.now())
            seen.append(fact(db, "deploy:blyck").confidence)
    assert seen == [1.0, 0.95, 0.95, 0.90, 0.90]
    with open_at(60) as db:
        assert decay_reasons(db, "deploy:blyck") == [
            "decay: 1×30 days unverified",
            "decay: 2×30 days unverified",
        ]
        assert decay_periods(db, fact(db, "deploy:blyck").id) == 2


def test_decay_is_idempotent_on_one_day(open_at: OpenAt) -> None:
    with open_at(0) as db:
        write_fact(db, "deploy:blyck")
        write_fact(db, "db:port", confidence=0.6, verified=False)
        PointStore(db).add(NewPoint(role="user", content="pinned memory", source="t", pinned=True))
    with open_at(95) as db:
        first = decay_confidence(db, db.clock.now())
        assert sorted(first.facts) == ["db:port", "deploy:blyck"]
        assert first.points == [1]
        assert first.charged == 9
        facts_before = FactStore(db).visible("demo")
        points_before = confidence_of_points(db, [1])
        audit_before = len(FactStore(db).history("deploy:blyck"))
        again = decay_confidence(db, db.clock.now())
        assert again == ConfidenceReport()
        assert again.summary() == "nothing lower"
        assert FactStore(db).visible("demo") == facts_before
        assert confidence_of_points(db, [1]) == points_before == {1: 0.85}
        assert len(FactStore(db).history("deploy:blyck")) == audit_before


def test_confidence_floors_at_zero(open_at: OpenAt) -> None:
    with open_at(0) as db:
        write_fact(db, "old:thing", confidence=0.1)
    with open_at(300) as db:  # ten periods: 0.1 − 0.5
        report = decay_confidence(db, db.clock.now())
        assert fact(db, "old:thing").confidence == 0.0
        assert report.facts == ["old:thing"]
    with open_at(400) as db:  # charged at the floor: no lower, but counted
        report = decay_confidence(db, db.clock.now())
        assert fact(db, "old:thing").confidence == 0.0
        assert report.facts == [] and report.charged == 3
        assert decay_periods(db, fact(db, "old:thing").id) == 13


def test_an_unverified_fact_counts_from_its_creation(open_at: OpenAt) -> None:
    with open_at(0) as db:
        write_fact(db, "guess:port", confidence=0.7, verified=False)
    with open_at(31) as db:
        decay_confidence(db, db.clock.now())
        assert fact(db, "guess:port").confidence == 0.65


def test_a_reverification_restarts_the_count(open_at: OpenAt) -> None:
    with open_at(0) as db:
        FactDrawer(db, "demo").set("deploy:blyck", "procedure", "just deploy-prod from ops-1")
    with open_at(65) as db:
        decay_confidence(db, db.clock.now())
        assert fact(db, "deploy:blyck").confidence == 0.9
    with open_at(70) as db:  # verified again: an explicit set is confidence 1.0, verified now
        FactDrawer(db, "demo").set("deploy:blyck", "procedure", "just deploy-prod from ops-1")
    with open_at(95) as db:  # 25 days since: nothing to charge (the old count is void)
        assert decay_confidence(db, db.clock.now()).facts == []
        assert fact(db, "deploy:blyck").confidence == 1.0
        assert decay_periods(db, fact(db, "deploy:blyck").id) == 0
    with open_at(100) as db:  # 30 days since the verification
        decay_confidence(db, db.clock.now())
        assert fact(db, "deploy:blyck").confidence == 0.95
        assert decay_reasons(db, "deploy:blyck")[-1] == "decay: 1×30 days unverified"


def test_a_reverification_without_a_run_in_between_still_restarts(open_at: OpenAt) -> None:
    """Charged 1 period, verified again, and the next run only 40 days later: 1 new period
    is charged (the stale count of 1 must not swallow it)."""
    with open_at(0) as db:
        write_fact(db, "deploy:blyck")
    with open_at(31) as db:
        decay_confidence(db, db.clock.now())
    with open_at(32) as db:
        write_fact(db, "deploy:blyck", confidence=0.8)  # verified, at a lower confidence
    with open_at(72) as db:
        decay_confidence(db, db.clock.now())
        assert fact(db, "deploy:blyck").confidence == 0.75


def test_an_unverified_rewrite_does_not_restart(open_at: OpenAt) -> None:
    with open_at(0) as db:
        write_fact(db, "guess:port", confidence=0.7, verified=False)
    with open_at(31) as db:
        decay_confidence(db, db.clock.now())
        assert fact(db, "guess:port").confidence == 0.65
    with open_at(40) as db:
        write_fact(db, "guess:port", confidence=0.7, verified=False)
    with open_at(50) as db:  # still one period since creation, and it was charged
        assert decay_confidence(db, db.clock.now()).charged == 0
        assert fact(db, "guess:port").confidence == 0.7


def test_capabilities_and_rules_decay_in_confidence_but_keep_their_status(
    open_at: OpenAt,
) -> None:
    with open_at(0) as db:
        write_fact(db, "can:ssh-ops", type="capability")
        write_fact(db, "rule:no-force-push", type="rule")
        write_fact(db, "other:space", type="rule", workspace="elsewhere")
    with open_at(200) as db:
        report = decay_confidence(db, db.clock.now())
        assert sorted(report.facts) == ["can:ssh-ops", "other:space", "rule:no-force-push"]
        for key, workspace in (
            ("can:ssh-ops", "demo"),
            ("rule:no-force-push", "demo"),
            ("other:space", "elsewhere"),
        ):
            found = fact(db, key, workspace)
            assert found.confidence == 0.7
            assert found.status == "active"


def test_retired_facts_are_left_alone(open_at: OpenAt) -> None:
    with open_at(0) as db:
        write_fact(db, "gone:thing", status="retired")
    with open_at(100) as db:
        assert decay_confidence(db, db.clock.now()) == ConfidenceReport()
        assert fact(db, "gone:thing").confidence == 1.0


# ---- pinned points --------------------------------------------------------------------------


def test_pinned_points_decay_from_creation_and_restart_on_a_pin(open_at: OpenAt) -> None:
    with open_at(0) as db:
        points = PointStore(db)
        pinned = points.add(NewPoint(role="user", content="keep this", source="t", pinned=True))
        loose = points.add(NewPoint(role="user", content="not pinned", source="t"))
        assert confidence_of_points(db, [pinned, loose, 999]) == {pinned: 1.0}
        with db.cursor() as cur:
            assert cur.execute("SELECT count(*) FROM point_confidence").fetchall() == [(0,)]
    with open_at(61) as db:
        report = decay_confidence(db, db.clock.now())
        assert report.points == [pinned] and report.started == 1
        assert report.summary() == "1 pinned point lower"
        assert confidence_of_points(db, [pinned, loose]) == {pinned: 0.9}
    with open_at(70) as db:  # unpinned and pinned again: verified now
        PointStore(db).set_pinned(pinned, False, reason="t")
        PointStore(db).set_pinned(pinned, True, reason="t")
    with open_at(95) as db:
        assert decay_confidence(db, db.clock.now()).points == []
        assert confidence_of_points(db, [pinned]) == {pinned: 0.9}
    with open_at(100) as db:
        assert decay_confidence(db, db.clock.now()).points == [pinned]
        assert confidence_of_points(db, [pinned]) == {pinned: 0.85}


def test_a_point_pinned_later_counts_from_its_pin(open_at: OpenAt) -> None:
    with open_at(0) as db:
        point = PointStore(db).add(NewPoint(role="user", content="later pinned", source="t"))
    with open_at(50) as db:
        PointStore(db).set_pinned(point, True, reason="t")
    with open_at(79) as db:
        assert decay_confidence(db, db.clock.now()).points == []
    with open_at(80) as db:
        assert decay_confidence(db, db.clock.now()).points == [point]
        assert confidence_of_points(db, [point]) == {point: 0.95}


# ---- boost ----------------------------------------------------------------------------------

DEPLOY_BODY = "Deploy blyck with just deploy-prod from the ops-1 host."
USING_REPLY = "Sure. Deploy blyck with just deploy-prod from the ops-1 host, then check the logs."


def test_a_used_fact_and_pinned_point_rise_capped_at_one(open_at: OpenAt) -> None:
    with open_at(0) as db:
        drawer = FactDrawer(db, "demo")
        drawer.set("deploy:blyck", "procedure", DEPLOY_BODY)
        write_fact(db, "db:port", confidence=0.98)
        point = PointStore(db).add(
            NewPoint(
                role="user",
                content="The staging database is reset every Monday.",
                source="t",
                pinned=True,
            )
        )
    with open_at(65) as db:
        decay_confidence(db, db.clock.now())
        deploy = fact(db, "deploy:blyck")
        port = fact(db, "db:port")
        assert (deploy.confidence, port.confidence) == (0.9, 0.88)
        reply = USING_REPLY + " The staging database was reset on Monday, so redo the seed."
        boosted = boost_used(
            db, reply, [deploy, port], [(point, "The staging database is reset every Monday.")]
        )
        assert boosted == ["deploy:blyck", f"#{point}"]
        assert fact(db, "deploy:blyck").confidence == 0.95
        assert fact(db, "db:port").confidence == 0.88  # not used
        assert confidence_of_points(db, [point]) == {point: 0.95}
        history = FactStore(db).history("deploy:blyck")
        assert history[-1].event == "fact_confidence"
        assert history[-1].reason == "boost: used in a reply"
        for _ in range(3):
            boost_used(
                db,
                reply,
                [fact(db, "deploy:blyck")],
                [(point, "The staging database is reset every Monday.")],
            )
        assert fact(db, "deploy:blyck").confidence == 1.0
        assert confidence_of_points(db, [point]) == {point: 1.0}
        audit_rows = len(FactStore(db).history("deploy:blyck"))
        assert (
            boost_used(
                db,
                reply,
                [fact(db, "deploy:blyck")],
                [(point, "The staging database is reset every Monday.")],
            )
            == []
        )
        assert len(FactStore(db).history("deploy:blyck")) == audit_rows


def test_a_reply_saying_it_cannot_use_a_capability_does_not_boost_it(open_at: OpenAt) -> None:
    """Issue 16: "I can't deploy …" named the capability; it did not use it."""
    with open_at(0) as db:
        FactDrawer(db, "demo").set(
            "deploy:staging", "capability", "This machine can deploy to staging with just deploy."
        )
    with open_at(65) as db:
        decay_confidence(db, db.clock.now())
        capability = fact(db, "deploy:staging")
        cant = "I can't deploy to staging because I don't have the credentials. Ask your admin."
        assert boost_used(db, cant, [capability], []) == []
        german = "Ich kann nicht auf staging deployen, mir fehlen die Zugangsdaten."
        assert boost_used(db, german, [capability], []) == []
        assert fact(db, "deploy:staging").confidence == 0.9
        used = "Done: I ran just deploy and the deploy to staging finished."
        assert boost_used(db, used, [capability], []) == ["deploy:staging"]


def test_a_boost_does_not_restart_decay(open_at: OpenAt) -> None:
    with open_at(0) as db:
        FactDrawer(db, "demo").set("deploy:blyck", "procedure", DEPLOY_BODY)
    with open_at(31) as db:
        decay_confidence(db, db.clock.now())
        boost_used(db, USING_REPLY, [fact(db, "deploy:blyck")], [])
        assert fact(db, "deploy:blyck").confidence == 1.0
    with open_at(61) as db:
        decay_confidence(db, db.clock.now())
        assert fact(db, "deploy:blyck").confidence == 0.95


def test_a_boost_starts_a_pinned_points_row_at_one(open_at: OpenAt) -> None:
    with open_at(0) as db:
        text = "Remember that the VPN profile is called ops-west and expires in June."
        point = PointStore(db).add(NewPoint(role="user", content=text, source="t", pinned=True))
        assert boost_used(db, f"As you said: {text}", [], [(point, text)]) == []
        with db.cursor() as cur:
            rows = cur.execute(
                "SELECT point_id, confidence, decay_periods FROM point_confidence"
            ).fetchall()
        assert rows == [(point, 1.0, 0)]


# ---- what counts as used --------------------------------------------------------------------

POSTGRES = "Postgres runs on port 5433 in staging."
RUNBOOK = " ".join(
    f"step {n} log in to ops-{n} as deploy then pull the release tag and restart the unit"
    for n in range(1, 12)
)


@pytest.mark.parametrize(
    ("reply", "key", "body"),
    [
        pytest.param(USING_REPLY, None, DEPLOY_BODY, id="quoted body"),
        pytest.param(
            "You can reach it: postgres runs on port 5433 in staging, not the default.",
            None,
            POSTGRES,
            id="quote in other case and punctuation",
        ),
        pytest.param(
            "Heads up: the staging database was reset on Monday, so your data is gone.",
            None,
            "The staging database is reset every Monday.",
            id="near quote",
        ),
        pytest.param(
            "Yes. Tokens live in the vault under team-ops, rotate them monthly.",
            None,
            "We use Terraform for infra. Tokens live in the vault under team-ops. "
            "The CI runs on Hetzner boxes that nobody has touched in a year.",
            id="one sentence of a long body",
        ),
        pytest.param(
            "From the runbook: " + RUNBOOK[300:560] + " — that should do it.",
            None,
            RUNBOOK,
            id="a stretch of a long unpunctuated document",
        ),
        pytest.param(
            "I deployed blyck yesterday; it came up fine.",
            "deploy:blyck",
            "just deploy-prod from ops-1",
            id="key parts as stemmed words",
        ),
        pytest.param(
            "Per `aws:credentials`, use the ops profile.",
            "aws:credentials",
            "the ops profile in ~/.aws",
            id="key named literally",
        ),
    ],
)
def test_use_is_detected(reply: str, key: str | None, body: str) -> None:
    assert used_in_reply(reply, key=key, body=body)


@pytest.mark.parametrize(
    ("reply", "key", "body"),
    [
        pytest.param(
            "The deploy went fine and nothing broke on the host.",
            "deploy:blyck",
            DEPLOY_BODY,
            id="one shared common word",
        ),
        pytest.param(
            "Postgres usually runs on port 5432 in production, as far as I know.",
            None,
            POSTGRES,
            id="look-alike sentence",
        ),
        pytest.param(
            "Postgres is a database.",
            "postgres",
            POSTGRES,
            id="one-part key mentioned",
        ),
        pytest.param(
            "Your AWS credentials look fine to me.",
            "aws:credentials:rotation",
            "rotate keys every 90 days via the ops runbook",
            id="some key parts only",
        ),
        pytest.param("Yes.", "deploy:blyck", DEPLOY_BODY, id="a reply shorter than the body"),
        pytest.param("", "deploy:blyck", DEPLOY_BODY, id="empty reply"),
        pytest.param(
            "It listens on port 5433, I think.", None, "port 5433", id="body too short to judge"
        ),
        pytest.param(
            "I would use black for formatting.",
            None,
            "Use ruff for linting and formatting.",
            id="same shape, other tool",
        ),
    ],
)
def test_look_alikes_are_not_use(reply: str, key: str | None, body: str) -> None:
    assert not used_in_reply(reply, key=key, body=body)


def test_report_summary() -> None:
    assert ConfidenceReport(facts=["a", "b"], points=[1, 2]).summary() == (
        "2 facts and 2 pinned points lower"
    )
    assert ConfidenceReport(facts=["a"]).summary() == "1 fact lower"


def test_an_undo_does_not_give_back_the_confidence_decay_took(open_at: OpenAt) -> None:
    """Undo restored the old version's confidence (1.0) but kept the count of periods
    already charged: the fact stayed 0.15 too sure for good (issue 5: undo is no
    verification)."""
    with open_at(0) as db:
        FactDrawer(db, "demo").set("deploy:blyck", "procedure", DEPLOY_BODY)
    with open_at(101) as db:
        decay_confidence(db, db.clock.now())
        assert fact(db, "deploy:blyck").confidence == 0.85  # 3×30 days
        drawer = FactDrawer(db, "demo")
        drawer.set("deploy:blyck", "procedure", DEPLOY_BODY + " Then tag the release.")
        drawer.undo("deploy:blyck")
        decay_confidence(db, db.clock.now())
        assert fact(db, "deploy:blyck").confidence == 0.85  # charged again, not given back
    with open_at(121) as db:
        decay_confidence(db, db.clock.now())
        assert fact(db, "deploy:blyck").confidence == 0.80  # 4×30 days
