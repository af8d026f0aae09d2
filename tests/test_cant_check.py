"""Verify before claiming impossibility: cannot-claims in replies, and the capability facts
that contradict them."""

from __future__ import annotations

import pytest

from memory.cant_check import CantClaim, find_cant_claims
from memory.cant_match import match_capabilities, word_forms

# (reply, expected subject words of each claim, in order); [] = no claim.
CASES: list[tuple[str, list[tuple[str, ...]]]] = [
    # English claims
    ("I can't deploy this because I don't have credentials.", [("deploy",)]),
    ("I can't deploy blyck because I don't have credentials.", [("deploy", "blyck")]),
    ("I cannot access the database without the password.", [("database",)]),
    ("I don't have access to your server.", [("server",)]),
    ("I'm unable to push, lacking permissions.", [("push",)]),
    ("Unfortunately I can’t ssh into prod without the SSH key.", [("ssh", "prod")]),
    ("I'm not authorized to push to the main branch.", [("push", "main", "branch")]),
    ("I cannot connect to the staging database.", [("staging", "database")]),
    ("I don't currently have SSH access to the prod box.", [("ssh", "prod", "box")]),
    ("It is not possible for me to deploy without a deploy token.", [("deploy",)]),
    (
        "- I can't restart the service: no sudo rights on that host.",
        [("restart", "service", "host")],
    ),
    (
        "I won't be able to run the migration until you give me database access.",
        [("run", "migration", "database")],
    ),
    (
        "I can deploy the docs, but I can't push the release without permissions.",
        [("push", "release")],
    ),
    ("Sure! However, I can't deploy: the token is missing.", [("deploy",)]),
    (
        "Here is the plan.\n\n1. I have no access to the registry, so I cannot publish it.",
        [("registry", "publish")],
    ),
    # German claims
    ("Mangels Zugangsdaten kann ich nicht deployen.", [("deployen",)]),
    ("Ich habe keinen Zugriff auf den Server.", [("server",)]),
    (
        "Du willst auf blyck deployen? Ohne Zugangsdaten kann ich das nicht.",
        [("blyck", "deployen")],
    ),
    ("Ich kann das nicht deployen, weil mir die Zugangsdaten fehlen.", [("deployen",)]),
    ("Das kann ich leider nicht, da ich keinen SSH-Zugang habe.", [("ssh",)]),
    ("Ich kann nicht auf die Datenbank zugreifen.", [("datenbank",)]),
    ("Leider habe ich keinen Datenbankzugriff.", [("datenbank",)]),
    ("Es ist mir nicht möglich, mich am Server anzumelden.", [("server",)]),
    ("Ich kann nicht pushen, keine Berechtigung.", [("pushen",)]),
    # look-alikes that are not claims
    ("I can't recommend that.", []),
    ("You can't deploy on Fridays.", []),
    ("I can deploy it.", []),
    ("If you don't have credentials, ask your admin.", []),
    ("```bash\n# I can't deploy without credentials\necho 'no access'\n```", []),
    ("> I can't deploy without credentials\n\nThat is what the log says.", []),
    ("I cannot stress enough that the password must stay secret.", []),
    ("I don't have a clue what credentials you need.", []),
    ("I don't have a strong opinion on the deploy tooling.", []),
    ("I don't have to access the server for that.", []),
    ("Can't I access the server?", []),
    ("If I can't access the server, I'll tell you.", []),
    ("We can't deploy without credentials on Fridays.", []),
    ("I can now access the server.", []),
    ("I couldn't find any credentials in the repo.", []),
    ("I can't wait to deploy this!", []),
    ("Du kannst freitags nicht deployen.", []),
    ("Wenn du keine Zugangsdaten hast, frag den Admin.", []),
    ("Ich kann das nicht empfehlen.", []),
    ("Ich kann das deployen.", []),
    ("Du hast keinen Zugriff, aber ich kann das machen.", []),
    ("Du hast keinen Zugriff, ich schon.", []),
    ("Ich weiß nicht, ob ich das kann.", []),
]


@pytest.mark.parametrize(("reply", "expected"), CASES, ids=[case[0][:48] for case in CASES])
def test_find_cant_claims(reply: str, expected: list[tuple[str, ...]]) -> None:
    assert [claim.subject_words for claim in find_cant_claims(reply)] == expected


def test_the_table_is_big_enough() -> None:
    assert len(CASES) >= 20
    assert sum(1 for _reply, expected in CASES if expected) >= 10
    assert sum(1 for _reply, expected in CASES if not expected) >= 10


def test_claim_holds_its_sentence() -> None:
    reply = "Let me check. I can deploy the docs, but I can't push the release without permissions."
    assert find_cant_claims(reply) == [
        CantClaim("I can't push the release without permissions.", ("push", "release"))
    ]


def test_every_claim_of_a_reply_is_found_in_order() -> None:
    reply = (
        "I don't have access to your server. Also, I cannot access the database without the "
        "password.\n\nIch kann nicht pushen, keine Berechtigung."
    )
    assert [claim.subject_words for claim in find_cant_claims(reply)] == [
        ("server",),
        ("database",),
        ("pushen",),
    ]


def test_inline_code_names_the_subject_but_code_blocks_are_ignored() -> None:
    reply = "I can't run `just deploy-blyck` without credentials.\n```\nI can't access prod\n```"
    assert [claim.subject_words for claim in find_cant_claims(reply)] == [
        ("run", "deploy", "blyck")
    ]


def test_empty_reply() -> None:
    assert find_cant_claims("") == []


# ------------------------------------------------------------------------------ matching

CAPABILITIES = [
    ("ssh:prod", "SSH into prod works with the key in ~/.ssh/prod."),
    ("deploy:blyck", "Deployment of blyck runs with `just deploy-blyck`; it works."),
    ("db:staging", "psql to the staging Datenbank works via the bastion."),
    ("git:push", "The assistant can push to origin over HTTPS."),
    ("mail:send", "Mails go out via the SMTP relay."),
]


def keys_for(reply: str) -> list[str]:
    return match_capabilities(find_cant_claims(reply), CAPABILITIES)


@pytest.mark.parametrize(
    ("reply", "keys"),
    [
        # by key part, English word forms
        ("I can't deploy this because I don't have credentials.", ["deploy:blyck"]),
        ("I'm unable to do the deployment, lacking permissions.", ["deploy:blyck"]),
        ("I can't keep deploying without an access token.", ["deploy:blyck"]),
        ("I'm unable to push, lacking permissions.", ["git:push"]),
        ("Unfortunately I can't ssh into prod without the SSH key.", ["ssh:prod"]),
        # by key part, German word forms
        ("Mangels Zugangsdaten kann ich nicht deployen.", ["deploy:blyck"]),
        ("Ich kann das Deployment nicht starten, mir fehlen die Rechte.", ["deploy:blyck"]),
        ("Ich kann nicht pushen, keine Berechtigung.", ["git:push"]),
        # database / db / Datenbank
        ("I cannot access the database without the password.", ["db:staging"]),
        ("Ich kann nicht auf die Datenbank zugreifen.", ["db:staging"]),
        ("I can't connect to the DB, I have no credentials.", ["db:staging"]),
        # by body word only
        ("I can't reach the bastion without credentials.", ["db:staging"]),
        ("I don't have access to the SMTP relay.", ["mail:send"]),
        # unrelated subjects
        ("I don't have access to your calendar.", []),
        ("Ich habe keinen Zugriff auf deinen Kalender.", []),
        ("I can't recommend that.", []),
    ],
)
def test_match_capabilities(reply: str, keys: list[str]) -> None:
    assert keys_for(reply) == keys


def test_key_part_matches_rank_above_body_matches() -> None:
    capabilities = [
        ("backup:nightly", "The nightly backup runs before the deploy window."),
        ("deploy:blyck", "just deploy-blyck works."),
    ]
    claims = find_cant_claims("I can't deploy without credentials.")
    assert match_capabilities(claims, capabilities) == ["deploy:blyck", "backup:nightly"]


def test_more_overlap_ranks_first_and_keys_are_not_repeated() -> None:
    capabilities = [
        ("ssh:staging", "SSH works."),
        ("ssh:prod", "SSH into prod works."),
        ("ssh:prod", "A repeated key."),
    ]
    claims = find_cant_claims("I can't ssh into prod without the SSH key.")
    assert match_capabilities(claims, capabilities) == ["ssh:prod", "ssh:staging"]


def test_best_claim_counts_for_each_capability() -> None:
    claims = [CantClaim("a", ("calendar",)), CantClaim("b", ("push", "origin"))]
    assert match_capabilities(claims, CAPABILITIES) == ["git:push"]


def test_nothing_to_match() -> None:
    assert match_capabilities([], CAPABILITIES) == []
    assert match_capabilities(find_cant_claims("I can't push without access."), []) == []
    assert (
        match_capabilities([CantClaim("Ohne Zugangsdaten kann ich das nicht.", ())], CAPABILITIES)
        == []
    )


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("deploy", "deploying"),
        ("deploy", "deployment"),
        ("deploy", "deployed"),
        ("deploy", "deployen"),
        ("deploy", "Deployment"),
        ("push", "pushen"),
        ("push", "pushing"),
        ("database", "db"),
        ("database", "Datenbank"),
        ("databases", "Datenbanken"),
        ("server", "servern"),
        ("repo", "repository"),
    ],
)
def test_word_forms_meet(a: str, b: str) -> None:
    assert word_forms(a) & word_forms(b)


@pytest.mark.parametrize(("a", "b"), [("deploy", "push"), ("ssh", "server"), ("db", "deb")])
def test_different_words_do_not_meet(a: str, b: str) -> None:
    assert not word_forms(a) & word_forms(b)
