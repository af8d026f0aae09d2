"""Model pulls started from the TUI: they run as app workers, so closing the models screen
or chatting on never stops them, and any screen may watch their progress.

One pull per model name at a time. Each progress record updates the pull's `PullState` and
is handed to the watchers (the models screen, while it is open); the end is a toast and a
fresh Ollama check (so a "not pulled" line disappears). Nothing here touches a widget.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from agent.model_changes import PullProgress
    from tui.app import StraylightApp

log = logging.getLogger("straylight.tui")

Watcher = Callable[["PullState"], None]


@dataclass(frozen=True, slots=True)
class PullState:
    """Where one pull is: Ollama's last status, its layer's bytes, and how it ended."""

    name: str
    status: str = "starting"
    completed: int = 0
    total: int = 0
    done: bool = False
    error: str | None = None

    @property
    def fraction(self) -> float | None:
        """The current layer's share done (0…1); None while a status has no byte count."""
        return min(1.0, self.completed / self.total) if self.total else None

    def line(self) -> str:
        """One line for the screen: `llava: pulling 6a0746a1ec1a 42 % (1.9 / 4.7 GB)`."""
        from tui.cli_models import human_bytes

        if self.error:
            return f"{self.name}: pull failed: {self.error}"
        if self.done:
            return f"{self.name}: pulled"
        text = f"{self.name}: {self.status}"
        if self.total:
            percent = 100 * self.completed // self.total
            text += f" {percent} % ({human_bytes(self.completed)} / {human_bytes(self.total)})"
        return text


class ModelPulls:
    """The TUI's pulls by model name, and who watches them."""

    def __init__(self) -> None:
        self.states: dict[str, PullState] = {}
        self._watchers: list[Watcher] = []

    def running(self) -> list[PullState]:
        return [state for state in self.states.values() if not state.done]

    def watch(self, watcher: Watcher) -> None:
        self._watchers.append(watcher)

    def unwatch(self, watcher: Watcher) -> None:
        if watcher in self._watchers:
            self._watchers.remove(watcher)

    def _publish(self, state: PullState) -> None:
        self.states[state.name] = state
        for watcher in list(self._watchers):
            watcher(state)

    def start(self, app: StraylightApp, name: str) -> bool:
        """Pull `name` in an app worker; False when that model is already being pulled."""
        current = self.states.get(name)
        if current is not None and not current.done:
            return False
        self._publish(PullState(name))
        app.run_worker(
            self._pull(app, name), group="model-pull", exclusive=False, exit_on_error=False
        )
        return True

    async def _pull(self, app: StraylightApp, name: str) -> None:
        from agent.gateway_errors import GatewayError
        from agent.model_changes import pull_model

        state = self.states[name]
        try:
            async for progress in pull_model(app.gateway.client(), name):
                state = _advanced(state, progress)
                self._publish(state)
        except GatewayError as error:
            log.info("pull of %s failed: %s", name, error)
            self._publish(replace(state, done=True, error=str(error)))
            app.notify(f"Pull of {name} failed: {error}", severity="error", timeout=10)
            return
        except Exception as error:  # named on screen, detailed in the log
            log.exception("pull of %s failed", name)
            self._publish(replace(state, done=True, error=f"{type(error).__name__}: {error}"))
            return
        self._publish(replace(state, status="success", done=True))
        app.notify(f"Pulled {name}.", timeout=6)
        app.chat.check_status()  # the model lists and "not pulled" lines follow


def _advanced(state: PullState, progress: PullProgress) -> PullState:
    if progress.total:
        return replace(
            state,
            status=progress.status,
            completed=progress.completed or 0,
            total=progress.total,
        )
    return replace(state, status=progress.status, completed=0, total=0)
