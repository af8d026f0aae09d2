"""The success-event classifier: the labelled table (shared with the bench), proposal fields,
turns (limit, dedup, code and quotations skipped, secrets masked). Speed: bench.fact_classifier."""

from __future__ import annotations

import pytest

from memory.fact_types import FACT_TYPES, is_valid_key, normalise_key
from memory.success_classifier import (
    MAX_PROPOSALS_PER_TURN,
    PROOF_CHARS,
    classify_sentence,
    classify_turn,
)
from tests.data.fact_classifier_labelled import (
    HELD_OUT_FROM,
    LABELLED,
    LONG_REPLY,
    TYPICAL_TURN,
    predict,
    score,
)

SECRET = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"

# Rows of the table the classifier gets wrong today, with why. strict xfail: a row that
# starts passing fails here, so this list (and the bench's misclassified list) stays true.
KNOWN_MISSES: dict[str, str] = {
    "blyck is live on S3 now": "no event word: 'live' alone is not a deploy report",
    "Mit psql komme ich jetzt auf die PROD-Datenbank": "'komme … auf' is no success predicate",
    "Can't believe the deploy worked on the first try": "any negation silences a sentence",
    "Your tests passed in CI, so the change is safe to merge.": "'your' reads as advice",
    "Keine Force-Pushes auf main": "noun-phrase rules are silent by design",
    "We never deploy on Fridays": "a 'we' convention is not an imperative",
    "Postgres on db03 accepts my connection now": "'accepts' is no success predicate",
    "Der Release nach PyPI hat funktioniert": "the noun 'Release' is no deploy keyword",
    "Always nice to see green tests": "generic remark with 'green tests' reads as a test run",
    "uv build produces the wheel fine now": "'produces … fine' is no success predicate",
    "Wir sollten immer Backups machen": "German 'wir sollten immer' is not an imperative",
}


def _table_params() -> list[object]:
    params: list[object] = []
    for speaker, sentence, want_type, want_key in LABELLED:
        marks = []
        if sentence in KNOWN_MISSES:
            marks.append(pytest.mark.xfail(strict=True, reason=KNOWN_MISSES[sentence]))
        params.append(
            pytest.param(speaker, sentence, want_type, want_key, marks=marks, id=sentence[:60])
        )
    return params


@pytest.mark.parametrize(("speaker", "sentence", "want_type", "want_key"), _table_params())
def test_labelled_sentence(
    speaker: str, sentence: str, want_type: str | None, want_key: str | None
) -> None:
    assert predict(speaker, sentence) == (want_type, want_key)


def test_the_table_is_large_and_covers_every_kind() -> None:
    assert len(LABELLED) >= 60
    keys = {key for _, _, _, key in LABELLED if key}
    for kind in ("deploy", "build", "test", "ssh", "db", "auth", "rule"):
        assert any(key.startswith(f"{kind}:") for key in keys), kind
    types = {want for _, _, want, _ in LABELLED}
    assert {"capability", "rule", "procedure", None} <= types
    negatives = sum(1 for row in LABELLED if row[2] is None)
    assert negatives >= len(LABELLED) // 3
    assert any(speaker == "assistant" and want for speaker, _, want, _ in LABELLED)
    assert any(speaker == "assistant" and not want for speaker, _, want, _ in LABELLED)
    german = ("geklappt", "funktioniert", "erfolgreich", "grün", "nie ", "immer ", "niemals ")
    assert sum(1 for _, s, _, _ in LABELLED if any(w in s for w in german)) >= 20
    assert 0 < HELD_OUT_FROM < len(LABELLED)


def test_every_expected_key_is_a_valid_normalised_key() -> None:
    for _, sentence, want_type, want_key in LABELLED:
        assert (want_type is None) == (want_key is None), sentence
        if want_key is not None:
            assert is_valid_key(want_key), want_key
            assert normalise_key(want_key) == want_key
            assert want_type in FACT_TYPES


def test_precision_and_recall_on_the_table_meet_the_targets() -> None:
    predictions = [predict(speaker, sentence) for speaker, sentence, _, _ in LABELLED]
    counts = score(LABELLED, predictions)
    assert counts.precision >= 0.95
    assert counts.recall >= 0.9


def test_every_proposal_key_is_valid() -> None:
    for speaker, sentence, _, _ in LABELLED:
        proposal = classify_sentence(
            sentence, speaker="assistant" if speaker == "assistant" else "user"
        )
        if proposal is not None:
            assert is_valid_key(proposal.key), (sentence, proposal.key)
            assert proposal.type in FACT_TYPES


# --- proposal fields


def test_a_user_success_has_body_proof_source_confidence_scope() -> None:
    sentence = "  I just deployed blyck to S3 with `aws s3 cp`, it worked  "
    proposal = classify_sentence(sentence)
    assert proposal is not None
    assert proposal.type == "capability"
    assert proposal.key == "deploy:blyck"
    assert proposal.body == "This machine can deploy blyck to S3 (aws s3 cp)."
    assert proposal.proof == sentence.strip()
    assert proposal.source == "user"
    assert proposal.confidence == pytest.approx(0.9)
    assert proposal.scope == "workspace"


def test_a_rule_has_a_rule_body_and_key() -> None:
    proposal = classify_sentence("Please never touch PROD!")
    assert proposal is not None
    assert (proposal.type, proposal.key) == ("rule", "rule:never-touch-prod")
    assert proposal.body == "Rule: never touch PROD."
    assert proposal.source == "user"
    assert proposal.scope == "workspace"


def test_a_rule_for_every_project_is_global_and_its_key_drops_the_scope_words() -> None:
    proposal = classify_sentence("Always use uv instead of pip in every project")
    assert proposal is not None
    assert proposal.scope == "global"
    assert proposal.key == "rule:always-use-uv-instead-of-pip"
    german = classify_sentence("Verwende überall immer uv statt pip")
    assert german is not None and german.scope == "global"


def test_a_reason_after_a_comma_does_not_change_a_rule_key() -> None:
    plain = classify_sentence("Never push to main")
    with_reason = classify_sentence("Never push to main, the build broke last time")
    assert plain is not None and with_reason is not None
    assert plain.key == with_reason.key == "rule:never-push-to-main"


@pytest.mark.parametrize(
    "sentence",
    [
        "always connect with postgres://admin:[REDACTED:password]@db.internal:5432/app for the db",
        "Always use http://proxy.internal:3128 for the harbour builds",
        "never mail ops@blyck.example about the harbour:prod box",
    ],
)
def test_a_rule_key_has_one_part_after_rule_and_no_address_or_redaction(sentence: str) -> None:
    """A URL, a mail address or a redaction in the rule is no key word, and a colon in a
    word does not split the key into parts that exact key matching would look for."""
    proposal = classify_sentence(sentence)
    assert proposal is not None and proposal.type == "rule"
    assert proposal.key.count(":") == 1, proposal.key
    assert not any(bad in proposal.key for bad in ("redacted", "//", "@", "5432", "3128"))
    assert is_valid_key(proposal.key)


def test_a_rule_about_a_web_address_keeps_its_host_in_the_key() -> None:
    proposal = classify_sentence("Never deploy to https://prod.blyck.io on fridays")
    assert proposal is not None and proposal.key == "rule:never-deploy-to-prod.blyck.io-on-fridays"


def test_a_web_or_ssh_address_names_its_host_not_its_scheme() -> None:
    """'deploy:https' says nothing; the host does. A bucket keeps its scheme: s3 is the
    target."""
    web = classify_sentence("I deployed to https://blyck.example.com:8443/app successfully")
    assert web is not None and web.key == "deploy:blyck.example.com", web
    ssh = classify_sentence("ssh to ssh://ops@harbour-01:2222 worked")
    assert ssh is not None and ssh.key == "ssh:harbour-01", ssh
    bucket = classify_sentence("I deployed blyck to s3://blyck-prod successfully")
    assert bucket is not None and bucket.key == "deploy:blyck", bucket


def test_a_reply_success_is_an_inference_with_lower_confidence() -> None:
    proposal = classify_sentence("All 48 tests passed.", speaker="assistant")
    assert proposal is not None
    assert proposal.source == "inference"
    assert proposal.confidence == pytest.approx(0.7)


def test_the_assistant_cannot_set_rules() -> None:
    assert classify_sentence("Never touch PROD.", speaker="assistant") is None
    assert classify_sentence("Never touch PROD.", speaker="user") is not None


def test_a_multi_step_deploy_is_a_procedure() -> None:
    proposal = classify_sentence(
        "Deployed blyck by running `npm run build` and then `aws s3 sync dist s3://blyck`, worked"
    )
    assert proposal is not None
    assert (proposal.type, proposal.key) == ("procedure", "deploy:blyck")
    assert proposal.body == "To deploy blyck: npm run build, then aws s3 sync dist s3://blyck."


def test_the_proof_is_cut_to_300_characters() -> None:
    sentence = "the build passed " + "and everything was fine " * 20
    proposal = classify_sentence(sentence)
    assert proposal is not None
    assert len(proposal.proof) <= PROOF_CHARS
    assert proposal.proof.startswith("the build passed")


def test_secrets_never_reach_key_body_or_proof() -> None:
    sentence = f"deployed with AWS_SECRET_ACCESS_KEY={SECRET} worked"
    proposal = classify_sentence(sentence)
    assert proposal is not None
    assert proposal.key == "deploy:workspace"
    for text in (proposal.key, proposal.body, proposal.proof):
        assert SECRET not in text
    assert "[REDACTED:" in proposal.proof
    token = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"
    login = classify_sentence(f"gh auth login --with-token {token} worked")
    assert login is not None and token not in login.proof and token not in login.body


def test_empty_and_trivial_input() -> None:
    assert classify_sentence("") is None
    assert classify_sentence("   ") is None
    assert classify_sentence("ok") is None
    assert classify_turn("", "") == []
    assert classify_turn("hi", "Hello! How can I help?") == []


# --- turns


def test_a_reply_saying_it_cannot_is_no_success_event() -> None:
    """Issue 16: "I can't deploy …" must not count as a use of the capability."""
    for reply in (
        "I can't deploy to staging because I don't have the credentials.",
        "I can't deploy to staging without the deploy key, although the build passed.",
        "I'm not able to restart nginx because I don't have sudo, though the config test passed.",
        "Ich kann nicht deployen, aber der Build hat funktioniert.",
    ):
        assert [p.key for p in classify_turn("deploy it", reply)] == [], reply


def test_a_turn_yields_user_and_reply_proposals_user_first() -> None:
    proposals = classify_turn(
        "I just deployed blyck to S3 with `aws s3 cp`, it worked. Also never touch PROD.",
        "Great. The build completed successfully.",
    )
    assert [(p.type, p.key, p.source) for p in proposals] == [
        ("capability", "deploy:blyck", "user"),
        ("rule", "rule:never-touch-prod", "user"),
        ("capability", "build:workspace", "inference"),
    ]


def test_a_turn_gives_at_most_three_proposals() -> None:
    user = "\n".join(
        [
            "- the build passed",
            "- all 312 tests passed",
            "- ssh into db01 works now",
            "- logged in with gh auth login successfully",
            "- never touch PROD",
        ]
    )
    proposals = classify_turn(user, "The deployment succeeded: blyck is live on S3.")
    assert len(proposals) == MAX_PROPOSALS_PER_TURN
    assert [p.key for p in proposals] == ["build:workspace", "test:workspace", "ssh:db01"]


def test_a_turn_keeps_the_first_proposal_per_key() -> None:
    proposals = classify_turn(
        "the build passed. npm said nothing. The build passed again after the rebase.",
        "The build completed successfully.",
    )
    assert [p.key for p in proposals] == ["build:workspace"]
    assert proposals[0].source == "user"
    assert proposals[0].proof == "the build passed."


def test_a_reply_echoing_the_users_event_adds_nothing() -> None:
    proposals = classify_turn(
        "I just deployed blyck to S3 with aws s3 cp and it worked.",
        "Nice, the deployment went through. The build completed successfully.",
    )
    assert [(p.key, p.source) for p in proposals] == [
        ("deploy:blyck", "user"),
        ("build:workspace", "inference"),
    ]


def test_fenced_code_and_quoted_lines_are_ignored() -> None:
    reply = (
        "Here is the log you pasted:\n\n"
        "```\n$ pytest\nall 312 tests passed\nthe deploy to prod succeeded\n```\n\n"
        "> ssh into db01 works now\n"
        "> the build passed\n\n"
        "~~~\nnpm run build passes now\n~~~\n"
    )
    assert classify_turn("", reply) == []
    user = "```\nthe build passed\n```\n> always use uv instead of pip\nthanks"
    assert classify_turn(user) == []


def test_unterminated_fence_hides_the_rest() -> None:
    assert classify_turn("", "Output:\n```\nthe build passed\nall tests passed") == []


def test_lines_and_bullets_are_separate_sentences() -> None:
    proposals = classify_turn("the build passed\n* pytest is green\n1. never touch PROD")
    assert [p.key for p in proposals] == ["build:workspace", "test:pytest", "rule:never-touch-prod"]
    assert proposals[1].proof == "pytest is green"


def test_advice_in_the_reply_is_not_a_report() -> None:
    reply = (
        "You can deploy with `aws s3 cp dist s3://blyck --recursive`. "
        "Once the build passes, the deploy job runs. "
        "Run `pytest -q`; all tests should pass. "
        "Always use uv instead of pip."
    )
    assert classify_turn("how do I deploy?", reply) == []


def test_secrets_in_a_turn_are_masked_before_splitting() -> None:
    proposals = classify_turn(f"deployed with AWS_SECRET_ACCESS_KEY={SECRET} worked. thanks!")
    assert len(proposals) == 1
    assert SECRET not in proposals[0].proof
    assert SECRET not in proposals[0].body


def test_abbreviations_do_not_split_sentences() -> None:
    proposals = classify_turn("Deploy to prod succeeded, e.g. the API is up. z. B. läuft alles")
    assert [p.key for p in proposals] == ["deploy:prod"]
    assert proposals[0].proof == "Deploy to prod succeeded, e.g. the API is up."


def test_classification_is_deterministic() -> None:
    user, reply = TYPICAL_TURN
    assert classify_turn(user, reply) == classify_turn(user, reply)


# --- a long reply (its speed and a typical turn's: bench.fact_classifier, not a test)


def test_a_long_reply_gives_one_proposal_per_key() -> None:
    """200 repeats of one event sentence make one proposal, not 200 (nor the turn's cap)."""
    proposals = classify_turn("ok", LONG_REPLY)
    assert [p.key for p in proposals] == ["build:workspace"]
