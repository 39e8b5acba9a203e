"""A certificate authority made for the test run, and HTTPS servers on 127.0.0.1 that it vouches for.

`CA` is made once per run (trustme); ``server_context()`` serves a
certificate for ``127.0.0.1`` and ``localhost`` signed by it, and
``ca_file`` is the bundle a client passes as ``verify=``. A second,
unrelated authority signs certificates the clients must refuse.
"""

from __future__ import annotations

import functools
import ssl
import sys
import tempfile
import threading
from collections.abc import Generator
from contextlib import contextmanager
from pathlib import Path

import trustme

from animalstore_client.testing import FakeAnimalStore
from animalstore_client.testing._server import make_server

HOSTS = ("127.0.0.1", "localhost")


@functools.cache
def ca() -> trustme.CA:
    """The run's own CA, which every test client is told to trust."""
    return trustme.CA()


@functools.cache
def stranger() -> trustme.CA:
    """A CA no client trusts."""
    return trustme.CA()


@functools.cache
def ca_file() -> str:
    """The path of a PEM bundle holding `ca`'s certificate (kept for the run)."""
    folder = Path(tempfile.mkdtemp(prefix="animalstore-ca-"))
    path = folder / "ca.pem"
    ca().cert_pem.write_to_path(str(path))
    return str(path)


def client_context() -> ssl.SSLContext:
    """A client context trusting `ca` (for a caller's own http client)."""
    context = ssl.create_default_context()
    ca().configure_trust(context)
    return context


def server_context(authority: trustme.CA | None = None, hosts: tuple[str, ...] = HOSTS) -> ssl.SSLContext:
    """A server context with a certificate for ``hosts`` signed by ``authority`` (default: `ca`)."""
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    (authority or ca()).issue_cert(*hosts).configure_cert(context)
    return context


@contextmanager
def serve_tls(store: FakeAnimalStore, context: ssl.SSLContext | None = None) -> Generator[str]:
    """Serve ``store`` over HTTPS on 127.0.0.1; yields the ``https://`` base URL."""
    server = make_server(store, 0)
    # The handshake runs on the connection's first read, in its own handler thread.
    server.socket = (context or server_context()).wrap_socket(
        server.socket, server_side=True, do_handshake_on_connect=False
    )
    default_handle_error = server.handle_error

    def handle_error(request: object, address: object) -> None:
        # A client refusing the certificate ends its handshake: expected here, not worth a traceback.
        if not isinstance(sys.exc_info()[1], OSError):
            default_handle_error(request, address)  # type: ignore[arg-type]

    server.handle_error = handle_error  # type: ignore[method-assign,assignment]
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield f"https://127.0.0.1:{server.server_address[1]}/v1"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)
