"""Issue 7, part 2: damaged files in the data dir, met through the user-facing commands.

Each case starts from a data dir with one committed turn (two log messages, two points,
`vectors.usearch`) made by the real `straylight ask`, damages one file, runs the commands a
user would run (in-process, tests/support/cli.py, against the Ollama stand-in) and checks:
the exit code and the one stderr line (no traceback), the damaged file byte for byte where it
must be left alone, no new file outside the data dir (HOME, TMPDIR, the working directory and
the config dir all live in the test's tmp dir), and the committed turn still there afterwards.

Unit-level coverage this suite does not repeat:
- tests/test_vector_index.py::test_a_damaged_file_makes_the_index_stale_not_a_crash,
  ::test_loading_damaged_files_never_kills_the_process (every kind of damaged index file);
- tests/test_memory_store.py::test_a_damaged_index_is_rebuilt_without_losing_a_point;
- tests/test_database.py::test_a_truncated_database_is_left_untouched,
  ::test_a_file_that_is_not_a_database_is_left_untouched,
  ::test_an_empty_file_is_refused_not_replaced, ::test_a_damaged_block_is_reported_as_corrupt;
- tests/test_cli.py::test_non_utf8_longterm_warns_but_ask_still_works (a non-UTF-8
  longterm.md: one warning line, exit 0, the file left as it was) — end to end already;
- tests/test_daily_log.py::test_hand_edits_are_tolerated,
  ::test_a_truncated_last_message_is_kept_and_marked,
  ::test_a_message_cut_short_stays_marked_after_later_appends (the parser);
- tests/test_settings.py::test_wrong_value_in_toml_names_file_and_key and
  tests/test_cli.py::test_bad_settings_stop_ask_with_exit_2 (other wrong types in config.toml).
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.reliability.corruption_support import (  # noqa: F401 - the fixtures
    DAY,
    MODEL,
    SEED_POINTS,
    SEED_QUERY,
    SEED_QUESTION,
    Env,
    assert_seed_intact,
    copy_seed,
    data_dir_listing,
    day_log,
    env,
    history_json,
    home,
    log_block,
    make_env,
    outside_snapshot,
    run_cli,
    run_many,
    seed_data_dir,
    seed_messages,
    seed_template,
    sha256,
    spawn_many,
    status_json,
    summary,
)
from tests.support.cli import assert_one_line, assert_quiet
from tests.support.ollama_standin import OllamaStandIn

EXIT_UNEXPECTED = 1  # README: a damaged database is not a usage error; the line names the file
EXIT_USAGE = 2


@pytest.fixture
def outside(tmp_path: Path, home: Path, env: Env) -> Iterator[None]:
    """Nothing outside the data dir is created, changed or removed by the test's commands."""
    assert env["STRAYLIGHT_HOME"] == str(home)  # `env` made HOME, TMPDIR and the cwd
    before = outside_snapshot(tmp_path, home)
    yield
    assert outside_snapshot(tmp_path, home) == before


# --------------------------------------------------------------------------- vectors.usearch


def _truncated(data: bytes) -> bytes:
    return data[: len(data) // 2]


def _zeroed(data: bytes) -> bytes:
    return bytes(len(data))


def _garbage(data: bytes) -> bytes:
    return random.Random(7).randbytes(len(data))


INDEX_DAMAGE: dict[str, Callable[[bytes], bytes] | None] = {
    "truncated": _truncated,
    "zeroed": _zeroed,
    "garbage": _garbage,
    "deleted": None,
}


@pytest.mark.parametrize("damage", list(INDEX_DAMAGE))
@pytest.mark.usefixtures("outside")
def test_a_damaged_vector_index_is_rebuilt_and_recall_still_works(
    damage: str, env: Env, home: Path
) -> None:
    index = home / "vectors.usearch"
    spoil = INDEX_DAMAGE[damage]
    if spoil is None:
        index.unlink()
    else:
        index.write_bytes(spoil(index.read_bytes()))

    # The index is derived: no error line, recall answers at once (exact search over the
    # vectors in DuckDB while the index is rebuilt in the background).
    recall, history = run_many(
        env, ["recall", "--json", SEED_QUERY], ["history", "--json", "--date", DAY]
    )
    assert_quiet(recall)
    assert SEED_QUESTION in [hit["content"] for hit in json.loads(recall.stdout)["hits"]]
    assert_quiet(history)
    assert summary(json.loads(history.stdout)) == seed_messages()
    # `recall` and `status` write nothing (issue 15 §5): they search exactly and report the
    # file; the next command that writes rebuilds it.
    report = status_json(env)
    assert report["index"]["state"] == ("missing" if damage == "deleted" else "stale")
    assert_quiet(run_cli(env, "jobs", "run", "index-upkeep"))
    report = status_json(env)
    assert report["index"] == {"state": "in_sync", "size": SEED_POINTS}
    assert report["points"]["total"] == SEED_POINTS
    assert report["points"]["without_vector"] == 0
    # The reason is in the diagnostics log, not on the screen.
    assert "rebuilding in the background" in (home / "straylight.log").read_text()
    assert index.is_file() and index.stat().st_size > 0


# --------------------------------------------------------------------------- straylight.duckdb


def _half_cut(data: bytes) -> bytes:
    return data[: len(data) // 2 // 4096 * 4096]


DATABASE_DAMAGE: dict[str, Callable[[bytes], bytes]] = {
    "truncated": _half_cut,
    "not-a-database": lambda data: b"these are my notes, not a database\n" * 300,
}


@pytest.mark.parametrize("damage", list(DATABASE_DAMAGE))
@pytest.mark.usefixtures("outside")
def test_a_damaged_database_stops_with_one_line_and_is_left_untouched(
    damage: str, env: Env, home: Path, standin: OllamaStandIn
) -> None:
    database = home / "straylight.duckdb"
    original = database.read_bytes()
    database.write_bytes(DATABASE_DAMAGE[damage](original))
    digest = sha256(database)
    listing = data_dir_listing(home)

    ask, history = run_many(env, ["ask", "hello"], ["history", "--json", "--date", DAY])
    status = run_cli(env, "status", "--json")
    for proc in (ask, status):
        assert_one_line(
            proc, EXIT_UNEXPECTED, str(database), "damaged", "left untouched", "restore it"
        )
        assert proc.stdout == ""
    # The daily log does not need the database: the conversation is still readable.
    assert_quiet(history)
    assert summary(json.loads(history.stdout)) == seed_messages()
    # Left byte for byte; no new empty database (nor a .wal) created in its place.
    assert sha256(database) == digest
    assert data_dir_listing(home) == listing
    assert standin.chat_requests() == []  # the turn stopped before the model was asked

    database.write_bytes(original)  # the user restores the backup
    assert_seed_intact(env)


# --------------------------------------------------------------------------- longterm.md

TEN_MIB = 10 * 2**20


def _ten_mib_longterm(home: Path) -> Path:
    line = b"- I take my tea without sugar and I live near the harbour.\n"
    path = home / "longterm.md"
    path.write_bytes((line * (TEN_MIB // len(line) + 1))[:TEN_MIB])
    return path


@pytest.mark.usefixtures("outside")
def test_a_ten_mib_longterm_is_reported_by_status_and_left_untouched(
    env: Env, home: Path, standin: OllamaStandIn
) -> None:
    longterm = _ten_mib_longterm(home)
    digest = sha256(longterm)
    report = status_json(env)["longterm"]
    assert (report["size_bytes"], report["over_budget"]) == (TEN_MIB, True)
    assert "budget" in report["warning"]

    standin.script_reply("Noted.")
    proc = run_cli(env, "ask", "hello")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "Noted.\n"
    assert "Traceback" not in proc.stderr
    assert sha256(longterm) == digest
    assert_seed_intact(env)  # "hello" and "Noted." are below the save floor: still 2 points


def test_a_ten_mib_longterm_is_named_by_ask(env: Env, home: Path, standin: OllamaStandIn) -> None:
    longterm = _ten_mib_longterm(home)
    standin.script_reply("Noted.")
    proc = run_cli(env, "ask", "hello")
    # The warning names the file; the context budget then names what it left out of it.
    warning, cut = proc.stderr.splitlines()
    assert proc.returncode == 0 and str(longterm) in warning and "budget" in warning
    # one paragraph (no blank line), most of it left out: named with its lines
    assert cut.startswith("straylight: context ") and "long-term memory: cut short, " in cut
    assert cut.endswith(" of 177,725 lines kept"), cut
    assert proc.stdout == "Noted.\n"
    (outcome,) = standin.chat_outcomes()
    assert outcome.dropped_messages == 0 and outcome.window == 16384


# --------------------------------------------------------------------------- daily logs


def _block(conversation: str, role: str, content: str, *, header: str | None = None) -> str:
    """A message as Straylight writes it; `header` replaces its `### role` line (a hand edit)."""
    block = log_block(role, content, conversation)
    return block if header is None else header + "\n" + block.split("\n", 1)[1]


# Each case: the text appended to the seeded day file (or put before it), the conversation it
# concerns, and the messages `history` must parse out of that conversation.
DAILY_LOG_EDITS: dict[str, tuple[str, str, str, list[tuple[str, str, str]]]] = {
    "hand-edited-headers": (
        "",
        _block("c-hand", "user", "Where does the ferry leave from?", header="### user  ")
        # trailing blanks: still a header; broken metadata JSON: a message without metadata
        + "### assistant\n<!-- straylight {this is not json -->\nFrom the north pier.\n\n"
        + "### Assistant\nA capitalised header is only text.\n\n"
        + "### user\nAnd on Sundays?\n\n",  # no metadata: part of the conversation above
        "c-hand",
        [
            ("user", "Where does the ferry leave from?", "complete"),
            (
                "assistant",
                "From the north pier.\n\n### Assistant\nA capitalised header is only text.",
                "complete",
            ),
            ("user", "And on Sundays?", "complete"),
        ],
    ),
    "missing-headers": (
        "Notes I typed above the first header.\n\n",
        _block("c-miss", "user", "Which pier does the ferry use?")
        + "The north pier, every hour.\n\n"  # its `### assistant` header and metadata deleted
        + _block("c-miss", "user", "Thanks, and the last boat?"),
        "c-miss",
        [
            ("user", "Which pier does the ferry use?\n\nThe north pier, every hour.", "complete"),
            ("user", "Thanks, and the last boat?", "complete"),
        ],
    ),
    "duplicated-headers": (
        "",
        "### user\n"  # a header pasted twice
        + _block("c-dup", "user", "Is the cafe at the pier open in winter?")
        + _block("c-dup", "assistant", "Only on weekends, from ten to four.") * 2,
        "c-dup",
        [
            ("user", "Is the cafe at the pier open in winter?", "complete"),
            ("assistant", "Only on weekends, from ten to four.", "complete"),
            ("assistant", "Only on weekends, from ten to four.", "complete"),
        ],
    ),
    "truncated-last-message": (
        "",
        _block("c-cut", "user", "How long is the crossing?")
        + _block("c-cut", "assistant", "About forty minu")[:-2],  # cut short by a crash
        "c-cut",
        [
            ("user", "How long is the crossing?", "complete"),
            ("assistant", "About forty minu", "truncated"),
        ],
    ),
}


@pytest.mark.parametrize("edit", list(DAILY_LOG_EDITS))
@pytest.mark.usefixtures("outside")
def test_a_hand_edited_daily_log_is_read_and_continued(
    edit: str, env: Env, home: Path, standin: OllamaStandIn
) -> None:
    before, after, conversation, expected = DAILY_LOG_EDITS[edit]
    path = day_log(home)
    path.write_bytes(before.encode() + path.read_bytes() + after.encode())
    old = path.read_bytes()

    standin.script_reply("The crossing takes forty minutes.")
    proc = run_cli(env, "ask", "--conversation", conversation, "And what does it cost?")
    assert_quiet(proc)
    assert proc.stdout == "The crossing takes forty minutes.\n"
    # What the file said went into the prompt as history (empty messages never do).
    sent = standin.chat_requests()[-1]["messages"][1:]
    history = [(m[0], m[1]) for m in expected if m[1]]
    assert [(m["role"], m["content"]) for m in sent] == [
        *history,
        ("user", "And what does it cost?"),
    ]
    # Appending never rewrites what was there, and the parse of the old part is unchanged.
    assert path.read_bytes().startswith(old)
    messages = history_json(env)
    assert summary(messages)[:2] == seed_messages()
    mine = [m for m in messages if m["conversation_id"] == conversation]
    assert summary(mine) == [
        *expected,
        ("user", "And what does it cost?", "complete"),
        ("assistant", "The crossing takes forty minutes.", "complete"),
    ]
    assert all(m["model"] in (MODEL, None) for m in messages)


# --------------------------------------------------------------------------- config.toml

# (config.toml text, the key the line must name). Other wrong types: see the module docstring.
WRONG_TYPES: dict[str, tuple[str, str]] = {
    "keymap-not-a-table": ('keymap = "ctrl+t"\n', "keymap"),
    "keymap-key-not-a-string": ("[keymap]\nsend = 5\n", "send"),
    "bool-as-string": ('memory_enabled = "maybe"\n', "memory_enabled"),
    "int-as-float": ("jobs_dream_hour = 3.5\n", "jobs_dream_hour"),
    "path-as-int": ("home = 5\n", "home"),
    "size-with-unit": ('longterm_budget_bytes = "8k"\n', "longterm_budget_bytes"),
}


def test_a_config_with_wrong_types_stops_every_command_with_one_line(
    env: Env, home: Path, tmp_path: Path, standin: OllamaStandIn
) -> None:
    configs = {}
    for label, (text, _key) in WRONG_TYPES.items():
        configs[label] = tmp_path / "configs" / f"{label}.toml"
        configs[label].parent.mkdir(exist_ok=True)
        configs[label].write_text(text, encoding="utf-8")
    everything = outside_snapshot(tmp_path, tmp_path / "no-data-dir")  # the data dir too

    first = str(configs["keymap-not-a-table"])
    calls = [["ask", "hello", "--config", str(path)] for path in configs.values()]
    calls += [["status", "--json", "--config", first], ["--config", first]]  # and the TUI
    results = spawn_many(env, *calls)  # processes: a TUI that starts cannot hang this one
    labels = [*WRONG_TYPES, "keymap-not-a-table", "keymap-not-a-table"]
    for label, proc in zip(labels, results, strict=True):
        assert_one_line(proc, EXIT_USAGE, str(configs[label]), WRONG_TYPES[label][1])
        assert proc.stdout == ""
    assert standin.chat_requests() == []
    # The config files, the data dir and everything else are exactly as they were.
    assert outside_snapshot(tmp_path, tmp_path / "no-data-dir") == everything
