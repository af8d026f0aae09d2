"""Model parameters: the `[model_options]` table of config.toml, checked and resolved per model.

    [model_options]              # every chat model
    temperature = 0.7
    [model_options."qwen3:8b"]   # this model only (over the table above)
    temperature = 0.6
    stop = ["<|im_end|>"]

The values go to Ollama as `options` on every chat request (agent/ollama_gateway.py).
`num_ctx` is not one of them: the context budget owns the window it sends.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from typing import Any

from memory.model_names import normalise_name

OPTION_KINDS: dict[str, str] = {
    "temperature": "number",
    "top_p": "number",
    "top_k": "integer",
    "min_p": "number",
    "typical_p": "number",
    "seed": "integer",
    "num_predict": "integer",
    "repeat_penalty": "number",
    "repeat_last_n": "integer",
    "presence_penalty": "number",
    "frequency_penalty": "number",
    "stop": "strings",
}
"""The Ollama options a user may set, and what each takes."""

_NUM_CTX = "num_ctx is not a model option here: the context budget owns the window (set num_ctx)"
_UNIT = r"(\d+(\.\d*)?|\.\d+)(ns|us|µs|ms|s|m|h)"
_DURATION = re.compile(rf"[-+]?(?:{_UNIT})+")
_BARE_KEY = re.compile(r"[A-Za-z0-9_-]+")


class ModelOptionError(ValueError):
    """One bad entry of `[model_options]`: `key` is its dotted name under the table."""

    def __init__(self, key: str, problem: str) -> None:
        super().__init__(f"{key}: {problem}")
        self.key = key
        self.problem = problem


def _value_problem(kind: str, value: object) -> str | None:
    if kind == "strings":
        if isinstance(value, str) or (
            isinstance(value, list) and all(isinstance(item, str) for item in value)
        ):
            return None
        return f"expected a string or a list of strings, got {value!r}"
    if isinstance(value, bool):
        return f"expected {'an integer' if kind == 'integer' else 'a number'}, got {value!r}"
    if kind == "integer" and not isinstance(value, int):
        return f"expected an integer, got {value!r}"
    if kind == "number" and not isinstance(value, int | float):
        return f"expected a number, got {value!r}"
    if isinstance(value, float) and not math.isfinite(value):
        return f"expected a finite number, got {value!r}"
    return None


def _check_options(options: Mapping[str, object], prefix: str) -> None:
    for name, value in options.items():
        key = f"{prefix}{name}"
        if name == "num_ctx":
            raise ModelOptionError(key, _NUM_CTX)
        kind = OPTION_KINDS.get(name)
        if kind is None:
            known = ", ".join(OPTION_KINDS)
            raise ModelOptionError(key, f"unknown model option '{name}' (known: {known})")
        problem = _value_problem(kind, value)
        if problem:
            raise ModelOptionError(key, problem)


def check_model_options(table: object) -> dict[str, Any]:
    """The table as given, or `ModelOptionError` naming the first bad entry: option values
    at the top, one sub-table per model (`"qwen3:8b" = {temperature = 0.6}`)."""
    if not isinstance(table, Mapping):
        raise ModelOptionError("", "expected a table: [model_options] with option = value lines")
    top = {name: value for name, value in table.items() if not isinstance(value, Mapping)}
    _check_options(top, "")
    for model, options in table.items():
        if isinstance(options, Mapping):
            bare = _BARE_KEY.fullmatch(str(model))
            _check_options(options, f"{model}." if bare else f'"{model}".')
    return dict(table)


def options_for(table: Mapping[str, Any], model: str) -> dict[str, Any]:
    """Ollama `options` for `model`: the table's values, then the model's own over them
    (`qwen3` and `qwen3:latest` name the same model). A single `stop` string goes as a
    one-item list: Ollama takes only an array there (HTTP 500 otherwise)."""
    options = {name: value for name, value in table.items() if not isinstance(value, Mapping)}
    wanted = normalise_name(model)
    for name, own in table.items():
        if isinstance(own, Mapping) and normalise_name(name) == wanted:
            options.update(own)
    if isinstance(options.get("stop"), str):
        options["stop"] = [options["stop"]]
    return options


def parse_keep_alive(value: object) -> object:
    """`keep_alive` as Ollama takes it: seconds (a number, or a string of one) or a Go
    duration ("5m", "1h30m", "+5m", "-1s"), as `time.ParseDuration` reads it; a negative
    value keeps the model loaded, 0 unloads it after the reply. An empty string is unset.
    Anything else raises ValueError."""
    if value is None or isinstance(value, bool):
        if isinstance(value, bool):
            raise ValueError('expected seconds or a duration such as "5m", got a boolean')
        return None
    if isinstance(value, int | float):
        if not math.isfinite(value):
            raise ValueError(f'expected seconds or a duration such as "5m", got {value!r}')
        return int(value) if float(value).is_integer() else float(value)
    if isinstance(value, str):
        text = value.strip()
        if not text:
            return None
        try:
            number = float(text)
        except ValueError:
            if _DURATION.fullmatch(text):
                return text
            raise ValueError(
                f'expected seconds or a duration such as "5m" or "1h30m", got {value!r}'
            ) from None
        if not math.isfinite(number):
            raise ValueError(f'expected seconds or a duration such as "5m", got {value!r}')
        return int(number) if number.is_integer() else number
    raise ValueError(f'expected seconds or a duration such as "5m", got {value!r}')
