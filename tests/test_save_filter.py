"""The save filter: each rule, their order, roles, dedup scope, the threshold mapping, threads."""

from __future__ import annotations

import sys
import threading
from collections.abc import Iterator
from difflib import SequenceMatcher  # only here, to check the mapping; never in memory/

import pytest

from memory.save_filter import (
    RULE_CODE_DOMINANT,
    RULE_DEDUP,
    RULE_EMPTY,
    RULE_FOOTNOTE_DOMINANT,
    RULE_LENGTH_FLOOR,
    RULE_RECALLED_ECHO,
    RULES,
    BlockLengths,
    SaveFilter,
    SaveFilterConfig,
    block_lengths,
    dedup_similarity,
    echo_coverage,
)

CONV = "conv-1"
POOL = (
    "Sure. For the billing service we put pgbouncer in transaction mode in front of Postgres, "
    "with a pool size of 20 per database and server_idle_timeout at 60 seconds."
)
SSH = (
    "That error means the CI runner has no SSH key that the submodule's host accepts. Add a "
    "deploy key with read access and load it into the runner's ssh-agent."
)
QUESTION = (
    "Can you remind me how to set up the Postgres connection pool for the billing service? "
    "I think we used pgbouncer last time."
)
HALLUCINATION = (
    "The project Straylight was founded in 1997 by Dr. Elena Voss at the Zurich Institute for "
    "Applied Memory, where she first described the five-layer recall model."
)


def text_of(length: int, word: str = "lorem ") -> str:
    """Prose-like filler of exactly ``length`` characters, no leading or trailing blanks."""
    return (word * (length // len(word) + 1))[:length].strip().ljust(length, "x")


@pytest.fixture
def sf() -> SaveFilter:
    return SaveFilter()


# ----------------------------------------------------------------------- empty and length


@pytest.mark.parametrize("role", ["user", "assistant"])
@pytest.mark.parametrize("content", ["", "   ", "\n\t \n"])
def test_empty_text_is_named_empty(sf: SaveFilter, role: str, content: str) -> None:
    assert sf.skip_reason(role, content, CONV) == RULE_EMPTY


@pytest.mark.parametrize("role", ["user", "assistant"])
def test_length_floor_applies_to_both_roles_and_exactly_min_chars_passes(
    sf: SaveFilter, role: str
) -> None:
    assert sf.skip_reason(role, text_of(49), CONV) == RULE_LENGTH_FLOOR
    assert sf.skip_reason(role, text_of(50), CONV) is None
    assert sf.skip_reason(role, "  \n" + text_of(49) + "\n\n   ", CONV) == RULE_LENGTH_FLOOR


def test_length_floor_follows_the_config() -> None:
    sf = SaveFilter(SaveFilterConfig(min_chars=10))
    assert sf.skip_reason("user", "ok thanks", CONV) == RULE_LENGTH_FLOOR
    assert sf.skip_reason("user", "ok thanks!", CONV) is None
    assert SaveFilter(SaveFilterConfig(min_chars=0)).skip_reason("user", "k", CONV) is None


# --------------------------------------------------------------------- footnotes and code


def with_footnotes(footnote_chars: int, total: int = 100) -> str:
    """A reply of ``total`` characters whose footnote definition is ``footnote_chars`` long."""
    footnote = "[^1]: " + "s" * (footnote_chars - 6)
    return text_of(total - footnote_chars - 1) + "\n" + footnote


def with_code(code_chars: int, total: int = 100) -> str:
    """A reply of ``total`` characters whose fenced block (fences included) is ``code_chars``."""
    block = "```\n" + "c" * (code_chars - 8) + "\n```"
    return text_of(total - code_chars - 1) + "\n" + block


def test_the_builders_measure_what_they_say() -> None:
    assert len(with_footnotes(71)) == 100
    assert block_lengths(with_footnotes(71)) == BlockLengths(footnote=71, code=0)
    assert len(with_code(81)) == 100
    assert block_lengths(with_code(81)) == BlockLengths(footnote=0, code=81)


def test_footnote_dominance_is_strictly_above_the_ratio(sf: SaveFilter) -> None:
    assert sf.skip_reason("assistant", with_footnotes(71), CONV) == RULE_FOOTNOTE_DOMINANT
    assert sf.skip_reason("assistant", with_footnotes(70), CONV) is None
    assert sf.skip_reason("assistant", with_footnotes(69), CONV) is None


def test_code_dominance_is_strictly_above_the_ratio(sf: SaveFilter) -> None:
    assert sf.skip_reason("assistant", with_code(81), CONV) == RULE_CODE_DOMINANT
    assert sf.skip_reason("assistant", with_code(80), CONV) is None
    assert sf.skip_reason("assistant", with_code(79), CONV) is None


def test_user_messages_may_be_all_code_or_footnotes(sf: SaveFilter) -> None:
    assert sf.skip_reason("user", with_code(95), CONV) is None
    assert sf.skip_reason("user", with_footnotes(95), CONV) is None
    only_code = "```python\n" + "print('pasted traceback')\n" * 4 + "```"
    assert sf.skip_reason("user", only_code, CONV) is None
    assert sf.skip_reason("assistant", only_code, "other") == RULE_CODE_DOMINANT


def test_ratios_follow_the_config() -> None:
    sf = SaveFilter(SaveFilterConfig(footnote_ratio=0.2, code_ratio=0.3))
    assert sf.skip_reason("assistant", with_footnotes(21), CONV) == RULE_FOOTNOTE_DOMINANT
    assert sf.skip_reason("assistant", with_code(31), "c2") == RULE_CODE_DOMINANT
    assert sf.skip_reason("assistant", with_code(30), "c3") is None


class TestBlockLengths:
    def test_plain_prose_has_neither(self) -> None:
        assert block_lengths(POOL) == BlockLengths(footnote=0, code=0)

    def test_fences_count_with_their_fence_lines(self) -> None:
        text = "Run:\n~~~sh\nls -la\n~~~\nDone."
        assert block_lengths(text).code == len("~~~sh\nls -la\n~~~\n")

    def test_an_unclosed_fence_runs_to_the_end(self) -> None:
        text = "Here:\n```py\nx = 1\ny = 2"
        assert block_lengths(text).code == len("```py\nx = 1\ny = 2")

    def test_a_shorter_fence_does_not_close_a_longer_one(self) -> None:
        text = "````md\n```\ninner\n```\n````\nafter"
        assert block_lengths(text).code == len(text) - len("after")

    def test_footnote_lookalikes_inside_code_are_code(self) -> None:
        text = "```\n[^1]: not a footnote\n```"
        assert block_lengths(text) == BlockLengths(footnote=0, code=len(text))

    def test_footnotes_with_continuations_and_blank_lines_between(self) -> None:
        notes = "[^1]: first source\n    continued here\n\n[^note]: second source"
        assert block_lengths("Answer.\n\n" + notes).footnote == len(notes)

    def test_blank_lines_after_the_last_footnote_do_not_count(self) -> None:
        text = "[^1]: source\n\nBack to prose."
        assert block_lengths(text).footnote == len("[^1]: source\n")


# -------------------------------------------------------------------------------- dedup


@pytest.mark.parametrize("role", ["user", "assistant"])
def test_a_near_duplicate_of_a_recent_save_is_dedup_for_both_roles(
    sf: SaveFilter, role: str
) -> None:
    sf.record_saved(role, POOL, CONV)
    assert sf.skip_reason(role, POOL + " Hope that helps!", CONV) == RULE_DEDUP
    assert sf.skip_reason(role, SSH, CONV) is None


def test_dedup_stays_within_its_conversation_and_role(sf: SaveFilter) -> None:
    sf.record_saved("assistant", POOL, CONV)
    assert sf.skip_reason("assistant", POOL, CONV) == RULE_DEDUP
    assert sf.skip_reason("assistant", POOL, "another-conversation") is None
    assert sf.skip_reason("user", POOL, CONV) is None


def test_dedup_only_looks_at_the_last_n_saves(sf: SaveFilter) -> None:
    first, *rest = [f"{POOL} Variant {name}." for name in ("alpha", "bravo", "charlie", "delta")]
    sf.record_saved("assistant", first, CONV)
    for text in rest:
        sf.record_saved("assistant", SSH + text, CONV)
    assert sf.recent_saves("assistant", CONV) == tuple(SSH + text for text in rest)
    assert sf.skip_reason("assistant", first, CONV) is None  # evicted: 3 newer saves


def test_lookback_follows_the_config_and_zero_disables_dedup() -> None:
    sf = SaveFilter(SaveFilterConfig(dedup_lookback=1))
    sf.record_saved("user", POOL, CONV)
    sf.record_saved("user", SSH, CONV)
    assert sf.skip_reason("user", POOL, CONV) is None
    assert sf.skip_reason("user", SSH, CONV) == RULE_DEDUP
    off = SaveFilter(SaveFilterConfig(dedup_lookback=0))
    off.record_saved("user", POOL, CONV)
    assert off.recent_saves("user", CONV) == ()
    assert off.skip_reason("user", POOL, CONV) is None


def test_only_recorded_saves_enter_the_buffer(sf: SaveFilter) -> None:
    assert sf.skip_reason("assistant", POOL, CONV) is None  # asking is not saving
    assert sf.recent_saves("assistant", CONV) == ()
    sf.record_saved("assistant", "   ", CONV)
    assert sf.recent_saves("assistant", CONV) == ()
    sf.record_saved("assistant", f"\n  {POOL}  \n", CONV)
    assert sf.recent_saves("assistant", CONV) == (POOL,)


def test_least_recently_used_buffers_are_dropped_beyond_the_cap() -> None:
    sf = SaveFilter(SaveFilterConfig(max_conversations=2))
    sf.record_saved("user", POOL, "a")
    sf.record_saved("user", POOL, "b")
    sf.record_saved("user", POOL, "a")  # a is fresh again
    sf.record_saved("user", POOL, "c")
    assert sf.recent_saves("user", "b") == ()
    assert sf.recent_saves("user", "a") == (POOL, POOL)
    assert sf.recent_saves("user", "c") == (POOL,)


# ------------------------------------------------------------------ the threshold mapping

# (name, a, b, duplicate at 0.85). Measured: difflib == rapidfuzz for the first six pairs
# (0.988, 0.950, 0.942, 0.917, 0.856, 0.823), difflib < rapidfuzz for the last three
# (0.327/0.396, 0.238/0.397, 0.675/0.701).
MAPPING_PAIRS = [
    (
        "typos",
        POOL,
        POOL.replace("billing", "biling")
        .replace("transaction", "transacton")
        .replace("seconds", "secnods"),
        True,
    ),
    ("appended", POOL, POOL + " Hope that helps!", True),
    ("prefixed", POOL, "As I said before, s" + POOL[1:], True),
    (
        "reworded",
        POOL,
        POOL.replace("we put", "we placed")
        .replace("in front of", "ahead of")
        .replace("with a pool", "using a pool"),
        True,
    ),
    ("truncated to 75 %", POOL, POOL[: int(len(POOL) * 0.75)], True),
    ("truncated to 70 %", POOL, POOL[: int(len(POOL) * 0.70)], False),
    ("distinct", POOL, SSH, False),
    ("distinct question", SSH, QUESTION, False),
    (
        "same template",
        "Deploy of billing-api to staging succeeded in 3m12s; 42 tests passed, 0 failed.",
        "Deploy of search-api to production failed in 1m05s; 17 tests passed, 3 failed.",
        False,
    ),
]


def difflib_ratio(a: str, b: str) -> float:
    return SequenceMatcher(None, a, b, autojunk=False).ratio()


@pytest.mark.parametrize(
    ("name", "a", "b", "duplicate"), MAPPING_PAIRS, ids=[p[0] for p in MAPPING_PAIRS]
)
def test_rapidfuzz_decides_like_difflib_at_the_default_threshold(
    name: str, a: str, b: str, duplicate: bool
) -> None:
    threshold = SaveFilterConfig().dedup_threshold
    assert (difflib_ratio(a, b) > threshold) is duplicate
    assert (dedup_similarity(a, b) > threshold) is duplicate
    assert dedup_similarity(a, b) >= difflib_ratio(a, b) - 1e-9  # rapidfuzz is never lower
    sf = SaveFilter()
    sf.record_saved("assistant", a, CONV)
    assert (sf.skip_reason("assistant", b, CONV) == RULE_DEDUP) is duplicate


def test_the_mapping_pairs_straddle_the_threshold() -> None:
    scores = sorted(dedup_similarity(a, b) for _n, a, b, _d in MAPPING_PAIRS)
    assert any(0.80 < s <= 0.85 for s in scores)
    assert any(0.85 < s < 0.90 for s in scores)


def test_near_duplicates_score_like_difflib_and_distinct_text_higher() -> None:
    for _name, a, b, duplicate in MAPPING_PAIRS:
        gap = dedup_similarity(a, b) - difflib_ratio(a, b)
        if duplicate:
            assert gap == pytest.approx(0.0, abs=1e-9)
        else:
            assert 0.85 - dedup_similarity(a, b) > 0.02  # comfortably below the line


def test_the_threshold_is_applied_strictly() -> None:
    a, b = POOL, POOL[: int(len(POOL) * 0.75)]
    score = dedup_similarity(a, b)
    at = SaveFilter(SaveFilterConfig(dedup_threshold=score))
    at.record_saved("user", a, CONV)
    assert at.skip_reason("user", b, CONV) is None
    below = SaveFilter(SaveFilterConfig(dedup_threshold=score - 0.001))
    below.record_saved("user", a, CONV)
    assert below.skip_reason("user", b, CONV) == RULE_DEDUP


# ------------------------------------------------------------------------ recalled_echo

ECHOES = [
    HALLUCINATION,
    "As I mentioned before, t" + HALLUCINATION[1:],
    "Straylight was founded in 1997 by Dr. Elena Voss at the Zurich Institute for Applied "
    "Memory; there she first described the five-layer recall model. Anything else?",
    "Straylight was founded in 1997 by Dr. Elena Voss at the Zurich Institute for Applied Memory.",
]
NOT_ECHOES = [
    "I could not find any reliable source that Straylight was founded in 1997; the repository "
    "history starts in 2026. The recalled note looks like an earlier hallucination.",
    "Right: the billing service uses pgbouncer in transaction mode with a pool size of 20. For "
    "the new search service I would start with session mode, because the ORM relies on prepared "
    "statements and advisory locks, and measure the wait time in SHOW POOLS before tuning.",
    SSH,
]
RECALLED = [
    HALLUCINATION,
    "The billing service uses pgbouncer in transaction mode with a pool size of 20; prepared "
    "statements are disabled.",
]


@pytest.mark.parametrize("reply", ECHOES)
def test_a_reply_repeating_recalled_context_is_an_echo(sf: SaveFilter, reply: str) -> None:
    assert echo_coverage(reply, RECALLED) > 0.8
    assert sf.skip_reason("assistant", reply, CONV, RECALLED) == RULE_RECALLED_ECHO


@pytest.mark.parametrize("reply", NOT_ECHOES)
def test_a_reply_that_uses_recalled_context_is_kept(sf: SaveFilter, reply: str) -> None:
    assert echo_coverage(reply, RECALLED) < 0.4
    assert sf.skip_reason("assistant", reply, CONV, RECALLED) is None


def test_echo_is_an_assistant_rule_and_needs_recalled_text(sf: SaveFilter) -> None:
    assert sf.skip_reason("user", HALLUCINATION, CONV, RECALLED) is None
    assert sf.skip_reason("assistant", HALLUCINATION, CONV) is None
    assert sf.skip_reason("assistant", HALLUCINATION, CONV, ["", "   "]) is None


def test_echo_threshold_is_strict_and_configurable() -> None:
    recalled = ["alpha beta gamma delta epsilon zeta"]
    six_of_ten = "alpha beta gamma delta epsilon zeta one two three four"
    seven_of_ten = "alpha beta gamma delta epsilon zeta eta one two three"
    seven = recalled[0] + " eta"
    assert echo_coverage(six_of_ten, recalled) == pytest.approx(0.6)
    assert echo_coverage(seven_of_ten, [seven]) == pytest.approx(0.7)
    sf = SaveFilter(SaveFilterConfig(min_chars=10))
    assert sf.skip_reason("assistant", six_of_ten, CONV, recalled) is None
    assert sf.skip_reason("assistant", seven_of_ten, CONV, [seven]) == RULE_RECALLED_ECHO
    strict = SaveFilter(SaveFilterConfig(min_chars=10, echo_threshold=0.75))
    assert strict.skip_reason("assistant", seven_of_ten, CONV, [seven]) is None


def test_echo_coverage_edges() -> None:
    assert echo_coverage("too short", ["too short"]) == 0.0
    assert echo_coverage("Alpha, BETA gamma!", ["alpha beta gamma"]) == 1.0  # case and punctuation
    assert echo_coverage("alpha beta gamma", []) == 0.0
    assert echo_coverage("gamma beta alpha", ["alpha beta gamma"]) == 0.0  # order matters


# ------------------------------------------------------------------------------- order


@pytest.fixture
def counted_ratio(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[int]]:
    """Count the fuzzy comparisons the filter makes."""
    from rapidfuzz import fuzz  # the module save_filter imports at its first comparison

    calls: list[int] = []
    real = fuzz.ratio

    def ratio(*args: object, **kwargs: object) -> float:
        calls.append(1)
        return real(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(fuzz, "ratio", ratio)
    yield calls


def test_cheap_rules_fire_before_dedup_is_computed(counted_ratio: list[int]) -> None:
    sf = SaveFilter()
    sf.record_saved("assistant", with_code(95), CONV)
    sf.record_saved("assistant", "ok thanks", CONV)
    assert sf.skip_reason("assistant", "", CONV) == RULE_EMPTY
    assert sf.skip_reason("assistant", "ok thanks", CONV) == RULE_LENGTH_FLOOR
    assert sf.skip_reason("assistant", with_code(95), CONV) == RULE_CODE_DOMINANT
    assert counted_ratio == []
    assert sf.skip_reason("assistant", POOL, CONV) is None
    assert len(counted_ratio) == 2


def test_rules_report_in_their_documented_order() -> None:
    assert RULES == (
        "empty",
        "length_floor",
        "footnote_dominant",
        "code_dominant",
        "dedup",
        "recalled_echo",
    )
    sf = SaveFilter()
    sf.record_saved("assistant", HALLUCINATION, CONV)
    assert sf.skip_reason("assistant", HALLUCINATION, CONV, RECALLED) == RULE_DEDUP
    mostly_notes = with_footnotes(90, total=120)
    sf.record_saved("assistant", mostly_notes, CONV)
    assert sf.skip_reason("assistant", mostly_notes, CONV) == RULE_FOOTNOTE_DOMINANT


# ----------------------------------------------------------------------- config and roles


def test_config_defaults_are_the_seed_values() -> None:
    config = SaveFilterConfig()
    assert (config.min_chars, config.footnote_ratio, config.code_ratio) == (50, 0.7, 0.8)
    assert (config.dedup_lookback, config.dedup_threshold, config.echo_threshold) == (3, 0.85, 0.6)


@pytest.mark.parametrize(
    "overrides",
    [
        {"footnote_ratio": 1.1},
        {"code_ratio": -0.1},
        {"dedup_threshold": 2.0},
        {"echo_threshold": -1.0},
        {"min_chars": -1},
        {"dedup_lookback": -1},
        {"max_conversations": 0},
    ],
)
def test_config_rejects_meaningless_values(overrides: dict[str, float]) -> None:
    with pytest.raises(ValueError):
        SaveFilterConfig(**overrides)  # type: ignore[arg-type]


def test_settings_carry_the_save_filter_thresholds() -> None:
    from agent.settings import load_settings

    names = {
        "memory_save_min_chars": 10,
        "memory_save_footnote_ratio": 0.5,
        "memory_save_code_ratio": 0.6,
        "memory_save_dedup_lookback": 5,
        "memory_save_dedup_threshold": 0.9,
    }
    settings = load_settings(flags=names, environ={}).settings
    assert settings.memory.save_filter == SaveFilterConfig(
        min_chars=10, footnote_ratio=0.5, code_ratio=0.6, dedup_lookback=5, dedup_threshold=0.9
    )


@pytest.mark.parametrize("role", ["system", "tool", "Assistant", ""])
def test_only_user_and_assistant_are_accepted(sf: SaveFilter, role: str) -> None:
    with pytest.raises(ValueError):
        sf.skip_reason(role, POOL, CONV)
    with pytest.raises(ValueError):
        sf.record_saved(role, POOL, CONV)


# -------------------------------------------------------------------------- concurrency


@pytest.fixture
def fast_thread_switching() -> Iterator[None]:
    previous = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    yield
    sys.setswitchinterval(previous)


@pytest.mark.usefixtures("fast_thread_switching")
def test_many_threads_saving_and_asking_lose_nothing() -> None:
    sf = SaveFilter(SaveFilterConfig(dedup_lookback=3))
    threads_n, saves_n = 12, 60
    barrier = threading.Barrier(threads_n)
    errors: list[BaseException] = []

    def work(worker: int) -> None:
        try:
            barrier.wait()
            for i in range(saves_n):
                text = f"worker {worker} message {i}: {POOL}"
                sf.skip_reason("assistant", text, "shared")
                sf.record_saved("assistant", text, f"own-{worker}")
                sf.record_saved("assistant", text, "shared")
                sf.skip_reason("user", text, f"own-{worker}")
        except BaseException as error:  # noqa: BLE001 - reported below
            errors.append(error)

    threads = [threading.Thread(target=work, args=(n,)) for n in range(threads_n)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert errors == []
    for worker in range(threads_n):
        expected = tuple(
            f"worker {worker} message {i}: {POOL}" for i in range(saves_n - 3, saves_n)
        )
        assert sf.recent_saves("assistant", f"own-{worker}") == expected
    shared = sf.recent_saves("assistant", "shared")
    assert len(shared) == 3
    finals = {f"worker {w} message {saves_n - 1}: {POOL}" for w in range(threads_n)}
    assert shared[-1] in finals
