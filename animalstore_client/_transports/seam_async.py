"""The seam between the send loop and an HTTP library: the interface every library's transport implements.

A transport sends one `httpx.Request` within the given per-phase timeouts, never following a redirect, and
returns a response stream: the status and headers at once, then the body as raw (still content-encoded) chunks
that the send loop decodes itself, so that every rule about bodies holds for every library. It fails only with
these httpx exceptions, which the retry policy tells apart:

- nothing was sent: ``ConnectError``, ``ConnectTimeout``, ``PoolTimeout``;
- sent, but no complete answer: ``ReadTimeout``, ``WriteTimeout``,
  ``ReadError``, ``WriteError``, ``RemoteProtocolError`` (any other
  ``TransportError`` counts as this too).

A new library is one more class with these methods, its response stream built on `_transports.shared` and its
failures translated there.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Protocol

import httpx

from animalstore_client._core.exchange import Exchange

__all__ = ["AsyncResponseStream", "AsyncTransport"]


class AsyncResponseStream(Protocol):
    """A response whose body is still to be read."""

    status_code: int
    content: bytes | None
    """The decoded body when the library already holds it (a mock transport), else ``None``."""

    @property
    def headers(self) -> httpx.Headers:
        """The response's headers, as they came (converted when first read: a typed call may never read them)."""
        ...

    def raw_headers(self) -> list[tuple[bytes, bytes]]:
        """The header fields as they came, read on every answer without making `headers` (deprecation notices)."""
        ...

    def content_codings(self) -> list[bytes]:
        """The values of the response's Content-Encoding fields, in order."""
        ...

    async def whole_body(self) -> bytes | None:
        """The raw body in one piece when the library holds all of it already, else ``None`` (read `aiter_raw`)."""
        ...

    def aiter_raw(self) -> AsyncIterator[bytes]:
        """The body's chunks, as they arrive, still content-encoded."""
        ...

    async def aclose(self) -> None:
        """Release the connection (to the pool when the body was read to its end)."""
        ...

    def complete(self, content: bytes) -> httpx.Response:
        """The finished `httpx.Response` carrying the decoded ``content``; after `aclose`."""
        ...


class AsyncTransport(Protocol):
    """What the send loop needs from an HTTP library."""

    @property
    def library(self) -> str:
        """The library that sends, as the User-Agent names it: ``name/version`` (``httpx/0.28.1``)."""
        ...

    @property
    def default_headers(self) -> httpx.Headers:
        """Headers the library's own client was configured with; the SDK's own win over them."""
        ...

    @property
    def is_closed(self) -> bool:
        """Whether the underlying client was closed."""
        ...

    def callers_part(self, called_by: tuple[str, str] | None) -> str | None:
        """What of the caller's the library ran, as an error names it (``"an event hook or the transport of
        http_client"``), from ``called_by``, the (top-level package, function) of the frame that called it; ``None``
        for the SDK's own."""
        ...

    async def send(self, exchange: Exchange) -> AsyncResponseStream:
        """Send ``exchange.request`` within ``exchange.timeouts``; return once the status and headers have arrived.

        Every socket operation of this send and of reading its body is held to ``exchange.deadline`` where the
        library allows. The code that touches the connection, below any of the caller's, reports through the
        exchange (`_core.exchange.Exchange`); with no report, the send loop takes it that the service may have acted.
        """
        ...

    async def aclose(self) -> None:
        """Close the underlying client and its connections."""
        ...
