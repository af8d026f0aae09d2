"""Words and names in a sentence: tokens with their offsets, a token cleaned into a name
(``Staging-Datenbank`` → ``Staging``), whether a word can name something, a command's tool."""

from __future__ import annotations

import re

from memory.success_classifier.lexicons import ENV, GENERIC, STOP

_I = re.IGNORECASE

REDACTED_RE = re.compile(r"\[REDACTED:[^\]]*\]")
SPACES_RE = re.compile(r"\s+")
BULLET_RE = re.compile(r"^\s*(?:[-*+•·]|\d{1,3}[.)]|#{1,6})\s+")
_TOKEN_RE = re.compile(r"[^\W_][\w.@/+:'-]*")
_HOST_SCHEMES = frozenset({"http", "https", "ssh", "sftp", "ftp", "ftps", "ws", "wss"})
VERSION_RE = re.compile(r"^v?\d+(?:[.\-]\w+)*$", _I)


def name_tokens(text: str, start: int = 0, end: int | None = None) -> list[tuple[str, int]]:
    """Words (with dots, hyphens, @, / inside) and their offsets, trailing punctuation off."""
    found: list[tuple[str, int]] = []
    for match in _TOKEN_RE.finditer(text, start, len(text) if end is None else end):
        word = match.group(0).rstrip(".:/-'")
        if word:
            found.append((word, match.start()))
    return found


def clean_name(token: str) -> str:
    """``s3://bucket`` → ``s3``; ``https://blyck.io:8443/x`` → ``blyck.io`` (a web or ssh
    address names its host); ``Staging-Datenbank`` → ``Staging``; ``deploy@db01`` → db01."""
    word = token.strip(".:/-'")
    if "://" in word:
        scheme, _, rest = word.partition("://")
        host = rest.split("/", 1)[0].rsplit("@", 1)[-1].split(":", 1)[0]
        word = host if scheme.lower() in _HOST_SCHEMES and host else scheme
    if "@" in word:
        word = word.rsplit("@", 1)[1]
    parts = word.split("-")
    while len(parts) > 1 and parts[-1].lower() in GENERIC:
        parts.pop()
    return "-".join(parts).strip(".:/-'")


def is_name(token: str) -> bool:
    """A word that can name a project, host, database or target."""
    low = token.lower()
    return (
        bool(low)
        and low not in STOP
        and low not in GENERIC
        and not VERSION_RE.match(low)
        and len(low) <= 40
        and any(c.isalnum() for c in low)
    )


def key_word(name: str) -> str:
    low = name.lower()
    return ENV.get(low, low)


def first_word_of(command: str) -> str:
    words = command.strip().split()
    if not words:
        return ""
    first = words[0].lower().removeprefix("./")
    if first in {"sudo", "npx", "uvx", "pipx"} and len(words) > 1:
        first = words[1].lower()
    if first in {"python", "python3"} and len(words) > 2 and words[1] == "-m":
        return words[2].lower()
    return first
