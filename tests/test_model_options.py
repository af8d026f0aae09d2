"""`[model_options]`, `keep_alive` and `think` as settings: checked, resolved per model, and
rejected in one line."""

from __future__ import annotations

from pathlib import Path

import pytest

from agent.model_options import ModelOptionError, check_model_options, options_for
from agent.settings import SettingsError, load_settings

TABLE = {"temperature": 0.7, "seed": 1, "qwen3:8b": {"temperature": 0.6, "stop": ["<|im_end|>"]}}


def test_a_model_table_overrides_the_common_options() -> None:
    assert options_for(TABLE, "qwen3:8b") == {
        "temperature": 0.6,
        "seed": 1,
        "stop": ["<|im_end|>"],
    }
    assert options_for(TABLE, "llama3.2") == {"temperature": 0.7, "seed": 1}
    assert options_for({"llama3.2": {"top_k": 5}}, "llama3.2:latest") == {"top_k": 5}


@pytest.mark.parametrize(
    ("table", "key", "fragment"),
    [
        ({"tempurature": 0.7}, "tempurature", "unknown model option 'tempurature'"),
        ({"num_ctx": 8192}, "num_ctx", "the context budget owns the window"),
        ({"top_k": 0.5}, "top_k", "expected an integer"),
        ({"temperature": "hot"}, "temperature", "expected a number"),
        ({"seed": True}, "seed", "expected an integer"),
        ({"stop": [1]}, "stop", "a list of strings"),
        ({"temperature": float("inf")}, "temperature", "expected a finite number"),
        ({"mistral": {"top_p": float("nan")}}, "mistral.top_p", "expected a finite number"),
        ({"qwen3:8b": {"min_pp": 0.1}}, '"qwen3:8b".min_pp', "unknown model option"),
        ({"mistral": {"num_ctx": 1}}, "mistral.num_ctx", "num_ctx"),
    ],
)
def test_bad_options_are_named_by_their_key(table: dict, key: str, fragment: str) -> None:
    with pytest.raises(ModelOptionError) as raised:
        check_model_options(table)
    assert raised.value.key == key
    assert fragment in raised.value.problem


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "config.toml"
    path.write_text(text, encoding="utf-8")
    return path


def test_the_config_file_error_is_one_line_with_the_dotted_key(tmp_path: Path) -> None:
    path = write(tmp_path, "[model_options]\ntempurature = 0.7\n")
    with pytest.raises(SettingsError) as raised:
        load_settings(environ={}, config_path=path)
    message = str(raised.value)
    assert "\n" not in message
    assert message.startswith(f"config file {path}: key 'model_options.tempurature': ")
    assert "unknown model option 'tempurature'" in message


def test_settings_read_think_keep_alive_and_options(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        'think = "high"\nkeep_alive = "30m"\n[model_options]\ntemperature = 0.2\n'
        '[model_options."qwen3:8b"]\ntop_k = 20\n',
    )
    ollama = load_settings(environ={}, config_path=path).settings.ollama
    assert (ollama.think, ollama.keep_alive) == ("high", "30m")
    assert ollama.model_options == {"temperature": 0.2, "qwen3:8b": {"top_k": 20}}
    env = {"STRAYLIGHT_THINK": "False", "STRAYLIGHT_KEEP_ALIVE": "-1"}
    ollama = load_settings(environ=env, config_path=tmp_path / "none.toml").settings.ollama
    assert (ollama.think, ollama.keep_alive) == (False, -1)
    env = {"STRAYLIGHT_KEEP_ALIVE": "+5m"}  # Go's time.ParseDuration takes a sign
    ollama = load_settings(environ=env, config_path=tmp_path / "none.toml").settings.ollama
    assert ollama.keep_alive == "+5m"
    default = load_settings(environ={}, config_path=tmp_path / "none.toml").settings.ollama
    assert (default.think, default.keep_alive, default.model_options) == (None, None, {})


@pytest.mark.parametrize(
    ("environ", "fragment"),
    [
        ({"STRAYLIGHT_THINK": "maybe"}, "STRAYLIGHT_THINK"),
        ({"STRAYLIGHT_KEEP_ALIVE": "five minutes"}, "STRAYLIGHT_KEEP_ALIVE"),
        ({"STRAYLIGHT_KEEP_ALIVE": "inf"}, "STRAYLIGHT_KEEP_ALIVE"),
        ({"STRAYLIGHT_HTTP_TIMEOUT_SECONDS": "nan"}, "STRAYLIGHT_HTTP_TIMEOUT_SECONDS"),
    ],
)
def test_bad_think_and_keep_alive_are_one_line(
    tmp_path: Path, environ: dict[str, str], fragment: str
) -> None:
    with pytest.raises(SettingsError) as raised:
        load_settings(environ=environ, config_path=tmp_path / "none.toml")
    assert fragment in str(raised.value) and "\n" not in str(raised.value)


@pytest.mark.parametrize(
    ("text", "key"),
    [
        ("[model_options]\ntemperature = inf\n", "model_options.temperature"),
        ("http_timeout_seconds = inf\n", "http_timeout_seconds"),
        ("memory_facts_min_score = nan\n", "memory_facts_min_score"),
        ("keep_alive = -inf\n", "keep_alive"),
    ],
)
def test_a_number_that_is_not_finite_is_refused_by_its_key(
    tmp_path: Path, text: str, key: str
) -> None:
    """TOML has `inf` and `nan`; taken, every ask failed on the JSON it could not send."""
    with pytest.raises(SettingsError) as raised:
        load_settings(environ={}, config_path=write(tmp_path, text))
    assert f"key '{key}'" in str(raised.value) and "\n" not in str(raised.value)


def test_a_think_of_the_wrong_toml_type_is_named(tmp_path: Path) -> None:
    with pytest.raises(SettingsError, match="key 'think'"):
        load_settings(environ={}, config_path=write(tmp_path, "think = 3\n"))


@pytest.mark.parametrize(
    ("environ", "expected"),
    [
        (
            {"STRAYLIGHT_KEEP_ALIVE": "foo"},
            "environment variable STRAYLIGHT_KEEP_ALIVE: expected seconds or a duration such "
            'as "5m" or "1h30m", got \'foo\'',
        ),
        (
            {"STRAYLIGHT_THINK": "maybe"},
            "environment variable STRAYLIGHT_THINK: expected one of true, false, low, medium, "
            "high, got 'maybe'",
        ),
    ],
)
def test_a_validators_message_is_shown_as_written(
    tmp_path: Path, environ: dict[str, str], expected: str
) -> None:
    """No pydantic "Value error, " prefix, and what was given is named once."""
    with pytest.raises(SettingsError) as raised:
        load_settings(environ=environ, config_path=tmp_path / "none.toml")
    assert str(raised.value) == expected
