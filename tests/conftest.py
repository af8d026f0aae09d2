"""Shared fixtures: a data dir in tmp, a running Ollama stand-in, settings that point at both."""

from __future__ import annotations

import os
import time
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any

import ollama
import pytest
import pytest_asyncio
from hypothesis import HealthCheck
from hypothesis import settings as hypothesis_settings

from agent.settings import Settings, load_settings
from store.database import database_path
from tests.support.cli import cli_env as user_env
from tests.support.ollama_standin import OllamaStandIn

FIXED_NOW = "2026-11-29T21:04:38Z"

# `just fuzz` runs the property tests with HYPOTHESIS_PROFILE=fuzz: many more examples, no
# time limit per example. `just test` uses hypothesis' defaults (or each test's own).
hypothesis_settings.register_profile(
    "fuzz", max_examples=20_000, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
hypothesis_settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "default"))


@pytest.fixture(autouse=True)
def _hermetic_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """No test reads the developer's config, data dir or Ollama."""
    for name in list(os.environ):
        if name.startswith(("STRAYLIGHT_", "MEMORY_")) or name == "OLLAMA_HOST":
            monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg-config"))
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg-data"))
    monkeypatch.setenv("TZ", "UTC")
    time.tzset()


@pytest.fixture(autouse=True)
def _umask_put_back() -> Iterator[None]:
    """Opening a database for writing narrows the process's umask for good
    (`store.private_files.keep_new_files_private`); no test leaves that to the next one:
    each starts with the umask the session started with (a thread a test left behind may
    have opened a database after that test ended)."""
    os.umask(_SESSION_UMASK)
    yield
    os.umask(_SESSION_UMASK)


_SESSION_UMASK = os.umask(0o022)
os.umask(_SESSION_UMASK)


@pytest.fixture
def home(tmp_path: Path) -> Path:
    return tmp_path / "home"


@pytest.fixture
def db_file(home: Path) -> Path:
    """The database file of the tmp data dir (not created)."""
    return database_path(home)


@pytest.fixture
def standin() -> Iterator[OllamaStandIn]:
    with OllamaStandIn() as server:
        yield server


@pytest.fixture
def make_settings(home: Path) -> Callable[..., Settings]:
    """Settings for a test: the tmp data dir plus any overrides (e.g. ollama_host)."""

    def make(**overrides: Any) -> Settings:
        flags: dict[str, Any] = {"home": str(home), "workspace": "demo"}
        flags.update(overrides)
        return load_settings(flags=flags, environ={}).settings

    return make


@pytest.fixture
def settings(make_settings: Callable[..., Settings], standin: OllamaStandIn) -> Settings:
    return make_settings(ollama_host=standin.host)


@pytest.fixture
def cli_env(home: Path, tmp_path: Path) -> Callable[..., dict[str, str]]:
    """The environment of a `straylight` run (in-process or a subprocess): the tmp data
    dir and config dir, plus any variables given."""

    def make(**extra: str) -> dict[str, str]:
        return user_env(home, tmp_path, **extra)

    return make


@pytest_asyncio.fixture
async def client(srv: OllamaStandIn) -> AsyncIterator[ollama.AsyncClient]:
    """The real `ollama` client talking HTTP to the module's stand-in (its `srv` fixture)."""
    async_client = ollama.AsyncClient(host=srv.url)
    yield async_client
    await async_client.close()
