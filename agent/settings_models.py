"""What the settings are: `Settings`, nested by area, and where each flat name lives in it.

`settings.ollama` (`OllamaConfig`) and `settings.jobs` (`JobsConfig`) are defined here;
`settings.memory` and `settings.facts` come from `memory/settings_models.py`, next to the
modules that take them. The user-facing names stay flat (`memory_top_k`, `MEMORY_TOP_K`):
`SETTING_PATHS` maps each onto its field, for the loader (`agent/settings.py`) and for
`straylight config`.
"""

from __future__ import annotations

import os
import stat
import urllib.parse
from collections.abc import Mapping, Sequence
from datetime import datetime
from functools import reduce
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from agent.model_options import check_model_options, parse_keep_alive
from agent.ollama_host import invalid_ipv4, parse_ollama_host
from agent.workspace import check_workspace_name
from memory.settings_models import FactsConfig, MemoryConfig, SettingsArea, named_model
from store.clock import Clock, parse_instant

APP_NAME = "straylight"
DEFAULT_OLLAMA_HOST = "http://127.0.0.1:11434"

ThinkLevel = Literal["low", "medium", "high"]
Think = bool | ThinkLevel
THINK_CHOICES = ("true", "false", "low", "medium", "high")


def parse_think(value: object) -> object:
    """`think` from a flag, the environment, config.toml or `/think`: true/false (any case)
    become booleans, an empty string is unset, levels stay as they are."""
    if isinstance(value, str):
        text = value.strip().lower()
        if not text:
            return None
        if text in ("true", "false"):
            return text == "true"
        if text in THINK_CHOICES:
            return text
        raise ValueError(f"expected one of {', '.join(THINK_CHOICES)}, got {value!r}")
    return value


def check_home(path: Path, given: str) -> Path:
    """A data dir path Straylight can use, or a ValueError saying why not: an empty one
    (`--home ""` would silently be the current directory), one that is not valid UTF-8
    (DuckDB and usearch cannot open it) or one that names something other than a directory,
    or lies below one (`STRAYLIGHT_HOME=/dev/null`, `/dev/null/x`), or that cannot be looked
    at (a link that loops, a folder on the way this user may not enter)."""
    if not given.strip():
        raise ValueError("the data dir must not be empty")
    try:
        str(path).encode("utf-8")
    except UnicodeEncodeError:
        raise ValueError("the data dir path is not valid UTF-8") from None
    for part in (path, *path.parents):  # the nearest one that exists must be a directory
        try:
            is_dir = stat.S_ISDIR(part.stat().st_mode)
        except (FileNotFoundError, NotADirectoryError):
            continue
        except OSError as error:  # (`exists()` said False to a loop, the check then failed)
            raise ValueError(f"{part} cannot be used: {error.strerror or error}") from None
        if not is_dir:
            raise ValueError(f"{part} exists and is not a directory")
        break
    return path


def default_home() -> Path:
    import platformdirs

    return Path(platformdirs.user_data_dir(APP_NAME, appauthor=False))


class OllamaConfig(SettingsArea):
    """Where the models run and how long a call may take (`settings.ollama`)."""

    host: str = DEFAULT_OLLAMA_HOST
    """Where Ollama listens, parsed like the ollama client parses OLLAMA_HOST. Key
    `ollama_host`."""
    model: str = "llama3.2"
    """Chat model at start (`/model` switches it in the TUI); the reflection and the dream
    use it too. Key `model`."""
    http_timeout_seconds: float = Field(default=300.0, gt=0)
    """Read timeout (seconds) of model calls: the slowest legitimate call decides (LESSONS
    §8). Key `http_timeout_seconds`."""
    connect_timeout_seconds: float = Field(default=5.0, gt=0)
    """Connect timeout (seconds) of model calls: a dead host is named quickly. Key
    `connect_timeout_seconds`."""
    reply_max_chars: int = Field(default=200_000, ge=1)
    """Characters one reply may have, its thinking included: an endless stream is stopped
    there, named, and what arrived is kept, marked cut off. Key `reply_max_chars`."""
    reply_max_seconds: float = Field(default=1800.0, gt=0)
    """Seconds one reply may stream (a turn's chat requests added up; a wait for the user's
    approval of a tool call does not count); then it is stopped like `reply_max_chars`. Key
    `reply_max_seconds`."""
    think: Think | None = None
    """Whether a thinking model thinks before it answers: true, false, or a level (low,
    medium, high). Unset (the default) sends nothing and lets the model decide (most think);
    sent only to models whose capabilities contain `thinking`. Key `think`."""
    keep_alive: str | int | float | None = None
    """How long Ollama keeps the model loaded after a request: seconds or a duration ("5m",
    "1h"); negative keeps it loaded, 0 unloads it. Unset: Ollama's own default (5 minutes).
    Key `keep_alive`."""
    model_options: dict[str, Any] = Field(default_factory=dict)
    """config.toml `[model_options]`: Ollama options (temperature, top_p, top_k, min_p, seed,
    num_predict, repeat_penalty, repeat_last_n, stop, …) for every chat model, and per model
    in `[model_options."qwen3:8b"]`; sent with every chat request. Not num_ctx (the context
    budget owns it). Key `model_options`."""
    num_ctx: int | None = Field(default=None, ge=512, le=1 << 24)
    """Context window (tokens) sent as `options.num_ctx` on every chat request, and the
    window the prompt is budgeted against. Unset: the model's Modelfile `num_ctx`, else its
    trained maximum capped at 16,384 (docs/context_budget.md says why); at most 16,777,216
    (more than any model holds: a typo is not sent on to Ollama). Key `num_ctx`."""

    @field_validator("host", mode="before")
    @classmethod
    def _parse_host(cls, value: object) -> object:
        if not (isinstance(value, str) or value is None):
            return value
        parsed = parse_ollama_host(value)
        if parsed.partition("://")[0].lower() not in ("http", "https"):  # `htp://…`: httpx
            # cannot speak it, and each request would fail as "closed the connection"
            raise ValueError("expected an http:// or https:// address")
        hostname = urllib.parse.urlsplit(parsed).hostname or ""
        if invalid_ipv4(hostname):
            raise ValueError(f"{hostname} is not an IPv4 address (each number 0-255)")
        return parsed

    @field_validator("think", mode="before")
    @classmethod
    def _parse_think(cls, value: object) -> object:
        return parse_think(value)

    @field_validator("model", mode="before")
    @classmethod
    def _model_named(cls, value: object) -> object:
        return named_model(value, "the chat model")

    @field_validator("keep_alive", mode="before")
    @classmethod
    def _parse_keep_alive(cls, value: object) -> object:
        return parse_keep_alive(value)

    @field_validator("model_options", mode="before")
    @classmethod
    def _check_model_options(cls, value: object) -> object:
        return check_model_options(value)


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
    theme: str | None = None
    """The Textual theme of the TUI (e.g. `nord`, `gruvbox`); choosing one in the command
    palette writes it here. Unset: Textual's default. Key `theme`."""

    mcp_doc_roots: list[Path] = Field(default_factory=list)
    """Folders `straylight mcp`'s `memory_load_doc` may read besides the workspace (the git
    root of the current directory, else the directory): a list in config.toml, paths joined
    by the OS path separator (`:`) in the environment. Key `mcp_doc_roots`."""

    @field_validator("mcp_doc_roots", mode="before")
    @classmethod
    def _split_doc_roots(cls, value: object) -> object:
        if isinstance(value, str):  # the environment: `dir1:dir2`
            value = [part for part in value.split(os.pathsep) if part.strip()]
        if isinstance(value, list | tuple):
            return [
                Path(os.path.expanduser(str(p))).absolute() if isinstance(p, str | Path) else p
                for p in value
            ]
        return value

    @field_validator("workspace", mode="before")
    @classmethod
    def _check_workspace(cls, value: object) -> object:
        return check_workspace_name(value) if isinstance(value, str) else value

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
            return check_home(Path(os.path.expanduser(str(value))).absolute(), str(value))
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
    "reply_max_chars": ("ollama", "reply_max_chars"),
    "reply_max_seconds": ("ollama", "reply_max_seconds"),
    "think": ("ollama", "think"),
    "keep_alive": ("ollama", "keep_alive"),
    "model_options": ("ollama", "model_options"),
    "num_ctx": ("ollama", "num_ctx"),
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
    "memory_tool_calls_per_round": ("facts", "tool_calls_per_round"),
    "memory_tool_calls_per_turn": ("facts", "tool_calls_per_turn"),
    "memory_reflection": ("facts", "reflection"),
    "memory_reflection_idle_minutes": ("facts", "reflection_idle_minutes"),
    "jobs_enabled": ("jobs", "enabled"),
    "jobs_dream_hour": ("jobs", "dream_hour"),
    "jobs_binding_limit_days": ("jobs", "binding_limit_days"),
    "keymap": ("keymap",),
    "workspace": ("workspace",),
    "mcp_doc_roots": ("mcp_doc_roots",),
    "theme": ("theme",),
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
    """The input of `Settings` for values given by flat name (mirrors included); an unknown
    name stays at the top, where validation rejects it by that name."""
    nested: dict[str, Any] = {}
    for name, value in flat.items():
        path = SETTING_PATHS.get(name, (name,))
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


def field_annotation(path: FieldPath) -> object:
    """The type annotation of the field of `Settings` at `path`."""
    fields = Settings.model_fields
    for part in path[:-1]:
        area = fields[part].annotation
        assert isinstance(area, type) and issubclass(area, BaseModel)
        fields = area.model_fields
    return fields[path[-1]].annotation
