"""The chat comes first: a starting TUI asks an owner that is not a chat to hand it the data dir.

`straylight mcp` keeps the data dir once its first tool call took it (its memory stays open
for the next call). Registered in Claude Code or Zed, it runs for as long as the agent does,
so without a handover the chat would be refused (`… is in use by PID n`, exit 6) for hours,
though that owner serves, which the exit code 6 does not stand for. Instead the TUI, finding
the lock held, sends `{"handover": true, "home": …}` over the owner's socket. An owner that
can give the data dir up (`CommandRunner`) says `{"handover": true}`, lets the commands it
runs end, stops serving and releases the lock, and from then on forwards its tools to the
TUI; every other owner (another TUI, a running `ask`) says `{"handover": false}` and the TUI
is refused as before.
"""

from __future__ import annotations

import logging
import time
from pathlib import Path

from store.data_dir_lock import DataDirLock, DataDirLocked

log = logging.getLogger("straylight.owner")

HANDOVER_SECONDS = 15.0
"""How long a TUI waits for the lock after the owner agreed: the owner's commands running at
that moment end first (a `memory_load_doc` of a long file, a `memory_search` embedding)."""
_ANSWER_SECONDS = 3.0
_RETRY_PAUSE = 0.1


def handover_frame(home: Path) -> dict[str, object]:
    return {"handover": True, "home": str(home)}


def ask_handover(home: Path) -> bool:
    """Whether the owner of `home` agreed to hand it over (False when nobody answers)."""
    from store.owner_socket import FrameReader, OwnerSocketError, connect, send_frame

    try:
        sock = connect(home)
    except OSError:
        return False
    try:
        sock.settimeout(_ANSWER_SECONDS)
        send_frame(sock, handover_frame(home))
        answer = FrameReader(sock).read()
    except (OSError, OwnerSocketError):
        return False
    finally:
        sock.close()
    return answer is not None and answer.get("handover") is True


def lock_for_chat(home: Path) -> DataDirLock:
    """The data-dir lock for the TUI: taken, or handed over by an owner that may give it up;
    `DataDirLocked` when another chat (or a running command) holds it."""
    try:
        return DataDirLock(home).acquire()
    except DataDirLocked:
        if not ask_handover(home):
            raise
    log.info("the owner of %s hands it over to the chat", home)
    deadline = time.monotonic() + HANDOVER_SECONDS
    while True:
        try:
            return DataDirLock(home).acquire()
        except DataDirLocked:
            if time.monotonic() >= deadline:
                raise
        time.sleep(_RETRY_PAUSE)
        # another `straylight mcp` may have taken the dir in the gap: ask it too
        ask_handover(home)
