"""Which conversation the chat has open, per data dir, for commands run inside the TUI.

Commands from other clients run in the TUI's process (tui/owner_server.py). `conversations
delete` must not remove the conversation the chat is in — the conversations screen refuses
it too — since its messages would vanish under the chat, which goes on writing to that id.
The app registers how to read its current conversation while it serves; the command asks.
No Textual here: the CLI imports this module.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from pathlib import Path

_current: dict[str, Callable[[], str | None]] = {}  # real path of a data dir -> reader
_guard = threading.Lock()


def register(home: Path, current: Callable[[], str | None]) -> None:
    with _guard:
        _current[os.path.realpath(home)] = current


def unregister(home: Path) -> None:
    with _guard:
        _current.pop(os.path.realpath(home), None)


def open_conversation(home: Path) -> str | None:
    """The id of the conversation the chat of this process has open on `home`, if any."""
    with _guard:
        current = _current.get(os.path.realpath(home))
    return current() if current is not None else None
