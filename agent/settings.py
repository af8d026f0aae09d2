"""One typed settings object, resolved flag > environment > config.toml > default.

Built once at the entry (`tui/cli.py`) and passed down; nothing else reads the environment.
`Settings` is nested by area (`settings.ollama`, `.memory`, `.facts`, `.jobs`), each area the
model its module takes; the user-facing names stay flat (`memory_top_k`, `MEMORY_TOP_K`) and
`SETTING_PATHS` says where each one lives. `describe()` says, for every setting, its value
and where it came from, for `straylight config`.
"""

from __future__ import annotations

import os
import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from functools import reduce
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator
from pydantic_core import ErrorDetails

from agent.ollama_host import parse_ollama_host
from memory.settings_models import FactsConfig, MemoryConfig, SettingsArea
from store.clock import Clock, parse_instant

APP_NAME = "straylight"
DEFAULT_OLLAMA_HOST = "http://127.0.0.1:11434"


def default_home() -> Path:
    import platformdirs

    return Path(platformdirs.user_data_dir(APP_NAME, appauthor=False))


def default_config_path() -> Path:
    import platformdirs

    return Path(platformdirs.user_config_dir(APP_NAME, appauthor=False)) / "config.toml"


class OllamaConfig(SettingsArea):
    """Where the models run and how long a call may take (`settings.ollama`)."""

    host: str = DEFAULT_OLLAMA_HOST
    """Where Ollama listens, parsed like the ollama client parses OLLAMA_HOST. Key
    `ollama_host`."""
    model: str = "llama3.2"
    """Chat model (also the model of the reflection and dream passes). Key `model`."""
    http_timeout_seconds: float = Field(default=300.0, gt=0)
    """Read timeout (seconds) of model calls: the slowest legitimate call decides (LESSONS
    §8). Key `http_timeout_seconds`."""
    connect_timeout_seconds: float = Field(default=5.0, gt=0)
    """Connect timeout (seconds) of model calls: a dead host is named quickly. Key
    `connect_timeout_seconds`."""

    @field_validator("host", mode="before")
    @classmethod
    def _parse_host(cls, value: object) -> object:
        return parse_ollama_host(value) if isinstance(value, str) or value is None else value


class JobsConfig(SettingsArea):
    """The background jobs (`settings.jobs`): whether the TUI runs them, and their policy."""

    enabled: bool = True
    """Run the background jobs in the TUI (they can always be run with `straylight jobs
    run`). Key `jobs_enabled`."""
    dream_hour: int = Field(default=3, ge=0, le=23)
    """Local hour (0-23) of the nightly dream run. Key `jobs_dream_hour`."""
    binding_limit_days: int = Field(default=90, ge=1)
    """How recently (days) a fact a procedure requires must have been verified. Key
    `jobs_binding_limit_days`."""


class Settings(BaseModel):
    """Every knob Straylight has, by area; `SETTING_PATHS` maps the config keys onto it."""

    model_config = ConfigDict(
        frozen=True, extra="forbid", validate_default=True, use_attribute_docstrings=True
    )

    home: Path = Field(default_factory=default_home)
    """Data dir: daily logs, longterm.md, the database, the log file. Key `home`."""
    ollama: OllamaConfig = Field(default_factory=OllamaConfig)
    """Host, chat model and timeouts of the model calls."""
    memory: MemoryConfig = Field(default_factory=MemoryConfig)
    """Layer 3: recall, the save filter, the embedding model, RAM thresholds."""
    facts: FactsConfig = Field(default_factory=FactsConfig)
    """Layer 4: fact injection, the memory tools, the reflection pass."""
    jobs: JobsConfig = Field(default_factory=JobsConfig)
    """The background jobs."""
    history_turns: int = Field(default=20, ge=0, le=10_000)
    """How many past messages of the conversation go into the prompt (user and assistant
    messages count one each). Key `history_turns`."""
    longterm_budget_bytes: int = Field(default=8192, ge=0)
    """Size budget (bytes) of longterm.md; over it, the sidebar and `status` warn. Key
    `longterm_budget_bytes`."""
    now: datetime | None = None
    """Freeze the clock at this ISO 8601 instant (tests, support, reproducing a report).
    Key `now`."""
    keymap: dict[str, str] = Field(default_factory=dict)
    """config.toml `[keymap]`: binding id → keys (`new_conversation = "ctrl+o"`; several keys
    comma-separated). The ids are listed in the README and the help screen."""
    workspace: str | None = None
    """The workspace facts belong to: default the git root of the current directory, else
    the directory itself. Key `workspace`."""

    @field_validator("now", mode="before")
    @classmethod
    def _parse_now(cls, value: object) -> object:
        if isinstance(value, str):
            return parse_instant(value) if value.strip() else None
        if isinstance(value, datetime):  # a TOML datetime; without a zone it is UTC too
            return parse_instant(value.isoformat())
        return value

    @field_validator("home", mode="before")
    @classmethod
    def _expand_home(cls, value: object) -> object:
        if isinstance(value, str | Path):
            return Path(os.path.expanduser(str(value))).absolute()
        return value

    @model_validator(mode="after")
    def _one_embedding_model(self) -> Settings:
        if self.facts.embed_model != self.memory.embed_model:
            raise ValueError("facts.embed_model must equal memory.embed_model (one setting)")
        return self

    @property
    def clock(self) -> Clock:
        return Clock(self.now)

    @property
    def log_file(self) -> Path:
        return self.home / "straylight.log"


FieldPath = tuple[str, ...]

SETTING_PATHS: dict[str, FieldPath] = {
    "home": ("home",),
    "ollama_host": ("ollama", "host"),
    "model": ("ollama", "model"),
    "embed_model": ("memory", "embed_model"),
    "history_turns": ("history_turns",),
    "http_timeout_seconds": ("ollama", "http_timeout_seconds"),
    "connect_timeout_seconds": ("ollama", "connect_timeout_seconds"),
    "longterm_budget_bytes": ("longterm_budget_bytes",),
    "now": ("now",),
    "memory_enabled": ("memory", "enabled"),
    "memory_top_k": ("memory", "top_k"),
    "memory_min_score": ("memory", "min_score"),
    "memory_max_chars": ("memory", "max_chars"),
    "memory_status_every_n": ("memory", "status_every_n"),
    "memory_save_min_chars": ("memory", "save_filter", "min_chars"),
    "memory_save_footnote_ratio": ("memory", "save_filter", "footnote_ratio"),
    "memory_save_code_ratio": ("memory", "save_filter", "code_ratio"),
    "memory_save_dedup_lookback": ("memory", "save_filter", "dedup_lookback"),
    "memory_save_dedup_threshold": ("memory", "save_filter", "dedup_threshold"),
    "memory_ram_warn_bytes": ("memory", "ram_warn_bytes"),
    "memory_ram_crit_bytes": ("memory", "ram_crit_bytes"),
    "memory_facts_always_max": ("facts", "always_max"),
    "memory_facts_top_k": ("facts", "top_k"),
    "memory_facts_max_chars": ("facts", "max_chars"),
    "memory_facts_min_score": ("facts", "min_score"),
    "memory_tools": ("facts", "tools"),
    "memory_reflection": ("facts", "reflection"),
    "memory_reflection_idle_minutes": ("facts", "reflection_idle_minutes"),
    "jobs_enabled": ("jobs", "enabled"),
    "jobs_dream_hour": ("jobs", "dream_hour"),
    "jobs_binding_limit_days": ("jobs", "binding_limit_days"),
    "keymap": ("keymap",),
    "workspace": ("workspace",),
}
"""Every setting's flat name (its config key, the order `straylight config` lists them) and
the field of `Settings` that holds it."""

MIRRORS: dict[FieldPath, tuple[FieldPath, ...]] = {
    ("memory", "embed_model"): (("facts", "embed_model"),),
}
"""Fields that take the same value as a setting's own field: points and facts are embedded
by one model, which both their modules need to know."""

_NAME_OF_PATH: dict[FieldPath, str] = {path: name for name, path in SETTING_PATHS.items()}
_NAME_OF_PATH |= {
    mirror: _NAME_OF_PATH[path] for path, mirrors in MIRRORS.items() for mirror in mirrors
}


def nested_values(flat: Mapping[str, object]) -> dict[str, Any]:
    """The input of `Settings` for values given by flat name (mirrors included)."""
    nested: dict[str, Any] = {}
    for name, value in flat.items():
        path = SETTING_PATHS[name]
        for target in (path, *MIRRORS.get(path, ())):
            branch = nested
            for part in target[:-1]:
                branch = branch.setdefault(part, {})
            branch[target[-1]] = value
    return nested


def setting_value(settings: Settings, name: str) -> Any:
    """The value of the setting called `name` (`memory_top_k` → `settings.memory.top_k`)."""
    return reduce(getattr, SETTING_PATHS[name], settings)


def setting_of(loc: Sequence[int | str]) -> str | None:
    """The setting whose field a validation error's location points into, if any."""
    path = tuple(str(part) for part in loc)
    for end in range(len(path), 0, -1):
        if path[:end] in _NAME_OF_PATH:
            return _NAME_OF_PATH[path[:end]]
    return None


ENV_NAMES: dict[str, str] = {
    "home": "STRAYLIGHT_HOME",
    "ollama_host": "OLLAMA_HOST",
    "model": "STRAYLIGHT_MODEL",
    "embed_model": "STRAYLIGHT_EMBED_MODEL",
    "history_turns": "STRAYLIGHT_HISTORY_TURNS",
    "http_timeout_seconds": "STRAYLIGHT_HTTP_TIMEOUT_SECONDS",
    "connect_timeout_seconds": "STRAYLIGHT_CONNECT_TIMEOUT_SECONDS",
    "longterm_budget_bytes": "STRAYLIGHT_LONGTERM_BUDGET_BYTES",
    "now": "STRAYLIGHT_NOW",
    "workspace": "STRAYLIGHT_WORKSPACE",
} | {name: name.upper() for name in SETTING_PATHS if name.startswith("memory_")}
ENV_NAMES |= {
    name: f"STRAYLIGHT_{name.upper()}" for name in SETTING_PATHS if name.startswith("jobs_")
}

FLAG_NAMES: dict[str, str] = {
    "home": "--home",
    "ollama_host": "--ollama-host",
    "model": "--model",
    "workspace": "--workspace",
}

CONFIG_ENV = "STRAYLIGHT_CONFIG"

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


def read_config_file(path: Path) -> dict[str, object]:
    """The settings in config.toml; a missing file is empty. Errors are one line."""
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return {}
    except OSError as error:
        raise SettingsError(f"cannot read config file {path}: {error.strerror}") from None
    try:
        data = tomllib.loads(raw.decode("utf-8"))
    except UnicodeDecodeError as error:
        raise SettingsError(f"config file {path}: not UTF-8 (byte {error.start})") from None
    except tomllib.TOMLDecodeError as error:
        raise SettingsError(f"config file {path}: invalid TOML: {error}") from None
    values: dict[str, object] = {}
    for raw_key, value in data.items():
        name = _config_key(raw_key)
        if name is None:
            raise SettingsError(f"config file {path}: unknown key '{raw_key}'")
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


_KINDS: dict[type, str] = {bool: "bool", int: "int", float: "float", str: "str"}


def _field_annotation(path: FieldPath) -> object:
    """The type annotation of the field of `Settings` at `path`."""
    fields = Settings.model_fields
    for part in path[:-1]:
        area = fields[part].annotation
        assert isinstance(area, type) and issubclass(area, BaseModel)
        fields = area.model_fields
    return fields[path[-1]].annotation


def _toml_type_problem(name: str, value: object) -> str | None:
    """TOML has types: `history_turns = true` or `= "20"` is a mistake, not a conversion."""
    if name == "keymap":
        if not isinstance(value, dict):
            return 'expected a table: [keymap] with binding_id = "keys" lines'
        for binding, keys in value.items():
            if not isinstance(keys, str) or not keys.strip():
                return f"keymap.{binding}: expected keys as a string, got {keys!r}"
        return None
    annotation = _field_annotation(SETTING_PATHS[name])
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
    for name in SETTING_PATHS:
        provenance.setdefault(name, Provenance("default", None))
    return ResolvedSettings(settings, provenance, path, path.is_file())


_ORDER = {name: index for index, name in enumerate(SETTING_PATHS)}


def _one_line(error: ValidationError, provenance: Mapping[str, Provenance]) -> str:
    """The first problem, in the order settings are listed, as one line naming its source."""

    def rank(detail: ErrorDetails) -> int:
        return _ORDER.get(setting_of(detail["loc"]) or "", len(_ORDER))

    first = min(error.errors(), key=rank)
    name = setting_of(first["loc"]) or ".".join(map(str, first["loc"])) or "?"
    where = provenance.get(name)
    message = first["msg"]
    got = first.get("input")
    shown = f" (got {got!r})" if isinstance(got, str | int | float | bool) else ""
    if where is None:
        return f"setting {name}: {message}{shown}"
    if where.source == "file":
        return f"config file {where.origin}: key '{name}': {message}{shown}"
    if where.source == "env":
        return f"environment variable {where.origin}: {message}{shown}"
    return f"option {where.origin}: {message}{shown}"
