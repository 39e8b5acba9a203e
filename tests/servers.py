"""A scriptable HTTP/1.1 server on 127.0.0.1 for faults respx cannot fake.

Each request takes the next action from the script (the last action repeats):
answer, hang without answering, or send part of a body and close. With
``tls=`` (a server context from ``tests/tls.py``) it speaks HTTPS. With
``read_bodies=False`` each action runs as soon as a request's head has
arrived, before its body is read: an early answer (a 401 or 413 while the
client still writes), for actions that then end the connection. Real
sockets mean real httpx/httpcore code paths: refused connections, read
timeouts, bodies cut off mid-JSON.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import functools
import json
import socket
import ssl
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http import HTTPStatus
from types import TracebackType

Action = Callable[[socket.socket], bool]
"""Writes to the connection; returns whether the connection stays open."""


@dataclass
class Received:
    """One request as the server saw it."""

    method: str
    target: str
    headers: dict[str, str]
    body: bytes = field(repr=False)


def _head(status: int, headers: dict[str, str], length: int) -> bytes:
    lines = [
        f"HTTP/1.1 {status} {HTTPStatus(status).phrase}",
        f"Content-Length: {length}",
        *(f"{k}: {v}" for k, v in headers.items()),
    ]
    return ("\r\n".join(lines) + "\r\n\r\n").encode()


def respond(status: int = 200, body: object = None, headers: dict[str, str] | None = None) -> Action:
    """Answer with ``body`` as JSON (bytes are sent as they are)."""
    content = body if isinstance(body, bytes) else json.dumps(body).encode() if body is not None else b""
    extra = {"Content-Type": "application/json", **(headers or {})}

    def action(conn: socket.socket) -> bool:
        conn.sendall(_head(status, extra, len(content)) + content)
        return True

    return action


def cut(status: int, partial: bytes, claimed: int) -> Action:
    """Promise ``claimed`` bytes, send ``partial``, then close the connection."""

    def action(conn: socket.socket) -> bool:
        conn.sendall(_head(status, {"Content-Type": "application/json"}, claimed) + partial)
        return False

    return action


class Turns:
    """A server that acts on an idle connection (closes it, sends it stray bytes) and its client taking turns: the
    server acts once the client has its answer, and the client goes on once the server acted (each wait bounded).

    Fixed pauses (50 ms for the server, 0.2 s for the client) were not enough on a loaded machine: the client had
    not read the answer when the stray bytes or the reset came, or the server had not acted when the next call
    began, and the test then ran another scenario (a stray answer read with the answer, a reset overtaking it).
    """

    def __init__(self, within: float = 5.0) -> None:
        self._within = within
        self._answered = threading.Event()
        self._acted = threading.Event()

    def start(self) -> None:
        """Before a run: neither has had a turn."""
        self._answered.clear()
        self._acted.clear()

    def answered(self) -> None:
        """The client's side: a call has its answer."""
        self._answered.set()

    def wait_for_the_answer(self) -> None:
        """The server's side, before acting on the connection."""
        assert self._answered.wait(self._within), f"the client had no answer within {self._within:g} s"
        self._answered.clear()

    def acted(self) -> None:
        """The server's side: it acted."""
        self._acted.set()

    def wait_for_the_server(self) -> None:
        """The client's side, in a thread that is not an event loop's."""
        assert self._acted.wait(self._within), f"the server did not act within {self._within:g} s"
        self._acted.clear()

    async def server_acted(self) -> None:
        """The client's side on an event loop, which runs meanwhile (as between an application's calls) and then
        has 50 ms more to read what arrived."""
        bound = time.monotonic() + self._within
        while not self._acted.is_set() and time.monotonic() < bound:
            await asyncio.sleep(0.01)
        assert self._acted.is_set(), f"the server did not act within {self._within:g} s"
        self._acted.clear()
        await asyncio.sleep(0.05)


class LoopbackServer:
    """``with LoopbackServer([respond(503), respond(200, [])]) as server:`` then use ``server.base_url``."""

    def __init__(
        self, script: list[Action] | None = None, *, tls: ssl.SSLContext | None = None, read_bodies: bool = True
    ) -> None:
        self.script = list(script or [respond(200, [])])
        self._tls = tls
        self._read_bodies = read_bodies
        self.received: list[Received] = []
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._sock = socket.create_server(("127.0.0.1", 0))
        self._sock.settimeout(0.1)
        self.port = self._sock.getsockname()[1]
        self.base_url = f"{'https' if tls else 'http'}://127.0.0.1:{self.port}/v1"
        self._threads: list[threading.Thread] = []
        self._connections: list[socket.socket] = []
        self._accepted = 0
        self._open = 0

    @property
    def open_connections(self) -> int:
        """How many client connections are open now (the client has not closed them)."""
        with self._lock:
            return self._open

    def wait_for_open_connections(self, at_most: int, within: float = 5.0) -> int:
        """Wait (bounded) until at most ``at_most`` connections are open; return how many are."""
        deadline = time.monotonic() + within
        while self.open_connections > at_most and time.monotonic() < deadline:
            time.sleep(0.02)
        return self.open_connections

    def wait_for_received(self, at_least: int, within: float = 5.0) -> list[Received]:
        """Wait (bounded) until the server has read at least ``at_least`` requests; return those read by then.

        A client that gave up on its own timeout has sent its request, yet under load this server's thread may not
        have read it: leaving the ``with`` block would then shut the connection with the request unread.
        """
        deadline = time.monotonic() + within
        while True:
            with self._lock:
                if len(self.received) >= at_least or time.monotonic() >= deadline:
                    return list(self.received)
            time.sleep(0.01)

    @property
    def connections(self) -> int:
        """How many connections clients have opened so far (a TLS connection counts once)."""
        return self._accepted

    def hang(self) -> Action:
        """Read the request and never answer (until the server stops)."""

        def action(_: socket.socket) -> bool:
            self._stop.wait()
            return False

        return action

    def _next_action(self) -> Action:
        with self._lock:
            return self.script.pop(0) if len(self.script) > 1 else self.script[0]

    def __enter__(self) -> LoopbackServer:
        thread = threading.Thread(target=self._accept, daemon=True)
        thread.start()
        self._threads.append(thread)
        return self

    def __exit__(self, *exc: object | TracebackType) -> None:
        self._stop.set()
        # Shut down, a blocked accept or recv returns now rather than at its next poll. On the
        # plain socket under a TLS one too: the TLS layer's own shutdown would race its reader.
        for sock in (self._sock, *self._connections):
            with contextlib.suppress(OSError):
                socket.socket.shutdown(sock, socket.SHUT_RDWR)
        for thread in self._threads:
            thread.join(timeout=5)
        for conn in self._connections:
            conn.close()
        self._sock.close()

    def _accept(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self._sock.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            self._connections.append(conn)
            self._accepted += 1
            thread = threading.Thread(target=self._serve, args=(conn,), daemon=True)
            thread.start()
            self._threads.append(thread)

    def _serve(self, conn: socket.socket) -> None:
        with self._lock:
            self._open += 1
        try:
            self._serve_connection(conn)
        finally:
            with self._lock:
                self._open -= 1
            conn.close()

    def _serve_connection(self, conn: socket.socket) -> None:
        if self._tls is not None:
            conn.settimeout(5)
            try:  # in this connection's thread, so a client that never shakes hands holds up no other
                conn = self._tls.wrap_socket(conn, server_side=True)
            except OSError:  # the client refused the certificate, or went away
                conn.close()
                return
            self._connections.append(conn)
        conn.settimeout(0.2)
        buffer = b""
        while not self._stop.is_set():
            try:
                while b"\r\n\r\n" not in buffer:
                    chunk = conn.recv(65536)
                    if not chunk:
                        return
                    buffer += chunk
                head, _, buffer = buffer.partition(b"\r\n\r\n")
                request_line, *header_lines = head.decode("latin-1").split("\r\n")
                headers = {k.strip().lower(): v.strip() for k, _, v in (h.partition(":") for h in header_lines)}
                length = int(headers.get("content-length", "0"))
                while self._read_bodies and len(buffer) < length:
                    chunk = conn.recv(65536)
                    if not chunk:
                        return
                    buffer += chunk
                body, buffer = buffer[:length], buffer[length:]
            except TimeoutError:
                continue
            except OSError:
                return
            method, target, _ = request_line.split(" ", 2)
            with self._lock:
                self.received.append(Received(method, target, headers, body))
            try:
                if not self._next_action()(conn):
                    conn.close()
                    return
            except OSError:
                return


@functools.cache
def _bound_and_deaf() -> socket.socket:
    """A loopback socket bound for the whole run and never listening: a connection to its port is refused, and no
    other socket can take the port meanwhile. A port merely probed and closed was taken under six workers' load (by
    another test's server: a POST met it and was not retried)."""
    deaf = socket.socket()
    deaf.bind(("127.0.0.1", 0))
    atexit.register(deaf.close)
    return deaf


def refused_url() -> str:
    """A base URL on a loopback port nothing listens on."""
    return f"http://127.0.0.1:{_bound_and_deaf().getsockname()[1]}/v1"
