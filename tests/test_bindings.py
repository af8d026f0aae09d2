"""Seed 003, concept 2: the bindings validator over procedures' `requires`."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from memory.bindings import BindingAlert, check_bindings
from store.fact_records import Fact

NOW = datetime(2026, 11, 29, 21, 4, 38, tzinfo=UTC)
_ids = iter(range(1, 10_000))


def make(
    key: str,
    *,
    type: str = "fact",
    status: str = "active",
    verified_days_ago: float | None = 1,
    scope: str = "workspace",
    workspace: str = "demo",
    requires: tuple[str, ...] = (),
) -> Fact:
    created = NOW - timedelta(days=400)
    return Fact(
        id=next(_ids),
        type=type,
        scope=scope,
        workspace=workspace if scope == "workspace" else "",
        key=key,
        body=f"the body of {key}",
        confidence=1.0,
        proof="",
        status=status,
        source="user",
        created_at=created,
        updated_at=created,
        last_seen=created,
        last_verified=(
            NOW - timedelta(days=verified_days_ago) if verified_days_ago is not None else None
        ),
        requires=requires,
    )


def deploy(*requires: str, **kwargs: object) -> Fact:
    return make("deploy:blyck", type="procedure", requires=requires, **kwargs)  # type: ignore[arg-type]


def test_a_healthy_procedure_has_no_alerts() -> None:
    facts = [
        deploy("aws:credentials", "vpn:profile"),
        make("aws:credentials", verified_days_ago=90),  # exactly at the limit still holds
        make("vpn:profile", type="capability", scope="global", verified_days_ago=3),
    ]
    assert check_bindings(facts, NOW) == []


def test_a_procedure_without_requires_is_fine() -> None:
    assert check_bindings([deploy()], NOW) == []


@pytest.mark.parametrize(
    ("required", "problem", "detail"),
    [
        (
            [],
            "missing",
            "procedure deploy:blyck needs aws:credentials, which does not exist",
        ),
        (
            [make("aws:credentials", status="retired")],
            "retired",
            "procedure deploy:blyck needs aws:credentials, which is retired",
        ),
        (
            [make("aws:credentials", status="stale")],
            "stale",
            "procedure deploy:blyck needs aws:credentials, which is stale",
        ),
        (
            [make("aws:credentials", verified_days_ago=None)],
            "unverified",
            "procedure deploy:blyck needs aws:credentials, which was never verified",
        ),
        (
            [make("aws:credentials", verified_days_ago=120)],
            "expired",
            "procedure deploy:blyck needs aws:credentials, which was last verified 120 days "
            "ago (limit 90)",
        ),
    ],
)
def test_each_problem(required: list[Fact], problem: str, detail: str) -> None:
    alerts = check_bindings([deploy("aws:credentials"), *required], NOW)
    assert alerts == [BindingAlert("deploy:blyck", "aws:credentials", problem, detail)]  # type: ignore[arg-type]
    assert "\n" not in alerts[0].detail


def test_the_limit_is_a_parameter() -> None:
    facts = [deploy("aws:credentials"), make("aws:credentials", verified_days_ago=20)]
    assert check_bindings(facts, NOW) == []
    [alert] = check_bindings(facts, NOW, limit_days=14)
    assert alert.problem == "expired"
    assert alert.detail.endswith("last verified 20 days ago (limit 14)")
    with pytest.raises(ValueError, match="negative"):
        check_bindings(facts, NOW, limit_days=-1)


def test_the_worst_problem_wins() -> None:
    """A stale fact that was never verified and a retired one verified long ago."""
    facts = [
        deploy("a:fact", "b:fact"),
        make("a:fact", status="stale", verified_days_ago=None),
        make("b:fact", status="retired", verified_days_ago=500),
    ]
    assert [(a.required_key, a.problem) for a in check_bindings(facts, NOW)] == [
        ("a:fact", "stale"),
        ("b:fact", "retired"),
    ]


def test_the_workspace_fact_comes_before_the_global_one() -> None:
    facts = [
        deploy("aws:credentials"),
        make("aws:credentials", verified_days_ago=200),  # this workspace's: expired
        make("aws:credentials", scope="global", verified_days_ago=1),
    ]
    [alert] = check_bindings(facts, NOW)
    assert alert.problem == "expired"


def test_the_global_fact_serves_when_the_workspace_has_none() -> None:
    facts = [
        deploy("aws:credentials"),
        make("aws:credentials", scope="global", verified_days_ago=1),
        make("aws:credentials", workspace="elsewhere", verified_days_ago=500),
    ]
    assert check_bindings(facts, NOW) == []


def test_a_retired_workspace_fact_falls_back_to_the_global_one() -> None:
    facts = [
        deploy("aws:credentials"),
        make("aws:credentials", status="retired"),
        make("aws:credentials", scope="global", verified_days_ago=100),
    ]
    [alert] = check_bindings(facts, NOW)
    assert alert.problem == "expired"  # the global one is checked, not "retired"


def test_another_workspaces_fact_does_not_count() -> None:
    facts = [deploy("aws:credentials"), make("aws:credentials", workspace="elsewhere")]
    assert [a.problem for a in check_bindings(facts, NOW)] == ["missing"]


def test_a_global_procedure_needs_global_facts() -> None:
    facts = [
        deploy("aws:credentials", scope="global"),
        make("aws:credentials", workspace="demo"),
    ]
    assert [a.problem for a in check_bindings(facts, NOW)] == ["missing"]
    facts.append(make("aws:credentials", scope="global"))
    assert check_bindings(facts, NOW) == []


def test_procedures_of_several_workspaces_resolve_in_their_own() -> None:
    facts = [
        deploy("aws:credentials", workspace="one"),
        deploy("aws:credentials", workspace="two"),
        make("aws:credentials", workspace="one"),
    ]
    alerts = check_bindings(facts, NOW)
    assert [(a.procedure_key, a.problem) for a in alerts] == [("deploy:blyck", "missing")]


def test_retired_procedures_are_not_checked_and_other_types_ignore_requires() -> None:
    facts = [
        deploy("aws:credentials", status="retired"),
        make("note:x", type="decision", requires=("aws:credentials",)),
    ]
    assert check_bindings(facts, NOW) == []


def test_alerts_come_by_procedure_then_requires_order_without_repeats() -> None:
    facts = [
        make("zz:last", type="procedure", requires=("b:missing", "a:missing", "b:missing")),
        make("aa:first", type="procedure", requires=("c:missing",)),
    ]
    assert [(a.procedure_key, a.required_key) for a in check_bindings(facts, NOW)] == [
        ("aa:first", "c:missing"),
        ("zz:last", "b:missing"),
        ("zz:last", "a:missing"),
    ]
