"""A certificate authority made for the test run, and HTTPS servers on 127.0.0.1 that it vouches for.

`CA` is made once per run (trustme); ``server_context()`` serves a
certificate for ``127.0.0.1`` and ``localhost`` signed by it, and
``ca_file`` is the bundle a client passes as ``verify=``. A second,
unrelated authority signs certificates the clients must refuse.
"""

from __future__ import annotations

import atexit
import functools
import shutil
import ssl
import tempfile
from collections.abc import Generator
from contextlib import contextmanager
from pathlib import Path

import trustme

from animalstore_client.testing import FakeAnimalStore
from animalstore_client.testing._server import running_server

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
    """The path of a PEM bundle holding `ca`'s certificate (kept for the run, removed when it ends)."""
    folder = Path(tempfile.mkdtemp(prefix="animalstore-ca-"))
    atexit.register(shutil.rmtree, folder, ignore_errors=True)
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
    with running_server(store, tls=context or server_context()) as url:
        yield url
