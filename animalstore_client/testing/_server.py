"""A real HTTP server on 127.0.0.1 in front of a `FakeAnimalStore` (standard library only)."""

from __future__ import annotations

import contextlib
import re
import select
import socket
import ssl
import struct
import sys
import threading
import time
from collections.abc import Generator
from contextlib import contextmanager
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from ._control import CONTROL_PREFIX
from ._control import control as answer_control
from ._messages import MAX_BODY_BYTES, FakeResponse, error_response, sleep

if TYPE_CHECKING:
    from ._store import FakeAnimalStore

__all__ = ["make_server", "running_server"]

# Bodies beyond this are not read at all: the answer is 413 and the
# connection closes, so a runaway client cannot exhaust memory.
_READ_LIMIT = 8 * MAX_BODY_BYTES
_HEAD_TIMEOUT = 10.0
"""Seconds a client may take over its request line and headers (per read) before the connection closes."""
_BODY_TIMEOUT = 10.0
"""Seconds a client may take to send a whole body, however it trickles; then 408."""
_UNANSWERED = 30.0
"""Seconds a "timeout" connection fault holds a connection unanswered, at most."""
_LENGTH = re.compile(r"[0-9]{1,19}")
_CHUNK_SIZE = re.compile(r"[0-9A-Fa-f]{1,16}")


class _Refused(Exception):
    """The request cannot be read: answer ``status`` and close the connection."""

    def __init__(self, status: int, code: str, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message


def make_server(
    store: FakeAnimalStore,
    port: int = 0,
    *,
    quiet: bool = True,
    control: bool = False,
    tls: ssl.SSLContext | None = None,
) -> ThreadingHTTPServer:
    """A `ThreadingHTTPServer` on 127.0.0.1:``port`` answering from ``store`` (over TLS with ``tls``).

    It answers whatever arrives: chunked bodies are read as bodies; a bad or
    contradictory ``Content-Length``, a body that is too large or too slow, or
    a header section too large gets a 4xx Error body and a closed connection
    (so the next bytes are never taken for a request); a client that sends
    nothing is disconnected after 10 s. No input leaves a traceback or a
    parked thread. With ``control`` the control API answers under
    ``/_fake/`` (see ``_control``); without it, that is refused with 403.
    """

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        server_version = "FakeAnimalStore"
        timeout = _HEAD_TIMEOUT  # StreamRequestHandler sets it on the socket

        def setup(self) -> None:
            super().setup()
            # Headers and body go out in two writes; without this, Nagle's
            # algorithm holds the body until the client's delayed ACK (~40 ms).
            self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

        def _serve(self) -> None:
            try:
                body = self._read_body()
            except _Refused as exc:
                self.close_connection = True
                self._answer(error_response(exc.status, exc.code, exc.message, {"Connection": "close"}))
                return
            url = urlsplit(self.path)
            if url.path == CONTROL_PREFIX or url.path.startswith(CONTROL_PREFIX + "/"):
                self._answer(answer_control(store, self.command, url.path, body, enabled=control))
                return
            headers = {name.lower(): value for name, value in self.headers.items()}
            try:
                # Served at once, answered late: a slow answer may follow a stored pet.
                answer, fault = store.exchange(self.command, url.path, url.query, headers, body)
            except Exception as exc:  # noqa: BLE001 (a fake that crashes must still answer)
                self.close_connection = True
                answer, fault = (
                    error_response(500, "internal_error", f"The fake store failed: {type(exc).__name__}"),
                    None,
                )
            if fault is not None or answer is None:
                self._drop(fault)
                return
            sleep(store.next_delay())
            self._answer(answer)

        def _drop(self, fault: str | None) -> None:
            """Carry out a connection fault: reset now, or after holding the connection unanswered."""
            self.close_connection = True
            if fault == "timeout":
                # Unanswered until the client gives up (its close makes the socket readable) or 30 s pass.
                with contextlib.suppress(OSError):
                    select.select([self.connection], [], [], _UNANSWERED)
            # SO_LINGER 0: close() sends a reset, as a crashed or refusing peer does.
            with contextlib.suppress(OSError):
                self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))

        def _answer(self, response: FakeResponse) -> None:
            self.send_response(response.status)
            for name, value in response.headers.items():
                self.send_header(name, value)
            self.send_header("Content-Length", str(len(response.content)))
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(response.content)

        def _read_body(self) -> bytes:
            codings = self.headers.get_all("Transfer-Encoding") or []
            lengths = self.headers.get_all("Content-Length") or []
            if codings and lengths:
                raise _Refused(400, "invalid_framing", "Content-Length and Transfer-Encoding must not both be sent.")
            if codings:
                if [c.strip().lower() for c in ",".join(codings).split(",")] != ["chunked"]:
                    raise _Refused(400, "invalid_framing", "The only transfer coding accepted is chunked.")
                return self._read_chunked(time.monotonic() + _BODY_TIMEOUT)
            if not lengths:
                return b""
            if len(lengths) > 1 or not _LENGTH.fullmatch(lengths[0].strip()):
                shown = ", ".join(lengths)[:40]
                raise _Refused(
                    400, "invalid_content_length", f"Content-Length must be one decimal number, got {shown!r}."
                )
            length = int(lengths[0])
            if length > _READ_LIMIT:
                raise _Refused(413, "payload_too_large", f"The body is {length} bytes; the limit is {MAX_BODY_BYTES}.")
            return self._read_exact(length, time.monotonic() + _BODY_TIMEOUT)

        def _read_exact(self, length: int, deadline: float) -> bytes:
            parts: list[bytes] = []
            while length > 0:
                part = self._read_some(length, deadline)
                parts.append(part)
                length -= len(part)
            return b"".join(parts)

        def _read_some(self, most: int, deadline: float) -> bytes:
            slow = _Refused(408, "request_timeout", f"The body took longer than {_BODY_TIMEOUT:g} s to arrive.")
            left = deadline - time.monotonic()
            if left <= 0:
                raise slow
            self.connection.settimeout(left)
            try:
                part = self.rfile.read1(most)
            except TimeoutError:
                raise slow from None
            finally:
                self.connection.settimeout(_HEAD_TIMEOUT)
            if not part:
                raise _Refused(400, "incomplete_body", "The connection closed before the body was complete.")
            return bytes(part)

        def _read_line(self, deadline: float) -> bytes:
            line = b""
            while not line.endswith(b"\n"):
                if len(line) > 1024:
                    raise _Refused(400, "invalid_chunk", "A chunk-size line is longer than 1024 bytes.")
                line += self._read_some(1, deadline)
            return line.rstrip(b"\r\n")

        def _read_chunked(self, deadline: float) -> bytes:
            parts: list[bytes] = []
            total = 0
            while True:
                size_text = self._read_line(deadline).split(b";", 1)[0].strip().decode("latin-1")
                if not _CHUNK_SIZE.fullmatch(size_text):
                    raise _Refused(400, "invalid_chunk", f"A chunk size must be hexadecimal, got {size_text[:20]!r}.")
                size = int(size_text, 16)
                if size == 0:
                    while self._read_line(deadline):  # trailer fields, ignored
                        pass
                    return b"".join(parts)
                total += size
                if total > _READ_LIMIT:
                    raise _Refused(413, "payload_too_large", f"The body exceeds the limit of {MAX_BODY_BYTES} bytes.")
                parts.append(self._read_exact(size, deadline))
                if self._read_line(deadline):
                    raise _Refused(400, "invalid_chunk", "A chunk's data must end with CRLF.")

        def send_error(self, code: int, message: str | None = None, explain: str | None = None) -> None:
            """Answer with the interface's Error body, not the standard library's HTML page.

            The standard library calls this for a bad request line or a header section too large.
            """
            self.close_connection = True
            phrase = HTTPStatus(code).phrase if code in HTTPStatus._value2member_map_ else "Error"
            slug = re.sub(r"\W+", "_", phrase.lower()).strip("_")
            self._answer(error_response(code, slug, message or phrase, {"Connection": "close"}))

        do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = do_HEAD = do_OPTIONS = _serve

        def __getattr__(self, name: str) -> Any:
            # Any other method (TRACE, PROPFIND, ...) goes to the store too, which
            # answers 405 on a known path; the standard library would say 501.
            if name.startswith("do_"):
                return self._serve
            raise AttributeError(name)

        def log_message(self, format: str, *args: Any) -> None:
            if not quiet:
                super().log_message(format, *args)

    server = _Server(("127.0.0.1", port), Handler)
    server.daemon_threads = True
    if tls is not None:
        # The handshake runs on the connection's first read, in its own handler thread.
        server.socket = tls.wrap_socket(server.socket, server_side=True, do_handshake_on_connect=False)
    return server


class _Server(ThreadingHTTPServer):
    # socketserver's backlog of 5 drops connections when a test opens a
    # hundred at once; the kernel then retries them a second later.
    request_queue_size = 256

    def handle_error(self, request: Any, client_address: Any) -> None:
        # A client refusing the certificate ends the handshake: its choice, not worth a traceback.
        if not isinstance(sys.exc_info()[1], ssl.SSLError):
            super().handle_error(request, client_address)


@contextmanager
def running_server(
    store: FakeAnimalStore, port: int = 0, *, control: bool = False, tls: ssl.SSLContext | None = None
) -> Generator[str]:
    """Run ``make_server`` in a background thread; yield its base URL; stop it on exit."""
    server = make_server(store, port, control=control, tls=tls)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield f"{'https' if tls else 'http'}://127.0.0.1:{server.server_address[1]}/v1"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)
