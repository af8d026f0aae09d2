"""The checks behind secret masking's detectors: whether a match is really a secret (a token
with letters and digits, an assignment whose value is not a placeholder, a password given on
a command line or in prose) and which span of it to mask. `memory.secret_masking` pairs
them with its patterns; docs/secret_masking.md says why each check exists."""

from __future__ import annotations

import re

REDACTED_PREFIX = "[REDACTED:"

# ------------------------------------------------------------------------- token checks

_AUTHORIZATION_BEFORE_RE = re.compile(r"(?i)\bauthorization[\"']?[ \t]*[:=][ \t]*[\"']?\Z")


def _has_letter_and_digit(value: str) -> bool:
    """Random tokens mix letters and digits; words and numbers do not."""
    return any(c.isdigit() for c in value) and any(c.isalpha() for c in value)


def after_authorization(match: re.Match[str]) -> bool:
    """Whether the match follows ``Authorization:`` (header, JSON or assignment form)."""
    start = match.start()
    return _AUTHORIZATION_BEFORE_RE.search(match.string, max(0, start - 40), start) is not None


def accept_bearer(match: re.Match[str]) -> bool:
    """In an Authorization header any token counts; a loose ``Bearer x`` needs a random one."""
    token = match.group("secret")
    return after_authorization(match) or (len(token) >= 16 and _has_letter_and_digit(token))


def accept_url_token(match: re.Match[str]) -> bool:
    """A user part is a token, not a name, when it mixes letters and digits."""
    return _has_letter_and_digit(match.group("secret"))


# ---------------------------------------------------------------------------- assignments

# An unquoted value runs to a blank or a quote. `;`, `,` and `&` belong to it when more of
# it follows (`DB_PASS=ab#cd;ef`, `password=Tr0ub4dor&3`), not before a blank (`PASS=abc;
# echo`, "password: x, then") nor before the next `name=` or `name:` of a query or connection
# string (`?password=abc&user=bob`, `AccountKey=…;EndpointSuffix=…`). At most eight of them:
# the match is tried at every keyword, and a value running on to the text's end made that
# quadratic (`key:a,key:a,…`).
ASSIGNMENT_RE = re.compile(
    r"""(?P<kw>passw(?:or)?d|passphrase|pass|pwd|secret|token|key)
        ["']?[ \t]*(?P<sep>:=|=(?![=~>])|:(?![:/]))[ \t]*
        (?:"(?P<dq>(?:[^"\\\n]|\\.){1,500})"
          |'(?P<sq>(?:[^'\\\n]|\\.){1,500})'
          |`(?P<bq>[^`\n]{1,500})`
          |(?P<val>[^\s"'`;,&<>]+(?:[;,&](?![A-Za-z_][\w.-]*[=:])[^\s"'`;,&<>]+){0,8}))""",
    re.IGNORECASE | re.VERBOSE,
)
_SECRET_KEY_NAME_RE = re.compile(r"(?:api|access|private|secret|account|sharedaccess)[_-]?key\Z")
# `pass` names a password only as a whole part of the key: DB_PASS, smtp-pass, not bypass
_PASS_KEY_NAME_RE = re.compile(r"(?:\A|[_.-])pass\Z")
_AWS_SECRET_KEY_NAME_RE = re.compile(r"secret[_-]?access[_-]?key\Z")
_AWS_SECRET_VALUE_RE = re.compile(r"[A-Za-z0-9/+]{40}")
_KEY_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-")
_PLACEHOLDER_RE = re.compile(
    r"""<[^>]*>|\$\{?[A-Za-z_][A-Za-z0-9_]*\}?|%[A-Za-z_][A-Za-z0-9_]*%|\{\{.*\}\}
        |\*+|x{3,}|X{3,}|\.{3}|…|-+|_+|\?+|(?i:your|my)[_-][A-Za-z0-9_-]+""",
    re.VERBOSE,
)
_EMPTY_WORDS = {"none", "null", "nil", "true", "false", "undefined", "empty", "unset", "unknown"}
_TODO_WORDS = {"required", "optional", "tbd", "todo", "n/a", "redacted", "hidden", "masked"}
_TYPE_WORDS = {"str", "string", "int", "bytes", "bool", "secretstr", "secretbytes", "any", "object"}
_LABEL_WORDS = {"password", "secret", "token"}
_NOT_SECRET_WORDS = frozenset(_EMPTY_WORDS | _TODO_WORDS | _TYPE_WORDS | _LABEL_WORDS)
_CODE_CHARS = frozenset("()[]{}")
_WORD_SYMBOLS = frozenset("_.-")
_TRAILING_PUNCTUATION = ".:?"


def _assignment_value_span(match: re.Match[str]) -> tuple[int, int, bool]:
    """Start, end and quotedness of the value; an unquoted value loses trailing punctuation."""
    for name in ("dq", "sq", "bq"):
        if match.group(name) is not None:
            return match.start(name), match.end(name), True
    start, end = match.span("val")
    while end > start and match.string[end - 1] in _TRAILING_PUNCTUATION:
        end -= 1
    return start, end, False


def assignment_span(match: re.Match[str]) -> tuple[int, int]:
    """The span to mask: the value only, the key stays readable."""
    start, end, _quoted = _assignment_value_span(match)
    return start, end


def _key_name(match: re.Match[str]) -> tuple[int, str]:
    """Start and lower-cased text of the key that ends in the keyword (``DB_PASSWORD``)."""
    text = match.string
    start = match.start("kw")
    while start > 0 and text[start - 1] in _KEY_CHARS:
        start -= 1
    return start, text[start : match.end("kw")].lower()


def _in_url_user_part(text: str, key_start: int) -> bool:
    """Whether the key is a URL's user name (``https://x-access-token:…@host``), not a query."""
    word_start = key_start
    while word_start > 0 and not text[word_start - 1].isspace():
        word_start -= 1
    scheme_end = text.rfind("://", word_start, key_start)
    return scheme_end >= 0 and not any(c in "/?#@" for c in text[scheme_end + 3 : key_start])


def _is_whole_line(text: str, key_start: int, value_end: int) -> bool:
    """Whether the assignment fills its line (YAML ``password: letmein``, list items allowed)."""
    line_start = text.rfind("\n", 0, key_start) + 1
    line_end = text.find("\n", value_end)
    before = text[line_start:key_start].strip(" \t-\"'")
    after = text[value_end : len(text) if line_end < 0 else line_end].strip(" \t,\r")
    return not before and (not after or after.startswith("#"))


def _accept_plain_word(match: re.Match[str], key_start: int, value_end: int) -> bool:
    """A bare word counts in ``KEY=value`` form without spaces, or as a whole YAML line.

    A dotted word (``process.env.API_KEY``, ``settings.password``) is a reference, not a value.
    """
    text = match.string
    if "." in text[match.start("val") : value_end]:
        return False
    if match.group("sep") == "=":
        sep = match.start("sep")
        return text[sep - 1] not in " \t\"'" and text[sep + 1] not in " \t"
    if match.group("sep") != ":":
        return False
    is_password = match.group("kw").lower().startswith(("pass", "pwd"))
    return _is_whole_line(text, key_start, value_end) or (
        is_password and _ends_clause(text, value_end)
    )


def _is_stand_in(value: str) -> bool:
    """Empty, already masked, a placeholder (``<x>``, ``$VAR``, ``***``) or a word like None."""
    return (
        not value
        or value.startswith(REDACTED_PREFIX)
        or _PLACEHOLDER_RE.fullmatch(value) is not None
        or value.casefold() in _NOT_SECRET_WORDS
    )


def _looks_random(value: str) -> bool | None:
    """True/False for a value that is code, a number or mixes in digits or symbols; None for
    a plain word (its context decides)."""
    if any(c in _CODE_CHARS for c in value):
        return False
    if value.isdigit():
        return len(value) >= 6
    if any(c.isdigit() or not (c.isalnum() or c in _WORD_SYMBOLS) for c in value):
        return len(value) >= 4
    return None


_ANSWER_WORDS = frozenset(
    {"yes", "no", "ok", "okay", "same", "below", "above", "changed", "reset", "expired", "set"}
    | {"wrong", "correct", "incorrect", "weak", "strong", "saved", "forgotten", "lost"}
)


def _ends_clause(text: str, end: int) -> bool:
    """Whether the plain word ending at ``end`` ends its clause (``password: letmein, ok``)
    and is not an answer about the password (``Password: yes``). Not before ``and`` &c.:
    ``password: blank and save`` is an instruction (tried and dropped, thirty-second session:
    `Set the password: blank and save`, `my password is: whatever and I dont care`)."""
    if end < len(text) and text[end] not in "\r\n.,;!?)":
        return False
    start = end
    while start > 0 and not text[start - 1].isspace():
        start -= 1
    return text[start:end].casefold() not in _ANSWER_WORDS


def _accept_value(match: re.Match[str], key_start: int) -> bool:
    """Whether the value is a secret rather than code, prose or a placeholder."""
    start, end, quoted = _assignment_value_span(match)
    value = match.string[start:end]
    if _is_stand_in(value):
        return False
    if quoted:
        return True
    random = _looks_random(value)
    if random is not None:
        return random
    return _accept_plain_word(match, key_start, end)


def accept_assignment(match: re.Match[str]) -> bool:
    """A key that names a secret, outside a URL's user part, with a secret-looking value."""
    key_start, key = _key_name(match)
    keyword = match.group("kw").lower()
    if keyword == "key" and not _SECRET_KEY_NAME_RE.search(key):
        return False
    if keyword == "pass" and not _PASS_KEY_NAME_RE.search(key):
        return False
    if _in_url_user_part(match.string, key_start):
        return False
    return _accept_value(match, key_start)


def assignment_kind(match: re.Match[str]) -> str:
    """password / token / secret / api_key from the key, aws_secret for AWS secret keys."""
    _start, key = _key_name(match)
    keyword = match.group("kw").lower()
    if keyword.startswith("pass") or keyword == "pwd":
        return "password"
    if keyword == "token":
        return "token"
    if _AWS_SECRET_KEY_NAME_RE.search(key):
        start, end = assignment_span(match)
        if _AWS_SECRET_VALUE_RE.fullmatch(match.string, start, end):
            return "aws_secret"
    return "secret" if "secret" in key else "api_key"


# ----------------------------------------------------------- command lines and prose

_QUOTED_OR_WORD = r"""(?:'(?P<sq>[^'\n]{1,500})'|"(?P<dq>[^"\n]{1,500})"|(?P<val>[^\s'"`<>]+))"""
MYSQL_GLUED_RE = re.compile(r"-p" + _QUOTED_OR_WORD)
_MYSQL_COMMAND_RE = re.compile(r"(?<![\w-])(?:mysql|mariadb)[\w-]*(?:\.exe)?[ \t]")
PASSWORD_OPTION_RE = re.compile(r"--password[ \t]+" + _QUOTED_OR_WORD)
PASSWORD_PROSE_RE = re.compile(
    r"(?i:passw(?:or)?d|passphrase|passcode)[ \t]+(?i:is|was)[ \t]*(?P<colon>:?)[ \t]*"
    + _QUOTED_OR_WORD
)
_PROSE_TRAILING = ".:?,;)"


def quoted_or_word_span(match: re.Match[str], trailing: str = "") -> tuple[int, int]:
    """The value's span: inside the quotes, or the word without trailing punctuation."""
    for name in ("sq", "dq"):
        if match.group(name) is not None:
            return match.span(name)
    start, end = match.span("val")
    while end > start and match.string[end - 1] in trailing:
        end -= 1
    return start, end


def option_value_ok(match: re.Match[str]) -> bool:
    """An option's value that is not another option, a placeholder or a word like None."""
    start, end = quoted_or_word_span(match)
    value = match.string[start:end]
    return not _is_stand_in(value) and not value.startswith("-")


def accept_mysql_glued(match: re.Match[str]) -> bool:
    """``-pSECRET`` counts only as an option of a MySQL/MariaDB client on the same command."""
    text, start = match.string, match.start()
    if start == 0 or text[start - 1] not in " \t":
        return False
    command_start = max(text.rfind(c, 0, start) for c in "\n|;&") + 1
    in_mysql_command = _MYSQL_COMMAND_RE.search(text, command_start, start) is not None
    return in_mysql_command and option_value_ok(match)


SPACED_P_RE = re.compile(r"-p[ \t]+" + _QUOTED_OR_WORD)
_SPACED_P_COMMAND_RE = re.compile(
    r"(?<![\w-])(?:(?:docker|podman|nerdctl|buildah|skopeo|helm(?:[ \t]+registry)?|oras)"
    r"(?:\.exe)?[ \t]+login|sshpass)[ \t]"
)


def accept_spaced_p(match: re.Match[str]) -> bool:
    """``-p SECRET`` counts only on `docker login` (podman, helm registry, …) or `sshpass`."""
    text, start = match.string, match.start()
    if start == 0 or text[start - 1] not in " \t":
        return False
    command_start = max(text.rfind(c, 0, start) for c in "\n|;&") + 1
    in_login = _SPACED_P_COMMAND_RE.search(text, command_start, start) is not None
    return in_login and option_value_ok(match)


CURL_USER_RE = re.compile(
    r"(?:-u|--user)[ \t]+(?:'[^\s:']+:(?P<sq>[^'\n]+)'"
    r"|\"[^\s:\"]+:(?P<dq>[^\"\n]+)\"|[^\s:'\"]+:(?P<val>[^\s'\"]+))"
)
_CURL_COMMAND_RE = re.compile(r"(?<![\w-])curl(?:\.exe)?[ \t]")


def accept_curl_user(match: re.Match[str]) -> bool:
    """``-u USER:PASSWORD`` counts only as an option of curl on the same command line."""
    text, start = match.string, match.start()
    if start == 0 or text[start - 1] not in " \t":
        return False
    command_start = max(text.rfind(c, 0, start) for c in "\n|;&") + 1
    start, end = quoted_or_word_span(match)
    value = text[start:end]
    in_curl = _CURL_COMMAND_RE.search(text, command_start, start) is not None
    return in_curl and not _is_stand_in(value) and not value.startswith("[REDACTED:")


def accept_password_prose(match: re.Match[str]) -> bool:
    """``my password is: X`` (a word that ends its clause) or ``password is hunter2``."""
    start, end = prose_span(match)
    value = match.string[start:end]
    if _is_stand_in(value):
        return False
    if match.group("val") is None:
        return True
    random = _looks_random(value)
    if random is not None:
        return random
    return bool(match.group("colon")) and _ends_clause(match.string, end)


def prose_span(match: re.Match[str]) -> tuple[int, int]:
    return quoted_or_word_span(match, _PROSE_TRAILING)
