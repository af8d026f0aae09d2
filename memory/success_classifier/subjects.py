"""What a success event is about, per kind: the deployed project or its destination, the build
tool, the test runner, the host, the database, the authenticated tool; the key's subject and
the fact's body. None when an SSH, database or auth event names nothing."""

from __future__ import annotations

import re
from dataclasses import dataclass

from memory.fact_types import FactType
from memory.success_classifier.keywords import find_keywords
from memory.success_classifier.kinds import WORKSPACE
from memory.success_classifier.lexicons import (
    AUTH_TOOLS,
    BUILD_TOOLS,
    DEPLOY_TOOLS,
    ENGINES,
    ENV_WORDS,
    GENERIC,
    NOT_DEST_BEFORE,
    PLACE_NOUNS,
    STOP,
    STOP_PREPOSITIONS,
    TEST_RUNNERS,
)
from memory.success_classifier.names import (
    VERSION_RE,
    clean_name,
    first_word_of,
    is_name,
    name_tokens,
)
from memory.text.markdown import INLINE_CODE_RE

_I = re.IGNORECASE


@dataclass(frozen=True, slots=True)
class Subject:
    """What a success event is about: the key's subject, the fact's body, its type."""

    name: str
    body: str
    type: FactType = "capability"


_DEST_RE = re.compile(
    r"\b(?P<prep>to|into|onto|on|in|nach|auf|zu|zur|zum)\s+"
    r"(?:(?:the|der|die|das|den|dem|our|my|unser\w*|mein\w*)\s+)?(?P<name>[^\W_][\w.@/+:-]*)",
    _I,
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


def _word_before(text: str, position: int) -> str | None:
    match = _WORD_BEFORE_RE.search(text, max(0, position - 40), position)
    return match.group("name") if match else None


def _project_after(text: str, position: int) -> str | None:
    """The first name after the verb, skipping articles and adverbs; None at a preposition."""
    for word, _ in name_tokens(text, position)[:4]:
        low = word.lower()
        if VERSION_RE.match(low):
            continue
        if low in STOP_PREPOSITIONS:
            return None
        if low in STOP:
            continue
        if low in GENERIC or low in DEPLOY_TOOLS or low.endswith(("ed", "ing")):
            return None
        cleaned = clean_name(word)
        return cleaned if is_name(cleaned) else None
    return None


def _destination(text: str, *, skip: frozenset[str] = frozenset()) -> str | None:
    """The first name after to/into/on/nach/auf/zu… (``in`` only before prod/staging/dev)."""
    for match in _DEST_RE.finditer(text):
        before = _word_before(text, match.start())
        if before and before.lower() in NOT_DEST_BEFORE:
            continue
        raw = match.group("name")
        name = clean_name(raw)
        low = name.lower()
        if low in skip or (match.group("prep").lower() == "in" and low not in ENV_WORDS):
            continue
        if is_name(name) or low in ENV_WORDS:
            return _with_proper_noun_tail(text, match.end("name"), name)
        if name and low not in STOP and _names_a_place(text, raw, match.end("name")):
            return name  # "the build server", "den Build-Server": build
    return None


def _names_a_place(text: str, raw: str, end: int) -> bool:
    """Whether a word is the modifier of a machine noun: ``Build-Server``, ``build box``."""
    if raw.rsplit("-", 1)[-1].lower() in PLACE_NOUNS:
        return True
    after = name_tokens(text, end)[:1]
    return bool(after) and after[0][0].lower() in PLACE_NOUNS


def _with_proper_noun_tail(text: str, end: int, name: str) -> str:
    """``Raspberry`` + ``Pi`` → ``Raspberry-Pi``: capitalised words after a capitalised name."""
    if not name[:1].isupper():
        return name
    for word, _ in name_tokens(text, end)[:2]:
        if not word[:1].isupper() or word.lower() in GENERIC or word.lower() in STOP:
            break
        name = f"{name}-{word}"
    return name


def _commands(text: str) -> list[str]:
    return [m.group(1).strip() for m in INLINE_CODE_RE.finditer(text)]


def _used(text: str) -> str:
    """`` (first command)`` for a body, or nothing."""
    commands = _commands(text)
    return f" ({commands[0]})" if commands else ""


def _tool_in(text: str, tools: frozenset[str]) -> str | None:
    for command in _commands(text):
        first = first_word_of(command)
        if first in tools:
            return first
    for word, _ in name_tokens(text):
        if word.lower() in tools:
            return word.lower()
    return None


def _deploy_project(text: str) -> str | None:
    """The project deployed: "deployment of X", "deployed X", "the X deploy", "X is
    deployed", "habe X … deployt"; None when none is named."""
    match = _DEPLOY_OF_RE.search(text)
    if match and is_name(clean_name(match.group("name"))):
        return clean_name(match.group("name"))
    for match in _DEPLOY_VERB_RE.finditer(text):
        after = _project_after(text, match.end())
        if after:
            return after
    for pattern in (_NAME_BEFORE_DEPLOY_RE, _NAME_IS_DEPLOYED_RE):
        for match in pattern.finditer(text):
            name: str = match.group("name")
            if is_name(name) and name.lower() not in DEPLOY_TOOLS:
                return name
    if _DE_DEPLOYED_RE.search(text):
        for match in _DE_HABE_RE.finditer(text):
            after = _project_after(text, match.end())
            if after:
                return after
    return None


def deploy_subject(text: str) -> Subject:
    project = _deploy_project(text)
    destination = _destination(text)
    if project and project.lower() in ENV_WORDS and not destination:
        project, destination = None, project
    commands = _commands(text)
    tool = commands[0] if commands else None
    if tool is None:
        for match in _TOOL_AFTER_RE.finditer(text):
            if match.group("tool").lower() in DEPLOY_TOOLS:
                tool = match.group("tool")
                break
        else:
            tool = _tool_in(text, DEPLOY_TOOLS)
    name = project or destination or (first_word_of(tool) if tool else None) or WORKSPACE
    what = project or "this workspace"
    target = f" to {destination}" if destination else ""
    if len(commands) >= 2 or (len(commands) == 1 and _STEPS_RE.search(text)):
        steps = ", then ".join(commands) if len(commands) >= 2 else text.rstrip(".!")
        return Subject(name, f"To deploy {what}{target}: {steps}.", "procedure")
    used = f" ({tool})" if tool else ""
    if not project and destination:
        return Subject(name, f"This machine can deploy to {destination}{used}.")
    return Subject(name, f"This machine can deploy {what}{target}{used}.")


def _build_tool(text: str, keyword: tuple[int, int]) -> str | None:
    for command in _commands(text):
        first = first_word_of(command)
        if _BUILD_COMMAND_RE.search(command) or first in BUILD_TOOLS:
            return first
    for word, _ in reversed(name_tokens(text, max(0, keyword[0] - 40), keyword[0])[-3:]):
        low = word.lower().rsplit("-", 1)[0]
        if low in BUILD_TOOLS:
            return low
    for match in (_BUILD_WITH_RE.search(text), _BUILD_COMPOUND_RE.search(text)):
        if match and match.group("tool").lower() in BUILD_TOOLS:
            return match.group("tool").lower()
    return None


def build_subject(text: str, keyword: tuple[int, int]) -> Subject:
    used = _used(text)
    tool = _build_tool(text, keyword)
    if tool:
        return Subject(tool, f"The {tool} build works on this machine{used}.")
    for keyword_found in find_keywords(text):
        if keyword_found.kind != "build":
            continue
        name = _word_before(text, keyword_found.start)
        if name and is_name(name) and not name.isdigit():
            return Subject(name, f"The {name} build works on this machine{used}.")
    return Subject(WORKSPACE, f"The build works on this machine{used}.")


def _test_runner(text: str) -> str | None:
    for command in _commands(text):
        first = first_word_of(command)
        if first in TEST_RUNNERS or (first in BUILD_TOOLS and "test" in command):
            return first
    for word, offset in name_tokens(text):
        low = word.lower()
        if low in TEST_RUNNERS:
            return low
        if low in BUILD_TOOLS and _TEST_AFTER_TOOL_RE.match(text, offset + len(word)):
            return low
    return None


def test_subject(text: str, keyword: tuple[int, int]) -> Subject:
    used = _used(text)
    runner = _test_runner(text)
    if runner == "ci":
        return Subject(runner, f"The CI checks pass{used}.")
    if runner:
        return Subject(runner, f"The {runner} tests pass on this machine{used}.")
    compound = _TEST_COMPOUND_RE.fullmatch(text, keyword[0], keyword[1])
    name = compound.group("name") if compound else _word_before(text, keyword[0])
    if not (name and is_name(name)):
        target = _TESTS_FOR_RE.match(text, keyword[1])
        name = target.group("name") if target else None
    if name and is_name(name) and not name.isdigit():
        return Subject(name, f"The {name.lower()} tests pass on this machine{used}.")
    return Subject(WORKSPACE, f"The tests pass on this machine{used}.")


def _host_like(text: str) -> str | None:
    for word, _ in name_tokens(text):
        cleaned = clean_name(word)
        if _HOST_LIKE_RE.match(cleaned) and not VERSION_RE.match(cleaned):
            return cleaned
    return None


def ssh_subject(text: str) -> Subject | None:
    host = None
    match = _USER_AT_HOST_RE.search(text)
    if match:
        host = clean_name(match.group("host"))
    if host is None:
        direct = _SSH_DIRECT_RE.search(text)
        if direct and is_name(clean_name(direct.group("host"))):
            host = clean_name(direct.group("host"))
    host = host or _destination(text) or _host_like(text)
    if not host:
        return None
    return Subject(host, f"This machine can SSH into {host}.")


def db_subject(text: str) -> Subject | None:
    tool = _tool_in(text, frozenset(ENGINES))
    used = _used(text) or (f" ({tool})" if tool else "")
    for pattern in (_DB_IDENTIFIER_RE, _DB_NAME_BEFORE_RE, _DB_NAME_AFTER_RE):
        for match in pattern.finditer(text):
            raw = match.group("name")
            name = raw if pattern is _DB_IDENTIFIER_RE else clean_name(raw)
            low = name.lower()
            if pattern is _DB_NAME_AFTER_RE and not _IDENTIFIER_RE.search(name):
                continue  # "Datenbank läuft": a word after the noun is a name only if coded
            if (is_name(name) and low not in ENGINES) or low in ENV_WORDS:
                return Subject(name, f"This machine can connect to the {name} database{used}.")
    host = _destination(text, skip=frozenset(ENGINES)) or _host_like(text)
    if host:
        return Subject(host, f"This machine can connect to the database on {host}{used}.")
    if tool:
        engine = ENGINES[tool]
        return Subject(engine, f"This machine can connect to {engine}{used}.")
    return None


def auth_subject(text: str) -> Subject | None:
    tool = None
    for command in _commands(text):
        first = first_word_of(command)
        if first in AUTH_TOOLS or _AUTH_COMMAND_RE.search(command):
            tool = first
            break
    if tool is None:
        for match in _CLI_LOGIN_RE.finditer(text):
            if match.group("tool").lower() in AUTH_TOOLS:
                tool = match.group("tool").lower()
                break
    if tool is None:
        tool = _tool_in(text, AUTH_TOOLS)
    if tool is None:
        service = _LOGIN_TO_RE.search(text)
        if service and service.group("name")[:1].isupper() and is_name(service.group("name")):
            tool = service.group("name")
    if tool is None:
        domain = _DOMAIN_RE.search(text)
        tool = domain.group(0).lower() if domain else None
    if not tool:
        return None
    return Subject(tool, f"This machine is authenticated with {tool}{_used(text)}.")
