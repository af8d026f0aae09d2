"""Settings: one typed object, resolved flag > environment > config.toml > default.

In-process: `agent.settings.load_settings` directly, and the CLI's `main([...])` for
`straylight config` and for the one-line errors a user sees.
"""

from __future__ import annotations

import doctest
import json
import logging
import os
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given
from hypothesis import settings as hypothesis_settings
from hypothesis import strategies as st
from ollama._client import _parse_host as ollama_parse_host
from pydantic import BaseModel, ValidationError

from agent.ollama_host import parse_ollama_host
from agent.settings import FLAG_NAMES, Provenance, SettingsError, load_settings
from agent.settings_models import SETTING_PATHS, Settings, setting_value
from memory.save_filter import SaveFilter
from memory.settings_models import FactsConfig, MemoryConfig, SaveFilterConfig
from tui.cli import main

FIXED = datetime(2031, 2, 3, 4, 5, 6, tzinfo=UTC)

# The contract's documented defaults (the issue), not read back from the code.
DOCUMENTED_DEFAULTS: dict[str, Any] = {
    "history_turns": 20,
    "http_timeout_seconds": 300,
    "memory_enabled": True,
    "memory_top_k": 5,
    "memory_min_score": 0.6,
    "memory_max_chars": 4000,
    "memory_status_every_n": 50,
    "memory_save_min_chars": 50,
    "memory_save_footnote_ratio": 0.7,
    "memory_save_code_ratio": 0.8,
    "memory_save_dedup_lookback": 3,
    "memory_save_dedup_threshold": 0.85,
    "memory_ram_warn_bytes": 268435456,
    "memory_ram_crit_bytes": 536870912,
    "ollama_host": "http://127.0.0.1:11434",
    "now": None,
}

# (setting, environment variable, env text, value from env, TOML literal, value from file)
LAYERED: list[tuple[str, str, str, Any, str, Any]] = [
    (
        "home",
        "STRAYLIGHT_HOME",
        "/srv/env-home",
        Path("/srv/env-home"),
        '"/srv/file-home"',
        Path("/srv/file-home"),
    ),
    (
        "ollama_host",
        "OLLAMA_HOST",
        "envhost:1234",
        "http://envhost:1234",
        '"https://filehost"',
        "https://filehost:443",
    ),
    ("model", "STRAYLIGHT_MODEL", "env-model:7b", "env-model:7b", '"file-model"', "file-model"),
    (
        "embed_model",
        "STRAYLIGHT_EMBED_MODEL",
        "env-embed",
        "env-embed",
        '"file-embed"',
        "file-embed",
    ),
    ("history_turns", "STRAYLIGHT_HISTORY_TURNS", "7", 7, "11", 11),
    ("http_timeout_seconds", "STRAYLIGHT_HTTP_TIMEOUT_SECONDS", "0.5", 0.5, "42.5", 42.5),
    (
        "now",
        "STRAYLIGHT_NOW",
        "2031-02-03T04:05:06Z",
        FIXED,
        '"2030-01-01T00:00:00Z"',
        datetime(2030, 1, 1, tzinfo=UTC),
    ),
    ("memory_enabled", "MEMORY_ENABLED", "true", True, "false", False),
    ("memory_top_k", "MEMORY_TOP_K", "9", 9, "3", 3),
    ("memory_min_score", "MEMORY_MIN_SCORE", "0.25", 0.25, "0.9", 0.9),
    ("memory_max_chars", "MEMORY_MAX_CHARS", "123", 123, "999", 999),
    ("memory_status_every_n", "MEMORY_STATUS_EVERY_N", "7", 7, "10", 10),
    ("memory_save_min_chars", "MEMORY_SAVE_MIN_CHARS", "1", 1, "80", 80),
    ("memory_save_footnote_ratio", "MEMORY_SAVE_FOOTNOTE_RATIO", "0.5", 0.5, "0.1", 0.1),
    ("memory_save_code_ratio", "MEMORY_SAVE_CODE_RATIO", "0.25", 0.25, "0.95", 0.95),
    ("memory_save_dedup_lookback", "MEMORY_SAVE_DEDUP_LOOKBACK", "10", 10, "0", 0),
    ("memory_save_dedup_threshold", "MEMORY_SAVE_DEDUP_THRESHOLD", "0.5", 0.5, "0.99", 0.99),
    ("memory_ram_warn_bytes", "MEMORY_RAM_WARN_BYTES", "1000", 1000, "2000", 2000),
    ("memory_ram_crit_bytes", "MEMORY_RAM_CRIT_BYTES", "3000", 3000, "4000", 4000),
]
LAYERED_IDS = [case[0] for case in LAYERED]

# (setting, flag, flag text, value from the flag)
FLAGGED: list[tuple[str, str, str, Any]] = [
    ("home", "--home", "/srv/flag-home", Path("/srv/flag-home")),
    ("ollama_host", "--ollama-host", "https://flaghost:8443/base/", "https://flaghost:8443/base"),
    ("model", "--model", "flag-model", "flag-model"),
]


# --------------------------------------------------------------------------- helpers


@pytest.fixture
def config_file(tmp_path: Path) -> Path:
    return tmp_path / "conf" / "config.toml"


def write_config(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def platform_config_path(tmp_path: Path) -> Path:
    # The autouse fixture points XDG_CONFIG_HOME here.
    return tmp_path / "xdg-config" / "straylight" / "config.toml"


def assert_one_line(message: str, *fragments: str) -> None:
    assert "\n" not in message.strip(), message
    assert "Traceback" not in message
    for fragment in fragments:
        assert fragment in message, (fragment, message)


@pytest.fixture
def restore_logging() -> Iterator[None]:
    """`main()` sends the root logger to the data dir's log file; undo that afterwards."""
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    noisy = {name: logging.getLogger(name).level for name in ("httpx", "httpcore", "asyncio")}
    yield
    for handler in list(root.handlers):
        if handler not in handlers:
            root.removeHandler(handler)
            handler.close()
    for handler in handlers:
        if handler not in root.handlers:
            root.addHandler(handler)
    root.setLevel(level)
    for name, old in noisy.items():
        logging.getLogger(name).setLevel(old)


@pytest.fixture
def run_main(restore_logging: None, capsys: pytest.CaptureFixture[str], home: Path) -> Any:
    """Run the CLI in-process; returns (exit code, stdout, stderr)."""

    def run(*argv: str, with_home: bool = True) -> tuple[int, str, str]:
        args = ["--home", str(home), *argv] if with_home else list(argv)
        try:
            code = main(args)
        except SystemExit as exit_:
            code = exit_.code if isinstance(exit_.code, int) else 1
        captured = capsys.readouterr()
        return code, captured.out, captured.err

    return run


# --------------------------------------------------------------------------- defaults


@pytest.mark.parametrize("name", sorted(DOCUMENTED_DEFAULTS))
def test_documented_default_when_nothing_is_set(name: str, config_file: Path) -> None:
    resolved = load_settings(environ={}, config_path=config_file)
    value = setting_value(resolved.settings, name)
    assert value == DOCUMENTED_DEFAULTS[name]
    described = resolved.describe()[name]
    assert described["source"] == "default"
    assert described["origin"] is None


def test_default_home_and_config_live_in_the_platform_dirs(tmp_path: Path) -> None:
    resolved = load_settings(environ={})
    assert resolved.settings.home == tmp_path / "xdg-data" / "straylight"
    assert resolved.config_path == platform_config_path(tmp_path)
    assert resolved.config_found is False


# --------------------------------------------------------------------------- precedence


@pytest.mark.parametrize(
    ("name", "env_name", "env_text", "env_value", "toml", "file_value"), LAYERED, ids=LAYERED_IDS
)
def test_config_file_overrides_default(
    name: str,
    env_name: str,
    env_text: str,
    env_value: Any,
    toml: str,
    file_value: Any,
    config_file: Path,
) -> None:
    write_config(config_file, f"{name} = {toml}\n")
    resolved = load_settings(environ={}, config_path=config_file)
    assert setting_value(resolved.settings, name) == file_value
    assert resolved.provenance[name].source == "file"
    assert resolved.provenance[name].origin == str(config_file)


@pytest.mark.parametrize(
    ("name", "env_name", "env_text", "env_value", "toml", "file_value"), LAYERED, ids=LAYERED_IDS
)
def test_environment_overrides_config_file(
    name: str,
    env_name: str,
    env_text: str,
    env_value: Any,
    toml: str,
    file_value: Any,
    config_file: Path,
) -> None:
    write_config(config_file, f"{name} = {toml}\n")
    only_env = load_settings(environ={env_name: env_text}, config_path=config_file.with_name("x"))
    assert setting_value(only_env.settings, name) == env_value
    both = load_settings(environ={env_name: env_text}, config_path=config_file)
    assert setting_value(both.settings, name) == env_value
    assert setting_value(both.settings, name) != file_value
    assert both.describe()[name]["source"] == "env"
    assert both.describe()[name]["origin"] == env_name


@pytest.mark.parametrize(
    ("name", "flag", "flag_text", "flag_value"), FLAGGED, ids=[f[0] for f in FLAGGED]
)
def test_flag_overrides_environment_and_file(
    name: str, flag: str, flag_text: str, flag_value: Any, config_file: Path
) -> None:
    (_, env_name, env_text, env_value, toml, _file_value) = next(c for c in LAYERED if c[0] == name)
    write_config(config_file, f"{name} = {toml}\n")
    resolved = load_settings(
        flags={name: flag_text}, environ={env_name: env_text}, config_path=config_file
    )
    assert setting_value(resolved.settings, name) == flag_value
    assert setting_value(resolved.settings, name) != env_value
    assert resolved.describe()[name] == {
        "value": str(flag_value),
        "source": "flag",
        "origin": flag,
    }


def test_flag_given_as_none_falls_through_to_environment(config_file: Path) -> None:
    # argparse hands over None for options the user did not give.
    resolved = load_settings(
        flags={"model": None, "home": None, "ollama_host": None},
        environ={"STRAYLIGHT_MODEL": "from-env"},
        config_path=config_file,
    )
    assert resolved.settings.ollama.model == "from-env"
    assert resolved.provenance["model"].source == "env"
    assert resolved.provenance["home"].source == "default"


@pytest.mark.parametrize(
    ("text", "expected"),
    [("false", False), ("0", False), ("no", False), ("true", True), ("1", True), ("yes", True)],
)
def test_memory_enabled_reads_usual_boolean_spellings(
    text: str, expected: bool, config_file: Path
) -> None:
    write_config(config_file, f"memory_enabled = {str(not expected).lower()}\n")
    resolved = load_settings(environ={"MEMORY_ENABLED": text}, config_path=config_file)
    assert resolved.settings.memory.enabled is expected


def test_platform_config_file_is_read_without_any_option(tmp_path: Path) -> None:
    path = write_config(platform_config_path(tmp_path), 'model = "from-platform-file"\n')
    resolved = load_settings(environ={})
    assert resolved.settings.ollama.model == "from-platform-file"
    assert resolved.provenance["model"].origin == str(path)
    assert resolved.config_found is True


def test_straylight_config_replaces_platform_file(tmp_path: Path) -> None:
    write_config(platform_config_path(tmp_path), 'model = "platform"\nhistory_turns = 3\n')
    chosen = write_config(tmp_path / "other.toml", 'model = "chosen"\n')
    resolved = load_settings(environ={"STRAYLIGHT_CONFIG": str(chosen)})
    assert resolved.settings.ollama.model == "chosen"
    assert resolved.provenance["model"].origin == str(chosen)
    # The platform file is not read at all: its other keys do not leak in.
    assert resolved.settings.history_turns == 20


def test_config_option_beats_straylight_config(tmp_path: Path) -> None:
    from_env = write_config(tmp_path / "env.toml", 'model = "env-file"\n')
    from_flag = write_config(tmp_path / "flag.toml", 'model = "flag-file"\n')
    resolved = load_settings(environ={"STRAYLIGHT_CONFIG": str(from_env)}, config_path=from_flag)
    assert resolved.settings.ollama.model == "flag-file"
    assert resolved.config_path == from_flag


def test_home_is_absolute_and_expands_tilde(
    config_file: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path / "user"))
    write_config(config_file, 'home = "~/notes"\n')
    assert load_settings(environ={}, config_path=config_file).settings.home == (
        tmp_path / "user" / "notes"
    )
    monkeypatch.chdir(tmp_path)
    relative = load_settings(flags={"home": "rel/dir"}, environ={}, config_path=config_file)
    assert relative.settings.home == tmp_path / "rel" / "dir"


# --------------------------------------------------------------------------- the areas

# The flat names `straylight config` lists, in its order: what a user has always seen.
CONFIG_NAMES = [
    "home",
    "ollama_host",
    "model",
    "embed_model",
    "history_turns",
    "http_timeout_seconds",
    "connect_timeout_seconds",
    "reply_max_chars",
    "reply_max_seconds",
    "think",
    "keep_alive",
    "model_options",
    "num_ctx",
    "longterm_budget_bytes",
    "now",
    "memory_enabled",
    "memory_top_k",
    "memory_min_score",
    "memory_max_chars",
    "memory_status_every_n",
    "memory_save_min_chars",
    "memory_save_footnote_ratio",
    "memory_save_code_ratio",
    "memory_save_dedup_lookback",
    "memory_save_dedup_threshold",
    "memory_ram_warn_bytes",
    "memory_ram_crit_bytes",
    "memory_facts_always_max",
    "memory_facts_top_k",
    "memory_facts_max_chars",
    "memory_facts_min_score",
    "memory_tools",
    "memory_tool_calls_per_round",
    "memory_tool_calls_per_turn",
    "memory_reflection",
    "memory_reflection_idle_minutes",
    "jobs_enabled",
    "jobs_dream_hour",
    "jobs_binding_limit_days",
    "keymap",
    "workspace",
    "mcp_doc_roots",
    "theme",
]

# Fields of the areas that are no setting of their own (tuned by tests and benchmarks, or
# mirroring another setting).
NOT_SETTINGS = {
    ("memory", "filter_enabled"),
    ("memory", "save_filter", "echo_threshold"),
    ("memory", "save_filter", "max_conversations"),
    ("facts", "embed_model"),
}

# (flat name, where it lives, environment variable, text, value)
NESTED: list[tuple[str, tuple[str, ...], str, str, Any]] = [
    ("ollama_host", ("ollama", "host"), "OLLAMA_HOST", "h:1", "http://h:1"),
    ("model", ("ollama", "model"), "STRAYLIGHT_MODEL", "m", "m"),
    (
        "connect_timeout_seconds",
        ("ollama", "connect_timeout_seconds"),
        "STRAYLIGHT_CONNECT_TIMEOUT_SECONDS",
        "2",
        2.0,
    ),
    ("num_ctx", ("ollama", "num_ctx"), "STRAYLIGHT_NUM_CTX", "8192", 8192),
    ("memory_top_k", ("memory", "top_k"), "MEMORY_TOP_K", "9", 9),
    ("memory_status_every_n", ("memory", "status_every_n"), "MEMORY_STATUS_EVERY_N", "4", 4),
    (
        "memory_save_min_chars",
        ("memory", "save_filter", "min_chars"),
        "MEMORY_SAVE_MIN_CHARS",
        "7",
        7,
    ),
    ("memory_ram_crit_bytes", ("memory", "ram_crit_bytes"), "MEMORY_RAM_CRIT_BYTES", "99", 99),
    ("memory_facts_top_k", ("facts", "top_k"), "MEMORY_FACTS_TOP_K", "2", 2),
    ("memory_tools", ("facts", "tools"), "MEMORY_TOOLS", "false", False),
    (
        "memory_reflection_idle_minutes",
        ("facts", "reflection_idle_minutes"),
        "MEMORY_REFLECTION_IDLE_MINUTES",
        "1.5",
        1.5,
    ),
    ("jobs_enabled", ("jobs", "enabled"), "STRAYLIGHT_JOBS_ENABLED", "no", False),
    ("jobs_dream_hour", ("jobs", "dream_hour"), "STRAYLIGHT_JOBS_DREAM_HOUR", "5", 5),
    ("history_turns", ("history_turns",), "STRAYLIGHT_HISTORY_TURNS", "3", 3),
]


def _field_at(settings: Any, path: tuple[str, ...]) -> Any:
    for part in path:
        settings = getattr(settings, part)
    return settings


def _models() -> Iterator[type[BaseModel]]:
    """`Settings` and every area model under it."""
    pending: list[type[BaseModel]] = [Settings]
    while pending:
        model = pending.pop()
        yield model
        for info in model.model_fields.values():
            if isinstance(info.annotation, type) and issubclass(info.annotation, BaseModel):
                pending.append(info.annotation)


def _leaf_paths(model: type[BaseModel], prefix: tuple[str, ...] = ()) -> Iterator[tuple[str, ...]]:
    for name, info in model.model_fields.items():
        if isinstance(info.annotation, type) and issubclass(info.annotation, BaseModel):
            yield from _leaf_paths(info.annotation, (*prefix, name))
        else:
            yield (*prefix, name)


def test_config_lists_the_same_names_in_the_same_order(config_file: Path) -> None:
    assert list(SETTING_PATHS) == CONFIG_NAMES
    assert list(load_settings(environ={}, config_path=config_file).describe()) == CONFIG_NAMES


def test_every_field_is_a_setting_or_named_as_none() -> None:
    leaves = set(_leaf_paths(Settings))
    assert set(SETTING_PATHS.values()) | NOT_SETTINGS == leaves
    assert len(set(SETTING_PATHS.values())) == len(SETTING_PATHS)


@pytest.mark.parametrize("model", list(_models()), ids=lambda model: model.__name__)
def test_every_field_of_every_area_has_a_docstring(model: type[BaseModel]) -> None:
    undocumented = [name for name, info in model.model_fields.items() if not info.description]
    assert undocumented == []


@pytest.mark.parametrize("name", CONFIG_NAMES)
def test_a_fields_docstring_names_its_config_key(name: str) -> None:
    *area, field = SETTING_PATHS[name]
    model: type[BaseModel] = Settings
    for part in area:
        model = model.model_fields[part].annotation  # type: ignore[assignment]
    assert name in (model.model_fields[field].description or "")


@pytest.mark.parametrize(
    ("name", "path", "env_name", "text", "value"), NESTED, ids=[case[0] for case in NESTED]
)
def test_flat_names_land_in_their_area(
    name: str, path: tuple[str, ...], env_name: str, text: str, value: Any, config_file: Path
) -> None:
    from_env = load_settings(environ={env_name: text}, config_path=config_file)
    assert _field_at(from_env.settings, path) == value
    assert from_env.provenance[name] == Provenance("env", env_name)
    toml = f'"{text}"' if isinstance(value, str) else str(value).lower()
    for key in (name, env_name, env_name.lower()):  # config.toml takes either name, any case
        write_config(config_file, f"{key} = {toml}\n")
        from_file = load_settings(environ={}, config_path=config_file)
        assert _field_at(from_file.settings, path) == value
        assert from_file.provenance[name] == Provenance("file", str(config_file))
    from_flag = load_settings(flags={name: value}, environ={}, config_path=config_file)
    assert _field_at(from_flag.settings, path) == value
    assert from_flag.provenance[name] == Provenance("flag", FLAG_NAMES.get(name, name))


def test_embed_model_is_one_setting_for_points_and_facts(config_file: Path) -> None:
    resolved = load_settings(environ={"STRAYLIGHT_EMBED_MODEL": "bge-m3"}, config_path=config_file)
    assert resolved.settings.memory.embed_model == "bge-m3"
    assert resolved.settings.facts.embed_model == "bge-m3"
    assert resolved.describe()["embed_model"]["value"] == "bge-m3"
    with pytest.raises(ValidationError):
        Settings(memory=MemoryConfig(embed_model="a"), facts=FactsConfig(embed_model="b"))


def test_modules_take_their_area_unchanged(config_file: Path) -> None:
    settings = load_settings(
        environ={"MEMORY_SAVE_DEDUP_LOOKBACK": "0", "MEMORY_FACTS_ALWAYS_MAX": "3"},
        config_path=config_file,
    ).settings
    assert SaveFilter(settings.memory.save_filter).config.dedup_lookback == 0
    assert settings.facts.always_max == 3
    assert settings.memory == MemoryConfig(save_filter=SaveFilterConfig(dedup_lookback=0))
    assert settings.facts == FactsConfig(always_max=3)


def test_an_unknown_name_passed_as_a_flag_is_named(config_file: Path) -> None:
    with pytest.raises(SettingsError) as raised:
        load_settings(flags={"memory_topk": 3}, environ={}, config_path=config_file)
    assert str(raised.value) == "option memory_topk: Extra inputs are not permitted (got 3)"


def test_the_first_problem_in_listing_order_is_reported(config_file: Path) -> None:
    bad = {"STRAYLIGHT_JOBS_DREAM_HOUR": "99", "MEMORY_TOP_K": "x", "STRAYLIGHT_HISTORY_TURNS": "y"}
    with pytest.raises(SettingsError) as raised:
        load_settings(environ=bad, config_path=config_file)
    assert str(raised.value).startswith("environment variable STRAYLIGHT_HISTORY_TURNS:")


# --------------------------------------------------------------------------- the clock


@pytest.mark.parametrize(
    ("text", "instant"),
    [
        ("2031-02-03T04:05:06Z", FIXED),
        ("2031-02-03T04:05:06+00:00", FIXED),
        ("2031-02-03T06:05:06+02:00", FIXED),
        ("2031-02-03T04:05:06", FIXED),  # no zone: UTC
    ],
)
def test_straylight_now_freezes_the_clock(text: str, instant: datetime, config_file: Path) -> None:
    settings = load_settings(environ={"STRAYLIGHT_NOW": text}, config_path=config_file).settings
    assert settings.clock.now() == instant
    assert settings.clock.now().utcoffset() == timedelta(0)
    assert settings.clock.now() == settings.clock.now()


def test_clock_runs_without_straylight_now(config_file: Path) -> None:
    settings = load_settings(environ={}, config_path=config_file).settings
    before = datetime.now(UTC)
    assert before - timedelta(seconds=5) <= settings.clock.now() <= before + timedelta(seconds=5)


def test_now_from_toml_datetime_without_zone_means_utc_like_the_environment(
    config_file: Path,
) -> None:
    write_config(config_file, "now = 2031-02-03T04:05:06\n")
    from_file = load_settings(environ={}, config_path=config_file)
    from_env = load_settings(
        environ={"STRAYLIGHT_NOW": "2031-02-03T04:05:06"}, config_path=config_file.with_name("x")
    )
    assert from_file.describe()["now"]["value"] == from_env.describe()["now"]["value"]
    assert from_file.settings.clock.now().tzinfo is not None


def test_now_from_toml_offset_datetime_is_the_same_instant(config_file: Path) -> None:
    write_config(config_file, "now = 2031-02-03T06:05:06+02:00\n")
    settings = load_settings(environ={}, config_path=config_file).settings
    assert settings.clock.now() == FIXED
    assert settings.clock.now().astimezone(UTC).hour == 4


# --------------------------------------------------------------------------- errors


@pytest.mark.parametrize(
    "text",
    [
        "history_turns = [1\n",
        "model = \n",
        'model = "unterminated\n',
        "model = 'a'\nmodel = 'b'\n",
        "[memory\n",
        "= 3\n",
    ],
    ids=[
        "unclosed-array",
        "missing-value",
        "unterminated-string",
        "duplicate-key",
        "bad-table",
        "no-key",
    ],
)
def test_malformed_toml_is_one_line_naming_the_file(text: str, config_file: Path) -> None:
    write_config(config_file, text)
    with pytest.raises(SettingsError) as raised:
        load_settings(environ={}, config_path=config_file)
    assert_one_line(str(raised.value), str(config_file), "TOML")


@pytest.mark.parametrize(
    ("toml", "key"),
    [
        ('history_turns = "many"\n', "history_turns"),
        ("history_turns = 2.5\n", "history_turns"),
        ("model = 3\n", "model"),
        ("memory_enabled = [1]\n", "memory_enabled"),
        ('memory_min_score = "high"\n', "memory_min_score"),
        ("ollama_host = 11434\n", "ollama_host"),
        ('now = "last tuesday"\n', "now"),
        ("memory_min_score = 1.5\n", "memory_min_score"),
        ("http_timeout_seconds = 0\n", "http_timeout_seconds"),
        ("memory_top_k = -1\n", "memory_top_k"),
        ('ollama_host = "host:99999"\n', "ollama_host"),
        ('ollama_host = "htp://localhost:11434"\n', "ollama_host"),  # said "closed the
        ('ollama_host = "ftp://ollama.lan"\n', "ollama_host"),  # connection" at every call
    ],
)
def test_wrong_value_in_toml_names_file_and_key(toml: str, key: str, config_file: Path) -> None:
    write_config(config_file, toml)
    with pytest.raises(SettingsError) as raised:
        load_settings(environ={}, config_path=config_file)
    assert_one_line(str(raised.value), str(config_file), key)


def test_boolean_for_an_integer_setting_is_a_type_error(config_file: Path) -> None:
    write_config(config_file, "history_turns = true\n")
    with pytest.raises(SettingsError) as raised:
        load_settings(environ={}, config_path=config_file)
    assert_one_line(str(raised.value), str(config_file), "history_turns")


@pytest.mark.parametrize("key", ["bogus", "memory_topk", "Straylight_Modle"])
def test_unknown_key_names_file_and_key(key: str, config_file: Path) -> None:
    write_config(config_file, f"{key} = 1\n")
    with pytest.raises(SettingsError) as raised:
        load_settings(environ={}, config_path=config_file)
    assert_one_line(str(raised.value), str(config_file), key, "unknown")


def test_table_is_an_unknown_key(config_file: Path) -> None:
    write_config(config_file, "[memory]\ntop_k = 3\n")
    with pytest.raises(SettingsError) as raised:
        load_settings(environ={}, config_path=config_file)
    assert_one_line(str(raised.value), str(config_file), "memory")


def test_config_file_that_is_not_utf8(config_file: Path) -> None:
    config_file.parent.mkdir(parents=True)
    config_file.write_bytes(b'model = "caf\xe9"\n')
    with pytest.raises(SettingsError) as raised:
        load_settings(environ={}, config_path=config_file)
    assert_one_line(str(raised.value), str(config_file), "UTF-8")


def test_config_file_nested_too_deep_is_one_line(config_file: Path) -> None:
    """`a = [[[[…]]]]` 1,000 deep (2 KB) printed a thousand-line RecursionError traceback
    for every command."""
    config_file.parent.mkdir(parents=True)
    config_file.write_text("a = " + "[" * 1000 + "]" * 1000 + "\n")
    with pytest.raises(SettingsError) as raised:
        load_settings(environ={}, config_path=config_file)
    assert_one_line(str(raised.value), str(config_file), "nested too deep")


def test_config_path_that_cannot_be_read(tmp_path: Path) -> None:
    directory = tmp_path / "a-directory.toml"
    directory.mkdir()
    with pytest.raises(SettingsError) as raised:
        load_settings(environ={}, config_path=directory)
    assert_one_line(str(raised.value), str(directory))


def test_config_file_other_users_can_write_is_refused(config_file: Path) -> None:
    # Whoever can write it can set ollama_host and receive every prompt.
    config_file.parent.mkdir(parents=True)
    config_file.write_text('ollama_host = "http://127.0.0.1:11434"\n')
    config_file.chmod(0o666)
    with pytest.raises(SettingsError) as raised:
        load_settings(environ={}, config_path=config_file)
    assert_one_line(str(raised.value), str(config_file), "other users", "chmod go-w")
    config_file.chmod(0o664)  # group-writable: accepted, like longterm.md
    assert load_settings(environ={}, config_path=config_file).settings.ollama.host == (
        "http://127.0.0.1:11434"
    )


def test_other_writable_config_stops_the_command_in_one_line(run_main: Any, tmp_path: Path) -> None:
    config = tmp_path / "open.toml"
    config.write_text('model = "llama3.2"\n')
    config.chmod(0o646)
    code, _, err = run_main("--config", str(config), "config")
    assert code == 2
    err = err.strip()
    assert "\n" not in err and "writable by other users" in err and "Traceback" not in err


@pytest.mark.parametrize(
    ("env_name", "text"),
    [
        ("STRAYLIGHT_HISTORY_TURNS", "twenty"),
        ("STRAYLIGHT_HISTORY_TURNS", "-1"),
        ("STRAYLIGHT_HTTP_TIMEOUT_SECONDS", "soon"),
        ("STRAYLIGHT_HTTP_TIMEOUT_SECONDS", "0"),
        ("STRAYLIGHT_NOW", "yesterday"),
        ("OLLAMA_HOST", "localhost:99999"),
        ("OLLAMA_HOST", "localhost:port"),
        ("OLLAMA_HOST", "http://[::1"),
        ("MEMORY_ENABLED", "maybe"),
        ("MEMORY_TOP_K", "5.5"),
        ("MEMORY_MIN_SCORE", "2"),
        ("MEMORY_RAM_WARN_BYTES", "lots"),
        ("STRAYLIGHT_NUM_CTX", "99999999999999999999999"),  # was sent on to Ollama
    ],
)
def test_bad_environment_value_names_the_variable(
    env_name: str, text: str, config_file: Path
) -> None:
    with pytest.raises(SettingsError) as raised:
        load_settings(environ={env_name: text}, config_path=config_file)
    assert_one_line(str(raised.value), env_name)


def test_bad_value_in_environment_is_reported_even_when_file_is_fine(config_file: Path) -> None:
    write_config(config_file, "history_turns = 4\n")
    with pytest.raises(SettingsError) as raised:
        load_settings(environ={"STRAYLIGHT_HISTORY_TURNS": "x"}, config_path=config_file)
    assert "STRAYLIGHT_HISTORY_TURNS" in str(raised.value)
    assert str(config_file) not in str(raised.value)


def test_bad_flag_value_names_the_option(config_file: Path) -> None:
    with pytest.raises(SettingsError) as raised:
        load_settings(flags={"ollama_host": "h:70000"}, environ={}, config_path=config_file)
    assert_one_line(str(raised.value), "--ollama-host")


# --------------------------------------------------------------------------- `config` via main()


def test_config_json_reports_every_setting_with_provenance(
    run_main: Any, tmp_path: Path, home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = write_config(
        tmp_path / "c.toml", 'model = "file-model"\nmemory_top_k = 8\nhistory_turns = 4\n'
    )
    monkeypatch.setenv("STRAYLIGHT_CONFIG", str(path))
    monkeypatch.setenv("STRAYLIGHT_MODEL", "env-model")
    monkeypatch.setenv("STRAYLIGHT_HISTORY_TURNS", "6")
    monkeypatch.setenv("STRAYLIGHT_NOW", "2031-02-03T04:05:06Z")
    code, out, err = run_main("--model", "flag-model", "config", "--json")
    assert (code, err) == (0, "")
    described = json.loads(out)
    for name in [*DOCUMENTED_DEFAULTS, "home", "model", "embed_model"]:
        assert set(described[name]) == {"value", "source", "origin"}, name
    assert described["model"] == {"value": "flag-model", "source": "flag", "origin": "--model"}
    assert described["history_turns"] == {
        "value": 6,
        "source": "env",
        "origin": "STRAYLIGHT_HISTORY_TURNS",
    }
    assert described["memory_top_k"] == {"value": 8, "source": "file", "origin": str(path)}
    assert described["home"] == {"value": str(home), "source": "flag", "origin": "--home"}
    assert described["now"]["value"] == "2031-02-03T04:05:06Z"
    assert described["now"]["source"] == "env"
    assert described["memory_save_dedup_threshold"] == {
        "value": 0.85,
        "source": "default",
        "origin": None,
    }
    assert {entry["source"] for entry in described.values()} <= {"default", "file", "env", "flag"}


def test_config_json_keys_cover_every_environment_setting(run_main: Any) -> None:
    code, out, _ = run_main("config", "--json")
    assert code == 0
    described = json.loads(out)
    expected = {case[0] for case in LAYERED}
    assert expected <= set(described)


def test_a_setting_variable_with_straylight_in_front_is_named_as_not_read(
    run_main: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The memory settings keep the seed's `MEMORY_*` names and the host is Ollama's own
    `OLLAMA_HOST`: `STRAYLIGHT_MEMORY_TOP_K=3` was ignored without a word. Now one note
    each, and the command runs as before."""
    monkeypatch.setenv("STRAYLIGHT_MEMORY_TOP_K", "3")
    monkeypatch.setenv("STRAYLIGHT_OLLAMA_HOST", "http://127.0.0.1:1")
    code, out, err = run_main("config", "--json")
    assert code == 0
    assert json.loads(out)["memory_top_k"]["source"] == "default"  # still not read
    assert err.splitlines() == [
        "straylight: note: STRAYLIGHT_OLLAMA_HOST is not read: the setting's variable is "
        "OLLAMA_HOST",
        "straylight: note: STRAYLIGHT_MEMORY_TOP_K is not read: the setting's variable is "
        "MEMORY_TOP_K",
    ]
    monkeypatch.delenv("STRAYLIGHT_MEMORY_TOP_K")
    monkeypatch.delenv("STRAYLIGHT_OLLAMA_HOST")
    monkeypatch.setenv("MEMORY_TOP_K", "3")
    code, out, err = run_main("config", "--json")
    assert (code, err) == (0, "")
    assert json.loads(out)["memory_top_k"] == {
        "value": 3,
        "source": "env",
        "origin": "MEMORY_TOP_K",
    }


def test_config_text_names_file_and_each_source(
    run_main: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = write_config(platform_config_path(tmp_path), "memory_top_k = 8\n")
    monkeypatch.setenv("MEMORY_MAX_CHARS", "77")
    code, out, err = run_main("config")
    assert (code, err) == (0, "")
    assert str(path) in out.splitlines()[0]
    lines = {line.split()[0]: line for line in out.splitlines()[1:] if line.strip()}
    assert "8" in lines["memory_top_k"] and "file" in lines["memory_top_k"]
    assert "77" in lines["memory_max_chars"] and "MEMORY_MAX_CHARS" in lines["memory_max_chars"]
    assert "--home" in lines["home"]
    assert "default" in lines["memory_ram_crit_bytes"]


def test_config_text_says_when_the_platform_file_is_missing(run_main: Any) -> None:
    code, out, _ = run_main("config")
    assert code == 0
    first = out.splitlines()[0]
    assert "straylight/config.toml" in first and "not found" in first


def test_config_text_does_not_call_a_fifo_it_read_not_found(run_main: Any, tmp_path: Path) -> None:
    fifo = tmp_path / "settings.toml"
    os.mkfifo(fifo)  # nobody writes to it: read as empty, as the README says
    code, out, _ = run_main("--config", str(fifo), "config")
    assert code == 0
    first = out.splitlines()[0]
    assert str(fifo) in first and "not found" not in first


def test_a_named_config_file_that_does_not_exist_is_an_error(
    run_main: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    missing = tmp_path / "nowhere" / "config.toml"
    code, out, err = run_main("--config", str(missing), "config")
    assert (code, out) == (2, "")
    assert err.count("\n") == 1 and str(missing) in err and "does not exist" in err
    monkeypatch.setenv("STRAYLIGHT_CONFIG", str(missing))
    code, _, err = run_main("config")
    assert code == 2 and str(missing) in err


@pytest.mark.parametrize(
    ("toml", "env", "fragments"),
    [
        ("history_turns = [1\n", {}, ["TOML"]),
        ("bogus = 1\n", {}, ["bogus"]),
        ('memory_top_k = "x"\n', {}, ["memory_top_k"]),
        ("", {"STRAYLIGHT_HTTP_TIMEOUT_SECONDS": "slow"}, ["STRAYLIGHT_HTTP_TIMEOUT_SECONDS"]),
    ],
    ids=["malformed", "unknown-key", "wrong-type", "bad-env"],
)
@pytest.mark.parametrize("command", ["config", "history", "status"])
def test_main_exits_2_with_one_line(
    run_main: Any,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    toml: str,
    env: dict[str, str],
    fragments: list[str],
    command: str,
) -> None:
    path = write_config(tmp_path / "bad.toml", toml)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    code, out, err = run_main("--config", str(path), command)
    assert code == 2
    assert out == ""
    assert len(err.splitlines()) == 1, err
    assert "Traceback" not in err
    for fragment in fragments:
        assert fragment in err
    if not env:
        assert str(path) in err


@pytest.mark.parametrize("command", ["config", "status"])
def test_a_critical_line_below_the_warn_line_set_by_the_user_is_refused(
    run_main: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, command: str
) -> None:
    """Issue 16: accepted silently before. Both lines must be the user's to be refused."""
    path = write_config(tmp_path / "lines.toml", "memory_ram_warn_bytes = 5000\n")
    monkeypatch.setenv("MEMORY_RAM_CRIT_BYTES", "1000")
    code, out, err = run_main("--config", str(path), command)
    assert (code, out) == (2, "")
    assert len(err.splitlines()) == 1 and "Traceback" not in err
    assert "MEMORY_RAM_CRIT_BYTES" in err and str(path) in err
    assert "memory_ram_crit_bytes (1000) is below memory_ram_warn_bytes (5000)" in err


def test_a_critical_line_alone_may_sit_below_the_default_warn_line(
    tmp_path: Path,
) -> None:
    """`MEMORY_RAM_CRIT_BYTES=1` alone forces critical (tests and docs rely on it)."""
    resolved = load_settings(
        environ={"MEMORY_RAM_CRIT_BYTES": "1"}, config_path=tmp_path / "none.toml"
    )
    assert resolved.settings.memory.ram_crit_bytes == 1


# --------------------------------------------------------------------------- OLLAMA_HOST parsing


def _outcome(parse: Any, value: str | None) -> tuple[str, str]:
    try:
        return ("ok", parse(value))
    except ValueError as error:  # anything else escapes and fails the test
        return (type(error).__name__, str(error))


_CLIENT_DOCTESTS = doctest.DocTestParser().get_examples(ollama_parse_host.__doc__ or "")


def test_client_doctests_were_found() -> None:
    assert len(_CLIENT_DOCTESTS) >= 20


@pytest.mark.parametrize(
    "example_", _CLIENT_DOCTESTS, ids=[e.source.strip() for e in _CLIENT_DOCTESTS]
)
def test_parse_ollama_host_passes_the_client_doctests(example_: doctest.Example) -> None:
    got = eval(example_.source, {"_parse_host": parse_ollama_host})
    assert repr(got) == example_.want.strip()


_SCHEMES = st.sampled_from(["", "http://", "https://", "HTTPS://", "ftp://", "://", "http:/"])
_HOSTS = st.one_of(
    st.sampled_from(
        [
            "",
            "localhost",
            "example.com",
            "1.2.3.4",
            "0.0.0.0",
            "[::1]",
            "::1",
            "[fe80::1%25en0]",
            "[0001:002:003:0004::1]",
            "Ollama.Local",
            "user:pw@host",
            "[::1",
            "::1]",
        ]
    ),
    st.ip_addresses(v=4).map(str),
    st.ip_addresses(v=6).map(lambda address: f"[{address}]"),
    st.from_regex(r"[A-Za-z0-9][A-Za-z0-9.-]{0,15}", fullmatch=True),
)
_PORTS = st.one_of(
    st.just(""),
    st.integers(min_value=0, max_value=70000).map(lambda port: f":{port}"),
    st.sampled_from([":", ":abc", ":-1", ": 80", ":0x1f"]),
)
_PATHS = st.one_of(
    st.sampled_from(["", "/", "/path", "/path/", "//a//b//", "/a?x=1", "/a#frag", "?q", "#f"]),
    st.text(alphabet="ab/?#%:@ ", max_size=8).map(lambda text: "/" + text),
)
HOST_TEXTS = st.one_of(
    st.builds(lambda *parts: "".join(parts), _SCHEMES, _HOSTS, _PORTS, _PATHS),
    st.text(max_size=40),
)


@hypothesis_settings(max_examples=400, deadline=None)
@given(HOST_TEXTS)
@example("")
@example(":56789")
@example("https://[0001:002:003:0004::1]:56789/path/")
def test_parse_ollama_host_matches_the_ollama_client(text: str) -> None:
    """The client's parse of the value Ollama's `envconfig` reads (blanks and quotes around
    it dropped: `OLLAMA_HOST="host:port"` from a unit file)."""
    assert _outcome(parse_ollama_host, text) == _outcome(ollama_parse_host, as_ollama_reads(text))


def as_ollama_reads(text: str) -> str:
    return text.strip().strip("\"'").strip()


def test_parse_ollama_host_none_matches_the_ollama_client() -> None:
    assert parse_ollama_host(None) == ollama_parse_host(None)


@hypothesis_settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(text=HOST_TEXTS.filter(lambda text: "\x00" not in text))
def test_ollama_host_env_is_resolved_like_the_client(text: str, config_file: Path) -> None:
    if not text.strip():
        # A blank variable counts as unset (the client would build "http:// :11434").
        resolved = load_settings(environ={"OLLAMA_HOST": text}, config_path=config_file)
        assert resolved.provenance["ollama_host"].source == "default"
        return
    kind, expected = _outcome(ollama_parse_host, as_ollama_reads(text))
    if kind == "ok" and expected.partition("://")[0].lower() in ("http", "https"):
        resolved = load_settings(environ={"OLLAMA_HOST": text}, config_path=config_file)
        assert resolved.settings.ollama.host == expected
        assert resolved.describe()["ollama_host"]["value"] == expected
    else:  # what the client refuses, and a scheme it cannot speak (`htp://`, `ftp://`)
        with pytest.raises(SettingsError) as raised:
            load_settings(environ={"OLLAMA_HOST": text}, config_path=config_file)
        assert_one_line(str(raised.value), "OLLAMA_HOST")


def test_a_setting_written_twice_in_the_config_file_is_refused(config_file: Path) -> None:
    """The file accepts the setting's name and its environment name; both for one setting
    would leave one silently ignored, so the file is refused, naming both keys."""
    write_config(config_file, 'model = "qwen3"\nSTRAYLIGHT_MODEL = "llama3.2"\n')
    with pytest.raises(SettingsError) as raised:
        load_settings(environ={}, config_path=config_file)
    message = str(raised.value)
    assert "'model'" in message and "'STRAYLIGHT_MODEL'" in message and "\n" not in message


def test_a_config_file_saved_with_a_byte_order_mark_is_read(config_file: Path) -> None:
    """Notepad and other Windows editors start a UTF-8 file with a BOM; tomllib alone calls
    it an invalid statement at line 1."""
    config_file.parent.mkdir(parents=True, exist_ok=True)
    config_file.write_bytes(b'\xef\xbb\xbfmodel = "qwen3:8b"\r\n')
    resolved = load_settings(environ={}, config_path=config_file)
    assert setting_value(resolved.settings, "model") == "qwen3:8b"
    assert resolved.provenance["model"].source == "file"
