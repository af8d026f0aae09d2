"""Secret masking: credentials become ``[REDACTED:kind]`` before anything is persisted.

`mask_secrets` runs over every text that reaches the daily log, a point or a fact;
`find_secrets` returns the spans it would mask. Masking is idempotent, never touches text
without a secret, and leaves key names visible (``password = [REDACTED:password]``). Own
patterns rather than a scanner library (detect-secrets measured 300 times slower per message,
and it reports values, not spans). The detectors and the measurements: docs/secret_masking.md.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass

REDACTED_PREFIX = "[REDACTED:"


@dataclass(frozen=True, slots=True)
class SecretMatch:
    """A span of the text that holds a secret of the given kind (``text[start:end]``)."""

    kind: str
    start: int
    end: int


_Accept = Callable[[re.Match[str]], bool]
_KindOf = Callable[[re.Match[str]], str]
_SpanOf = Callable[[re.Match[str]], tuple[int, int]]


@dataclass(frozen=True, slots=True)
class _Detector:
    """One kind of secret: where matches start, the regex tried there, what to mask."""

    kind: str
    anchors: tuple[str, ...]
    """Literals a match starts with; the regex is only tried where one occurs."""
    pattern: re.Pattern[str]
    folded: bool = False
    """Look for the anchors case-insensitively (anchors are then lower case)."""
    group: str | int = 0
    accept: _Accept | None = None
    kind_of: _KindOf | None = None
    span_of: _SpanOf | None = None


# ------------------------------------------------------------------------- token checks

_AUTHORIZATION_BEFORE_RE = re.compile(r"(?i)\bauthorization[\"']?[ \t]*[:=][ \t]*[\"']?\Z")


def _has_letter_and_digit(value: str) -> bool:
    """Random tokens mix letters and digits; words and numbers do not."""
    return any(c.isdigit() for c in value) and any(c.isalpha() for c in value)


def _after_authorization(match: re.Match[str]) -> bool:
    """Whether the match follows ``Authorization:`` (header, JSON or assignment form)."""
    start = match.start()
    return _AUTHORIZATION_BEFORE_RE.search(match.string, max(0, start - 40), start) is not None


def _accept_bearer(match: re.Match[str]) -> bool:
    """In an Authorization header any token counts; a loose ``Bearer x`` needs a random one."""
    token = match.group("secret")
    return _after_authorization(match) or (len(token) >= 16 and _has_letter_and_digit(token))


def _accept_url_token(match: re.Match[str]) -> bool:
    """A user part is a token, not a name, when it mixes letters and digits."""
    return _has_letter_and_digit(match.group("secret"))


# ---------------------------------------------------------------------------- assignments

_ASSIGNMENT_RE = re.compile(
    r"""(?P<kw>passw(?:or)?d|passphrase|pwd|secret|token|key)
        ["']?[ \t]*(?P<sep>:=|=(?![=~>])|:(?![:/]))[ \t]*
        (?:"(?P<dq>(?:[^"\\\n]|\\.){1,500})"
          |'(?P<sq>(?:[^'\\\n]|\\.){1,500})'
          |`(?P<bq>[^`\n]{1,500})`
          |(?P<val>[^\s"'`;,&<>]+))""",
    re.IGNORECASE | re.VERBOSE,
)
_SECRET_KEY_NAME_RE = re.compile(r"(?:api|access|private|secret)[_-]?key\Z")
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


def _assignment_span(match: re.Match[str]) -> tuple[int, int]:
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
    and is not an answer about the password (``Password: yes``)."""
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


def _accept_assignment(match: re.Match[str]) -> bool:
    """A key that names a secret, outside a URL's user part, with a secret-looking value."""
    key_start, key = _key_name(match)
    if match.group("kw").lower() == "key" and not _SECRET_KEY_NAME_RE.search(key):
        return False
    if _in_url_user_part(match.string, key_start):
        return False
    return _accept_value(match, key_start)


def _assignment_kind(match: re.Match[str]) -> str:
    """password / token / secret / api_key from the key, aws_secret for AWS secret keys."""
    _start, key = _key_name(match)
    keyword = match.group("kw").lower()
    if keyword.startswith("pass") or keyword == "pwd":
        return "password"
    if keyword == "token":
        return "token"
    if _AWS_SECRET_KEY_NAME_RE.search(key):
        start, end = _assignment_span(match)
        if _AWS_SECRET_VALUE_RE.fullmatch(match.string, start, end):
            return "aws_secret"
    return "secret" if "secret" in key else "api_key"


# ----------------------------------------------------------- command lines and prose

_QUOTED_OR_WORD = r"""(?:'(?P<sq>[^'\n]{1,500})'|"(?P<dq>[^"\n]{1,500})"|(?P<val>[^\s'"`<>]+))"""
_MYSQL_GLUED_RE = re.compile(r"-p" + _QUOTED_OR_WORD)
_MYSQL_COMMAND_RE = re.compile(r"(?<![\w-])(?:mysql|mariadb)[\w-]*(?:\.exe)?[ \t]")
_PASSWORD_OPTION_RE = re.compile(r"--password[ \t]+" + _QUOTED_OR_WORD)
_PASSWORD_PROSE_RE = re.compile(
    r"(?i:passw(?:or)?d|passphrase|passcode)[ \t]+(?i:is|was)[ \t]*(?P<colon>:?)[ \t]*"
    + _QUOTED_OR_WORD
)
_PROSE_TRAILING = ".:?,;)"


def _quoted_or_word_span(match: re.Match[str], trailing: str = "") -> tuple[int, int]:
    """The value's span: inside the quotes, or the word without trailing punctuation."""
    for name in ("sq", "dq"):
        if match.group(name) is not None:
            return match.span(name)
    start, end = match.span("val")
    while end > start and match.string[end - 1] in trailing:
        end -= 1
    return start, end


def _option_value_ok(match: re.Match[str]) -> bool:
    """An option's value that is not another option, a placeholder or a word like None."""
    start, end = _quoted_or_word_span(match)
    value = match.string[start:end]
    return not _is_stand_in(value) and not value.startswith("-")


def _accept_mysql_glued(match: re.Match[str]) -> bool:
    """``-pSECRET`` counts only as an option of a MySQL/MariaDB client on the same command."""
    text, start = match.string, match.start()
    if start == 0 or text[start - 1] not in " \t":
        return False
    command_start = max(text.rfind(c, 0, start) for c in "\n|;&") + 1
    in_mysql_command = _MYSQL_COMMAND_RE.search(text, command_start, start) is not None
    return in_mysql_command and _option_value_ok(match)


def _accept_password_prose(match: re.Match[str]) -> bool:
    """``my password is: X`` (a word that ends its clause) or ``password is hunter2``."""
    start, end = _prose_span(match)
    value = match.string[start:end]
    if _is_stand_in(value):
        return False
    if match.group("val") is None:
        return True
    random = _looks_random(value)
    if random is not None:
        return random
    return bool(match.group("colon")) and _ends_clause(match.string, end)


def _prose_span(match: re.Match[str]) -> tuple[int, int]:
    return _quoted_or_word_span(match, _PROSE_TRAILING)


# ------------------------------------------------------------------------------ detectors

# Token boundaries. ``]`` and ``[`` count as token characters so that a token glued to a masked
# span (``[REDACTED:k]sk-…``) is judged as it was before masking: masking stays idempotent.
_TOKEN_BEFORE = r"(?<![A-Za-z0-9_\]-])"
_TOKEN_AFTER = r"(?![A-Za-z0-9_\[-])"

_DETECTORS: tuple[_Detector, ...] = (
    _Detector(
        "private_key",
        ("-----BEGIN ",),
        re.compile(
            r"-----BEGIN [A-Z0-9 ]*?PRIVATE KEY(?: BLOCK)?-----"
            r"(?:[\s\S]*?-----END [A-Z0-9 ]*?PRIVATE KEY(?: BLOCK)?-----"
            r"|(?:\r?\n[ \t]*(?:[A-Za-z0-9+/=]+|(?:Proc-Type|DEK-Info|Comment|Version):.*))*)"
        ),
    ),
    _Detector(
        "aws_key",
        ("AKIA", "ASIA", "ABIA", "ACCA"),
        re.compile(r"(?<![A-Za-z0-9\]])(?:AKIA|ASIA|ABIA|ACCA)[A-Z0-9]{16}(?![A-Za-z0-9\[])"),
    ),
    _Detector(
        "github_token",
        ("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"),
        re.compile(
            r"(?<![A-Za-z0-9_\]])(?:gh[pousr]_[A-Za-z0-9]{30,255}|github_pat_[A-Za-z0-9_]{40,255})"
            r"(?![A-Za-z0-9_\[])"
        ),
    ),
    _Detector(
        "gitlab_token",
        ("glpat-",),
        re.compile(_TOKEN_BEFORE + r"glpat-[A-Za-z0-9_-]{20,}" + _TOKEN_AFTER),
    ),
    _Detector(
        "slack_token",
        ("xox", "xapp-"),
        re.compile(
            _TOKEN_BEFORE
            + r"(?:xox[abposr]-[A-Za-z0-9-]{10,}|xapp-[0-9]+-[A-Za-z0-9-]{10,})"
            + _TOKEN_AFTER
        ),
    ),
    _Detector(
        "hf_token",
        ("hf_",),
        re.compile(_TOKEN_BEFORE + r"hf_[A-Za-z0-9]{30,}" + _TOKEN_AFTER),
    ),
    _Detector(
        "npm_token",
        ("npm_",),
        re.compile(_TOKEN_BEFORE + r"npm_[A-Za-z0-9]{36,}" + _TOKEN_AFTER),
    ),
    _Detector(
        "slack_webhook",
        ("hooks.slack.com/services/",),
        re.compile(r"hooks\.slack\.com/services/(?P<secret>[A-Za-z0-9_/-]{16,})"),
        group="secret",
    ),
    _Detector(
        "anthropic_key",
        ("sk-ant-",),
        re.compile(_TOKEN_BEFORE + r"sk-ant-[A-Za-z0-9_-]{20,}" + _TOKEN_AFTER),
    ),
    _Detector(
        "openai_key",
        ("sk-",),
        re.compile(
            _TOKEN_BEFORE + r"sk-(?!ant-)(?=[A-Za-z0-9_-]*[0-9])[A-Za-z0-9_-]{20,}" + _TOKEN_AFTER
        ),
    ),
    _Detector(
        "google_api_key",
        ("AIza",),
        re.compile(_TOKEN_BEFORE + r"AIza[0-9A-Za-z_-]{35}" + _TOKEN_AFTER),
    ),
    _Detector(
        "stripe_key",
        ("sk_live_", "rk_live_", "sk_test_", "rk_test_"),
        re.compile(r"(?<![A-Za-z0-9_\]])[sr]k_(?:live|test)_[0-9A-Za-z]{16,}(?![0-9A-Za-z\[])"),
    ),
    _Detector(
        "bearer_token",
        ("bearer",),
        re.compile(r"(?<![A-Za-z0-9_\]])(?i:bearer)[ \t]+(?P<secret>[A-Za-z0-9._~+/-]{8,}=*)"),
        folded=True,
        group="secret",
        accept=_accept_bearer,
    ),
    _Detector(
        "basic_auth",
        ("basic",),
        re.compile(r"(?i:basic)[ \t]+(?P<secret>[A-Za-z0-9+/]{8,}={0,2})"),
        folded=True,
        group="secret",
        accept=_after_authorization,
    ),
    _Detector(
        "jwt",
        ("eyJ",),
        re.compile(_TOKEN_BEFORE + r"eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]*"),
    ),
    _Detector(
        "password",
        ("://",),
        re.compile(
            r"://[^\s:/@'\"<>\[\]]*:(?!\[REDACTED:)(?P<secret>[^\s/@'\"<>?#]+)@(?=[A-Za-z0-9\[])"
        ),
        group="secret",
    ),
    _Detector(
        "url_credentials",
        ("://",),
        re.compile(r"://(?P<secret>[A-Za-z0-9_.~%-]{20,})@(?=[A-Za-z0-9\[])"),
        group="secret",
        accept=_accept_url_token,
    ),
    _Detector(
        "password",
        ("-p",),
        _MYSQL_GLUED_RE,
        accept=_accept_mysql_glued,
        span_of=_quoted_or_word_span,
    ),
    _Detector(
        "password",
        ("--password",),
        _PASSWORD_OPTION_RE,
        accept=_option_value_ok,
        span_of=_quoted_or_word_span,
    ),
    _Detector(
        "password",
        ("passw", "passphrase", "passcode"),
        _PASSWORD_PROSE_RE,
        folded=True,
        accept=_accept_password_prose,
        span_of=_prose_span,
    ),
    _Detector(
        "password",
        ("passw", "passphrase", "pwd", "secret", "token", "key"),
        _ASSIGNMENT_RE,
        folded=True,
        accept=_accept_assignment,
        kind_of=_assignment_kind,
        span_of=_assignment_span,
    ),
)

_ASCII_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")


# --------------------------------------------------------------------------------- public


def find_secrets(text: str) -> list[SecretMatch]:
    """The secrets in ``text``: sorted, non-overlapping spans with their kind."""
    folded = _fold(text)
    candidates = [
        (start, end, priority, kind)
        for priority, detector in enumerate(_DETECTORS)
        for start, end, kind in _detect(detector, text, folded if detector.folded else text)
        if end > start
    ]
    return _merge(candidates)


_SURROGATE_RE = re.compile("[\ud800-\udfff]")


def replace_lone_surrogates(text: str) -> str:
    """`text` writable as UTF-8: each lone surrogate (a byte that was not UTF-8, decoded with
    ``surrogateescape``, or a ``\\ud800`` escape in JSON) becomes U+FFFD, one for one."""
    if text.isascii() or not _SURROGATE_RE.search(text):
        return text
    return _SURROGATE_RE.sub("\ufffd", text)


class MaskedText(str):
    """A text `mask_secrets` has already masked: masking it again returns it as it is.

    The turn masks the user's message once, where it enters; the log, the points, the
    classifier and the prompt all receive this object, so none of them pays the scan again."""

    __slots__ = ()

    def strip(self, chars: str | None = None) -> MaskedText:
        """Still masked: no detector depends on white space at the ends of a text."""
        return MaskedText(str.strip(self, chars))


def mask_secrets(text: str) -> MaskedText:
    """``text`` with every secret replaced by ``[REDACTED:kind]``; idempotent.

    Every text passes here before it is persisted, so here it also becomes writable as UTF-8:
    a lone surrogate (a byte that was not UTF-8 in an argument or on stdin, which Python
    decodes with ``surrogateescape``) becomes U+FFFD, one for one, so positions stay."""
    if isinstance(text, MaskedText):
        return text
    text = replace_lone_surrogates(text)
    matches = find_secrets(text)
    if not matches:
        return MaskedText(text)
    parts: list[str] = []
    position = 0
    for match in matches:
        parts.append(text[position : match.start])
        parts.append(f"{REDACTED_PREFIX}{match.kind}]")
        position = match.end
    parts.append(text[position:])
    return MaskedText("".join(parts))


# ------------------------------------------------------------------------------- engine


def _fold(text: str) -> str:
    """Lower case with every character at its original index (ASCII folding if need be)."""
    folded = text.lower()
    return folded if len(folded) == len(text) else text.translate(_ASCII_LOWER)


def _anchor_positions(haystack: str, anchors: tuple[str, ...]) -> list[int]:
    """Every index where one of the anchors begins, ascending."""
    positions: set[int] = set()
    for anchor in anchors:
        index = haystack.find(anchor)
        while index >= 0:
            positions.add(index)
            index = haystack.find(anchor, index + 1)
    return sorted(positions)


def _detect(detector: _Detector, text: str, haystack: str) -> Iterator[tuple[int, int, str]]:
    """Spans (and kinds) one detector finds: its regex tried at each anchor."""
    for position in _anchor_positions(haystack, detector.anchors):
        match = detector.pattern.match(text, position)
        if match is None or (detector.accept is not None and not detector.accept(match)):
            continue
        kind = detector.kind if detector.kind_of is None else detector.kind_of(match)
        span = match.span(detector.group) if detector.span_of is None else detector.span_of(match)
        yield span[0], span[1], kind


def _merge(candidates: list[tuple[int, int, int, str]]) -> list[SecretMatch]:
    """Union overlapping spans; a merged span takes the kind of its highest-priority part."""
    merged: list[tuple[int, int, int, str]] = []
    for start, end, priority, kind in sorted(candidates):
        if merged and start < merged[-1][1]:
            last_start, last_end, last_priority, last_kind = merged[-1]
            if priority < last_priority:
                last_priority, last_kind = priority, kind
            merged[-1] = (last_start, max(last_end, end), last_priority, last_kind)
        else:
            merged.append((start, end, priority, kind))
    return [SecretMatch(kind, start, end) for start, end, _priority, kind in merged]
