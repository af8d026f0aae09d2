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

from memory.secret_checks import (
    ASSIGNMENT_RE,
    CURL_USER_RE,
    MYSQL_GLUED_RE,
    PASSWORD_OPTION_RE,
    PASSWORD_PROSE_RE,
    REDACTED_PREFIX,
    SPACED_P_RE,
    accept_assignment,
    accept_bearer,
    accept_curl_user,
    accept_mysql_glued,
    accept_password_prose,
    accept_spaced_p,
    accept_url_token,
    after_authorization,
    assignment_kind,
    assignment_span,
    option_value_ok,
    prose_span,
    quoted_or_word_span,
)


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


# ------------------------------------------------------------------------------ detectors

# Token boundaries. ``]`` and ``[`` count as token characters so that a token glued to a masked
# span (``[REDACTED:k]sk-…``) is judged as it was before masking: masking stays idempotent.
# A ``_`` before a token is a boundary: names glue a token to a word that way (``key_sk-…``,
# ``TOKEN_ghp_…``), and a key is as secret with a prefix as without one.
_TOKEN_BEFORE = r"(?<![A-Za-z0-9\]-])"
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
    _Detector(  # the secret key written after its key id in prose: "AKIA… with secret wJalr…"
        "aws_secret",
        ("AKIA", "ASIA", "ABIA", "ACCA"),
        re.compile(
            r"(?<![A-Za-z0-9\]])(?:AKIA|ASIA|ABIA|ACCA)[A-Z0-9]{16}(?![A-Za-z0-9\[])"
            r"[\s\S]{0,120}?(?<![A-Za-z0-9/+\]])"
            r"(?P<secret>(?=[A-Za-z0-9/+]*[0-9])(?=[A-Za-z0-9/+]*[a-z])(?=[A-Za-z0-9/+]*[A-Z])"
            r"[A-Za-z0-9/+]{40})(?![A-Za-z0-9/+\[])"
        ),
        group="secret",
    ),
    _Detector(
        "github_token",
        ("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"),
        re.compile(
            r"(?<![A-Za-z0-9\]])(?:gh[pousr]_[A-Za-z0-9]{30,255}|github_pat_[A-Za-z0-9_]{40,255})"
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
        "pypi_token",
        ("pypi-",),
        re.compile(_TOKEN_BEFORE + r"pypi-AgE[A-Za-z0-9_-]{50,}" + _TOKEN_AFTER),
    ),
    _Detector(
        "docker_token",
        ("dckr_pat_",),
        re.compile(_TOKEN_BEFORE + r"dckr_pat_[A-Za-z0-9_-]{20,}" + _TOKEN_AFTER),
    ),
    _Detector(
        "shopify_token",
        ("shpat_", "shpss_", "shpca_", "shppa_"),
        re.compile(_TOKEN_BEFORE + r"shp(?:at|ss|ca|pa)_[a-fA-F0-9]{32}" + _TOKEN_AFTER),
    ),
    _Detector(
        "vault_token",
        ("hvs.", "hvb."),
        re.compile(_TOKEN_BEFORE + r"hv[sb]\.[A-Za-z0-9_-]{24,}" + _TOKEN_AFTER),
    ),
    _Detector(
        "digitalocean_token",
        ("dop_v1_", "doo_v1_", "dor_v1_"),
        re.compile(_TOKEN_BEFORE + r"do[por]_v1_[a-f0-9]{64}" + _TOKEN_AFTER),
    ),
    _Detector(
        "square_token",
        ("sq0csp-", "sq0atp-"),
        re.compile(_TOKEN_BEFORE + r"sq0(?:csp|atp)-[0-9A-Za-z_-]{22,}" + _TOKEN_AFTER),
    ),
    _Detector(
        "slack_webhook",
        ("hooks.slack.com/services/",),
        re.compile(r"hooks\.slack\.com/services/(?P<secret>[A-Za-z0-9_/-]{16,})"),
        group="secret",
    ),
    _Detector(
        "discord_webhook",
        ("discord.com/api/webhooks/", "discordapp.com/api/webhooks/"),
        re.compile(r"discord(?:app)?\.com/api/webhooks/[0-9]{5,30}/(?P<secret>[A-Za-z0-9_-]{20,})"),
        group="secret",
    ),
    _Detector(
        "sendgrid_key",
        ("SG.",),
        re.compile(_TOKEN_BEFORE + r"SG\.[A-Za-z0-9_-]{22}\.[A-Za-z0-9_-]{43}" + _TOKEN_AFTER),
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
        "google_oauth_secret",
        ("GOCSPX-",),
        re.compile(_TOKEN_BEFORE + r"GOCSPX-[A-Za-z0-9_-]{20,}" + _TOKEN_AFTER),
    ),
    _Detector(
        "stripe_key",
        ("sk_live_", "rk_live_", "sk_test_", "rk_test_"),
        re.compile(r"(?<![A-Za-z0-9\]])[sr]k_(?:live|test)_[0-9A-Za-z]{16,}(?![0-9A-Za-z\[])"),
    ),
    _Detector(
        "bearer_token",
        ("bearer",),
        re.compile(r"(?<![A-Za-z0-9_\]])(?i:bearer)[ \t]+(?P<secret>[A-Za-z0-9._~+/-]{8,}=*)"),
        folded=True,
        group="secret",
        accept=accept_bearer,
    ),
    _Detector(
        "token_auth",
        ("authorization",),
        re.compile(
            r"(?i:authorization)[ \t]*:[ \t]*(?i:token)[ \t]+(?P<secret>[A-Za-z0-9._~+/-]{20,}=*)"
        ),
        folded=True,
        group="secret",
    ),
    _Detector(
        "basic_auth",
        ("basic",),
        re.compile(r"(?i:basic)[ \t]+(?P<secret>[A-Za-z0-9+/]{8,}={0,2})"),
        folded=True,
        group="secret",
        accept=after_authorization,
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
        accept=accept_url_token,
    ),
    _Detector(
        "password",
        ("-p",),
        MYSQL_GLUED_RE,
        accept=accept_mysql_glued,
        span_of=quoted_or_word_span,
    ),
    _Detector(
        "password",
        ("-p ", "-p\t"),
        SPACED_P_RE,
        accept=accept_spaced_p,
        span_of=quoted_or_word_span,
    ),
    _Detector(
        "password",
        ("-u", "--user"),
        CURL_USER_RE,
        accept=accept_curl_user,
        span_of=quoted_or_word_span,
    ),
    _Detector(
        "password",
        ("--password",),
        PASSWORD_OPTION_RE,
        accept=option_value_ok,
        span_of=quoted_or_word_span,
    ),
    _Detector(
        "password",
        ("passw", "passphrase", "passcode"),
        PASSWORD_PROSE_RE,
        folded=True,
        accept=accept_password_prose,
        span_of=prose_span,
    ),
    _Detector(
        "password",
        ("pass", "pwd", "secret", "token", "key"),
        ASSIGNMENT_RE,
        folded=True,
        accept=accept_assignment,
        kind_of=assignment_kind,
        span_of=assignment_span,
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
