"""A real HTTP server on 127.0.0.1 in front of a `FakeAnimalStore` (standard library only)."""

from __future__ import annotations

import socket
import threading
from collections.abc import Generator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from ._store import MAX_BODY_BYTES, sleep

if TYPE_CHECKING:
    from ._store import FakeAnimalStore

__all__ = ["make_server", "running_server"]

# Bodies beyond this are not read at all: the answer is 413 and the
# connection closes, so a runaway client cannot exhaust memory.
_READ_LIMIT = 8 * MAX_BODY_BYTES


def make_server(store: FakeAnimalStore, port: int = 0, *, quiet: bool = True) -> ThreadingHTTPServer:
    """A `ThreadingHTTPServer` on 127.0.0.1:``port`` answering from ``store``."""

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        server_version = "FakeAnimalStore"

        def setup(self) -> None:
            super().setup()
            # Headers and body go out in two writes; without this, Nagle's
            # algorithm holds the body until the client's delayed ACK (~40 ms).
            self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

        def _serve(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            if length > _READ_LIMIT:
                self.close_connection = True
                body = b"x" * (MAX_BODY_BYTES + 1)  # stands for "too large" without reading it
            else:
                body = self.rfile.read(length) if length else b""
            url = urlsplit(self.path)
            headers = {name.lower(): value for name, value in self.headers.items()}
            # Served at once, answered late: a slow answer may follow a stored pet.
            response = store.handle(self.command, url.path, url.query, headers, body)
            sleep(store.next_delay())
            self.send_response(response.status)
            for name, value in response.headers.items():
                self.send_header(name, value)
            self.send_header("Content-Length", str(len(response.content)))
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(response.content)

        do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = do_HEAD = do_OPTIONS = _serve

        def log_message(self, format: str, *args: Any) -> None:
            if not quiet:
                super().log_message(format, *args)

    server = _Server(("127.0.0.1", port), Handler)
    server.daemon_threads = True
    return server


class _Server(ThreadingHTTPServer):
    # socketserver's backlog of 5 drops connections when a test opens a
    # hundred at once; the kernel then retries them a second later.
    request_queue_size = 256


@contextmanager
def running_server(store: FakeAnimalStore, port: int = 0) -> Generator[str]:
    """Run ``make_server`` in a background thread; yield its base URL; stop it on exit."""
    server = make_server(store, port)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)
