"""Layer 4 on a real DuckDB file: uniqueness and overwrite with history, the gate, injection
order, cap and exclusions, decay boundaries, revive on read, masking."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np
import pytest

from memory.fact_drawer import FactDrawer, FactsConfig
from memory.fact_types import FactError, FactProposal
from store.clock import Clock
from store.database import open_database

T0 = datetime(2026, 6, 1, 12, 0, tzinfo=UTC)
WS = "/home/me/blyck"


def drawer_at(db_file: Path, when: datetime, workspace: str = WS, **config: object) -> FactDrawer:
    db = open_database(db_file, clock=Clock(when))
    return FactDrawer(db, workspace, FactsConfig(**config))  # type: ignore[arg-type]


@pytest.fixture
def drawer(db_file: Path) -> Iterator[FactDrawer]:
    d = drawer_at(db_file, T0)
    yield d
    d.db.close()


# --- uniqueness, overwrite, history, undo ---------------------------------------------------


def test_writing_an_existing_key_overwrites_it_and_keeps_every_version(
    drawer: FactDrawer,
) -> None:
    first = drawer.set("Deploy: Blyck", "capability", "Deploy with npm run dist and s3 cp.")
    second = drawer.set("deploy:blyck", "capability", "Deploy with the release script.")
    assert first.key == second.key == "deploy:blyck"
    assert second.id == first.id
    facts = drawer.list_facts()
    assert [(f.key, f.body) for f in facts] == [("deploy:blyck", "Deploy with the release script.")]
    history = drawer.history("deploy:blyck")
    assert [(v.fact["body"], (v.previous or {}).get("body")) for v in history] == [
        ("Deploy with npm run dist and s3 cp.", None),
        ("Deploy with the release script.", "Deploy with npm run dist and s3 cp."),
    ]


def test_undo_of_an_approval_over_a_retired_fact_leaves_it_retired(drawer: FactDrawer) -> None:
    """A rule the user retired, then a candidate for its key approved (it "replaces" the
    retired one), then undo: the old rule came back active, into every prompt."""
    drawer.set("k:r", "rule", "The old rule body.")
    drawer.retire("k:r")
    proposal = FactProposal(type="rule", key="k:r", body="The new rule body.", source="user")
    candidate = drawer.propose(proposal, origin="cli").candidate
    assert candidate is not None
    drawer.approve(candidate.id)
    restored = drawer.undo("k:r")
    assert restored is not None and restored.body == "The old rule body."
    assert restored.status == "retired"
    assert "k:r" not in [f.key for f in drawer.for_prompt("rules for k").facts]  # not sent


def test_a_workspace_fact_shadows_the_global_fact_of_its_key_in_the_prompt(
    drawer: FactDrawer,
) -> None:
    """Both went into the prompt, the global one first, with contradicting bodies."""
    drawer.set("deploy:blyck", "procedure", "Workspace says: deploy with rsync.")
    drawer.set("deploy:blyck", "procedure", "Global says: deploy with npm.", scope="global")
    drawer.set("lint:all", "rule", "Run just lint before a commit.", scope="global")
    block = drawer.for_prompt("How do I deploy blyck?").block
    assert "deploy with rsync" in block and "deploy with npm" not in block
    assert "just lint" in block  # a global fact no workspace fact shadows stays


def test_undo_restores_the_previous_version_and_a_first_write_goes(drawer: FactDrawer) -> None:
    drawer.set("db:staging", "fact", "Staging runs Postgres 15.")
    drawer.set("db:staging", "fact", "Staging runs Postgres 16.")
    restored = drawer.undo("db:staging")
    assert restored is not None and restored.body == "Staging runs Postgres 15."
    assert drawer.history("db:staging")[-1].event == "fact_undo"
    drawer.set("build:npm", "capability", "npm run dist builds the app.")
    assert drawer.undo("build:npm") is None
    assert drawer.get("build:npm") == []


def test_the_same_key_in_workspace_and_global_scope_are_two_facts(
    drawer: FactDrawer, db_file: Path
) -> None:
    drawer.set("style:commits", "rule", "Commit messages in English.", scope="global")
    drawer.set("style:commits", "rule", "Commit messages in German here.")
    found = drawer.get("style:commits")
    assert [(f.scope, f.body) for f in found] == [
        ("workspace", "Commit messages in German here."),
        ("global", "Commit messages in English."),
    ]
    other = FactDrawer(drawer.db, "/home/me/other")
    assert [(f.scope, f.body) for f in other.list_facts()] == [
        ("global", "Commit messages in English.")
    ]


def test_bad_facts_are_refused_with_one_line(drawer: FactDrawer) -> None:
    with pytest.raises(FactError, match="unknown fact type"):
        drawer.set("x:y", "wish", "body")
    with pytest.raises(FactError, match="empty fact key"):
        drawer.set(" : ", "fact", "body")
    with pytest.raises(FactError, match="needs a body"):
        drawer.set("x:y", "fact", "   ")


def test_secrets_never_enter_a_body_or_proof(drawer: FactDrawer) -> None:
    fact = drawer.set(
        "deploy:aws",
        "capability",
        "Deploy with AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY set.",
        proof="export GITHUB_TOKEN=ghp_1234567890abcdefghijklmnopqrstuvwxyzAB worked",
    )
    assert "wJalrXUtnFEMI" not in fact.body and "[REDACTED:" in fact.body
    assert "ghp_1234567890" not in fact.proof and "[REDACTED:" in fact.proof
    history = drawer.history("deploy:aws")
    assert "wJalrXUtnFEMI" not in str(history)


# --- the gate --------------------------------------------------------------------------------


PROPOSAL = FactProposal(
    type="capability",
    key="deploy:blyck",
    body="This machine can deploy blyck to S3 (aws s3 cp).",
    proof="I just deployed blyck with aws s3 cp, it worked",
    source="user",
    confidence=0.9,
)


def test_a_proposal_is_only_a_candidate_until_approved(drawer: FactDrawer) -> None:
    outcome = drawer.propose(PROPOSAL, origin="promotion")
    assert outcome.candidate is not None and outcome.candidate.status == "pending"
    assert drawer.list_facts() == []  # no fact without approval
    fact = drawer.approve(outcome.candidate.id)
    assert (fact.key, fact.body, fact.source) == ("deploy:blyck", PROPOSAL.body, "user")
    assert drawer.pending() == []
    assert drawer.propose(PROPOSAL, origin="promotion").reason == "already a fact"


def test_approve_with_an_edit(drawer: FactDrawer) -> None:
    candidate = drawer.propose(PROPOSAL, origin="tool").candidate
    assert candidate is not None
    fact = drawer.approve(candidate.id, body="Deploys blyck via the release script.")
    assert fact.body == "Deploys blyck via the release script."
    assert "(edited)" in (drawer.history("deploy:blyck")[-1].reason or "")


def test_a_rejection_is_remembered(drawer: FactDrawer) -> None:
    candidate = drawer.propose(PROPOSAL, origin="reflection").candidate
    assert candidate is not None
    drawer.reject(candidate.id)
    again = drawer.propose(PROPOSAL, origin="reflection")
    assert (again.candidate, again.reason) == (None, "rejected before")
    assert drawer.list_facts() == []
    with pytest.raises(FactError, match="already rejected"):
        drawer.approve(candidate.id)


def decide_at_once(drawers: list[FactDrawer], candidate_id: int) -> list[str]:
    """The first drawer rejects `candidate_id` while the others approve it, all at once;
    the decisions that went through."""
    barrier = threading.Barrier(len(drawers))
    decided: list[str] = []

    def decide(index: int, d: FactDrawer) -> None:
        barrier.wait()
        try:
            if index == 0:
                d.reject(candidate_id)
                decided.append("rejected")
            else:
                d.approve(candidate_id)
                decided.append("approved")
        except FactError as error:
            assert "is already" in str(error), error

    threads = [threading.Thread(target=decide, args=(i, d)) for i, d in enumerate(drawers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return decided


def test_clients_deciding_one_candidate_at_once_get_one_decision(db_file: Path) -> None:
    """The owner runs its clients' commands at once, each with a drawer of its own on one
    database: a reject and approves of the same candidate used to all succeed (a rejected
    candidate became a fact; one candidate was approved twice, with two versions)."""
    first = drawer_at(db_file, T0)
    drawers = [first, *(FactDrawer(first.db, WS, FactsConfig()) for _ in range(5))]
    try:
        for round_ in range(12):
            proposal = FactProposal(
                type="fact", key=f"race:{round_}", body=f"Race body {round_}.", source="user"
            )
            candidate = first.propose(proposal, origin="cli").candidate
            assert candidate is not None
            decided = decide_at_once(drawers, candidate.id)
            assert len(decided) == 1, (round_, decided)
            facts = first.get(proposal.key)
            assert (len(facts) == 1) == (decided == ["approved"]), (decided, facts)
            assert len(first.history(proposal.key)) == len(facts)
    finally:
        first.db.close()


def test_a_rejected_candidate_said_again_in_other_case_is_not_proposed_again(
    drawer: FactDrawer,
) -> None:
    """A rejected rule came back as a new candidate when it was said again in lower case or
    with a `!` (the approval fatigue issue 4 warns about)."""
    rule = FactProposal(
        type="rule", key="rule:fridays", body="Never touch PROD on Fridays.", source="user"
    )
    candidate = drawer.propose(rule, origin="promotion").candidate
    assert candidate is not None
    drawer.reject(candidate.id)
    again = FactProposal(
        type="rule", key="rule:fridays", body="never touch prod on fridays!", source="user"
    )
    assert drawer.propose(again, origin="promotion").reason == "rejected before"
    other = FactProposal(
        type="rule", key="rule:fridays", body="Never touch PROD on Mondays.", source="user"
    )
    assert drawer.propose(other, origin="promotion").candidate is not None
    # punctuation inside can be the whole difference (self-review: C# blocked C++)
    for first, second in (("the project uses C#", "the project uses C++"), (">= 3.11", "< 3.11")):
        made = drawer.propose(
            FactProposal(type="fact", key="lang:main", body=first, source="user"), origin="cli"
        ).candidate
        assert made is not None
        drawer.reject(made.id)
        then = FactProposal(type="fact", key="lang:main", body=second, source="user")
        assert drawer.propose(then, origin="cli").candidate is not None, (first, second)
        for pending in drawer.pending():
            drawer.reject(pending.id)


def test_a_pending_duplicate_is_not_proposed_twice(drawer: FactDrawer) -> None:
    assert drawer.propose(PROPOSAL, origin="promotion").candidate is not None
    assert drawer.propose(PROPOSAL, origin="promotion").reason == "already pending"
    assert len(drawer.pending()) == 1


# --- injection -------------------------------------------------------------------------------


def test_rules_and_capabilities_are_always_injected_other_facts_only_on_match(
    drawer: FactDrawer,
) -> None:
    drawer.set("prod:db", "rule", "Never touch the PROD database.")
    drawer.set("deploy:blyck", "capability", "This PC can deploy blyck directly.")
    drawer.set("db:engine", "decision", "We chose Postgres over MySQL in March.")
    drawer.set("office:wifi", "fact", "The office wifi is called straylight-5g.")
    injected = drawer.for_prompt("Tell me a joke")
    assert {f.key for f in injected.facts} == {"prod:db", "deploy:blyck"}
    injected = drawer.for_prompt("Which db engine did we pick?")
    assert [f.key for f in injected.facts][-1] == "db:engine"
    assert "office:wifi" not in injected.block
    assert "## " not in injected.block  # data lines only, never a heading


def test_key_matches_come_first_and_word_forms_count(drawer: FactDrawer) -> None:
    drawer.set("ssh:db01", "capability", "ssh db01 works with the deploy key.")
    drawer.set("deploy:blyck", "capability", "This PC can deploy blyck directly.")
    injected = drawer.for_prompt("Can you get the blyck release deployed tonight?")
    assert [f.key for f in injected.facts] == ["deploy:blyck", "ssh:db01"]


def test_the_cap_cuts_with_a_note(db_file: Path) -> None:
    d = drawer_at(db_file, T0, always_max=3)
    for n in range(5):
        d.set(f"rule:r{n}", "rule", f"Rule number {n}.")
    injected = d.for_prompt("hello")
    assert len(injected.facts) == 3 and injected.cut == 2
    assert "2 more rules or capabilities are not shown" in injected.block
    d.db.close()


def test_stale_and_retired_facts_are_not_injected(drawer: FactDrawer) -> None:
    drawer.set("deploy:blyck", "capability", "This PC can deploy blyck directly.")
    drawer.set("db:engine", "decision", "We chose Postgres for the db engine.")
    drawer.retire("deploy:blyck")
    fact = drawer.get("db:engine")[0]
    drawer.store.set_status(fact, "stale", reason="test")
    injected = drawer.for_prompt("deploy blyck and check the db engine")
    assert injected.facts == [] and injected.block == ""


def test_a_semantic_match_uses_the_turns_vector(drawer: FactDrawer) -> None:
    fact = drawer.set("db:engine", "decision", "We chose Postgres over MySQL in March.")
    drawer.set_vector(fact, [1.0, 0.0, 0.0])
    far = drawer.for_prompt("what about lunch", query_vector=[0.0, 1.0, 0.0])
    near = drawer.for_prompt("what about lunch", query_vector=[0.9, 0.1, 0.0])
    assert far.facts == [] and [f.key for f in near.facts] == ["db:engine"]


def test_injection_updates_last_seen(db_file: Path) -> None:
    d = drawer_at(db_file, T0)
    d.set("deploy:blyck", "capability", "This PC can deploy blyck directly.")
    d.db.close()
    later = drawer_at(db_file, T0 + timedelta(days=3))
    later.for_prompt("hello")
    assert later.list_facts()[0].last_seen == T0 + timedelta(days=3)
    later.db.close()


def test_carried_facts_survive_the_cap_and_say_why(db_file: Path) -> None:
    d = drawer_at(db_file, T0, always_max=1)
    d.set("rule:a", "rule", "Always answer briefly.")
    carried = d.set("deploy:blyck", "capability", "This PC can deploy blyck directly.")
    injected = d.for_prompt("hello", carry=[carried])
    assert [f.key for f in injected.facts] == ["deploy:blyck"]
    assert "you said you could not do this" in injected.block
    d.db.close()


# --- decay and revive ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("days", "expected"),
    [(89, "active"), (90, "stale"), (179, "stale"), (180, "retired")],
)
@pytest.mark.parametrize("kind", ["decision", "fact"])
def test_decay_boundaries(db_file: Path, days: int, expected: str, kind: str) -> None:
    d = drawer_at(db_file, T0)
    d.set("k:x", kind, "Something true.")
    d.db.close()
    later = drawer_at(db_file, T0 + timedelta(days=days))
    report = later.decay()
    assert later.list_facts()[0].status == expected
    assert ("k:x" in report.stale) == (expected == "stale")
    assert ("k:x" in report.retired) == (expected == "retired")
    later.db.close()


@pytest.mark.parametrize("kind", ["capability", "rule", "procedure"])
def test_capabilities_rules_and_procedures_never_decay(db_file: Path, kind: str) -> None:
    d = drawer_at(db_file, T0)
    d.set("k:x", kind, "Something that stays.")
    d.db.close()
    later = drawer_at(db_file, T0 + timedelta(days=400))
    assert later.decay().stale == [] and later.list_facts()[0].status == "active"
    later.db.close()


def test_an_explicit_read_revives_a_stale_fact(db_file: Path) -> None:
    d = drawer_at(db_file, T0)
    d.set("db:engine", "decision", "We chose Postgres.")
    d.db.close()
    later = drawer_at(db_file, T0 + timedelta(days=100))
    assert later.decay().stale == ["db:engine"]
    [fact] = later.get("db:engine")
    assert fact.status == "active" and fact.last_seen == T0 + timedelta(days=100)
    assert later.history("db:engine")[-1].reason == "revived by an explicit read"
    later.db.close()


def test_vectors_round_trip(drawer: FactDrawer) -> None:
    fact = drawer.set("x:y", "fact", "A fact with a vector.")
    drawer.set_vector(fact, [0.5, 0.25])
    [again] = drawer.list_facts()
    assert again.embedding is not None
    np.testing.assert_array_equal(again.embedding, np.array([0.5, 0.25], dtype=np.float32))
    assert drawer.needs_vector() == []
    drawer.set("x:y", "fact", "A changed body needs a new vector.")
    assert [f.key for f in drawer.needs_vector()] == ["x:y"]


def test_a_vector_of_the_same_model_spelled_with_latest_is_kept(db_file: Path) -> None:
    d = drawer_at(db_file, T0, embed_model="embedder")
    d.set_vector(d.set("x:y", "fact", "A fact with a vector."), [0.5, 0.25])
    d.db.close()
    later = drawer_at(db_file, T0, embed_model="embedder:latest")
    assert later.needs_vector() == []  # `embedder` is `embedder:latest`: nothing to embed again
    later.db.close()


# --- found by review: undo, workspaces, re-proposal, odd input --------------------------------


def test_undo_walks_back_through_writes_not_through_status_changes(drawer: FactDrawer) -> None:
    drawer.set("j:k", "rule", "Version A.")
    fact = drawer.set("j:k", "rule", "Version B.")
    drawer.set("j:k", "rule", "Version C.")
    drawer.store.set_confidence(fact, 0.7, reason="decay: 1×30 days unverified")
    assert drawer.undo("j:k").body == "Version B."  # type: ignore[union-attr]
    assert drawer.undo("j:k").body == "Version A."  # type: ignore[union-attr]
    assert drawer.undo("j:k") is None and drawer.get("j:k") == []


def test_an_approved_candidate_lands_in_its_own_workspace(drawer: FactDrawer) -> None:
    candidate = drawer.propose(PROPOSAL, origin="promotion").candidate
    assert candidate is not None
    elsewhere = FactDrawer(drawer.db, "/home/me/other")
    fact = elsewhere.approve(candidate.id)
    assert fact.workspace == WS and elsewhere.list_facts() == []
    assert [f.key for f in drawer.list_facts()] == ["deploy:blyck"]


def test_history_shows_only_what_this_workspace_may_see(drawer: FactDrawer) -> None:
    drawer.set("secret:plan", "fact", "The private plan of this workspace.")
    assert FactDrawer(drawer.db, "/home/me/other").history("secret:plan") == []
    assert len(drawer.history("secret:plan")) == 1


def test_an_approved_proposal_is_not_proposed_again_after_an_edit(drawer: FactDrawer) -> None:
    candidate = drawer.propose(PROPOSAL, origin="promotion").candidate
    assert candidate is not None
    drawer.approve(candidate.id, body="blyck deploys from here with the release script.")
    assert drawer.propose(PROPOSAL, origin="promotion").reason == "approved before"


def test_undecodable_and_control_characters_never_reach_the_store(drawer: FactDrawer) -> None:
    fact = drawer.set("odd:input", "fact", "bad \udcff byte and \x1b[31mred\x1b[0m and \x00 nul")
    assert "\x1b" not in fact.body and "\x00" not in fact.body and "\udcff" not in fact.body
    with pytest.raises(FactError, match="secret"):
        drawer.set("ghp_1234567890abcdefghijklmnopqrstuvwxyzAB", "fact", "a token as key")


@pytest.mark.parametrize(
    "key",
    ["AKIAIOSFODNN7EXAMPLE", "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjMifQ.abcDEF123_-x"],
)
def test_a_key_whose_secret_shows_only_in_upper_case_is_refused(
    drawer: FactDrawer, key: str
) -> None:
    """The key is lower-cased for storage; the masker must see it as it was typed."""
    with pytest.raises(FactError, match="secret"):
        drawer.set(key, "fact", "a credential as key")
    assert drawer.list_facts(all_workspaces=True) == []


@pytest.mark.parametrize("key", ["password=hunter2", "db:api_key = abc123def456"])
def test_a_key_that_assigns_a_secret_is_refused(drawer: FactDrawer, key: str) -> None:
    """Normalised, `password=hunter2` would be stored as the key `password-hunter2`."""
    with pytest.raises(FactError, match="secret"):
        drawer.set(key, "fact", "a password as key")
    assert drawer.list_facts(all_workspaces=True) == []


def test_a_key_that_names_a_secret_is_kept(drawer: FactDrawer) -> None:
    assert drawer.set("password:rotation", "rule", "Rotate it every 90 days.").key == (
        "password:rotation"
    )


def test_a_cap_that_cuts_everything_still_says_so(db_file: Path) -> None:
    d = drawer_at(db_file, T0, always_max=0)
    d.set("rule:a", "rule", "Always answer briefly.")
    injected = d.for_prompt("hello")
    assert injected.facts == [] and "1 more rules or capabilities" in injected.block
    d.db.close()
