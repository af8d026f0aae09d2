"""Issue 7, part 7: property fuzzing of the log parser, the save filter, the secret masker and
the doc-ingest splitter.

`just test` runs these with hypothesis' default profile (100 examples each); `just fuzz` runs
them with the `fuzz` profile of tests/conftest.py (20,000 examples each, no deadline). No test
here sets `max_examples`, so the profile decides.

The unit suites hold the example-based cases and smaller property runs these extend:
tests/test_daily_log.py, tests/test_save_filter.py, tests/test_secret_masking.py,
tests/test_doc_splitter.py.
"""

from __future__ import annotations

import re
import string

from hypothesis import example, given, settings
from hypothesis import strategies as st

from memory.doc_splitter import PREAMBLE, split_markdown
from memory.save_filter import (
    RULE_DEDUP,
    RULES,
    SaveFilter,
    SaveFilterConfig,
    block_lengths,
    echo_coverage,
)
from memory.secret_masking import REDACTED_PREFIX, find_secrets, mask_secrets
from store.daily_log import ROLES, LogMessage, format_message, parse_messages

FUZZ = settings(deadline=None)  # the profile decides how many examples

# ------------------------------------------------------------------------- strategies

# Lines that look like the log's structure, Markdown structure, or break lines oddly.
STRUCTURE_LINES = [
    "### user",
    "### assistant",
    "### user  ",
    "### assistant\t",
    "### user\r",
    "\\### user",
    "\\\\### assistant",
    "###user",
    "### Summary",
    "## Recalled context",
    "<!-- straylight {} -->",
    '<!-- straylight {"conversation": "evil", "status": "failed"} -->',
    "<!-- straylight not json -->",
    "\\<!-- straylight {}",
    "-->",
    "```",
    "~~~",
    "[^1]: a footnote",
    "    continued",
    "# Heading",
    "###### six",
    "",
    "\r",
    "\\",
    "\x00",
    "a\rb",
    "\x85\u2028\u2029",
    "über ✓ 日本語",
]
any_char = st.characters(codec="utf-8")  # everything UTF-8 can hold: NUL, controls, U+FFFF…
wild_text = st.one_of(
    st.text(any_char),
    st.lists(st.one_of(st.sampled_from(STRUCTURE_LINES), st.text(any_char)), max_size=10).map(
        "\n".join
    ),
    st.lists(st.one_of(st.sampled_from(STRUCTURE_LINES), st.text(any_char)), max_size=10).map(
        "\r\n".join
    ),
)
roles = st.sampled_from(ROLES)
statuses = st.sampled_from(["complete", "cut_off", "cancelled", "failed"])
meta_text = st.one_of(st.none(), st.text(any_char, max_size=40))


@st.composite
def log_messages(draw: st.DrawFn) -> LogMessage:
    return LogMessage(
        role=draw(roles),
        content=draw(wild_text),
        conversation_id=draw(st.text(any_char, max_size=30)),
        model=draw(meta_text) or None,
        status=draw(statuses),
        reason=draw(meta_text) or None,
    )


def summary(message: LogMessage) -> tuple[object, ...]:
    return (
        message.role,
        message.content,
        message.conversation_id,
        message.model,
        message.status,
        message.reason,
    )


# ------------------------------------------------------------------------ the log parser


@FUZZ
@given(st.lists(log_messages(), max_size=6))
@example([LogMessage("user", "### user\r\n### assistant\r\n\r\n", conversation_id="c")])
@example([LogMessage("assistant", "\n\n", conversation_id="")])
def test_any_messages_round_trip_through_format_and_parse(messages: list[LogMessage]) -> None:
    text = "".join(format_message(m) for m in messages)
    assert [summary(m) for m in parse_messages(text)] == [summary(m) for m in messages]
    # The bytes on disk, read back the way `DailyLog.read_day` reads them.
    disk = text.encode("utf-8").decode("utf-8", errors="replace")
    assert [summary(m) for m in parse_messages(disk)] == [summary(m) for m in messages]


def separator(existing: str) -> str:
    """What `DailyLog.append` puts between a file and the next message (a crash may have cut
    the file anywhere)."""
    if not existing or existing.endswith("\n\n"):
        return ""
    return "\n" if existing.endswith("\n") else "\n\n"


@FUZZ
@given(
    st.one_of(wild_text, st.binary().map(lambda b: b.decode("utf-8", "replace"))),
    log_messages(),
)
@example("### user\n<!-- straylight {", LogMessage("user", "x", conversation_id="c"))
@example("```\n### user", LogMessage("assistant", "", conversation_id="c"))
def test_a_message_appended_after_any_damage_reads_back(junk: str, message: LogMessage) -> None:
    """Whatever a crash or a hand edit left in the file, the next appended message is read
    back whole: nothing committed after the damage is lost."""
    parsed = parse_messages(junk + separator(junk) + format_message(message))
    assert parsed and summary(parsed[-1]) == summary(message)


@FUZZ
@given(st.binary(max_size=2000))
@example(b'### user\r\n<!-- straylight {"time": 5} -->\r\n\xff\xfe')
@example(b"### assistant")
@example(b'### user\n<!-- straylight {"time": "not a time", "status": 1} -->\n')
def test_the_parser_never_raises_on_arbitrary_bytes(raw: bytes) -> None:
    text = raw.decode("utf-8", errors="replace")
    messages = parse_messages(text)
    headers = re.findall(r"^### (?:user|assistant)[ \t]*\r?$", text, flags=re.MULTILINE)
    assert len(messages) == len(headers)
    known = {"complete", "cut_off", "cancelled", "failed", "truncated"}
    assert all(m.role in ROLES and m.status in known for m in messages)


structured_bytes = st.lists(
    st.one_of(
        st.sampled_from([line.encode() + b"\n" for line in STRUCTURE_LINES]),
        st.sampled_from([b"\r\n", b"\n\n", b"\xff", b"\xed\xa0\x80", b"\xc3"]),
        st.binary(max_size=20),
    ),
    max_size=30,
).map(b"".join)


@FUZZ
@given(structured_bytes)
def test_the_parser_never_raises_on_log_shaped_bytes(raw: bytes) -> None:
    messages = parse_messages(raw.decode("utf-8", errors="replace"))
    assert all(isinstance(m.content, str) for m in messages)


# --------------------------------------------------------------------- the save filter

filter_configs = st.builds(
    SaveFilterConfig,
    min_chars=st.integers(0, 80),
    footnote_ratio=st.floats(0.0, 1.0),
    code_ratio=st.floats(0.0, 1.0),
    dedup_lookback=st.integers(0, 4),
    dedup_threshold=st.floats(0.0, 1.0),
)
offers = st.lists(
    st.tuples(roles, wild_text, st.sampled_from(["c1", "c2", ""]), st.lists(wild_text, max_size=3)),
    min_size=1,
    max_size=6,
)


def run_filter(config: SaveFilterConfig, items: list[tuple[str, str, str, list[str]]]) -> list:
    sf = SaveFilter(config)
    decisions = []
    for role, content, conversation, recalled in items:
        reason = sf.skip_reason(role, content, conversation, recalled)
        decisions.append(reason)
        if reason is None:
            sf.record_saved(role, content, conversation)
    return decisions


@FUZZ
@given(filter_configs, offers)
def test_the_save_filter_never_raises_and_is_deterministic(config, items) -> None:
    first = run_filter(config, items)
    assert first == run_filter(config, items)
    assert all(reason is None or reason in RULES for reason in first)


@FUZZ
@given(roles, wild_text, st.sampled_from(["c1", ""]))
def test_a_saved_text_offered_again_is_a_duplicate(role: str, content: str, conversation) -> None:
    sf = SaveFilter()
    if sf.skip_reason(role, content, conversation) is not None:
        return  # the shape rules decide first; nothing to compare
    sf.record_saved(role, content, conversation)
    assert sf.skip_reason(role, content, conversation) == RULE_DEDUP


@FUZZ
@given(wild_text, st.lists(wild_text, max_size=3))
def test_the_filter_measures_stay_in_range(text: str, recalled: list[str]) -> None:
    lengths = block_lengths(text)
    assert lengths.footnote >= 0 and lengths.code >= 0
    assert lengths.footnote + lengths.code <= len(text)
    assert 0.0 <= echo_coverage(text, recalled) <= 1.0


# -------------------------------------------------------------------- the secret masker

KINDS = [
    *["private_key", "aws_key", "aws_secret", "github_token", "gitlab_token", "slack_token"],
    *["slack_webhook", "anthropic_key", "openai_key", "google_api_key", "stripe_key"],
    *["bearer_token", "basic_auth", "jwt", "password", "url_credentials", "secret", "token"],
    *["api_key", "hf_token", "npm_token"],
]
LONGEST_TOKEN = max(len(f"{REDACTED_PREFIX}{kind}]") for kind in KINDS)  # 26

FRAGMENTS = [
    *["password", "PASSWORD", "passwd", "pwd", "token", "api_key", "secret", "client_secret"],
    *["secret_access_key", "key", "=", ":", ":=", " = ", ": ", '"', "'", "`", " ", "\n", "\r\n"],
    *[",", ";", "&", "@", "/", "://", "https://user:", "postgres://app:", "[REDACTED:", "]"],
    *["[", "(", ")", "Bearer ", "Authorization: ", "Basic ", "sk-", "sk-ant-", "sk-proj-"],
    *["ghp_", "github_pat_", "AKIA", "AIza", "eyJ", ".", "xoxb-", "glpat-", "sk_live_"],
    *["-----BEGIN RSA PRIVATE KEY-----", "-----END RSA PRIVATE KEY-----", "MIIEow"],
    *["hooks.slack.com/services/", "hunter2", "<", ">", "$", "#", "İ", "ß", "\\", "\x00"],
]
mask_text = st.one_of(
    st.text(any_char),
    st.lists(
        st.one_of(
            st.sampled_from(FRAGMENTS),
            st.text(string.ascii_letters + string.digits + "_-+/=", max_size=48),
        ),
        max_size=40,
    ).map("".join),
)
ALNUM = string.ascii_letters + string.digits


def _exactly(alphabet: str, size: int) -> st.SearchStrategy[str]:
    return st.text(alphabet, min_size=size, max_size=size)


known_secrets = st.one_of(
    _exactly(string.ascii_uppercase + string.digits, 16).map(lambda s: "AKIA" + s),
    _exactly(ALNUM, 36).map(lambda s: "ghp_" + s),
    _exactly(ALNUM, 30).map(lambda s: "sk-proj-" + s + "7"),
    _exactly(ALNUM, 30).map(lambda s: "sk-ant-api03-" + s),
    _exactly(ALNUM + "_-", 35).map(lambda s: "AIza" + s),
    _exactly(ALNUM, 24).map(lambda s: "sk_live_" + s),
    _exactly(ALNUM, 24).map(lambda s: "glpat-" + s),
    _exactly(ALNUM, 24).map(lambda s: "xoxb-" + s),
    st.tuples(_exactly(ALNUM, 20), _exactly(ALNUM, 30)).map(lambda p: f"eyJ{p[0]}.eyJ{p[1]}.sig"),
)


@FUZZ
@given(mask_text)
@example("password = x[REDACTED:token]y")
@example("token=AKIAIOSFODNN7EXAMPLE-x9 :")
def test_masking_is_idempotent_and_never_raises(text: str) -> None:
    once = mask_secrets(text)
    assert mask_secrets(once) == once


@FUZZ
@given(mask_text)
def test_masking_replaces_exactly_the_found_spans(text: str) -> None:
    """The output is the text with each found span (sorted, disjoint, non-empty) replaced by
    its `[REDACTED:kind]` token; so it never grows by more than LONGEST_TOKEN - 1 characters
    a secret, and text without a secret comes back unchanged."""
    found = find_secrets(text)
    previous_end = 0
    rebuilt = []
    for match in found:
        assert previous_end <= match.start < match.end <= len(text)
        assert match.kind in KINDS
        rebuilt += [text[previous_end : match.start], f"{REDACTED_PREFIX}{match.kind}]"]
        previous_end = match.end
    rebuilt.append(text[previous_end:])
    masked = mask_secrets(text)
    assert masked == "".join(rebuilt)
    assert len(masked) <= len(text) + len(found) * (LONGEST_TOKEN - 1)
    if not found:
        assert masked == text


@FUZZ
@given(st.text(st.characters(codec=None, categories=None), max_size=200))
@example("\udcff\udcfe")
@example("password = hunter2\ud800")
def test_masked_text_can_always_be_written_as_utf8(text: str) -> None:
    """Lone surrogates (undecodable bytes of an argument or stdin) become U+FFFD one for one:
    whatever is masked can be written to the log and the database."""
    masked = mask_secrets(text)
    masked.encode("utf-8")
    assert mask_secrets(masked) == masked


@FUZZ
@given(st.text(any_char, max_size=60), known_secrets, st.text(any_char, max_size=60))
@example("password=", "ghp_" + "a" * 36, "")
@example("https://", "AKIA" + "A" * 16, "@host")
def test_a_known_secret_is_masked_wherever_it_stands(before: str, secret: str, after: str):
    """A secret set off by whitespace is masked whatever surrounds it."""
    masked = mask_secrets(f"{before} {secret} {after}")
    assert secret not in masked
    assert REDACTED_PREFIX in masked
    assert mask_secrets(masked) == masked


# ------------------------------------------------------------------ the doc splitter

HEADING_RE = re.compile(r"^(#{1,6})[ \t]+(.+?)[ \t]*#*[ \t]*$")
markdown_text = st.one_of(
    st.text(any_char),
    st.lists(
        st.one_of(
            st.sampled_from(STRUCTURE_LINES),
            st.sampled_from(["# A", "## B", "### C", "## B", "#", "# #", "  ## indented", "```py"]),
            st.text(any_char, max_size=30),
        ),
        max_size=20,
    ).map("\n".join),
)


def non_space(text: str) -> str:
    return "".join(text.split())


def without_headings(text: str) -> str:
    """Non-space text outside heading lines (indented ones too: an entry's text is stripped)."""
    return "".join(
        non_space(line) for line in text.split("\n") if not HEADING_RE.match(line.lstrip())
    )


def body_of(entry_content: str, key: str) -> str:
    """An entry's own text: without the parents' path line put first for context."""
    first, newline, rest = entry_content.partition("\n")
    if newline and key.startswith(first + " > ") and HEADING_RE.match(rest.partition("\n")[0]):
        return rest
    return entry_content


@FUZZ
@given(markdown_text)
@example("# a\n```\n# not a heading\n```\n## b\ntext")
@example("preamble\n# A\n## A\n# A")
def test_the_splitter_covers_the_text_with_unique_stable_keys(text: str) -> None:
    entries = split_markdown(text)
    keys = [e.key for e in entries]
    assert len(set(keys)) == len(keys) and all(keys)
    assert PREAMBLE not in keys[1:]
    assert split_markdown(text) == entries  # same text, same ids and contents
    # Every character that is not whitespace and not on a heading line is in exactly one
    # entry, in document order; a heading with no body is folded into a neighbour (its line,
    # or the heading path of its child), never lost.
    covered = "".join(without_headings(body_of(e.content, e.key)) for e in entries)
    assert covered == without_headings(text.replace("\r\n", "\n"))
    for line in text.replace("\r\n", "\n").split("\n"):
        heading = HEADING_RE.match(line)
        if heading:
            title = heading.group(2).strip()
            assert any(title in e.content or title in e.key for e in entries), line


@FUZZ
@given(markdown_text.filter(lambda t: "\r" not in t))
def test_crlf_files_split_like_lf_files(text: str) -> None:
    assert split_markdown(text.replace("\n", "\r\n")) == split_markdown(text)


title = st.text(ALNUM + " ", min_size=1, max_size=12).map(str.strip).filter(bool)
body_line = st.text(ALNUM + " .,", max_size=30)
# Sections with a body: a heading with none is folded into a neighbour (no entry of its own),
# so adding a first line to it adds an entry; the invariant below is about sections with text.
body_lines = st.lists(body_line, min_size=1, max_size=3).filter(
    lambda lines: any(line.strip() for line in lines)
)
sections = st.lists(st.tuples(st.integers(1, 4), title, body_lines), min_size=1, max_size=8)


def render(parts: list[tuple[int, str, list[str]]]) -> str:
    return "\n".join(
        "#" * level + " " + name + "\n" + "\n".join(lines) for level, name, lines in parts
    )


@FUZZ
@given(sections, st.data())
def test_editing_one_section_changes_only_its_entry(parts, data: st.DataObject) -> None:
    """The documented invariant behind idempotent ingest: an edit to one section's body
    changes that entry's content and nothing else (keys and other entries byte-identical)."""
    index = data.draw(st.integers(0, len(parts) - 1))
    level, name, lines = parts[index]
    edited = [*parts[:index], (level, name, [*lines, "an added line"]), *parts[index + 1 :]]
    before, after = split_markdown(render(parts)), split_markdown(render(edited))
    assert [e.key for e in before] == [e.key for e in after]
    changed = [i for i, (a, b) in enumerate(zip(before, after, strict=True)) if a != b]
    assert changed == [index]
