"""One typed settings object, resolved flag > environment > config.toml > default.

Built once at the entry (`tui/cli.py`) and passed down; nothing else reads the environment.
The shape (`Settings`, nested by area) is in `agent/settings_models.py`; this module reads
the flat names from flags, the environment and config.toml, validates them into it, and keeps
where each came from: `describe()` gives, for every setting, its value and its source, for
`straylight config`.
"""

from __future__ import annotations

import os
import stat
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from functools import reduce
from pathlib import Path
from typing import Any, Literal, get_args

from pydantic import ValidationError
from pydantic_core import ErrorDetails

# `Settings` comes from here too: `from agent.settings import Settings` is the usual import.
from agent.model_options import ModelOptionError, check_model_options
from agent.settings_models import (
    APP_NAME,
    SETTING_PATHS,
    Settings,
    field_annotation,
    nested_values,
    setting_of,
)


def default_config_path() -> Path:
    import platformdirs

    return Path(platformdirs.user_config_dir(APP_NAME, appauthor=False)) / "config.toml"


ENV_NAMES: dict[str, str] = {
    "home": "STRAYLIGHT_HOME",
    "ollama_host": "OLLAMA_HOST",
    "model": "STRAYLIGHT_MODEL",
    "embed_model": "STRAYLIGHT_EMBED_MODEL",
    "history_turns": "STRAYLIGHT_HISTORY_TURNS",
    "http_timeout_seconds": "STRAYLIGHT_HTTP_TIMEOUT_SECONDS",
    "connect_timeout_seconds": "STRAYLIGHT_CONNECT_TIMEOUT_SECONDS",
    "num_ctx": "STRAYLIGHT_NUM_CTX",
    "longterm_budget_bytes": "STRAYLIGHT_LONGTERM_BUDGET_BYTES",
    "now": "STRAYLIGHT_NOW",
    "workspace": "STRAYLIGHT_WORKSPACE",
    "think": "STRAYLIGHT_THINK",
    "keep_alive": "STRAYLIGHT_KEEP_ALIVE",
    "mcp_doc_roots": "STRAYLIGHT_MCP_DOC_ROOTS",
    "reply_max_chars": "STRAYLIGHT_REPLY_MAX_CHARS",
    "reply_max_seconds": "STRAYLIGHT_REPLY_MAX_SECONDS",
    "theme": "STRAYLIGHT_THEME",
} | {name: name.upper() for name in SETTING_PATHS if name.startswith("memory_")}
ENV_NAMES |= {
    name: f"STRAYLIGHT_{name.upper()}" for name in SETTING_PATHS if name.startswith("jobs_")
}

FLAG_NAMES: dict[str, str] = {
    "home": "--home",
    "ollama_host": "--ollama-host",
    "model": "--model",
    "workspace": "--workspace",
    "think": "--think",
}

CONFIG_ENV = "STRAYLIGHT_CONFIG"

_NAMED_BY_FLAG: dict[str, str] = {
    "ollama_host": "the Ollama address",
    "workspace": "the workspace name",
}
"""Flags whose empty value would silently mean the default (Ollama on this machine, the git
root) instead of what the user meant to name: refused, as an empty `--home` or `--model` is.
(An empty environment variable counts as unset, as the ollama client reads OLLAMA_HOST.)"""

Source = Literal["default", "file", "env", "flag"]


class SettingsError(Exception):
    """A setting could not be read or is invalid; the message is one line for the user."""


@dataclass(frozen=True, slots=True)
class Provenance:
    source: Source
    origin: str | None  # the flag, the environment variable or the config file path


@dataclass(frozen=True, slots=True)
class ResolvedSettings:
    settings: Settings
    provenance: dict[str, Provenance]
    config_path: Path
    config_found: bool

    def describe(self) -> dict[str, dict[str, Any]]:
        """`{name: {"value", "source", "origin"}}` for every setting, JSON-ready."""
        dumped = self.settings.model_dump(mode="json")
        return {
            name: {
                "value": reduce(dict.__getitem__, SETTING_PATHS[name], dumped),
                "source": self.provenance[name].source,
                "origin": self.provenance[name].origin,
            }
            for name in SETTING_PATHS
        }


def _config_key(raw_key: str) -> str | None:
    """Map a config.toml key (field name or environment name, any case) to a field."""
    key = raw_key.lower()
    if key in SETTING_PATHS:
        return key
    for name, env_name in ENV_NAMES.items():
        if env_name.lower() == key:
            return name
    return None


# More than any config.toml holds: `--config /dev/zero` is refused, not read until memory ends.
CONFIG_MAX_BYTES = 1 << 20


def _read_config_bytes(path: Path) -> bytes:
    """Up to CONFIG_MAX_BYTES + 1 bytes of `path`. Opened without waiting for a writer, so a
    FIFO nobody writes to reads as empty instead of blocking the start for good (a pipe
    that has one, `--config <(…)`, is read to its end)."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        _refuse_writable_by_others(path, os.fstat(fd))
        os.set_blocking(fd, True)
        chunks: list[bytes] = []
        left = CONFIG_MAX_BYTES + 1
        while left > 0 and (chunk := os.read(fd, min(left, 1 << 16))):
            chunks.append(chunk)
            left -= len(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)


def _refuse_writable_by_others(path: Path, info: os.stat_result) -> None:
    """A config.toml other users can write to (one made by hand under umask 000), or one
    another user owns, is refused like such a `longterm.md`: whoever can write it can point
    `ollama_host` elsewhere and receive every prompt. The file is checked as opened (a
    group-writable one is accepted; a pipe, `--config <(…)`, is the user's own)."""
    from store.data_dir_check import owned_by_another  # (only when a config file exists)

    mode = stat.S_IMODE(info.st_mode)
    if not stat.S_ISREG(info.st_mode):
        return
    if owned_by_another(info):  # as for the data dir
        raise SettingsError(
            f"config file {path} belongs to another user (uid {info.st_uid}), who could "
            f"send your prompts elsewhere; use a config file of your own"
        )
    if mode & stat.S_IWOTH:
        raise SettingsError(
            f"config file {path} is writable by other users (mode {mode:o}), who could "
            f"send your prompts elsewhere; run: chmod go-w {path}"
        )


def read_config_file(path: Path) -> dict[str, object]:
    """The settings in config.toml; a missing file is empty. Errors are one line."""
    try:
        raw = _read_config_bytes(path)
    except FileNotFoundError:
        return {}
    except OSError as error:
        raise SettingsError(f"cannot read config file {path}: {error.strerror}") from None
    if len(raw) > CONFIG_MAX_BYTES:
        raise SettingsError(
            f"config file {path} is over {CONFIG_MAX_BYTES >> 20} MiB: not a config.toml"
        )
    try:
        data = tomllib.loads(raw.decode("utf-8-sig"))  # a BOM (Windows editors) is no error
    except UnicodeDecodeError as error:
        raise SettingsError(f"config file {path}: not UTF-8 (byte {error.start})") from None
    except tomllib.TOMLDecodeError as error:
        raise SettingsError(f"config file {path}: invalid TOML: {error}") from None
    except RecursionError:  # `a = [[[[…` a few hundred deep: tomllib recurses per level
        raise SettingsError(f"config file {path}: invalid TOML: nested too deep") from None
    values: dict[str, object] = {}
    written_as: dict[str, str] = {}  # setting -> the key that set it
    for raw_key, value in data.items():
        name = _config_key(raw_key)
        if name is None:
            raise SettingsError(f"config file {path}: unknown key '{raw_key}'")
        if name in written_as:  # `model` and `STRAYLIGHT_MODEL`: which one was meant?
            raise SettingsError(
                f"config file {path}: keys '{written_as[name]}' and '{raw_key}' both set "
                f"{name}; keep one"
            )
        written_as[name] = raw_key
        if name == "model_options":
            try:
                check_model_options(value)
            except ModelOptionError as error:
                key = f"{raw_key}.{error.key}" if error.key else raw_key
                raise SettingsError(f"config file {path}: key '{key}': {error.problem}") from None
        problem = _toml_type_problem(name, value)
        if problem:
            raise SettingsError(f"config file {path}: key '{raw_key}': {problem}")
        values[name] = value
    return values


_TOML_TYPES: dict[str, tuple[type, ...]] = {
    "bool": (bool,),
    "int": (int,),
    "float": (int, float),
    "str": (str,),
}


_LOOSE_TYPES: dict[str, tuple[tuple[type, ...], str]] = {
    "think": ((bool, str), 'true, false, "low", "medium" or "high"'),
    "keep_alive": ((int, float, str), 'seconds or a duration such as "5m"'),
    "model_options": ((dict,), "a table: [model_options] with option = value lines"),
    "mcp_doc_roots": ((list,), 'a list of directories, e.g. ["~/notes"]'),
}
"""Settings of more than one TOML type (their values are checked when they are validated)."""

_KINDS: dict[type, str] = {bool: "bool", int: "int", float: "float", str: "str"}


def _toml_type_problem(name: str, value: object) -> str | None:
    """TOML has types: `history_turns = true` or `= "20"` is a mistake, not a conversion."""
    if name == "keymap":
        if not isinstance(value, dict):
            return 'expected a table: [keymap] with binding_id = "keys" lines'
        for binding, keys in value.items():
            if not isinstance(keys, str) or not keys.strip():
                return f"keymap.{binding}: expected keys as a string, got {keys!r}"
        return None
    if name in _LOOSE_TYPES:
        expected_types, wanted_text = _LOOSE_TYPES[name]
        if isinstance(value, expected_types) and not (
            isinstance(value, bool) and bool not in expected_types
        ):
            return None
        return f"expected {wanted_text}, got {type(value).__name__} {value!r}"
    annotation = field_annotation(SETTING_PATHS[name])
    optional = [arg for arg in get_args(annotation) if arg is not type(None)]
    if len(optional) == 1 and len(get_args(annotation)) == 2:  # `int | None`: unset is None
        annotation = optional[0]
    kind = _KINDS.get(annotation) if isinstance(annotation, type) else None
    if kind is None:  # home (a path string) and now (a datetime or ISO string)
        expected: tuple[type, ...] = (str, datetime)
        wanted = "a string" if name in ("home", "workspace") else "a datetime or an ISO 8601 string"
        if name in ("home", "workspace"):
            expected = (str,)
    else:
        expected = _TOML_TYPES[kind]
        wanted = {"bool": "true or false", "int": "an integer", "float": "a number"}.get(
            kind, "a string"
        )
    if isinstance(value, bool) and bool not in expected:
        return f"expected {wanted}, got a boolean ({str(value).lower()})"
    if not isinstance(value, expected):
        return f"expected {wanted}, got {type(value).__name__} {value!r}"
    return None


def _read_environment(environ: Mapping[str, str]) -> dict[str, tuple[str, str]]:
    """Set variables only: an empty one (`STRAYLIGHT_HOME=`) counts as unset."""
    return {
        name: (environ[env], env) for name, env in ENV_NAMES.items() if environ.get(env, "").strip()
    }


def misnamed_variables(environ: Mapping[str, str]) -> list[str]:
    """Notes for variables set under the name of a setting with `STRAYLIGHT_` in front
    (`STRAYLIGHT_MEMORY_TOP_K`, `STRAYLIGHT_OLLAMA_HOST`) where the setting's variable has none
    (the memory settings keep the seed's `MEMORY_*` names, Ollama's own `OLLAMA_HOST`): they
    are not read, and nothing used to say so."""
    return [
        f"{wrong} is not read: the setting's variable is {env}"
        for env in ENV_NAMES.values()
        if not env.startswith("STRAYLIGHT_")
        and environ.get(wrong := f"STRAYLIGHT_{env}", "").strip()
    ]


def load_settings(
    flags: Mapping[str, object] | None = None,
    environ: Mapping[str, str] | None = None,
    config_path: Path | None = None,
    *,
    require_config: bool = False,
) -> ResolvedSettings:
    """Resolve every setting: flag > environment > config.toml > default.

    A config file the user named (`--config`, with `require_config`, or
    `STRAYLIGHT_CONFIG`) must exist; the platform default may be missing.
    """
    environ = os.environ if environ is None else environ
    flags = {k: v for k, v in (flags or {}).items() if v is not None}
    for name, what in _NAMED_BY_FLAG.items():
        value = flags.get(name)
        if isinstance(value, str) and not value.strip():  # `--ollama-host "$UNSET"`
            raise SettingsError(
                f"option {FLAG_NAMES[name]}: {what} must not be empty (got {value!r})"
            )
    named = config_path is not None and require_config
    if config_path is None and environ.get(CONFIG_ENV, "").strip():
        config_path, named = Path(environ[CONFIG_ENV]), True
    if named and config_path is not None and not config_path.exists():
        raise SettingsError(f"config file {config_path} does not exist")
    path = config_path or default_config_path()
    file_values = read_config_file(path)

    values: dict[str, object] = {}
    provenance: dict[str, Provenance] = {}
    for name, value in file_values.items():
        values[name], provenance[name] = value, Provenance("file", str(path))
    for name, (value, env_name) in _read_environment(environ).items():
        values[name], provenance[name] = value, Provenance("env", env_name)
    for name, value in flags.items():
        values[name], provenance[name] = value, Provenance("flag", FLAG_NAMES.get(name, name))

    try:
        settings = Settings.model_validate(nested_values(values))
    except ValidationError as error:
        raise SettingsError(_one_line(error, provenance)) from None
    _check_ram_lines(settings, provenance)
    for name in SETTING_PATHS:
        provenance.setdefault(name, Provenance("default", None))
    return ResolvedSettings(settings, provenance, path, path.exists())  # a FIFO was read too


def _check_ram_lines(settings: Settings, provenance: Mapping[str, Provenance]) -> None:
    """A critical RAM line below the warn line is refused only when the user set both: one
    alone (`MEMORY_RAM_CRIT_BYTES=1` to force critical) is kept, as tests and docs use it."""
    from memory.headroom import crossed_lines_problem

    names = ("memory_ram_warn_bytes", "memory_ram_crit_bytes")
    if not all(name in provenance for name in names):
        return
    problem = crossed_lines_problem(settings.memory.ram_warn_bytes, settings.memory.ram_crit_bytes)
    if problem is not None:
        origins = " and ".join(dict.fromkeys(_origin(provenance[name]) for name in names))
        raise SettingsError(f"{origins}: {problem}")


def _origin(where: Provenance) -> str:
    if where.source == "file":
        return f"config file {where.origin}"
    if where.source == "env":
        return f"environment variable {where.origin}"
    return f"option {where.origin}"


_ORDER = {name: index for index, name in enumerate(SETTING_PATHS)}


def _one_line(error: ValidationError, provenance: Mapping[str, Provenance]) -> str:
    """The first problem, in the order settings are listed, as one line naming its source."""

    def rank(detail: ErrorDetails) -> int:
        return _ORDER.get(setting_of(detail["loc"]) or "", len(_ORDER))

    first = min(error.errors(), key=rank)
    name = setting_of(first["loc"]) or ".".join(map(str, first["loc"])) or "?"
    where = provenance.get(name)
    message = first["msg"]
    if first["type"] == "value_error":  # our validators' own words, without pydantic's prefix
        message = str(first.get("ctx", {}).get("error", message))
    got = first.get("input")
    named = isinstance(got, str | int | float | bool) and repr(got) not in message
    if named and isinstance(got, str):  # a token typed in the wrong place is not echoed
        from memory.secret_masking import mask_secrets

        got = mask_secrets(got)
    shown = f" (got {got!r})" if named else ""
    if where is None:
        return f"setting {name}: {message}{shown}"
    if where.source == "file":
        return f"config file {where.origin}: key '{name}': {message}{shown}"
    if where.source == "env":
        return f"environment variable {where.origin}: {message}{shown}"
    return f"option {where.origin}: {message}{shown}"
