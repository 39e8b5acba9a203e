"""The public API's types from optional libraries, the one place that names them: Protocols.

`AsyncHTTPClient` and `HTTPClient` (what ``http_client`` takes), and
`TracerProvider` and `MeterProvider` (``tracer_provider``, ``meter_provider``).

Why Protocols: a class of an optional library that is not installed is unknown to a type checker, and would
make every signature naming it partly unknown (``pyright --verifytypes``). Each Protocol holds a few members,
typed with builtins, ``typing`` and httpx only, that together tell its class apart from the others and from the
other client's kind (what that buys: `AsyncHTTPClient`'s docs). tests/typing and .ci/verify_types.py hold the
Protocols to the real classes.
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


class _Httpx2(Protocol):
    """What both clients of the ``httpx2`` library (Python 3.11+) have, of the members that tell them apart."""

    @property
    def is_closed(self) -> bool:
        """Whether the client was closed."""
        ...

    @property
    def trust_env(self) -> bool:
        """Whether the client reads proxies and certificates from the environment."""
        ...


class Httpx2AsyncClient(_Httpx2, Protocol):
    """An ``httpx2.AsyncClient`` (the ``httpx2`` library, Python 3.11+), by the members that tell it apart."""

    def aclose(self) -> Awaitable[None]:
        """Close the client (awaited)."""
        ...


class Httpx2Client(_Httpx2, Protocol):
    """An ``httpx2.Client`` (the ``httpx2`` library, Python 3.11+), by the members that tell it apart."""

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
