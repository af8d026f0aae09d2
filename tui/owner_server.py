"""The owner serves its data dir: other processes' commands, run here, over the socket.

Whichever process holds the data-dir lock serves while it holds it (the TUI once its memory
is open, a CLI command for as long as it runs, `CommandRunner` for as long as it lives).
A connection carries one command: the client sends a `CommandRequest` frame; the owner
answers `{"owner": pid}` once it has taken the command, then `{"out": text}` / `{"err": text}`
as the command prints, and `{"exit": code}` at the end. A client that closes the connection
before that cancels the command (tui/owner_run.py). Stopping stops taking commands at once
(clients then wait for the lock and run the command themselves), lets the running ones
finish for `grace_seconds`, then cancels them. The protocol and its reasons:
docs/owner-socket.md.
"""

from __future__ import annotations

import contextlib
import logging
import os
import selectors
import socket
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from store.data_dir_lock import mark_brief
from store.owner_socket import (
    FrameReader,
    Listener,
    OwnerSocketError,
    PeerRefused,
    check_peer,
    send_frame,
)
from tui import owner_streams
from tui.owner_request import BadRequest, CommandRequest
from tui.owner_run import OWNER_ENDING, CommandRun

log = logging.getLogger("straylight.owner")

FinishedFn = Callable[[Sequence[str], int], None]
"""Told after each command run for a client: its argv and exit code (in a server thread)."""
HandoverFn = Callable[[], bool]
"""A starting TUI asks for the data dir: True when this owner will release it (it must not
block: the release happens after the answer; tui/owner_handover.py)."""

REQUEST_SECONDS = 10.0  # a client sends its request at once; a silent one is dropped
GRACE_SECONDS = 10.0
EXIT_USAGE = 2


_served: set[str] = set()  # real paths of the data dirs this process serves
_served_guard = threading.Lock()


def serving(home: Path) -> bool:
    """Whether this process serves `home` (other processes' commands may run here)."""
    with _served_guard:
        return os.path.realpath(home) in _served


class OwnerServer:
    """`OwnerServer(home).start()` … `.stop()`; the caller holds the data-dir lock."""

    def __init__(
        self,
        home: Path,
        *,
        on_finished: FinishedFn | None = None,
        on_handover: HandoverFn | None = None,
        grace_seconds: float = GRACE_SECONDS,
        one_shot: bool = False,
    ) -> None:
        self.home = home
        self.on_finished = on_finished
        self.on_handover = on_handover
        self.one_shot = one_shot  # a command that ends by itself (`remember`), not a chat
        self.grace_seconds = grace_seconds
        self._listener: Listener | None = None
        self._wake_r, self._wake_w = socket.socketpair()
        self._stopping = threading.Event()
        self._accepting: threading.Thread | None = None
        self._connections: set[threading.Thread] = set()
        self._runs: set[CommandRun] = set()
        self._guard = threading.Lock()

    @classmethod
    def start_soft(
        cls,
        home: Path,
        on_finished: FinishedFn | None = None,
        on_handover: HandoverFn | None = None,
        *,
        one_shot: bool = False,
    ) -> OwnerServer | None:
        """Start serving, or log why not and return None (the others then wait for the lock)."""
        server = cls(home, on_finished=on_finished, on_handover=on_handover, one_shot=one_shot)
        try:
            return server.start()
        except Exception:
            log.exception("cannot serve the data dir %s", home)
            server.stop()
            return None

    @property
    def path(self) -> Path | None:
        return self._listener.path if self._listener is not None else None

    def start(self) -> OwnerServer:
        self._listener = Listener.bind(self.home)
        owner_streams.install()
        with _served_guard:
            _served.add(os.path.realpath(self.home))
        self._accepting = threading.Thread(target=self._accept_loop, name="owner-accept")
        self._accepting.daemon = True
        self._accepting.start()
        log.info("serving %s at %s", self.home, self._listener.path)
        return self

    def stop(self) -> None:
        """Stop taking commands; let the running ones end (then cancel them); clean up."""
        if self._stopping.is_set():
            return
        self._stopping.set()
        with contextlib.suppress(OSError):
            self._wake_w.send(b"x")
        if self._accepting is not None:
            self._accepting.join()
        if self._listener is not None:
            self._listener.close()
            mark_brief(self.home)  # a command arriving now waits for the release
        with self._guard:
            connections = list(self._connections)
        deadline = time.monotonic() + self.grace_seconds
        for thread in connections:
            thread.join(max(0.0, deadline - time.monotonic()))
        with self._guard:
            runs = list(self._runs)
        for run in runs:
            run.cancel(OWNER_ENDING)
        for thread in connections:
            thread.join()
        self._wake_r.close()
        self._wake_w.close()
        if self._listener is not None:
            self._listener = None
            owner_streams.uninstall()
            with _served_guard:
                _served.discard(os.path.realpath(self.home))

    # ---- the accept loop and one connection ---------------------------------------------
    def _accept_loop(self) -> None:
        assert self._listener is not None
        with selectors.DefaultSelector() as selector:
            selector.register(self._listener.sock, selectors.EVENT_READ)
            selector.register(self._wake_r, selectors.EVENT_READ)
            while not self._stopping.is_set():
                ready = [key.fileobj for key, _ in selector.select()]
                if self._stopping.is_set():
                    return
                if self._listener.sock in ready:
                    try:
                        conn = self._listener.accept()
                    except OSError:
                        continue
                    thread = threading.Thread(
                        target=self._serve, args=(conn,), name="owner-connection", daemon=True
                    )
                    with self._guard:
                        self._connections.add(thread)
                    thread.start()

    def _answer_handover(self, conn: socket.socket, frame: dict[str, object]) -> None:
        """`{"handover": true}` when this owner gives the data dir up, else false: never while
        it runs a client's command (a streaming `ask` would be cut at the grace period) — then
        with `"busy": true`, so the chat asks again once it has ended (tui/owner_handover.py)."""
        same_dir = isinstance(frame.get("home"), str) and os.path.realpath(
            str(frame["home"])
        ) == os.path.realpath(self.home)
        with self._guard:
            busy = bool(self._runs)
        agreed = False
        if same_dir and not busy and self.on_handover is not None:
            try:
                agreed = self.on_handover()
            except Exception:
                log.exception("the handover hook failed")
        answer: dict[str, object] = {"handover": agreed}
        if same_dir and busy and self.on_handover is not None:
            answer["busy"] = True
        if same_dir and self.one_shot:  # it lets go when its command ends: worth waiting for
            answer["ends"] = True
        with contextlib.suppress(OSError):
            send_frame(conn, answer)

    def _serve(self, conn: socket.socket) -> None:
        try:
            self._serve_connection(conn)
        except Exception:
            log.exception("serving a connection failed")
        finally:
            conn.close()
            with self._guard:
                self._connections.discard(threading.current_thread())

    def _serve_connection(self, conn: socket.socket) -> None:
        try:
            pid = check_peer(conn)
            conn.settimeout(REQUEST_SECONDS)
            frame = FrameReader(conn).read()
            conn.settimeout(None)
        except PeerRefused as refused:
            log.warning("%s", refused)
            return
        except (OSError, OwnerSocketError) as error:
            log.info("a client left before its request: %s", error)
            return
        if frame is None or self._stopping.is_set():
            return  # closed without `owner`: the client runs the command itself
        if frame.get("handover") is True:  # a starting TUI (tui/owner_handover.py)
            self._answer_handover(conn, frame)
            return
        lock = threading.Lock()

        def send(frame: dict[str, object]) -> None:
            with lock:
                send_frame(conn, frame)

        try:
            send({"owner": os.getpid()})
            request = CommandRequest.from_frame(frame)
            if os.path.realpath(request.home) != os.path.realpath(self.home):
                raise BadRequest(f"this process serves {self.home}, not {request.home}")
        except BadRequest as error:
            with contextlib.suppress(OSError):
                send({"err": f"straylight: {error}\n"})
                send({"exit": EXIT_USAGE})
            return
        except OSError:  # the client left already
            return

        def finish(run: CommandRun) -> None:  # the exit code, and the connection shut
            with contextlib.suppress(OSError):
                send({"exit": run.exit_code if run.exit_code is not None else 1})
            with contextlib.suppress(OSError):
                conn.shutdown(socket.SHUT_RDWR)

        run = CommandRun(request, lambda t: send({"out": t}), lambda t: send({"err": t}), finish)
        with self._guard:
            self._runs.add(run)
        log.debug("PID %s asks for %s", pid, run.command)
        try:
            run.start()
            said = b""  # the client's frames after its request: a `stop` with its reason
            while True:  # until the command ended (shutdown below) or the client left
                try:
                    data = conn.recv(4096)
                except OSError:
                    data = b""
                if not data:
                    break
                said = (said + data)[-STOP_FRAME_BYTES:]
                if (reason := _stop_reason(said)) is not None and not run.done:
                    run.cancel(client_said=reason)  # `ask` logs it as its reply's reason
            if not run.done:
                run.cancel()
            run.join()
        finally:
            with self._guard:
                self._runs.discard(run)
        if self.on_finished is not None and run.exit_code is not None:
            try:
                self.on_finished(request.argv, run.exit_code)
            except Exception:
                log.exception("the after-command hook failed")


STOP_FRAME_BYTES = 1024


def _stop_reason(said: bytes) -> str | None:
    """The reason of a `{"stop": REASON}` frame the client sent before it leaves (a signal,
    its stdout's reader gone: tui/owner_client.py), else None."""
    import json

    *lines, _rest = said.split(b"\n")
    for line in reversed(lines):
        try:
            frame = json.loads(line)
        except (ValueError, RecursionError):
            continue
        if isinstance(frame, dict) and isinstance(reason := frame.get("stop"), str):
            return reason[:200]
    return None
