"""The HTTP libraries the SDK sends through, each declared once: `LIBRARIES`.

One `Library` per ``backend=`` value says everything the rest of the package, the docs and the tests need
to know of it; docs/architecture.md says what is derived from it, what ``scripts/codegen.py`` writes from it,
and what adding a library takes. Nothing here imports an HTTP library: the core may read it anywhere.
"""

from __future__ import annotations

import re
from typing import Any, Literal

import attrs

__all__ = [
    "LIBRARIES",
    "OTHER_EXTRAS",
    "PACKAGE_FLOOR",
    "REMOVED",
    "AsyncBackendName",
    "BackendName",
    "Extra",
    "Library",
    "by_name",
    "distribution_of",
    "for_client",
]

Client = Literal["sync", "async"]
PACKAGE_FLOOR = (3, 11)
"""The oldest Python the package runs on (``requires-python`` in pyproject.toml; a test holds them equal)."""
Place = tuple[str, str]
"""A class of this package or a library, as ``(module, class name)``: imported only when a client chooses it."""


def _none() -> dict[Client, Any]:
    return {}


@attrs.frozen(kw_only=True)
class Library:
    """One HTTP library a client can send through: its ``backend=`` name and all the package knows of it."""

    name: str
    """The ``backend=`` value, which is also the library's import name."""
    clients: tuple[Client, ...]
    """Which clients have it: ``("sync", "async")``, or one of them."""
    requirement: str | None = None
    """Its requirement as its extra installs it (``"aiohttp>=3.12.7"``); ``None`` for httpx, a dependency."""
    also_installs: tuple[str, ...] = ()
    """Further requirements of its extra (httpx2's needs httpcore2)."""
    floor_reason: str = ""
    """Why its requirement's floor is that version: what the SDK uses that an older release lacks (pyproject.toml's
    comment on the extra, which ``scripts/codegen.py`` writes with the extra; its Python marker is ``python``'s)."""
    transports: dict[Client, Place] = attrs.field(factory=_none)
    """Each client's transport over a library client: a caller's ``http_client``, or one the SDK makes."""
    own_pools: dict[Client, Place] = attrs.field(factory=_none)
    """Each client's transport over the SDK's own pool, used when no ``http_client`` is given."""
    client_classes: dict[Client, Place] = attrs.field(factory=_none)
    """The class of the library's own client each SDK client tells apart as ``http_client``."""
    client_types: dict[Client, str] = attrs.field(factory=_none)
    """How ``http_client``'s type names that class: httpx's by name, an optional library's by its Protocol in
    ``_clients/optional_types.py`` (a class of a library that is not installed is unknown to a type checker)."""
    callers_clients_refused: bool = False
    """Whether every caller's client of this library is refused (the adapter's ``refusal`` says why)."""
    client_auth: bool = False
    """Whether the library's client has an ``auth`` of its own, which the SDK refuses (it sends the Bearer key)."""
    takes_ssl_context: bool = True
    """Whether its transport takes ``verify=`` as an `ssl.SSLContext` the client makes once (``False``: the
    ``verify`` value itself, for a library with a TLS stack of its own, such as pyreqwest's rustls)."""
    runs_once: bool = False
    """Whether CI runs its client/library pairs once, from the README's command on one Python, rather than on
    every Python (tests/conftest.py marks them with its name; noxfile.py's sessions leave them out): a library
    new in a release, to keep CI near its 15 minutes."""
    stack: frozenset[str] = frozenset()
    """The top-level packages of its HTTP stack: their frames are the library's, not the caller's code."""
    extra_packages: tuple[str, ...] = ()
    """The packages its extra adds that are not HTTP code (for the kit and the docs, none so far)."""
    choose_for: str = ""
    """What it is and when to choose it: the backends table's cell."""
    http_client_text: str = ""
    """What ``http_client=`` takes on it: the backends table's cell."""
    verify_text: str = ""
    """What ``verify=`` takes on it: the backends table's cell."""

    @property
    def extra(self) -> str | None:
        """The name of its extra (its own name), or ``None`` for httpx, a dependency."""
        return None if self.requirement is None else self.name

    @property
    def distribution(self) -> str | None:
        """The distribution its requirement names, which must be the one that provides the import."""
        return None if self.requirement is None else distribution_of(self.requirement)


def distribution_of(requirement: str) -> str:
    """The distribution a requirement names: ``"aiohttp"`` of ``"aiohttp>=3.12.7"``."""
    return re.split(r"[\s;\[<>=!~]", requirement, maxsplit=1)[0]


LIBRARIES: tuple[Library, ...] = (
    Library(
        name="httpx",
        clients=("sync", "async"),
        transports={
            "async": ("animalstore_client._transports.httpx_async", "AsyncHttpxTransport"),
            "sync": ("animalstore_client._transports._generated.httpx_sync", "HttpxTransport"),
        },
        own_pools={
            "async": ("animalstore_client._transports.pool.httpcore_async", "AsyncHttpcoreTransport"),
            "sync": ("animalstore_client._transports.pool._generated.httpcore_sync", "HttpcoreTransport"),
        },
        client_classes={"async": ("httpx", "AsyncClient"), "sync": ("httpx", "Client")},
        client_types={"async": "httpx.AsyncClient", "sync": "httpx.Client"},
        client_auth=True,
        stack=frozenset(
            {"httpx", "httpcore", "h11", "h2", "hpack", "hyperframe", "anyio", "sniffio", "certifi", "idna", "socksio"}
        ),
        choose_for=(
            "the SDK's own pool over httpcore; no extra dependency, your own httpx client (respx mocks it); "
            "with asyncio 0.6 to 0.75x aiohttp"
        ),
        http_client_text="`httpx.Client` / `httpx.AsyncClient`",
        verify_text="`True`, a CA bundle path, an `ssl.SSLContext`, `False`",
    ),
    Library(
        name="httpx2",
        clients=("sync", "async"),
        requirement="httpx2>=2.0",
        also_installs=("httpcore2>=2.0",),
        transports={
            "async": ("animalstore_client._transports.httpx2_async", "AsyncHttpx2Transport"),
            "sync": ("animalstore_client._transports._generated.httpx2_sync", "Httpx2Transport"),
        },
        own_pools={
            "async": (
                "animalstore_client._transports.pool._generated.httpcore2.httpcore2_async",
                "AsyncHttpcore2Transport",
            ),
            "sync": ("animalstore_client._transports.pool._generated.httpcore2.httpcore2_sync", "Httpcore2Transport"),
        },
        client_classes={"async": ("httpx2", "AsyncClient"), "sync": ("httpx2", "Client")},
        client_types={"async": "Httpx2AsyncClient", "sync": "Httpx2Client"},
        client_auth=True,
        runs_once=True,
        stack=frozenset({"httpx2", "httpcore2", "h11", "h2", "anyio", "sniffio", "certifi", "idna"}),
        choose_for=(
            "the SDK's own pool over httpcore2, from httpx2 (pydantic's fork of httpx); for an application on "
            "httpx2, whose own client it takes (an `httpx2.MockTransport` in it too)"
        ),
        http_client_text="`httpx2.Client` / `httpx2.AsyncClient`",
        verify_text=(
            "as httpx: `True` is certifi's bundle here too, not httpx2's own default (the operating system's store)"
        ),
    ),
    Library(
        name="aiohttp",
        clients=("async",),
        requirement="aiohttp>=3.12.7",
        floor_reason=(
            "3.10 brought the per-request auto_decompress the SDK needs, 3.12.4 stopped leaving closed TLS "
            "connections' transports open, and before 3.12.7 a child forked with a session over TLS could not call "
            "on its inherited loop (the minimum-versions session found each)"
        ),
        transports={"async": ("animalstore_client._transports.aiohttp", "AiohttpTransport")},
        client_classes={"async": ("aiohttp", "ClientSession")},
        client_types={"async": "AiohttpClientSession"},
        client_auth=True,
        stack=frozenset(
            {
                "aiohttp",
                "aiohappyeyeballs",
                "aiosignal",
                "async_timeout",
                "frozenlist",
                "multidict",
                "propcache",
                "yarl",
            }
        ),
        choose_for="the fastest for one call at a time on asyncio",
        http_client_text="`aiohttp.ClientSession` (async only)",
        verify_text="`True`, a CA bundle path, an `ssl.SSLContext`, `False`",
    ),
    Library(
        name="pyreqwest",
        clients=("sync", "async"),
        requirement="pyreqwest>=0.15",
        transports={
            "async": ("animalstore_client._transports.pyreqwest_async", "AsyncPyreqwestTransport"),
            "sync": ("animalstore_client._transports._generated.pyreqwest_sync", "PyreqwestTransport"),
        },
        client_classes={"async": ("pyreqwest.client", "Client"), "sync": ("pyreqwest.client", "SyncClient")},
        callers_clients_refused=True,
        takes_ssl_context=False,
        runs_once=True,
        stack=frozenset({"pyreqwest"}),
        choose_for=(
            "Rust's reqwest, hyper and rustls: the most calls per second and per core with many calls in flight, "
            "by far with threads; no use in a child forked after the parent called"
        ),
        http_client_text=(
            "none: a pyreqwest client of yours is refused (it may follow redirects unseen); the SDK builds its own"
        ),
        verify_text=(
            "`True`, a CA bundle path, `False`: no `ssl.SSLContext` (rustls); the operating system's store is "
            "always trusted too"
        ),
    ),
)
"""Every HTTP library, the default (httpx) first; the order is the order of the docs and of the messages."""


REMOVED: dict[str, str] = {
    "urllib3": (
        "was removed in animalstore-client 2.0, after its deprecation in 1.3. Use the default backend instead "
        '(leave backend out, or pass backend="httpx"): its own connection pool is as fast with threads, with the '
        "same verify= and fork behaviour"
    ),
}
"""The libraries a client no longer sends through, each with how to move: a ``backend=`` of one, or a client of
its library as ``http_client``, is refused with this advice rather than as an unknown name."""


@attrs.frozen(kw_only=True)
class Extra:
    """An extra that adds no HTTP library: its name, what it installs, and what it is for."""

    name: str
    requirements: tuple[str, ...]
    purpose: str


OTHER_EXTRAS: tuple[Extra, ...] = (
    Extra(
        name="otel",
        requirements=("opentelemetry-api>=1.30",),
        purpose="OpenTelemetry traces and metrics of every call, on every backend",
    ),
)
"""The extras that add no HTTP library."""

# <libraries: backend names> written by scripts/codegen.py from _core.libraries.LIBRARIES
BackendName = Literal["httpx", "httpx2", "pyreqwest"]
"""The libraries `AnimalStoreClient` can send through: its ``backend=`` argument's type.

``"httpx"`` (the default, a dependency), ``"httpx2"`` (the ``[httpx2]`` extra) or ``"pyreqwest"`` (the ``[pyreqwest]``
extra). docs/index.md's backends table says which to choose.
"""
AsyncBackendName = Literal["httpx", "httpx2", "aiohttp", "pyreqwest"]
"""The libraries `AsyncAnimalStoreClient` can send through: its ``backend=`` argument's type.

``"httpx"`` (the default, a dependency), ``"httpx2"`` (the ``[httpx2]`` extra), ``"aiohttp"`` (the ``[aiohttp]`` extra)
or ``"pyreqwest"`` (the ``[pyreqwest]`` extra). docs/index.md's backends table says which to choose.
"""
# </libraries>


def for_client(client: Client) -> tuple[Library, ...]:
    """The libraries one client has, in `LIBRARIES`' order."""
    return tuple(library for library in LIBRARIES if client in library.clients)


def by_name(name: str) -> Library:
    """The library whose ``backend=`` name is ``name`` (a `KeyError` for any other)."""
    for library in LIBRARIES:
        if library.name == name:
            return library
    raise KeyError(name)
