"""One typed settings object, resolved flag > environment > config.toml > default.

Built once at the entry (`tui/cli.py`) and passed down; nothing else reads the environment.
`describe()` says, for every setting, its value and where it came from, for
`straylight config`.
"""

from __future__ import annotations

import os
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any, Literal

from pydantic import Field, ValidationError, field_validator
from pydantic_settings import BaseSettings, PydanticBaseSettingsSource, SettingsConfigDict

from agent.ollama_host import parse_ollama_host
from store.clock import Clock, parse_instant

APP_NAME = "straylight"
DEFAULT_OLLAMA_HOST = "http://127.0.0.1:11434"


def default_home() -> Path:
    import platformdirs

    return Path(platformdirs.user_data_dir(APP_NAME, appauthor=False))


def default_config_path() -> Path:
    import platformdirs

    return Path(platformdirs.user_config_dir(APP_NAME, appauthor=False)) / "config.toml"


class Settings(BaseSettings):
    """Every knob Straylight has. Field names are also the keys of config.toml."""

    model_config = SettingsConfigDict(extra="forbid", frozen=True, validate_default=True)

    home: Path = Field(default_factory=default_home)
    """Data dir: daily logs, longterm.md, the database, the log file."""
    ollama_host: str = DEFAULT_OLLAMA_HOST
    """Where Ollama listens, parsed like the ollama client parses OLLAMA_HOST."""
    model: str = "llama3.2"
    """Chat model."""
    embed_model: str = "nomic-embed-text"
    """Embedding model (semantic memory)."""
    history_turns: int = Field(default=20, ge=0, le=10_000)
    """How many past messages of the conversation go into the prompt (user and assistant
    messages count one each)."""
    http_timeout_seconds: float = Field(default=300.0, gt=0)
    """Read timeout of model calls: the slowest legitimate call decides (LESSONS §8)."""
    connect_timeout_seconds: float = Field(default=5.0, gt=0)
    """Connect timeout of model calls: a dead host is named quickly."""
    longterm_budget_bytes: int = Field(default=8192, ge=0)
    """Size budget of longterm.md; over it, the sidebar and `status` warn."""
    now: datetime | None = None
    """Freeze the clock at this ISO 8601 instant (tests, support, reproducing a report)."""

    memory_enabled: bool = True
    memory_top_k: int = Field(default=5, ge=0)
    memory_min_score: float = Field(default=0.6, ge=0.0, le=1.0)
    memory_max_chars: int = Field(default=4000, ge=0)
    memory_status_every_n: int = Field(default=50, ge=1)
    memory_save_min_chars: int = Field(default=50, ge=0)
    memory_save_footnote_ratio: float = Field(default=0.7, ge=0.0, le=1.0)
    memory_save_code_ratio: float = Field(default=0.8, ge=0.0, le=1.0)
    memory_save_dedup_lookback: int = Field(default=3, ge=0)
    memory_save_dedup_threshold: float = Field(default=0.85, ge=0.0, le=1.0)
    memory_ram_warn_bytes: int = Field(default=268_435_456, ge=0)
    memory_ram_crit_bytes: int = Field(default=536_870_912, ge=0)
    memory_facts_always_max: int = Field(default=20, ge=0)
    """Cap on the rules and capabilities injected into every prompt (a note says what it cut)."""
    memory_facts_top_k: int = Field(default=5, ge=0)
    """Other facts (decisions, procedures, facts) injected when their key or body matches."""
    memory_facts_max_chars: int = Field(default=3000, ge=0)
    """Size cap of the `## Known facts` block, cut on a fact boundary."""
    memory_facts_min_score: float = Field(default=0.5, ge=0.0, le=1.0)
    """Cosine a fact's body needs with the message to count as a semantic match."""
    memory_tools: bool = True
    """Offer the model the memory_read / memory_write tools (if the model supports tools)."""
    memory_reflection: bool = True
    """At session end (/new, quit, idle), ask the model once for durable facts (candidates)."""
    memory_reflection_idle_minutes: float = Field(default=30.0, gt=0)
    """Idle time in the TUI after which the session counts as ended for the reflection pass."""
    jobs_enabled: bool = True
    """Run the background jobs in the TUI (they can always be run with `straylight jobs run`)."""
    jobs_dream_hour: int = Field(default=3, ge=0, le=23)
    """Local hour of the nightly dream run."""
    jobs_binding_limit_days: int = Field(default=90, ge=1)
    """How recently a fact a procedure requires must have been verified."""
    keymap: dict[str, str] = Field(default_factory=dict)
    """config.toml `[keymap]`: binding id → keys (`new_conversation = "ctrl+o"`; several keys
    comma-separated). The ids are listed in the README and the help screen."""
    workspace: str | None = None
    """The workspace facts belong to: default the git root of the current directory, else
    the directory itself."""

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        # Layering (and its provenance) is done by `load_settings`; the object itself
        # only validates what it is given.
        return (init_settings,)

    @field_validator("ollama_host", mode="before")
    @classmethod
    def _parse_host(cls, value: object) -> object:
        return parse_ollama_host(value) if isinstance(value, str) or value is None else value

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

    @property
    def clock(self) -> Clock:
        return Clock(self.now)

    @property
    def log_file(self) -> Path:
        return self.home / "straylight.log"


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
} | {name: name.upper() for name in Settings.model_fields if name.startswith("memory_")}
ENV_NAMES |= {
    name: f"STRAYLIGHT_{name.upper()}" for name in Settings.model_fields if name.startswith("jobs_")
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
                "value": dumped[name],
                "source": self.provenance[name].source,
                "origin": self.provenance[name].origin,
            }
            for name in Settings.model_fields
        }


def _config_key(raw_key: str) -> str | None:
    """Map a config.toml key (field name or environment name, any case) to a field."""
    key = raw_key.lower()
    if key in Settings.model_fields:
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


def _toml_type_problem(name: str, value: object) -> str | None:
    """TOML has types: `history_turns = true` or `= "20"` is a mistake, not a conversion."""
    if name == "keymap":
        if not isinstance(value, dict):
            return 'expected a table: [keymap] with binding_id = "keys" lines'
        for binding, keys in value.items():
            if not isinstance(keys, str) or not keys.strip():
                return f"keymap.{binding}: expected keys as a string, got {keys!r}"
        return None
    annotation = Settings.model_fields[name].annotation
    kind = {bool: "bool", int: "int", float: "float", str: "str"}.get(annotation)  # type: ignore[arg-type]
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
        settings = Settings(**values)
    except ValidationError as error:
        raise SettingsError(_one_line(error, provenance)) from None
    for name in Settings.model_fields:
        provenance.setdefault(name, Provenance("default", None))
    return ResolvedSettings(settings, provenance, path, path.is_file())


def _one_line(error: ValidationError, provenance: Mapping[str, Provenance]) -> str:
    first = error.errors()[0]
    name = str(first["loc"][0]) if first["loc"] else "?"
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
