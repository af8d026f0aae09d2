"""HTTP plumbing of the stand-in: a threading server that can cut its connections, and a handler
that records each request, applies request faults, dispatches to a route and streams NDJSON.

The endpoints themselves live in `routes`; the server is handed the route table, so this module
knows nothing about Ollama's API.
"""

from __future__ import annotations

import contextlib
import json
import logging
import socket
import sys
import threading
from collections.abc import Callable, Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import TYPE_CHECKING, Any, Literal
from urllib.parse import urlsplit

from .faults import REQUEST_FAULTS, Fault
from .wire import JsonObject, RecordedRequest, ndjson, parse_json

if TYPE_CHECKING:
    from .server import OllamaStandIn

__all__ = ["Handler", "Route", "StandInHTTPServer"]

_log = logging.getLogger(__name__)

Route = Callable[["Handler", JsonObject], None]
StreamOutcome = Literal["continue", "finish", "abort"]


class StandInHTTPServer(ThreadingHTTPServer):
    """ThreadingHTTPServer that tracks live connections so `stop` can cut them."""

    daemon_threads = True
    allow_reuse_address = True
    block_on_close = False

    def __init__(
        self,
        address: tuple[str, int],
        standin: OllamaStandIn,
        routes: Mapping[tuple[str, str], Route],
    ) -> None:
        self.standin = standin
        self.routes = routes
        self.stop_event = threading.Event()
        self._connections: set[socket.socket] = set()
        self._connections_lock = threading.Lock()
        super().__init__(address, Handler)

    def process_request(
        self, request: socket.socket | tuple[bytes, socket.socket], client_address: Any
    ) -> None:
        if isinstance(request, socket.socket):
            with self._connections_lock:
                self._connections.add(request)
        super().process_request(request, client_address)

    def shutdown_request(self, request: socket.socket | tuple[bytes, socket.socket]) -> None:
        if isinstance(request, socket.socket):
            with self._connections_lock:
                self._connections.discard(request)
        super().shutdown_request(request)

    def open_connections(self) -> int:
        """Client connections whose handler has not finished."""
        with self._connections_lock:
            return len(self._connections)

    def cut_connections(self) -> None:
        """Shut down every open client connection (wakes blocked handlers)."""
        with self._connections_lock:
            connections = list(self._connections)
        for connection in connections:
            with contextlib.suppress(OSError):
                connection.shutdown(socket.SHUT_RDWR)

    def handle_error(self, request: Any, client_address: Any) -> None:
        # Disconnects (BrokenPipe, ConnectionReset, sockets cut by stop()) are normal.
        if isinstance(sys.exc_info()[1], OSError):
            return
        _log.exception("ollama stand-in: unexpected error serving %s", client_address)


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "OllamaStandIn/1.0"
    disable_nagle_algorithm = True  # flush every streamed chunk immediately
    record: RecordedRequest
    """This request's entry in the stand-in's log (replaced by `annotate`)."""

    # ---- plumbing

    @property
    def srv(self) -> StandInHTTPServer:
        assert isinstance(self.server, StandInHTTPServer)
        return self.server

    @property
    def standin(self) -> OllamaStandIn:
        return self.srv.standin

    def log_message(self, format: str, *args: Any) -> None:
        """Stay quiet: no per-request lines on stderr."""

    def do_GET(self) -> None:
        self._dispatch()

    def do_POST(self) -> None:
        self._dispatch()

    def do_HEAD(self) -> None:
        self._dispatch()

    def do_DELETE(self) -> None:
        self._dispatch()

    def _read_body(self) -> bytes:
        if "chunked" in self.headers.get("Transfer-Encoding", "").lower():
            return self._read_chunked_body()
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length > 0 else b""

    def _read_chunked_body(self) -> bytes:
        parts: list[bytes] = []
        while size := int(self.rfile.readline().split(b";", 1)[0].strip() or b"0", 16):
            parts.append(self.rfile.read(size))
            self.rfile.readline()
        while self.rfile.readline() not in (b"\r\n", b"\n", b""):
            pass  # trailers
        return b"".join(parts)

    def send_bytes(self, status: int, payload: bytes, content_type: str) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(payload)

    def send_json(self, status: int, obj: JsonObject) -> None:
        self.send_bytes(status, json.dumps(obj).encode(), "application/json; charset=utf-8")

    def send_error_json(self, status: int, message: str) -> None:
        self.send_json(status, {"error": message})

    def wait(self, seconds: float) -> bool:
        """Sleep unless the server stops; True when the server is stopping."""
        return self.srv.stop_event.wait(seconds) if seconds > 0 else self.srv.stop_event.is_set()

    def _drop_connection(self) -> None:
        """Close abruptly: no terminating chunk, FIN on both directions."""
        self.close_connection = True
        with contextlib.suppress(OSError):
            self.connection.shutdown(socket.SHUT_RDWR)

    # ---- dispatch

    def _dispatch(self) -> None:
        path = urlsplit(self.path).path
        raw = self._read_body()
        body = parse_json(raw)
        self.record = RecordedRequest(self.command, path, body, dict(self.headers.items()))
        self.standin._record(self.record)
        if not self._apply_request_fault(path):
            return
        route = self.srv.routes.get((self.command, path))
        if route is None:
            self.send_bytes(404, b"404 page not found", "text/plain")
        elif self.command in ("POST", "DELETE") and not isinstance(body, dict):
            self.send_error_json(400, "invalid JSON request body")
        else:
            route(self, body if isinstance(body, dict) else {})

    def annotate(self, **changes: Any) -> None:
        """Add what the route learnt (e.g. ``chat=``) to this request's entry in the log."""
        self.record = self.standin._annotate(self.record, **changes)

    def _apply_request_fault(self, path: str) -> bool:
        """Apply a pending status/delay fault; False when the request is answered."""
        fault = self.standin._take_fault(path, REQUEST_FAULTS)
        if fault is None:
            return True
        if fault.kind == "status" and fault.body is not None:
            self.send_bytes(fault.status, fault.body.encode(), "application/json; charset=utf-8")
            return False
        if fault.kind == "status":
            self.send_error_json(fault.status, fault.message)
            return False
        if self.wait(fault.seconds):
            self._drop_connection()
            return False
        return True

    # ---- streaming

    def _send_chunk(self, data: bytes) -> None:
        self.wfile.write(f"{len(data):X}\r\n".encode() + data + b"\r\n")

    def stream_ndjson(self, objects: list[JsonObject], fault: Fault | None) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "application/x-ndjson")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        lines = [ndjson(obj) for obj in objects]
        cut = len(lines) if fault is None else min(max(fault.after, 0), len(lines))
        if not self._send_lines(lines[:cut], first=True):
            return
        outcome: StreamOutcome = "continue" if fault is None else self._stream_fault(fault)
        if outcome == "abort":
            return
        if outcome == "continue" and not self._send_lines(lines[cut:], first=cut == 0):
            return
        self._send_chunk(b"")  # zero-length chunk: end of body

    def _send_lines(self, lines: list[bytes], *, first: bool) -> bool:
        """Send NDJSON lines spaced by token_delay; False if the stream was aborted."""
        for index, line in enumerate(lines):
            if (index > 0 or not first) and self.wait(self.standin.token_delay):
                self._drop_connection()
                return False
            self._send_chunk(line)
        return True

    def _stream_fault(self, fault: Fault) -> StreamOutcome:
        if fault.kind == "stall":
            if self.wait(fault.seconds):
                self._drop_connection()
                return "abort"
            return "continue"
        if fault.kind == "malformed":
            self._send_chunk(fault.line.encode() + b"\n")
            return "finish"
        if fault.kind == "error_line":
            self._send_chunk(ndjson({"error": fault.message}))
            return "finish"
        self._drop_connection()  # "drop"
        return "abort"
