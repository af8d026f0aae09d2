"""The owner's socket, `<data dir>/straylight.sock`: the bytes of "one owner, many clients".

The process that holds the data-dir lock listens here; every other Straylight process
connects. This module owns only the bytes: binding (mode 0600, appearing atomically under its
name only once it listens, a stale socket replaced — the caller holds the flock — but
never anything else planted there), connecting,
checking that the peer runs as the same user (SO_PEERCRED on Linux, LOCAL_PEERCRED on macOS;
another user is refused), and the framing: one JSON object per line, UTF-8. What the frames
mean is tui/owner_server.py's and tui/owner_client.py's business (docs/owner-socket.md).
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import struct
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from store.data_dir_check import check_socket_path
from store.private_files import FILE_MODE

SOCKET_FILENAME = "straylight.sock"
MAX_FRAME_BYTES = 64 * 2**20  # a request carries stdin (a document piped to `remember -`)
_TEMP_SUFFIX = ".tmp"
_SUN_PATH_MAX = 104 if sys.platform == "darwin" else 108  # bytes, with the trailing NUL
_MAC_LOCAL_PEERCRED = 0x001  # <sys/un.h>: SOL_LOCAL (0), LOCAL_PEERCRED, LOCAL_PEERPID
_MAC_LOCAL_PEERPID = 0x002


class OwnerSocketError(Exception):
    """The socket cannot be used (a foreign peer, a broken frame); `str()` is one line."""


class PeerRefused(OwnerSocketError):
    """The other end runs as another user (or its user cannot be checked here)."""


def socket_path(home: Path) -> Path:
    return home / SOCKET_FILENAME


def peer_identity(sock: socket.socket) -> tuple[int | None, int]:
    """(pid or None, uid) of the process at the other end of a connected Unix socket."""
    if sys.platform.startswith("linux"):
        size = struct.calcsize("3i")
        pid, uid, _gid = struct.unpack("3i", sock.getsockopt(socket.SOL_SOCKET, 17, size))
        return pid, uid  # 17 = SO_PEERCRED
    if sys.platform == "darwin":
        raw = sock.getsockopt(0, _MAC_LOCAL_PEERCRED, 76)  # struct xucred
        _version, uid = struct.unpack_from("=II", raw)
        pid = struct.unpack("i", sock.getsockopt(0, _MAC_LOCAL_PEERPID, 4))[0]
        return pid, uid
    raise PeerRefused(f"cannot check a socket peer's user on {sys.platform}")


def check_peer(sock: socket.socket) -> int | None:
    """The peer's pid; `PeerRefused` unless it runs as this process's user."""
    pid, uid = peer_identity(sock)
    if uid != os.getuid():
        raise PeerRefused(f"refused a peer running as uid {uid} (PID {pid})")
    return pid


@contextlib.contextmanager
def _short_address(path: Path) -> Iterator[str]:
    """`path` as an AF_UNIX address. A path longer than sun_path (deep temp dirs) goes
    through an open descriptor of its folder on Linux (`/proc/self/fd/N/name`)."""
    if len(os.fsencode(path)) < _SUN_PATH_MAX:
        yield str(path)
        return
    if not os.path.isdir("/proc/self/fd"):
        raise OwnerSocketError(f"the socket path {path} is too long for this system")
    fd = os.open(path.parent, os.O_RDONLY | os.O_DIRECTORY)
    try:
        yield f"/proc/self/fd/{fd}/{path.name}"
    finally:
        os.close(fd)


class Listener:
    """The owner's listening socket. `Listener.bind(home)` only while holding the flock."""

    def __init__(self, sock: socket.socket, path: Path, inode: int) -> None:
        self.sock = sock
        self.path = path
        self._inode = inode

    @classmethod
    def bind(cls, home: Path, backlog: int = 64) -> Listener:
        """Listen at `<home>/straylight.sock`, replacing a stale one (its owner is gone: we
        hold the lock); a link, file, folder or FIFO there is refused (`SymlinkRefused`,
        `NotASocket`: store/data_dir_check.py), never replaced. Bound under a temporary
        name, made 0600, listening, then renamed, so a client never finds the name before it
        answers, nor with a wider mode."""
        path = socket_path(home)
        for stale in home.glob(f"{SOCKET_FILENAME}.*{_TEMP_SUFFIX}"):
            with contextlib.suppress(OSError):
                stale.unlink()
        temp = home / f"{SOCKET_FILENAME}.{os.getpid()}{_TEMP_SUFFIX}"
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            with _short_address(temp) as address:
                sock.bind(address)
            os.chmod(temp, FILE_MODE)
            sock.listen(backlog)
            check_socket_path(path)  # a stale socket is replaced; anything else is refused
            os.rename(temp, path)
            inode = os.stat(path, follow_symlinks=False).st_ino
        except BaseException:
            sock.close()
            with contextlib.suppress(OSError):
                temp.unlink()
            raise
        return cls(sock, path, inode)

    def fileno(self) -> int:
        return self.sock.fileno()

    def accept(self) -> socket.socket:
        conn, _address = self.sock.accept()
        conn.setblocking(True)
        return conn

    def close(self) -> None:
        """Stop listening and remove the name (only if it is still ours)."""
        self.sock.close()
        with contextlib.suppress(OSError):
            if os.stat(self.path, follow_symlinks=False).st_ino == self._inode:
                self.path.unlink()


def connect(home: Path, timeout: float = 2.0) -> socket.socket:
    """A connection to the owner of `home`, checked to be this user's.

    `FileNotFoundError` / `ConnectionRefusedError` (OSErrors) when nobody listens."""
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.settimeout(timeout)
        with _short_address(socket_path(home)) as address:
            sock.connect(address)
        sock.settimeout(None)
        check_peer(sock)
    except BaseException:
        sock.close()
        raise
    return sock


def encode_frame(frame: dict[str, Any]) -> bytes:
    """One JSON object and a newline (ASCII: lone surrogates travel escaped)."""
    return json.dumps(frame).encode("ascii") + b"\n"


def send_frame(sock: socket.socket, frame: dict[str, Any]) -> None:
    sock.sendall(encode_frame(frame))


class FrameReader:
    """Reads the frames of one connection: `read()` → a dict, or None at the end."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self._buffer = bytearray()

    def read(self) -> dict[str, Any] | None:
        while True:
            end = self._buffer.find(b"\n")
            if end >= 0:
                line = bytes(self._buffer[:end])
                del self._buffer[: end + 1]
                return _decode(line)
            if len(self._buffer) > MAX_FRAME_BYTES:
                raise OwnerSocketError("a frame larger than the limit")
            chunk = self.sock.recv(1 << 16)
            if not chunk:
                if self._buffer:
                    raise OwnerSocketError("the connection ended inside a frame")
                return None
            self._buffer += chunk


def _decode(line: bytes) -> dict[str, Any]:
    try:
        frame = json.loads(line)
    except (ValueError, RecursionError):
        raise OwnerSocketError("a frame that is not JSON") from None
    if not isinstance(frame, dict):
        raise OwnerSocketError("a frame that is not a JSON object")
    return frame
