"""The success-event classifier: finished chat turns → fact proposals for the approval gate.

After each turn, `classify_turn(user_text, reply_text)` looks for two things and returns at
most three `FactProposal`s (deduplicated by key, the first wins; the user's sentences come
before the reply's, and a reply event of a kind already proposed in the turn is dropped as
an echo: "Nice, the deployment went through" after the user's deploy report adds nothing):

1. **Success events**: a deployment, a build, a test run, an SSH login, a database
   connection or an authentication that *worked* → type ``capability`` (a deploy described
   with two or more commands, or one command and "then"/"dann", → ``procedure``).
2. **Standing rules from the user**: "never touch PROD", "always use uv instead of pip",
   "nie direkt auf main pushen" → type ``rule``.

No model, stdlib ``re`` only, deterministic, English and German. ``python -m
bench.fact_classifier`` scores it on the labelled table it shares with the tests (336
sentences, 175 positive): precision 0.994, recall 0.943; on the last batch, written and
labelled before it was first run, precision 0.950 and recall 0.826 at first (1.000 / 0.913
after fixing the two bugs it showed). The two held-out batches before it scored 0.59 / 0.59
and 0.68 / 0.71 when first run, mostly the right event under another key: expect the key,
not the event, to be what a new phrasing gets wrong. Speed (Python 3.11, AMD EPYC, 2 CPUs):
p50 56 µs / p95 107 µs per sentence, 0.37 ms for a typical 535-character turn.

How a sentence is read
----------------------
`classify_sentence` masks secrets first (`mask_secrets`; `classify_turn` masks each whole
message before splitting it): key, body and proof are built from the masked text, so no
secret reaches a proposal. Then, in order:

- **Questions are silent**: a trailing ``?``, or an English/German question opening without
  one ("did the deploy work", "is ssh to db01 working now", "Hat das Deployment geklappt",
  "Läuft der Build durch"). "Was able to …" / "Could finally …" are statements.
- **Rules** (user only; the assistant cannot set rules). A rule is an imperative with a
  standing marker, after optional openers (please/bitte, remember:, rule:, from now on,
  going forward, ab jetzt, ab sofort …) and an optional leading condition ("If the tests
  fail, never deploy"):

  - English ``always|never|don't|do not|must not`` + a verb in base form, optionally after
    "you/we must|should|need to|have to" ("You must never force-push …"), or a standing
    opener + a bare imperative ("From now on, run the linter before every commit");
  - German ``immer|nie|niemals|stets|nicht|keine …`` + a clause that ends in a lower-case
    infinitive ("immer pnpm verwenden", "niemals die PROD-Datenbank anfassen", "nie wieder
    ohne Backup migrieren"), or an imperative verb + the marker ("Verwende immer uv",
    "Pushe nie ohne Review auf main").

  Frequency words that are not imperatives stay silent: a subject first ("it always
  crashes", "I never liked Java", "es stürzt immer ab", "We never deploy on Fridays" -- a
  team convention told as a habit is not taken as a rule), a word that is no base-form verb
  ("never worked", "always crashes", "never seen", "always nice", "always the same"), fixed
  phrases ("never mind", "don't worry", "don't know", "immer noch", "immer wieder").
  **Requests about the assistant's own style are not project rules** and stay silent
  ("always answer in German", "never use emojis", "Antworte immer auf Deutsch", "can you
  always answer in English?"): they say how to talk, not how to work on the project, and
  belong in the persona/system prompt, not in the fact drawer. One-off imperatives without
  a standing marker ("use uv for this"), noun-phrase rules ("Keine Force-Pushes auf main")
  and German "wir sollten immer …" are silent too.
- **Success events**. A sentence is a success report when a *success predicate* stands near
  an *event keyword* of a kind that predicate fits. Keywords are matched on words, and
  hyphens split words, so "SSH-Zugang", "npm-Build" and "Staging-Datenbank" carry theirs:

  ======  ==========================================  =====================================
  kind    keywords                                    predicates (besides the generic ones)
  ======  ==========================================  =====================================
  deploy  deploy*, deployment, redeploy, rollout,     generic only
          roll(ed) out, released, published,
          shipped, veröffentlicht, ausgerollt
  build   build, built, compile*, kompilier*,         passed/passes, "are passing", green,
          packaging, bundle, gebaut, "baut wieder"    grün, "builds"/"compiles"/"baut" at
                                                      the end or + now/fine/again/with
  test    test(s), suite, …tests (Integrationstests)  passed/passes, "are passing", green,
          pytest, jest, vitest, tox, CI, checks …     grün, bestanden
  ssh     ssh, scp, sftp, mosh                        connected, logged in, reachable,
                                                      verbunden, eingeloggt, erreichbar, steht
  db      database, db, psql, postgres, mysql,        connected, verbunden, steht, reachable
          redis …, Datenbank…
  auth    login, log(ged) in, sign(ed) in, auth,      logged in, signed in, authenticated,
          authenticat*, token, sso, credentials,      eingeloggt, angemeldet
          anmeld*, angemeldet, einlogg*, eingeloggt
  ======  ==========================================  =====================================

  Not keywords: a word inside a joined name with a digit ("ci-runner-7", "test-db-2"), a
  build/test/deploy word before a machine noun ("the build server", "Build-Server", "test
  host"), and "deploy key(s)/token(s)" (SSH keys). Generic predicates: works/worked/working
  (not "working on"), succeeded, successful(ly) (not attributive: "a successful deploy
  prints …", "successful builds are cached"), "was a success", went through/fine/well,
  all good, did the trick, was able to, managed to, can/could now|finally|again, is live,
  ran fine, completed now/without …; German geklappt, klappt, funktioniert, erfolgreich,
  ging … durch, läuft/lief … durch|sauber|wieder, durchgelaufen, geht jetzt|wieder, konnte,
  kann … jetzt, ist live. Each predicate is paired with the nearest keyword of a fitting
  kind: same clause first (clauses split at , ; : dashes and but/aber), then keywords
  outside inline code, then distance. So "I built a feature and the tests pass" is a test
  event, "I deployed blyck to S3, it worked" pairs "worked" with "deployed", and in
  "Deployed blyck by running `npm run build` …, worked" the deploy wins over the command's
  "build". When the sentence names SSH or a database, login words count as that kind.

  Silent cases, checked before a proposal is made:

  - *failure anywhere in the sentence* (failed, broke, error, crash, denied, refused, timed
    out, hangs, flaky, red, wrong, except, fehlgeschlagen, kaputt, Fehler, stürzt, rot …):
    one failure silences the whole sentence, so "the deploy worked, but then the site
    crashed" is silent, and so is "tests passed, the deploy failed" (a lost success is
    cheaper than a wrong one). "no errors", "without problems", "0 failed", "ohne Fehler",
    "fehlerfrei" are not failures;
  - *negation anywhere in the sentence* (not, n't, never, no, nothing, nicht, kein, nie):
    "the deploy didn't work", "hat nicht geklappt", "klappt nicht" (and, at a cost, "can't
    believe the deploy worked");
  - *hypothesis, plan, hedge or check in the clauses from the keyword to the predicate*
    (if, when, once, until, whether, will, 'll, would, should, could, might, may, must,
    going to, want/need/have to, try to, hope, think, probably, maybe, seems, looks like,
    tomorrow, later, next, some, most, almost, sometimes, check that, make sure, verify,
    "works like this"/"as follows"; wenn, falls, sobald, ob, wird, werde, würde, sollte,
    könnte, muss, will, vielleicht, hoffentlich, wahrscheinlich, morgen, später, teilweise,
    manchmal, prüfen …): "if the build passes …", "wenn der Build durchläuft", "I hope the
    login works", "the tests were passing until yesterday". A plan in another clause does
    not undo a report: "tests passed, I'll deploy tomorrow" is a test event;
  - *no subject*: a predicate without an event keyword ("thanks, that worked", "Danke, hat
    geklappt!", "it works on my machine") and trivial one-offs (reading a file, "I ran the
    tests", "I opened the README") never propose: each proposal costs the user an approval,
    and approval fatigue kills the gate. SSH, database and auth events also need a named
    host, database or tool/service (below), else they are silent ("ssh works for everyone
    else"); "I deployed blyck to S3" with no word that it worked is silent too;
  - *the assistant's reply*: only success reports count, never rules, and only observed
    results: a reply sentence that addresses the reader (you/your/du: "you can deploy with
    …", "Once you are logged in …"), says can/kann/können, opens with an imperative ("Run
    `pytest` …") or hedges anywhere is advice, not a report. Reply proposals get
    ``source="inference"`` and confidence 0.7.

Key scheme
----------
Keys are ``kind:subject`` through `normalise_key`; the subject is the most specific name in
the sentence, as typed (lower-cased), with ``production``/``produktion``/``live`` → ``prod``
and ``stage`` → ``staging``. A generic head noun is dropped ("the staging server" →
staging, "Staging-Datenbank" → staging, "den Build-Server" → build); capitalised words run on
("the Raspberry Pi" → raspberry-pi).

=========  =================================================  ==============================
kind       subject, first found                               examples
=========  =================================================  ==============================
deploy     the project ("deployment of blyck", "deployed /    ``deploy:blyck``,
           shipped / pushed blyck", "the blyck deploy",       ``deploy:s3``, ``deploy:prod``,
           "blyck is deployed", "habe blyck … deployt");      ``deploy:vercel``,
           else the destination (to/into/on/nach/auf/zu X);   ``deploy:workspace``
           else the tool (``vercel deploy``); else
           ``workspace``
build      the build tool next to the keyword, in a command   ``build:npm``, ``build:cargo``,
           or after with/mit (npm, cargo, docker, uv,         ``build:docker``,
           gradle, jenkins …); else the word before "build"   ``build:frontend``,
           ("the frontend build"); else ``workspace``         ``build:workspace``
test       the test runner (pytest, jest, tox, CI …) or a     ``test:pytest``, ``test:npm``,
           build tool right before "test" (npm test, cargo    ``test:integration``,
           test); else the word before "tests"/"suite"        ``test:e2e``, ``test:ci``,
           ("integration tests", "Integrationstests", "e2e    ``test:workspace``
           suite") or after "tests for"; else ``workspace``
ssh        the host: ``user@db01``, ``ssh db01``, into/to/    ``ssh:db01``, ``ssh:staging``,
           auf/zu X, else a name with a digit or a dot        ``ssh:github.com``
           ("db01 is reachable over ssh"); none → silent
db         a name like ``analytics-db``; "X database",        ``db:staging``, ``db:db02``,
           "X-Datenbank", "database X" (X with a digit,       ``db:analytics-db``,
           ``_``, ``.`` or ``-``); to/on/zur X; a name with   ``db:postgres``
           a digit; else the engine (psql → postgres); none
           → silent
auth       the tool of a command (``gh auth login``), "X      ``auth:gh``, ``auth:aws``,
           login" / "X auth login" / "X sso login", a known   ``auth:docker``,
           tool or service (gh, github, aws, az, gcloud,      ``auth:grafana``
           docker, npm, vault …), "login to <Service>", a
           registry domain; none → silent
rule       ``rule:`` + the words of the leading condition     ``rule:never-touch-prod``,
           and of the imperative's first clause (a reason     ``rule:immer-pnpm-verwenden``,
           after a comma does not change the key; openers,    ``rule:if-tests-fail-never-
           articles, scope words, apostrophes dropped;        deploy``
           don't/do not/must not → never), at most 8 words
=========  =================================================  ==============================

``workspace`` stands for "this workspace's project": build, test and deploy without a name
are about the project at hand (the fact's scope is the workspace), while a host, database
or login without a name tells nothing worth keeping. One key per thing: a later proposal
with the same key is the same fact (a deploy ``procedure`` and a deploy ``capability`` of
blyck share ``deploy:blyck``).

Proposal fields
---------------
``body`` is one English sentence ("This machine can deploy blyck to S3 (aws s3 cp).",
"Rule: never touch PROD."), masked with `mask_secrets`; ``proof`` the sentence it came
from (stripped, masked, whitespace collapsed, at most 300 characters); ``source`` ``user``
for the user's sentences and ``inference`` for the reply's; ``confidence`` 0.9 (user) or
0.7 (reply); ``scope`` ``workspace``, except a rule that says globally/everywhere/in every
project/überall/in allen Projekten (``global``).

Turns: fenced code blocks (``` and ~~~, an unclosed fence to the end) and quoted lines
(``> …``) are skipped in both the user's message and the reply (pasted logs and quotations
are not statements); the rest is split into lines, list bullets and heading marks are
dropped, and lines are split into sentences after . ! ? … (not after e.g./z. B./etc. or a
single letter). Sentences over 600 characters are skipped (pastes, not statements).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal

from memory.fact_types import FactError, FactProposal, FactType, Scope, normalise_key
from memory.secret_masking import mask_secrets

__all__ = ["MAX_PROPOSALS_PER_TURN", "PROOF_CHARS", "classify_sentence", "classify_turn"]

Speaker = Literal["user", "assistant"]
Kind = Literal["deploy", "build", "test", "ssh", "db", "auth"]

MAX_PROPOSALS_PER_TURN = 3
PROOF_CHARS = 300
MAX_SENTENCE_CHARS = 600
RULE_KEY_WORDS = 8
RULE_KEY_CHARS = 70
USER_CONFIDENCE = 0.9
REPLY_CONFIDENCE = 0.7
WORKSPACE = "workspace"

_I = re.IGNORECASE


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


# ----------------------------------------------------------------------------- word lists

_STOP = _words(
    """
    the a an this that these those it its my our your their his her them me us we i you all
    every everything again now just finally successfully also still yesterday today tonight
    tomorrow already then there here with without via using to into onto on in at from for of
    by and or but is are was were be been has have had did does do works worked working work
    succeeded passed passes fine well properly correctly smoothly first last new latest whole
    entire full local locally manually automatically ok okay too as so after before over
    through live up out some most any both one two ever right went goes ran runs took finished
    completed green grün like success successful done good great nice perfect
    monday tuesday wednesday thursday friday saturday sunday morning evening night week time
    try attempt charm
    der die das den dem des ein eine einen einem einer es ich wir mich uns mein meine meinen
    unser unsere unseren jetzt gerade eben endlich erfolgreich heute gestern wieder auch noch
    schon dann mit nach auf zu zur zum von vom über per hat haben habe hab ist sind war wurde
    geklappt klappt funktioniert alles und oder aber bei im am für durch sauber direkt
    redacted
    """
)
_GENERIC = _words(
    """
    app application site website page service services code changes change stuff project
    thing things server servers host machine box vm instance database databases db datenbank
    environment env script scripts pipeline repo repository build builds deploy deployment
    release version it laptop computer bucket cluster connection verbindung zugang access
    login tests test suite image container artifact artifacts package packages anwendung
    projekt seite dienst rechner maschine umgebung key keys agent tunnel config client cli job
    jobs run runs
    schlüssel
    """
)
_ENV = {"production": "prod", "produktion": "prod", "live": "prod", "stage": "staging"}
_ENV_WORDS = frozenset({"prod", "production", "produktion", "staging", "stage", "dev", "live"})
_ENGINES = {
    "psql": "postgres",
    "postgres": "postgres",
    "postgresql": "postgres",
    "pg": "postgres",
    "pgcli": "postgres",
    "mysql": "mysql",
    "mariadb": "mariadb",
    "sqlite": "sqlite",
    "sqlite3": "sqlite",
    "mongo": "mongo",
    "mongosh": "mongo",
    "mongodb": "mongo",
    "redis": "redis",
    "redis-cli": "redis",
    "duckdb": "duckdb",
    "clickhouse": "clickhouse",
}
_BUILD_TOOLS = _words(
    """
    npm pnpm yarn bun cargo go gradle gradlew mvn maven make cmake ninja bazel docker podman
    uv pip poetry hatch tsc webpack vite esbuild rollup dotnet msbuild xcodebuild swift mix
    sbt meson nix python gcc clang rustc just flit pdm jenkins circleci travis buildkite
    drone
    """
)
_TEST_RUNNERS = _words(
    """
    pytest unittest tox nox jest vitest mocha jasmine karma rspec minitest phpunit playwright
    cypress ctest bats behave ci jenkins circleci travis buildkite
    """
)
_DEPLOY_TOOLS = _words(
    """
    aws gcloud az kubectl helm terraform ansible vercel netlify flyctl fly heroku wrangler
    rsync scp docker podman gh firebase serverless sls pulumi cdk capistrano twine
    """
)
_AUTH_TOOLS = _words(
    """
    gh github gitlab glab aws az azure gcloud google docker podman npm pypi twine vault okta
    heroku vercel netlify fly flyctl huggingface hf op bw jfrog artifactory kubectl bitbucket
    """
)

# --------------------------------------------------------------------------- text helpers

_APOSTROPHES = str.maketrans({"’": "'", "‘": "'", "´": "'", "ʼ": "'"})
_REDACTED_RE = re.compile(r"\[REDACTED:[^\]]*\]")
_SPACES_RE = re.compile(r"\s+")
_BULLET_RE = re.compile(r"^\s*(?:[-*+•·]|\d{1,3}[.)]|#{1,6})\s+")
_CODE_SPAN_RE = re.compile(r"`([^`\n]+)`")
_TOKEN_RE = re.compile(r"[^\W_][\w.@/+:'-]*")
_VERSION_RE = re.compile(r"^v?\d+(?:[.\-]\w+)*$", _I)
_CLAUSE_BREAK_RE = re.compile(
    r"[,;:](?=\s|$)|[–—]|\s-\s"
    r"|\b(?:but|though|although|however|whereas|while|aber|jedoch|doch|während)\b",
    _I,
)


def _tokens(text: str, start: int = 0, end: int | None = None) -> list[tuple[str, int]]:
    """Words (with dots, hyphens, @, / inside) and their offsets, trailing punctuation off."""
    found: list[tuple[str, int]] = []
    for match in _TOKEN_RE.finditer(text, start, len(text) if end is None else end):
        word = match.group(0).rstrip(".:/-'")
        if word:
            found.append((word, match.start()))
    return found


def _clean_name(token: str) -> str:
    """``s3://bucket`` → ``s3``; ``Staging-Datenbank`` → ``Staging``; ``deploy@db01`` → db01."""
    word = token.strip(".:/-'")
    if "://" in word:
        word = word.split("://", 1)[0]
    if "@" in word:
        word = word.rsplit("@", 1)[1]
    parts = word.split("-")
    while len(parts) > 1 and parts[-1].lower() in _GENERIC:
        parts.pop()
    return "-".join(parts).strip(".:/-'")


def _is_name(token: str) -> bool:
    """A word that can name a project, host, database or target."""
    low = token.lower()
    return (
        bool(low)
        and low not in _STOP
        and low not in _GENERIC
        and not _VERSION_RE.match(low)
        and len(low) <= 40
        and any(c.isalnum() for c in low)
    )


def _key_word(name: str) -> str:
    low = name.lower()
    return _ENV.get(low, low)


def _first_word_of(command: str) -> str:
    words = command.strip().split()
    if not words:
        return ""
    first = words[0].lower().removeprefix("./")
    if first in {"sudo", "npx", "uvx", "pipx"} and len(words) > 1:
        first = words[1].lower()
    if first in {"python", "python3"} and len(words) > 2 and words[1] == "-m":
        return words[2].lower()
    return first


# --------------------------------------------------------------------------- the patterns

# Event keywords, matched on words (letters and digits; hyphens, underscores and apostrophes
# split words, so "SSH-Zugang", "npm-Build" and "re-deploy" carry their keyword).
_KEYWORD_WORDS: dict[str, Kind] = {
    **dict.fromkeys(
        _words("""
        deploy deploys deployed deploying deployment deployments deployt deployen deploye
        redeploy redeploys redeployed redeploying rollout ausgerollt released publish published
        publishing veröffentlicht shipped
        """),
        "deploy",
    ),
    **dict.fromkeys(
        _words("""
        build builds built building compile compiles compiled compiling compilation packaging
        packaged bundle bundled bundling gebaut
        """),
        "build",
    ),
    **dict.fromkeys(
        _words("""
        test tests suite testsuite testlauf testläufe specs pytest unittest tox nox jest vitest
        mocha rspec phpunit playwright cypress ci checks
        """),
        "test",
    ),
    **dict.fromkeys(_words("ssh sshing sshd scp sftp mosh"), "ssh"),
    **dict.fromkeys(
        _words("""
        database databases db dbs psql postgres postgresql mysql mariadb sqlite sqlite3 mongo
        mongodb mongosh redis duckdb clickhouse
        """),
        "db",
    ),
    **dict.fromkeys(
        _words("login auth token sso oauth credential credentials angemeldet eingeloggt"), "auth"
    ),
}
_KEYWORD_PREFIXES: tuple[tuple[str, Kind], ...] = (
    ("datenbank", "db"),
    ("kompilier", "build"),
    ("authenticat", "auth"),
    ("authori", "auth"),
    ("authentifizier", "auth"),
    ("anmeld", "auth"),
    ("einlogg", "auth"),
)
_KEYWORD_PREFIX_HEADS = tuple(prefix for prefix, _ in _KEYWORD_PREFIXES)
_KEYWORD_PHRASES: dict[str, tuple[tuple[str, Kind], ...]] = {
    "roll": (("out", "deploy"),),
    "rolled": (("out", "deploy"),),
    "log": (("in", "auth"), ("into", "auth")),
    "logged": (("in", "auth"), ("into", "auth")),
    "logging": (("in", "auth"), ("into", "auth")),
    "sign": (("in", "auth"),),
    "signed": (("in", "auth"),),
    "signing": (("in", "auth"),),
}
_LOGIN_WORDS = _words("login angemeldet eingeloggt log logged logging sign signed signing")
_LOGIN_PREFIXES = ("anmeld", "einlogg")
_NOT_AFTER_DEPLOY = _words("key keys token tokens")  # a deploy key is an SSH key
_WORK_KINDS: frozenset[Kind] = frozenset(("deploy", "build", "test"))
_PLACE_NOUNS = _words(
    """
    server servers host hosts machine maschine rechner box vm node agent daten data ordner
    folder directory dir verzeichnis skript script log logs
    """
)
_AFTER_BAUT = _words("jetzt wieder durch sauber")  # "baut" alone is not about a build
_KEYWORD_TOKEN_RE = re.compile(r"[^\W_]+")


@dataclass(frozen=True, slots=True)
class _Keyword:
    kind: Kind
    start: int
    end: int
    login: bool  # a login word ("logged in", "eingeloggt"): SSH's or a database's if named


def _in_identifier(text: str, start: int, end: int) -> bool:
    """Whether the word is part of a joined name with a digit (``ci-runner-7``, ``build_v2``)."""
    left, right = start, end
    while left > 0 and (text[left - 1].isalnum() or text[left - 1] in "-_."):
        left -= 1
    while right < len(text) and (text[right].isalnum() or text[right] in "-_."):
        right += 1
    joined = text[left:right].strip("-_.")
    return joined != text[start:end] and any(c.isdigit() for c in joined)


def _keywords(text: str) -> list[_Keyword]:
    """The event keywords of a sentence, in order."""
    tokens = [(m.group(0).lower(), m.start(), m.end()) for m in _KEYWORD_TOKEN_RE.finditer(text)]
    found: list[_Keyword] = []
    for index, (word, start, end) in enumerate(tokens):
        following = tokens[index + 1][0] if index + 1 < len(tokens) else ""
        kind = _KEYWORD_WORDS.get(word)
        if kind is None:
            for rest, phrase_kind in _KEYWORD_PHRASES.get(word, ()):
                if following == rest:
                    kind, end = phrase_kind, tokens[index + 1][2]
                    break
        if kind is None:
            if word == "baut" and following in _AFTER_BAUT:
                kind = "build"
            elif len(word) >= 8 and word.endswith("tests"):
                kind = "test"
            elif word.startswith(_KEYWORD_PREFIX_HEADS):
                kind = next(k for prefix, k in _KEYWORD_PREFIXES if word.startswith(prefix))
        if kind is None or (kind == "deploy" and following in _NOT_AFTER_DEPLOY):
            continue
        if _in_identifier(text, start, end):
            continue  # "ci-runner-7", "test-db-2": a name that contains a keyword
        if kind in _WORK_KINDS and following in _PLACE_NOUNS:
            continue  # "the build server", "Build-Server", "test host": a machine
        login = word in _LOGIN_WORDS or word.startswith(_LOGIN_PREFIXES)
        found.append(_Keyword(kind, start, end, login))
    return found


_ALL_KINDS: frozenset[Kind] = frozenset(("deploy", "build", "test", "ssh", "db", "auth"))
_BUILD_TEST: frozenset[Kind] = frozenset(("build", "test"))
_REMOTE: frozenset[Kind] = frozenset(("ssh", "db"))

_PREDICATES: tuple[tuple[re.Pattern[str], frozenset[Kind]], ...] = (
    (
        re.compile(
            r"\bwork(?:s|ed)\b|\bworking\b(?!\s+on\b)|\bsucceed(?:s|ed)?\b"
            r"|\bsuccessful\b(?<!\ba successful)(?<!\ban successful)(?<!\bany successful)"
            r"(?<!\bevery successful)(?<!\beach successful)"
            r"(?!\s+(?:deploy|build|login|run|test|connection|release|attempt)\w*)"
            r"|\bsuccessfully\b|\b(?:was|is|were|are|been)\s+(?:a\s+)?(?:\w+\s+)?success\b"
            r"|[:–—]\s*success\b|\bwent\s+(?:through|fine|well|smoothly|ok(?:ay)?|great)\b"
            r"|\bgoes\s+through\b|\ball\s+good\b|\bdid\s+the\s+trick\b"
            r"|\b(?:was|were)\s+able\s+to\b|\bmanaged\s+to\b"
            r"|\b(?:can|could)\s+(?:now|finally|again)\b|\bis\s+(?:now\s+)?live\b"
            r"|\b(?:is|are|was|were|ran|runs)\s+(?:all\s+)?(?:fine|smoothly|cleanly)\b"
            r"|\bcomplet(?:es|ed)\s+(?:now|fine|cleanly|without|again)\b",
            _I,
        ),
        _ALL_KINDS,
    ),
    (
        re.compile(
            r"\bgeklappt\b|\bklapp(?:t|te|ten|en)\b|\bfunktionier(?:t|te|ten)\b|\berfolgreich\b"
            r"|\bging\s+(?:\S+\s+){0,3}?durch\b|\bdurchgelaufen\b|\bdurchl(?:ä|a)uft\b"
            r"|\b(?:l(?:ä|a)uft|laufen|lief(?:en)?)\s+(?:\S+\s+){0,3}?"
            r"(?:durch|sauber|fehlerfrei|wieder|stabil)\b"
            r"|\bgeht\s+(?:jetzt|wieder|endlich)\b"
            r"|\bkann\s+(?:\S+\s+){0,2}?(?:jetzt|endlich|wieder)\b"
            r"|\bkonnte(?:n|st)?\b|\bist\s+(?:jetzt\s+)?live\b",
            _I,
        ),
        _ALL_KINDS,
    ),
    (
        re.compile(
            r"\bpass(?:es|ed)?\b|\bgreen\b|\bgrün\b|\bbestanden\b"
            r"|\b(?:are|is|was|were|been|'re|'s|now|all|still|keep|kept)\s+passing\b"
            r"|\b(?:builds|compiles|kompiliert|baut)(?=\s*(?:now|fine|again|cleanly|clean|locally"
            r"|without|with|jetzt|wieder|sauber|fehlerfrei|ohne|mit|$|[.!]))",
            _I,
        ),
        _BUILD_TEST,
    ),
    (
        re.compile(
            r"\bconnect(?:ed|s)\b|\breachable\b|\bverbunden\b|\berreichbar\b|\bsteht\b"
            r"|\bgot\s+in\b|\breingekommen\b",
            _I,
        ),
        _REMOTE,
    ),
    (
        re.compile(
            r"\blogged\s+in(?:to)?\b|\bsigned\s+in\b|\bauthenticated\b|\bauthori[sz]ed\b"
            r"|\beingeloggt\b|\bangemeldet\b|\bauthentifiziert\b",
            _I,
        ),
        frozenset(("auth", "ssh")),
    ),
)


class _Lexicon:
    """Single words, word prefixes and suffixes, and multi-word phrases, matched on the
    lower-cased words of a text: several times faster than one regex alternation of the same
    words, which `re` tries word by word at every position."""

    __slots__ = ("_phrases", "_prefixes", "_suffixes", "_unless_next", "_words")

    def __init__(
        self,
        words: str,
        *,
        prefixes: str = "",
        suffixes: str = "",
        phrases: str = "",
        unless_next: dict[str, str] | None = None,
    ) -> None:
        self._words = _words(words)
        self._prefixes = tuple(prefixes.split())
        self._suffixes = tuple(suffixes.split())
        by_first: dict[str, list[tuple[str, ...]]] = {}
        for phrase in phrases.split(","):
            parts = tuple(phrase.split())
            if parts:
                by_first.setdefault(parts[0], []).append(parts[1:])
        self._phrases = {first: tuple(rests) for first, rests in by_first.items()}
        self._unless_next = {word: _words(nexts) for word, nexts in (unless_next or {}).items()}

    def found_in(self, words: list[str]) -> bool:
        prefixes, suffixes = self._prefixes, self._suffixes
        for index, word in enumerate(words):
            if (
                word in self._words
                or (prefixes and word.startswith(prefixes))
                or (suffixes and word.endswith(suffixes))
            ):
                return True
            if word in self._phrases:
                for rest in self._phrases[word]:
                    if tuple(words[index + 1 : index + 1 + len(rest)]) == rest:
                        return True
            if word in self._unless_next:
                following = words[index + 1] if index + 1 < len(words) else ""
                if following not in self._unless_next[word]:
                    return True
        return False


_WORD_RE = re.compile(r"[\w']+")


def _lower_words(text: str, start: int = 0, end: int | None = None) -> list[str]:
    return _WORD_RE.findall(text.lower(), start, len(text) if end is None else end)


_NEUTRAL_RE = re.compile(
    r"\b(?:no|zero|0|without(?:\s+any)?|keine?n?|ohne(?:\s+jede[n]?)?)\s+(?:errors?|failures?"
    r"|failed|failing|problems?|issues?|warnings?|hiccups?|fehlern?|probleme?n?|warnungen?)\b"
    r"|\bfehlerfrei\b",
    _I,
)
_FAILURE = _Lexicon(
    """
    fail fails failed failing failure failures broke broken breaks breaking crash crashes
    crashed crashing error errors errored exception exceptions traceback denied refused
    rejected timeout timeouts timedout hang hangs hung stuck red abort aborted aborts aborting
    flaky unable unreachable forbidden unauthorized unauthorised wrong except excepting
    fehlgeschlagen kaputt abgestürzt abgesturzt stürzt sturzt absturz gescheitert scheitert
    rot verweigert abgelehnt hängt hangt klemmt zickt außer ausser
    """,
    prefixes="segfault fehler",
    phrases="timed out, times out, timing out, time out, apart from, schlägt fehl, schlagt fehl,"
    " schlug fehl",
)
_NEGATION = _Lexicon(
    """
    not no nope never cannot nor neither nothing nobody nowhere nicht nichts nie niemals kein
    keine keinen keinem keiner
    """,
    suffixes="n't",
)
_HEDGE = _Lexicon(
    """
    if when whenever once unless until whether will would should might may must shall gonna
    hope hopefully think guess believe suppose assume probably maybe perhaps likely seem seems
    seemed apparently supposed verify ensure confirm expect expected tomorrow later next soon
    almost nearly partially partly mostly some most sometimes occasionally intermittently
    i'll you'll we'll they'll it'll he'll she'll that'll i'd you'd we'd they'd it'd he'd
    she'd that'd
    wenn falls sobald ob werde werden wird wirst soll sollen muss müssen will vielleicht
    hoffentlich hoffe vermutlich wahrscheinlich wohl anscheinend scheint scheinbar glaube
    denke morgen später nachher bald demnächst fast teilweise einige manche manchmal meistens
    plane prüfe prüfen prüft sicherstellen
    """,
    prefixes="würde sollte könnte müsste dürfte möchte versuche probiere überprüf",
    phrases="in case, as soon as, going to, want to, wants to, wanted to, need to, needs to,"
    " have to, has to, try to, trying to, about to, plan to, planning to, look like,"
    " looks like, check that, check whether, check if, checking that, checking whether,"
    " checking if, make sure, like this, like so, as follows, works by",
    unless_next={"could": "now finally again"},
)
_ADVICE_RE = re.compile(
    r"\b(?:you|you're|you'll|your|yours|du|dein\w*|kannst|können|könnt|can|kann)\b", _I
)
_ADVICE_OPENERS = _words(
    """
    run use try make check deploy build test ssh install add set type execute open verify
    ensure rerun re-run start push log connect let's lets please first then next
    führe nutze verwende probiere prüfe starte installiere teste baue logge melde
    """
)

# --------------------------------------------------------------------------------- questions

_EN_QUESTION_RE = re.compile(
    r"^(?:did|does|do(?!\s+not\b)|is|are|was|were|can|could|should|would|will|shall|has|have"
    r"|had|how|why|what|where|which|who|whom|whose|anyone|anybody|isn't|aren't|doesn't"
    r"|didn't|wasn't|won't|can't|wie|warum|wieso|weshalb|wo|wann|welche\w*|wer)\b",
    _I,
)
_NOT_QUESTION_SECOND = frozenset({"able", "finally", "now", "successfully", "again"})
_DE_QUESTION_RE = re.compile(
    r"^(?:hat|hast|haben|habt|ist|bist|sind|seid|war|waren|kann|kannst|können|könnt|soll"
    r"|sollte|sollen|wird|werden|würde|klappt|klappte|funktioniert|läuft|geht|gibt|muss|darf)"
    r"\s+(?:das|der|die|den|dem|es|sich|ihr|du|man|denn|mein\w*|unser\w*|dein\w*|ein|eine"
    r"|bei|mit)\b",
    _I,
)


def _is_question(text: str) -> bool:
    if re.search(r"\?[\s\"')\]]*$", text):
        return True
    if _DE_QUESTION_RE.match(text):
        return True
    match = _EN_QUESTION_RE.match(text)
    if not match:
        return False
    rest = text[match.end() :].split(None, 1)
    return not rest or rest[0].lower().strip(",.!") not in _NOT_QUESTION_SECOND


# --------------------------------------------------------------------------------- rules

_RULE_OPENER_RE = re.compile(
    r"^(?:please|pls|bitte|also|and|ok(?:ay)?|so|remember|note|rule|reminder|important"
    r"|wichtig|regel|hinweis|merke?\s+dir|from\s+now\s+on|going\s+forward"
    r"|in\s+(?:the\s+)?future|henceforth|ab\s+jetzt|ab\s+sofort|von\s+jetzt\s+an|künftig"
    r"|zukünftig|in\s+zukunft)\b[\s:,!.-]*",
    _I,
)
_STANDING_RE = re.compile(
    r"^(?:from\s+now\s+on|going\s+forward|in\s+(?:the\s+)?future|henceforth|ab\s+jetzt"
    r"|ab\s+sofort|von\s+jetzt\s+an|künftig|zukünftig|in\s+zukunft)\b",
    _I,
)
_LEADING_CONDITION_RE = re.compile(
    r"^(?:if|when|whenever|before|after|wenn|falls|bevor|nachdem|sobald)\b[^,]{1,120},\s*",
    _I,
)
_GLOBAL_RE = re.compile(
    r"\s*\b(?:globally|everywhere|in\s+every\s+(?:project|repo(?:sitory)?|workspace)"
    r"|in\s+all\s+(?:projects|repos|repositories|workspaces)|across\s+all\s+projects"
    r"|überall|in\s+allen\s+(?:projekten|repos|repositories)|in\s+jedem\s+(?:projekt|repo))\b",
    _I,
)
_EN_RULE_RE = re.compile(
    r"^(?:(?:you|we)\s+(?:must|should|need\s+to|have\s+to)\s+)?"
    r"(?P<pol>always|never(?:\s+ever)?|don't|dont|do\s+not|must\s+not|mustn't|should\s+never)"
    r"\s+(?:ever\s+)?(?P<verb>[a-z][\w-]*)",
    _I,
)
_EN_MUST_RE = re.compile(r"^(?:you|we)\s+(?P<pol>must)\s+(?P<verb>[a-z][\w-]*)", _I)
_EN_NOT_VERBS = _words(
    """
    mind again ever been was were is are am had has did does the a an my this that it so same
    fun happens know worry bother care think understand like want need see feel believe
    recall agree expect liked get got have sure really nice good great fun happy glad awesome
    better worse interesting annoying hard easy fine busy late early there here thought knew
    said made went came saw took found felt told left ran began wrote bought brought caught
    taught heard meant kept slept spent sent built lost paid stood understood won forgot gave
    broke seen been done gone given taken written broken forgotten gotten known shown
    """
)
_EN_VERB_EXCEPTIONS = _words(
    """
    need feed seed embed proceed exceed succeed speed shed shred bring ping string sing
    access pass press process discuss focus bypass address
    """
)
_DE_POL = r"immer|nie|niemals|stets|grundsätzlich|keinesfalls|auf\s+keinen\s+fall|nicht|keine[nmr]?"
_DE_INFINITIVE_RULE_RE = re.compile(
    # "immer wieder" is "again and again"; "nie wieder" + infinitive is a rule
    rf"^(?:{_DE_POL})\b(?!\s+(?:noch|wenn|mehr|so|ganz|schlecht|wirklich)\b)"
    r"(?!(?<=immer)\s+wieder\b)",
    _I,
)
_DE_IMPERATIVE_RULE_RE = re.compile(
    rf"^(?P<verb>[A-Za-zÄÖÜäöüß]+)\s+(?:du\s+)?(?:bitte\s+)?(?:{_DE_POL})\b", _I
)
_DE_NOT_INFINITIVES = _words(
    """
    den dem einen keinen meinen deinen seinen ihren unseren euren diesen jeden allen vielen
    anderen morgen eben oben unten neben zwischen wegen gegen wenn denen
    """
)
_DE_NOT_IMPERATIVES = _words(
    """
    es er sie ich wir ihr man das der die dies dieses hab habe bin war hatte ist sind kann
    muss will mag weiß weiss glaube denke hoffe finde meine sehe verstehe so da dann aber und
    doch ja nein warum wieso wie was wer danke also klar gut auch immer nie jetzt heute geht
    läuft klappt stürzt hat wird leider eigentlich irgendwie schade wieder noch schon gerade
    """
)
_DE_IMPERATIVE_STEMS = _words(
    """
    mach nimm gib lies lass fass push lösch nutz schreib sag geh trag zieh bau frag hör schau
    check merge commit deploy test vergiss
    """
)
_STYLE_RE = re.compile(
    r"\b(?:answer\w*|repl(?:y|ies)|respond\w*|talk|speak|explain|apologi[sz]e|greet"
    r"|summari[sz]e|emojis?|in\s+(?:english|german|french|spanish|deutsch|englisch)"
    r"|auf\s+(?:deutsch|englisch)|antwort\w*|sprich|sprechen|erkläre?|entschuldig\w*|duz\w*"
    r"|siez\w*|call\s+me|address\s+me|nenn\w*\s+mich|be\s+(?:concise|brief|short|polite"
    r"|friendly|verbose|formal|informal|honest|nice)|sei\s+(?:kurz|knapp|höflich|freundlich"
    r"|ehrlich)|tone)\b",
    _I,
)
_DE_INFINITIVE_RE = re.compile(r"[a-zäöüß]{2,}(?:en|ern|eln)")
_STANDING_NOT_VERBS = _words(
    """
    i we you it he she they this that there the a an my our your his her its their all
    everything nothing something ich wir du es er sie man das der die alles
    """
)
_RULE_DROP = _words("the a an der die das den dem des ein eine einen einem einer please bitte")
_EN_NEVER_RE = re.compile(
    r"^(?:(?:you|we)\s+(?:must|should|need\s+to|have\s+to)\s+)?(?:never\s+ever|don't|dont"
    r"|do\s+not|must\s+not|mustn't|should\s+never|never)\b(?:\s+ever\b)?",
    _I,
)
_EN_ALWAYS_RE = re.compile(
    r"^(?:you|we)\s+(?:must|should|need\s+to|have\s+to)\s+(?=always\b)|^(?:you|we)\s+(?=must\b)",
    _I,
)


def _en_verb_ok(verb: str) -> bool:
    low = verb.lower()
    if low in _EN_NOT_VERBS:
        return False
    if low in _EN_VERB_EXCEPTIONS:
        return True
    if low.endswith(("ed", "ing")):
        return False
    return not (low.endswith("s") and not low.endswith(("ss", "us", "is")))


def _ends_in_infinitive(head: str) -> bool:
    """Whether the first clause ends in a lower-case German infinitive ("… pushen")."""
    clause = head.split(",", 1)[0].strip(" .!")
    words = clause.split()
    if len(words) < 2:
        return False
    last = words[-1].rsplit("-", 1)[-1]
    return (
        last[:1].islower()
        and _DE_INFINITIVE_RE.fullmatch(last) is not None
        and last not in _DE_NOT_INFINITIVES
    )


def _is_rule(head: str, standing: bool) -> bool:
    """Whether the head (openers and a leading condition removed) is a standing imperative."""
    match = _EN_RULE_RE.match(head) or _EN_MUST_RE.match(head)
    if match:
        return _en_verb_ok(match.group("verb"))
    if _DE_INFINITIVE_RULE_RE.match(head):
        return _ends_in_infinitive(head)
    match = _DE_IMPERATIVE_RULE_RE.match(head)
    if match:
        verb = match.group("verb").lower()
        if verb in _DE_NOT_IMPERATIVES:
            return False
        return verb in _DE_IMPERATIVE_STEMS or (verb.endswith("e") and not verb.endswith("ie"))
    if not standing:
        return False
    first = head.split(None, 1)[0]
    low = first.lower()
    if low in _STANDING_NOT_VERBS:
        return False
    return _ends_in_infinitive(head) or (first.isascii() and _en_verb_ok(low))


def _rule_key(core: str) -> str:
    text = _EN_NEVER_RE.sub("never", core, count=1)
    text = _EN_ALWAYS_RE.sub("", text, count=1)
    words: list[str] = []
    for raw in text.replace("`", " ").split():
        word = raw.replace("'", "").strip('.,;:!?"()[]{}-').lower()
        if not word or word in _RULE_DROP:
            continue
        words.append(word)
        if len(words) >= RULE_KEY_WORDS:
            break
    while len(words) > 2 and len("-".join(words)) > RULE_KEY_CHARS:
        words.pop()
    return normalise_key("rule:" + " ".join(words))


def _strip_openers(text: str) -> tuple[str, bool]:
    standing = False
    while True:
        if _STANDING_RE.match(text):
            standing = True
        stripped = _RULE_OPENER_RE.sub("", text, count=1)
        if stripped == text:
            return text, standing
        text = stripped


def _classify_rule(text: str, proof: str) -> FactProposal | None:
    """A user's standing rule; the key is made of the leading condition (if any) and the
    imperative's first clause, so a reason added after a comma does not change it."""
    sentence = text.strip().rstrip(".!; ")
    core, standing = _strip_openers(sentence)
    if not core:
        return None
    scope: Scope = "global" if _GLOBAL_RE.search(core) else "workspace"
    condition = _LEADING_CONDITION_RE.match(core)
    head = core[condition.end() :] if condition else core
    head = _GLOBAL_RE.sub("", head).strip(" ,")
    if not head or not _is_rule(head, standing) or _STYLE_RE.search(core):
        return None
    key_source = (condition.group(0) if condition else "") + head.split(",", 1)[0]
    try:
        key = _rule_key(_GLOBAL_RE.sub("", key_source).strip(" ,"))
    except FactError:
        return None
    statement = core[0].lower() + core[1:] if core[1:2].islower() else core
    return FactProposal(
        type="rule",
        key=key,
        body=f"Rule: {statement}.",
        proof=proof,
        scope=scope,
        confidence=USER_CONFIDENCE,
        source="user",
    )


# ----------------------------------------------------------------------------- successes


@dataclass(frozen=True, slots=True)
class _Candidate:
    """A predicate paired with a keyword; `score` sorts candidates, best first."""

    kind: Kind
    keyword: tuple[int, int]
    predicate: tuple[int, int]
    score: tuple[int, int, int]


def _clause_index(breaks: list[int], position: int) -> int:
    index = 0
    for offset in breaks:
        if offset > position:
            break
        index += 1
    return index


def _in_code(spans: list[tuple[int, int]], position: int) -> int:
    return int(any(start <= position < end for start, end in spans))


def _candidates(text: str, breaks: list[int], found_keywords: list[_Keyword]) -> list[_Candidate]:
    """Every (keyword, predicate) pair of a fitting kind in the same or adjacent clauses,
    ordered by clause distance, then keywords outside inline code first, then distance."""
    code = [m.span() for m in _CODE_SPAN_RE.finditer(text)]
    remote = any(k.kind in _REMOTE for k in found_keywords)
    keywords = [
        (k.kind, k.start, k.end)
        for k in found_keywords
        if not (remote and k.kind == "auth" and k.login)
    ]
    found: list[_Candidate] = []
    for pattern, kinds in _PREDICATES:
        for match in pattern.finditer(text):
            p_start, p_end = match.span()
            p_clause = _clause_index(breaks, p_start)
            for kind, k_start, k_end in keywords:
                if kind not in kinds:
                    continue
                k_clause = _clause_index(breaks, k_start)
                if k_clause > p_clause + 1 or k_clause < p_clause - 1:
                    continue
                if k_end <= p_start:
                    distance = p_start - k_end
                elif p_end <= k_start:
                    distance = k_start - p_end
                else:
                    distance = 0
                score = (abs(k_clause - p_clause), _in_code(code, k_start), distance)
                found.append(_Candidate(kind, (k_start, k_end), (p_start, p_end), score))
    found.sort(key=lambda c: c.score)
    return found


def _hedged(text: str, breaks: list[int], candidate: _Candidate) -> bool:
    """A hypothesis, plan or hedge in the clauses from the keyword to the predicate."""
    first = min(candidate.keyword[0], candidate.predicate[0])
    last = max(candidate.keyword[1], candidate.predicate[1]) - 1
    start_clause = _clause_index(breaks, first)
    end_clause = _clause_index(breaks, last)
    start = 0 if start_clause == 0 else breaks[start_clause - 1]
    end = len(text) if end_clause >= len(breaks) else breaks[end_clause]
    return _HEDGE.found_in(_lower_words(text, start, end))


# --- subjects


@dataclass(frozen=True, slots=True)
class _Subject:
    """What a success event is about: the key's subject, the fact's body, its type."""

    name: str
    body: str
    type: FactType = "capability"


_DEST_RE = re.compile(
    r"\b(?P<prep>to|into|onto|on|in|nach|auf|zu|zur|zum)\s+"
    r"(?:(?:the|der|die|das|den|dem|our|my|unser\w*|mein\w*)\s+)?(?P<name>[^\W_][\w.@/+:-]*)",
    _I,
)
_NOT_DEST_BEFORE = _words(
    """
    able managed want wants wanted need needs have has had going try trying tried how used
    about due like got seems started began went back
    """
)
_DEPLOY_VERB_RE = re.compile(
    r"\b(?:re-?)?deploy(?:s|ed|ing)?\b|\bship(?:ped)?\b|\bpublish(?:ed|ing)?\b|\breleased\b"
    r"|\broll(?:ed)?\s+out\b|\bpush(?:ed)?\b|\bupload(?:ed)?\b",
    _I,
)
_DEPLOY_OF_RE = re.compile(
    r"\b(?:deployment|deploy|release|rollout)\s+(?:of|von|for|für)\s+"
    r"(?:(?:the|das|dem|den|der)\s+)?(?P<name>[^\W_][\w.+]*)",
    _I,
)
_NAME_BEFORE_DEPLOY_RE = re.compile(
    r"\b(?P<name>[^\W_][\w.+]*)[\s-]+(?:(?:re-?)?deploy(?:ment)?|rollout|release)\b", _I
)
_NAME_IS_DEPLOYED_RE = re.compile(
    r"\b(?P<name>[^\W_][\w.+-]*)\s+(?:is|was|got|has\s+been|ist|wurde)\s+"
    r"(?:now\s+|jetzt\s+|successfully\s+|erfolgreich\s+)?"
    r"(?:deployed|released|published|rolled\s+out|deployt|ausgerollt|veröffentlicht)\b",
    _I,
)
_DE_DEPLOYED_RE = re.compile(r"\b(?:deployt|deployed|ausgerollt|veröffentlicht)\b", _I)
_DE_HABE_RE = re.compile(r"\b(?:habe|hab|hat|haben|hatte)\s+", _I)
_TOOL_AFTER_RE = re.compile(
    r"\b(?:with|via|using|through|mit|über|per)\s+(?:the\s+)?(?P<tool>[^\W_][\w.-]*)", _I
)
_STEPS_RE = re.compile(r"\b(?:then|first|after\s+that|dann|danach|zuerst)\b", _I)
_DOMAIN_RE = re.compile(r"\b[a-z0-9-]+(?:\.[a-z0-9-]+)*\.(?:io|com|net|org|dev|cloud)\b", _I)
_USER_AT_HOST_RE = re.compile(r"\b[\w.-]+@(?P<host>[^\W_][\w.-]*)")
_SSH_DIRECT_RE = re.compile(r"\bssh\s+(?:-\w+\s+)*(?P<host>[^\W_][\w.@-]*)", _I)
_HOST_LIKE_RE = re.compile(r"^[a-z][\w-]*\d[\w.-]*$|^[a-z][\w-]*(?:\.[a-z][\w-]*)+$", _I)
_LOGIN_TO_RE = re.compile(
    r"\b(?:log(?:ged|ging)?[\s-]?in|login|sign(?:ed|ing)?[\s-]?in|anmeldung|angemeldet"
    r"|eingeloggt)\s+(?:to|into|at|bei|an|in)\s+(?:the\s+|der\s+|die\s+|das\s+|den\s+)?"
    r"(?P<name>[^\W_][\w.-]*)",
    _I,
)
_CLI_LOGIN_RE = re.compile(r"\b(?P<tool>[\w-]+)\s+(?:sso\s+|auth\s+)?log(?:in|[\s-]in)\b", _I)
_DB_IDENTIFIER_RE = re.compile(r"\b(?P<name>[^\W_][\w.]*-db\d*)\b", _I)
_DB_NAME_BEFORE_RE = re.compile(r"\b(?P<name>[^\W_][\w.+]*)[\s-]+(?:database|db|datenbank)\b", _I)
_DB_NAME_AFTER_RE = re.compile(r"\b(?:database|datenbank)\s+(?P<name>[^\W_][\w.+-]*)", _I)
_IDENTIFIER_RE = re.compile(r"[\d_.-]")
_TESTS_FOR_RE = re.compile(
    r"\s+(?:for|für|of)\s+(?:the\s+|das\s+|den\s+|die\s+|der\s+)?(?P<name>[^\W_][\w.-]*)", _I
)
_TEST_COMPOUND_RE = re.compile(r"(?P<name>[^\W\d_]{3,}?)s?tests", _I)
_WORD_BEFORE_RE = re.compile(r"\b(?P<name>[^\W_][\w.+]*)[\s-]+$")
_BUILD_COMMAND_RE = re.compile(r"\b(?:build|compile|bundle|package)\b", _I)
_BUILD_WITH_RE = re.compile(r"\b(?:with|using|via|mit)\s+(?P<tool>[\w.-]+)", _I)
_BUILD_COMPOUND_RE = re.compile(r"\b(?P<tool>[\w.]+)-build\b", _I)
_TEST_AFTER_TOOL_RE = re.compile(r"\s+(?:run\s+)?tests?\b", _I)
_AUTH_COMMAND_RE = re.compile(r"\b(?:login|auth)\b", _I)
_STOP_PREPOSITIONS = _words(
    "to into onto on in with via using from by nach auf zu zur zum mit über per and und"
)


def _word_before(text: str, position: int) -> str | None:
    match = _WORD_BEFORE_RE.search(text, max(0, position - 40), position)
    return match.group("name") if match else None


def _project_after(text: str, position: int) -> str | None:
    """The first name after the verb, skipping articles and adverbs; None at a preposition."""
    for word, _ in _tokens(text, position)[:4]:
        low = word.lower()
        if _VERSION_RE.match(low):
            continue
        if low in _STOP_PREPOSITIONS:
            return None
        if low in _STOP:
            continue
        if low in _GENERIC or low in _DEPLOY_TOOLS or low.endswith(("ed", "ing")):
            return None
        cleaned = _clean_name(word)
        return cleaned if _is_name(cleaned) else None
    return None


def _destination(text: str, *, skip: frozenset[str] = frozenset()) -> str | None:
    """The first name after to/into/on/nach/auf/zu… (``in`` only before prod/staging/dev)."""
    for match in _DEST_RE.finditer(text):
        before = _word_before(text, match.start())
        if before and before.lower() in _NOT_DEST_BEFORE:
            continue
        raw = match.group("name")
        name = _clean_name(raw)
        low = name.lower()
        if low in skip or (match.group("prep").lower() == "in" and low not in _ENV_WORDS):
            continue
        if _is_name(name) or low in _ENV_WORDS:
            return _with_proper_noun_tail(text, match.end("name"), name)
        if name and low not in _STOP and _names_a_place(text, raw, match.end("name")):
            return name  # "the build server", "den Build-Server": build
    return None


def _names_a_place(text: str, raw: str, end: int) -> bool:
    """Whether a word is the modifier of a machine noun: ``Build-Server``, ``build box``."""
    if raw.rsplit("-", 1)[-1].lower() in _PLACE_NOUNS:
        return True
    after = _tokens(text, end)[:1]
    return bool(after) and after[0][0].lower() in _PLACE_NOUNS


def _with_proper_noun_tail(text: str, end: int, name: str) -> str:
    """``Raspberry`` + ``Pi`` → ``Raspberry-Pi``: capitalised words after a capitalised name."""
    if not name[:1].isupper():
        return name
    for word, _ in _tokens(text, end)[:2]:
        if not word[:1].isupper() or word.lower() in _GENERIC or word.lower() in _STOP:
            break
        name = f"{name}-{word}"
    return name


def _commands(text: str) -> list[str]:
    return [m.group(1).strip() for m in _CODE_SPAN_RE.finditer(text)]


def _used(text: str) -> str:
    """`` (first command)`` for a body, or nothing."""
    commands = _commands(text)
    return f" ({commands[0]})" if commands else ""


def _tool_in(text: str, tools: frozenset[str]) -> str | None:
    for command in _commands(text):
        first = _first_word_of(command)
        if first in tools:
            return first
    for word, _ in _tokens(text):
        if word.lower() in tools:
            return word.lower()
    return None


def _deploy_project(text: str) -> str | None:
    """The project deployed: "deployment of X", "deployed X", "the X deploy", "X is
    deployed", "habe X … deployt"; None when none is named."""
    match = _DEPLOY_OF_RE.search(text)
    if match and _is_name(_clean_name(match.group("name"))):
        return _clean_name(match.group("name"))
    for match in _DEPLOY_VERB_RE.finditer(text):
        after = _project_after(text, match.end())
        if after:
            return after
    for pattern in (_NAME_BEFORE_DEPLOY_RE, _NAME_IS_DEPLOYED_RE):
        for match in pattern.finditer(text):
            name: str = match.group("name")
            if _is_name(name) and name.lower() not in _DEPLOY_TOOLS:
                return name
    if _DE_DEPLOYED_RE.search(text):
        for match in _DE_HABE_RE.finditer(text):
            after = _project_after(text, match.end())
            if after:
                return after
    return None


def _deploy_subject(text: str) -> _Subject:
    project = _deploy_project(text)
    destination = _destination(text)
    if project and project.lower() in _ENV_WORDS and not destination:
        project, destination = None, project
    commands = _commands(text)
    tool = commands[0] if commands else None
    if tool is None:
        for match in _TOOL_AFTER_RE.finditer(text):
            if match.group("tool").lower() in _DEPLOY_TOOLS:
                tool = match.group("tool")
                break
        else:
            tool = _tool_in(text, _DEPLOY_TOOLS)
    name = project or destination or (_first_word_of(tool) if tool else None) or WORKSPACE
    what = project or "this workspace"
    target = f" to {destination}" if destination else ""
    if len(commands) >= 2 or (len(commands) == 1 and _STEPS_RE.search(text)):
        steps = ", then ".join(commands) if len(commands) >= 2 else text.rstrip(".!")
        return _Subject(name, f"To deploy {what}{target}: {steps}.", "procedure")
    used = f" ({tool})" if tool else ""
    if not project and destination:
        return _Subject(name, f"This machine can deploy to {destination}{used}.")
    return _Subject(name, f"This machine can deploy {what}{target}{used}.")


def _build_tool(text: str, keyword: tuple[int, int]) -> str | None:
    for command in _commands(text):
        first = _first_word_of(command)
        if _BUILD_COMMAND_RE.search(command) or first in _BUILD_TOOLS:
            return first
    for word, _ in reversed(_tokens(text, max(0, keyword[0] - 40), keyword[0])[-3:]):
        low = word.lower().rsplit("-", 1)[0]
        if low in _BUILD_TOOLS:
            return low
    for match in (_BUILD_WITH_RE.search(text), _BUILD_COMPOUND_RE.search(text)):
        if match and match.group("tool").lower() in _BUILD_TOOLS:
            return match.group("tool").lower()
    return None


def _build_subject(text: str, keyword: tuple[int, int]) -> _Subject:
    used = _used(text)
    tool = _build_tool(text, keyword)
    if tool:
        return _Subject(tool, f"The {tool} build works on this machine{used}.")
    for keyword_found in _keywords(text):
        if keyword_found.kind != "build":
            continue
        name = _word_before(text, keyword_found.start)
        if name and _is_name(name) and not name.isdigit():
            return _Subject(name, f"The {name} build works on this machine{used}.")
    return _Subject(WORKSPACE, f"The build works on this machine{used}.")


def _test_runner(text: str) -> str | None:
    for command in _commands(text):
        first = _first_word_of(command)
        if first in _TEST_RUNNERS or (first in _BUILD_TOOLS and "test" in command):
            return first
    for word, offset in _tokens(text):
        low = word.lower()
        if low in _TEST_RUNNERS:
            return low
        if low in _BUILD_TOOLS and _TEST_AFTER_TOOL_RE.match(text, offset + len(word)):
            return low
    return None


def _test_subject(text: str, keyword: tuple[int, int]) -> _Subject:
    used = _used(text)
    runner = _test_runner(text)
    if runner == "ci":
        return _Subject(runner, f"The CI checks pass{used}.")
    if runner:
        return _Subject(runner, f"The {runner} tests pass on this machine{used}.")
    compound = _TEST_COMPOUND_RE.fullmatch(text, keyword[0], keyword[1])
    name = compound.group("name") if compound else _word_before(text, keyword[0])
    if not (name and _is_name(name)):
        target = _TESTS_FOR_RE.match(text, keyword[1])
        name = target.group("name") if target else None
    if name and _is_name(name) and not name.isdigit():
        return _Subject(name, f"The {name.lower()} tests pass on this machine{used}.")
    return _Subject(WORKSPACE, f"The tests pass on this machine{used}.")


def _host_like(text: str) -> str | None:
    for word, _ in _tokens(text):
        cleaned = _clean_name(word)
        if _HOST_LIKE_RE.match(cleaned) and not _VERSION_RE.match(cleaned):
            return cleaned
    return None


def _ssh_subject(text: str) -> _Subject | None:
    host = None
    match = _USER_AT_HOST_RE.search(text)
    if match:
        host = _clean_name(match.group("host"))
    if host is None:
        direct = _SSH_DIRECT_RE.search(text)
        if direct and _is_name(_clean_name(direct.group("host"))):
            host = _clean_name(direct.group("host"))
    host = host or _destination(text) or _host_like(text)
    if not host:
        return None
    return _Subject(host, f"This machine can SSH into {host}.")


def _db_subject(text: str) -> _Subject | None:
    tool = _tool_in(text, frozenset(_ENGINES))
    used = _used(text) or (f" ({tool})" if tool else "")
    for pattern in (_DB_IDENTIFIER_RE, _DB_NAME_BEFORE_RE, _DB_NAME_AFTER_RE):
        for match in pattern.finditer(text):
            raw = match.group("name")
            name = raw if pattern is _DB_IDENTIFIER_RE else _clean_name(raw)
            low = name.lower()
            if pattern is _DB_NAME_AFTER_RE and not _IDENTIFIER_RE.search(name):
                continue  # "Datenbank läuft": a word after the noun is a name only if coded
            if (_is_name(name) and low not in _ENGINES) or low in _ENV_WORDS:
                return _Subject(name, f"This machine can connect to the {name} database{used}.")
    host = _destination(text, skip=frozenset(_ENGINES)) or _host_like(text)
    if host:
        return _Subject(host, f"This machine can connect to the database on {host}{used}.")
    if tool:
        engine = _ENGINES[tool]
        return _Subject(engine, f"This machine can connect to {engine}{used}.")
    return None


def _auth_subject(text: str) -> _Subject | None:
    tool = None
    for command in _commands(text):
        first = _first_word_of(command)
        if first in _AUTH_TOOLS or _AUTH_COMMAND_RE.search(command):
            tool = first
            break
    if tool is None:
        for match in _CLI_LOGIN_RE.finditer(text):
            if match.group("tool").lower() in _AUTH_TOOLS:
                tool = match.group("tool").lower()
                break
    if tool is None:
        tool = _tool_in(text, _AUTH_TOOLS)
    if tool is None:
        service = _LOGIN_TO_RE.search(text)
        if service and service.group("name")[:1].isupper() and _is_name(service.group("name")):
            tool = service.group("name")
    if tool is None:
        domain = _DOMAIN_RE.search(text)
        tool = domain.group(0).lower() if domain else None
    if not tool:
        return None
    return _Subject(tool, f"This machine is authenticated with {tool}{_used(text)}.")


def _subject(text: str, candidate: _Candidate) -> _Subject | None:
    """What the event is about, for the candidate's kind; None when nothing is named."""
    if candidate.kind == "deploy":
        return _deploy_subject(text)
    if candidate.kind == "build":
        return _build_subject(text, candidate.keyword)
    if candidate.kind == "test":
        return _test_subject(text, candidate.keyword)
    if candidate.kind == "ssh":
        return _ssh_subject(text)
    if candidate.kind == "db":
        return _db_subject(text)
    return _auth_subject(text)


def _is_advice(text: str) -> bool:
    if _ADVICE_RE.search(text):
        return True
    words = text.split(None, 1)
    return bool(words) and words[0].lower().strip(",.:`") in _ADVICE_OPENERS


def _classify_success(
    text: str, speaker: Speaker, proof: str, keywords: list[_Keyword]
) -> FactProposal | None:
    breaks = [m.start() for m in _CLAUSE_BREAK_RE.finditer(text)]
    candidates = _candidates(text, breaks, keywords)
    if not candidates:
        return None
    neutral = _lower_words(_NEUTRAL_RE.sub(" ", text))
    if _FAILURE.found_in(neutral) or _NEGATION.found_in(neutral):
        return None
    if speaker == "assistant" and (_is_advice(text) or _HEDGE.found_in(neutral)):
        return None
    for candidate in candidates:
        if _hedged(text, breaks, candidate):
            continue
        subject = _subject(text, candidate)
        if subject is None:
            continue
        try:
            key = normalise_key(f"{candidate.kind}:{_key_word(subject.name)}")
        except FactError:
            continue
        user = speaker == "user"
        return FactProposal(
            type=subject.type,
            key=key,
            body=mask_secrets(subject.body),
            proof=proof,
            confidence=USER_CONFIDENCE if user else REPLY_CONFIDENCE,
            source="user" if user else "inference",
        )
    return None


# ------------------------------------------------------------------------------- public


def _proof(masked: str) -> str:
    proof = _SPACES_RE.sub(" ", masked.strip())
    return proof if len(proof) <= PROOF_CHARS else proof[: PROOF_CHARS - 1].rstrip() + "…"


_RULE_HINT_RE = re.compile(
    r"\b(?:always|never|don't|dont|do\s+not|must|mustn't|immer|nie|niemals|stets|nicht"
    r"|keine[nmr]?|grundsätzlich|keinesfalls|from\s+now\s+on|going\s+forward|ab\s+jetzt"
    r"|ab\s+sofort|künftig|zukünftig)\b",
    _I,
)


def _classify_masked(masked: str, speaker: Speaker) -> FactProposal | None:
    """`classify_sentence` on a sentence whose secrets are already masked."""
    masked = masked.strip()
    if not masked or len(masked) > MAX_SENTENCE_CHARS:
        return None
    text = _REDACTED_RE.sub("REDACTED", masked.translate(_APOSTROPHES))
    text = _SPACES_RE.sub(" ", _BULLET_RE.sub("", text)).strip()
    maybe_rule = speaker == "user" and _RULE_HINT_RE.search(text) is not None
    keywords = _keywords(text)
    if len(text) < 4 or not (maybe_rule or keywords) or _is_question(text):
        return None
    proof = _proof(masked)
    if maybe_rule:
        rule = _classify_rule(text, proof)
        if rule is not None:
            return rule
    return _classify_success(text, speaker, proof, keywords) if keywords else None


def classify_sentence(sentence: str, *, speaker: Speaker = "user") -> FactProposal | None:
    """The proposal one sentence makes (a success event, or a user's rule), or None."""
    return _classify_masked(mask_secrets(sentence.strip()), speaker)


_FENCE_RE = re.compile(r"^[ \t]*(`{3,}|~{3,})[^\n]*\n.*?(?:^[ \t]*\1[ \t]*$|\Z)", re.M | re.S)
_SENTENCE_END_RE = re.compile(r"(?<=[.!?…])\s+")
_ABBREVIATIONS = _words(
    "e.g. i.e. etc. vs. cf. approx. z.b. z. b. bzw. usw. ca. d.h. d. h. nr. inkl. evtl."
)


def _sentences(text: str) -> Iterable[str]:
    """Lines and sentences outside fenced code and quotations, without list bullets."""
    for line in _FENCE_RE.sub("\n", text).splitlines():
        line = line.strip()
        if not line or line.startswith(">"):
            continue
        line = _BULLET_RE.sub("", line)
        pieces = _SENTENCE_END_RE.split(line)
        merged: list[str] = []
        for piece in pieces:
            if merged:
                last = merged[-1].rsplit(None, 1)[-1].lower()
                if last in _ABBREVIATIONS or re.fullmatch(r"\w\.", last):
                    merged[-1] = f"{merged[-1]} {piece}"
                    continue
            merged.append(piece)
        yield from (piece for piece in merged if piece.strip())


def classify_turn(user_text: str, reply_text: str = "") -> list[FactProposal]:
    """Proposals from one finished turn: the user's sentences first, then the reply's; at most
    `MAX_PROPOSALS_PER_TURN`, one per key (the first wins). A reply event of a kind already
    proposed in the turn is dropped: it echoes the user's ("Nice, the deployment went
    through" after "I deployed blyck … it worked" would otherwise add ``deploy:workspace``)."""
    proposals: list[FactProposal] = []
    seen: set[str] = set()
    kinds: set[str] = set()
    sources: tuple[tuple[str, Speaker], ...] = ((user_text, "user"), (reply_text, "assistant"))
    for text, speaker in sources:
        if not text:
            continue
        for sentence in _sentences(mask_secrets(text)):
            proposal = _classify_masked(sentence, speaker)
            if proposal is None or proposal.key in seen:
                continue
            kind = proposal.key.split(":", 1)[0]
            if speaker == "assistant" and kind in kinds:
                continue
            seen.add(proposal.key)
            kinds.add(kind)
            proposals.append(proposal)
            if len(proposals) >= MAX_PROPOSALS_PER_TURN:
                return proposals
    return proposals
