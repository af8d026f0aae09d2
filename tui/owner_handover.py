"""The chat comes first: a starting TUI asks an owner that is not a chat to hand it the data dir.

`straylight mcp` keeps the data dir once its first tool call took it (its memory stays open
for the next call). Registered in Claude Code or Zed, it runs for as long as the agent does,
so without a handover the chat would be refused (`… is in use by PID n`, exit 6) for hours,
though that owner serves, which the exit code 6 does not stand for. Instead the TUI, finding
the lock held, sends `{"handover": true, "home": …}` over the owner's socket. An owner that
can give the data dir up (`CommandRunner`) says `{"handover": true}`, lets the commands it
runs end, stops serving and releases the lock, and from then on forwards its tools to the
TUI; every other owner (another TUI, a running `ask`) says `{"handover": false}` and the TUI
is refused as before. A lock held with no socket answering (`straylight mcp` opening its
memory at its first call: seconds for an old store's upgrade) is asked again for
`HANDOVER_SECONDS`. An owner that would agree but is running another client's command at
that moment (a second agent's server forwards its calls to the first) says
`{"handover": false, "busy": true}`: the TUI asks again for `BUSY_SECONDS`, as a CLI client
retries an owner that is starting.
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Callable
from pathlib import Path
from typing import Literal

from store.data_dir_lock import DataDirLock, DataDirLocked

log = logging.getLogger("straylight.owner")

HANDOVER_SECONDS = 15.0
"""How long a TUI waits for the lock after the owner agreed: the owner's commands running at
that moment end first (a `memory_load_doc` of a long file, a `memory_search` embedding)."""
BUSY_SECONDS = 3.0
"""How long a TUI asks again an owner that is running another client's command (an MCP call
ends in well under a second; a streaming `ask` may not, and the chat is then refused)."""
WAIT_NOTICE_SECONDS = 1.0
"""After this long waiting for the data dir, the starting TUI says so (`on_wait`)."""
_ANSWER_SECONDS = 3.0
_RETRY_PAUSE = 0.1


def handover_frame(home: Path) -> dict[str, object]:
    return {"handover": True, "home": str(home)}


Answer = Literal["agreed", "busy", "ending", "absent", "refused"]


def ask_handover(home: Path) -> bool:
    """Whether the owner of `home` agreed to hand it over (False when nobody answers)."""
    return handover_answer(home) == "agreed"


def handover_answer(home: Path) -> Answer:
    """What the owner of `home` says to a handover: agreed, busy (running another client's
    command; ask again), ending (a one-shot command such as `remember` that lets go when it
    ends), absent (no socket answers: an owner that is still opening its memory, or
    ending), or refused."""
    from store.owner_socket import FrameReader, OwnerSocketError, connect, send_frame

    try:
        sock = connect(home)
    except OSError:
        return "absent"
    except OwnerSocketError:  # another user's process (PeerRefused): never handed to
        return "refused"
    try:
        sock.settimeout(_ANSWER_SECONDS)
        send_frame(sock, handover_frame(home))
        answer = FrameReader(sock).read()
    except (OSError, OwnerSocketError):
        return "refused"
    finally:
        sock.close()
    if answer is None:
        return "refused"
    if answer.get("handover") is True:
        return "agreed"
    if answer.get("busy") is True:
        return "busy"
    return "ending" if answer.get("ends") is True else "refused"


def lock_for_chat(home: Path, on_wait: Callable[[], None] | None = None) -> DataDirLock:
    """The data-dir lock for the TUI: taken, or handed over by an owner that may give it up;
    `DataDirLocked` when another chat (or a running command) holds it. `on_wait` is called
    once when that takes longer than `WAIT_NOTICE_SECONDS` (the owner finishes a long call
    first — a `memory_load_doc` — and nothing is on the screen meanwhile)."""
    started = time.monotonic()

    def pause() -> None:
        nonlocal on_wait
        time.sleep(_RETRY_PAUSE)
        if on_wait is not None and time.monotonic() - started > WAIT_NOTICE_SECONDS:
            notice, on_wait = on_wait, None
            notice()

    try:
        return DataDirLock(home).acquire()
    except DataDirLocked:
        answer = handover_answer(home)
        busy_until = time.monotonic() + BUSY_SECONDS
        absent_until = started + HANDOVER_SECONDS
        while (answer == "busy" and time.monotonic() < busy_until) or (
            answer in ("absent", "ending") and time.monotonic() < absent_until
        ):  # (a `remember` that held the dir at the chat's start: it ended a moment later)
            pause()
            with contextlib.suppress(DataDirLocked):  # the owner may have quit meanwhile
                return DataDirLock(home).acquire()
            answer = handover_answer(home)
        if answer != "agreed":
            raise
    log.info("the owner of %s hands it over to the chat", home)
    deadline = time.monotonic() + HANDOVER_SECONDS
    while True:
        try:
            return DataDirLock(home).acquire()
        except DataDirLocked:
            if time.monotonic() >= deadline:
                raise
        pause()
        # another `straylight mcp` may have taken the dir in the gap: ask it too
        ask_handover(home)
