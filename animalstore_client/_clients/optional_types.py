"""The public API's types from optional libraries, the one place that names them: Protocols.

`AsyncHTTPClient` and `HTTPClient` (what ``http_client`` takes), and
`TracerProvider` and `MeterProvider` (``tracer_provider``, ``meter_provider``).

Why Protocols, not the libraries' classes: httpx is a dependency, so its
clients are named as they are. aiohttp, httpx2 and
opentelemetry-api are optional, and a class of a library that is not
installed is unknown to a type checker: a union naming
``aiohttp.ClientSession`` made every signature that takes or returns a
client partly unknown without aiohttp (``pyright --verifytypes`` read 90 %;
a user's pyright in strict mode reported ``FakeAnimalStore.client`` as
partially unknown). Each of those classes is named here instead by a
Protocol of its own, holding a few members, typed with builtins only, that
together tell it apart from the others and from the other client's kind
(``aclose`` or ``close``, a ``close`` that is awaited or not, what
``request`` returns):

- with the library installed, the user's type checker matches their object
  against the Protocol, so the right class passes and the wrong one (a sync
  client given to the async client, ``requests.Session``, a ``MeterProvider``
  as ``tracer_provider``) is an error;
- without it, the types are complete, and nothing is imported.

A Protocol is a shape, not the class: the constructor checks the class of
``http_client`` itself (``_clients.backends``) and says which classes it takes; a
provider is checked by its method, as here. tests/typing checks the real
classes against their Protocols, and the wrong ones refused, with mypy and
pyright; CI checks that ``--verifytypes`` reads 100 % with and without the
optional libraries, and that no public type is ``Unknown`` even where
``--ignoreexternal`` would forgive it (.ci/verify_types.py).

Adding a library: a Protocol here, named as its ``client_types`` in
``_core/libraries.py``; ``scripts/codegen.py`` writes `AsyncHTTPClient` and
`HTTPClient` from the declarations. Only members typed with builtins, ``typing`` and
httpx: a type of the library's own would be unknown without it.
"""

from __future__ import annotations

from collections.abc import Awaitable
from typing import Protocol, TypeAlias

import httpx

__all__ = [
    "AiohttpClientSession",
    "AsyncHTTPClient",
    "HTTPClient",
    "Httpx2AsyncClient",
    "Httpx2Client",
    "MeterProvider",
    "TracerProvider",
]


class Httpx2AsyncClient(Protocol):
    """An ``httpx2.AsyncClient`` (the ``httpx2`` library, Python 3.11+), by the members that tell it apart."""

    @property
    def is_closed(self) -> bool:
        """Whether the client was closed."""
        ...

    @property
    def trust_env(self) -> bool:
        """Whether the client reads proxies and certificates from the environment."""
        ...

    def aclose(self) -> Awaitable[None]:
        """Close the client (awaited)."""
        ...


class Httpx2Client(Protocol):
    """An ``httpx2.Client`` (the ``httpx2`` library, Python 3.11+), by the members that tell it apart."""

    @property
    def is_closed(self) -> bool:
        """Whether the client was closed."""
        ...

    @property
    def trust_env(self) -> bool:
        """Whether the client reads proxies and certificates from the environment."""
        ...

    def close(self) -> None:
        """Close the client."""
        ...


class AiohttpClientSession(Protocol):
    """An ``aiohttp.ClientSession`` (the ``[aiohttp]`` extra), by the members that tell it apart."""

    @property
    def closed(self) -> bool:
        """Whether the session was closed."""
        ...

    def detach(self) -> None:
        """Let go of the session's connector without closing it."""
        ...

    def close(self) -> Awaitable[None]:
        """Close the session (awaited)."""
        ...


# <libraries: http client types> written by scripts/codegen.py from _core.libraries.LIBRARIES
AsyncHTTPClient: TypeAlias = httpx.AsyncClient | Httpx2AsyncClient | AiohttpClientSession
"""What `AsyncAnimalStoreClient` takes as ``http_client``: ``httpx.AsyncClient``, ``httpx2.AsyncClient`` or
``aiohttp.ClientSession`` (a pyreqwest client is refused: ``backend="pyreqwest"`` builds the SDK's own).

httpx's class by name; each optional library's by a Protocol of a few of
its members, so that this type is complete whether that library is
installed or not. With the library installed, a type checker accepts its
client and refuses other objects (a sync client among them); the client
itself checks the class when it is made.
"""

HTTPClient: TypeAlias = httpx.Client | Httpx2Client
"""What `AnimalStoreClient` takes as ``http_client``: ``httpx.Client`` or ``httpx2.Client`` (a pyreqwest client is
refused: ``backend="pyreqwest"`` builds the SDK's own).

httpx's class by name; each optional library's by a Protocol of a few of
its members, so that this type is complete whether that library is
installed or not. With the library installed, a type checker accepts its
client and refuses other objects (an async client among them); the client
itself checks the class when it is made.
"""
# </libraries>


class TracerProvider(Protocol):
    """An OpenTelemetry ``opentelemetry.trace.TracerProvider`` (the ``[otel]`` extra), by the method the SDK calls."""

    def get_tracer(
        self, instrumenting_module_name: str, instrumenting_library_version: str | None, /, *, schema_url: str | None
    ) -> object:
        """The tracer of an instrumentation scope: the SDK's spans come from it."""
        ...


class MeterProvider(Protocol):
    """An OpenTelemetry ``opentelemetry.metrics.MeterProvider`` (the ``[otel]`` extra), by the method the SDK calls."""

    def get_meter(self, name: str, version: str | None, /, *, schema_url: str | None) -> object:
        """The meter of an instrumentation scope: the SDK's metrics come from it."""
        ...
