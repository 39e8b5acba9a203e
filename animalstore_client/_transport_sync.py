# Generated from _transport_async.py by scripts/unasync.py: do not edit; regenerate with `python scripts/unasync.py`.
"""The seam between the send loop and an HTTP library, and httpx behind it.

A transport sends one `httpx.Request` within the given per-phase timeouts,
never following a redirect, and returns a response stream: the status and
headers at once, then the body as raw (still content-encoded) chunks that the
send loop reads and decodes itself, so that every rule about bodies holds for
every library. It fails only with these httpx exceptions, which the retry
policy tells apart:

- nothing was sent: ``ConnectError``, ``ConnectTimeout``, ``PoolTimeout``;
- sent, but no complete answer: ``ReadTimeout``, ``WriteTimeout``,
  ``ReadError``, ``WriteError``, ``RemoteProtocolError`` (any other
  ``TransportError`` counts as this too).

Everything above this seam is the SDK's; everything below belongs to the
library. A new library is one more class with these methods, its response
stream built on `_transport_base` and its failures translated there.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Protocol

import httpx

from ._body import codings_in
from ._deadline import Timeouts
from ._httpx_private import finished_response
from ._transport_base import LibraryStream, callers_part_in_httpx

__all__ = ["HttpxTransport", "ResponseStream", "Transport"]

# Passed as auth= on every send through a caller's client, so that auth it was given (at construction, which
# `_backends` refuses, or set on it later) never replaces the SDK's Bearer key: httpx reads auth=None as "the
# client's own", and its base Auth sends each request as it is.
_NO_AUTH = httpx.Auth()


class ResponseStream(Protocol):
    """A response whose body is still to be read."""

    status_code: int
    content: bytes | None
    """The decoded body when the library already holds it (a mock transport), else ``None``."""

    @property
    def headers(self) -> httpx.Headers:
        """The response's headers, as they came (converted when first read: a typed call may never read them)."""
        ...

    def content_codings(self) -> list[bytes]:
        """The values of the response's Content-Encoding fields, in order."""
        ...

    def whole_body(self) -> bytes | None:
        """The raw body in one piece when the library holds all of it already, else ``None`` (read `iter_raw`)."""
        ...

    def iter_raw(self) -> Iterator[bytes]:
        """The body's chunks, as they arrive, still content-encoded."""
        ...

    def close(self) -> None:
        """Release the connection (to the pool when the body was read to its end)."""
        ...

    def complete(self, content: bytes) -> httpx.Response:
        """The finished `httpx.Response` carrying the decoded ``content``; after `close`."""
        ...


class Transport(Protocol):
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
        """What of the caller's the library ran, as an error names it, from the frame that called it.

        ``called_by`` is that frame's (top-level package, function): a
        `_attempts.CallersCode`'s. ``"an event hook of http_client"``, say;
        ``None`` when the SDK made the library's client (no ``http_client`` to name).
        """
        ...

    def send(self, request: httpx.Request, timeouts: Timeouts, deadline: float | None) -> ResponseStream:
        """Send ``request``; return once the status and headers have arrived.

        ``deadline`` (``time.monotonic()`` seconds, or ``None``) is when the
        call must end: every socket operation of this send and of reading its
        body is held to it where the library allows.
        """
        ...

    def close(self) -> None:
        """Close the underlying client and its connections."""
        ...


class _HttpxStream(LibraryStream[httpx.Response]):
    __slots__ = ()

    def __init__(self, response: httpx.Response) -> None:
        # httpx times the response itself (its elapsed), so nothing is started here.
        super().__init__(response, response.status_code, response.request, 0.0)
        self._headers = response.headers
        # Mock transports (respx, httpx.MockTransport, the fake store) return
        # a response that httpx has already read and decoded.
        self.content = response.content if response.is_stream_consumed else None

    def content_codings(self) -> list[bytes]:
        return codings_in(self._response.headers.raw)

    def iter_raw(self) -> Iterator[bytes]:
        return self._response.iter_raw()

    def close(self) -> None:
        self._response.close()

    def complete(self, content: bytes) -> httpx.Response:
        original = self._response
        if content is self.content:
            return original
        response = finished_response(
            original.status_code, original.headers, content, original.request, original.extensions
        )
        response.elapsed = original.elapsed
        return response


class HttpxTransport:
    """The seam over a caller's `httpx.Client` (and the testing kit's in-process one).

    The client is used as it is: its pool, proxies and trust settings are the
    caller's, and the deadline is kept between reads of the body only.
    """

    __slots__ = ("_client",)
    library = f"httpx/{httpx.__version__}"

    def __init__(self, client: httpx.Client) -> None:
        self._client = client

    @property
    def default_headers(self) -> httpx.Headers:
        """The httpx client's default headers."""
        return self._client.headers

    @property
    def is_closed(self) -> bool:
        """Whether the httpx client was closed."""
        return self._client.is_closed

    def callers_part(self, called_by: tuple[str, str] | None) -> str:
        """An event hook of the httpx client, or its transport (a ``MockTransport``'s handler among them)."""
        return callers_part_in_httpx("httpx", called_by)

    def send(self, request: httpx.Request, timeouts: Timeouts, deadline: float | None) -> _HttpxStream:
        """Send through the httpx client, streaming the body."""
        # httpx reads the timeouts from the request, ahead of the client's own.
        request.extensions["timeout"] = timeouts
        # Whatever the client's own settings: no auth of its own, no redirect followed, on every send.
        response = self._client.send(request, stream=True, auth=_NO_AUTH, follow_redirects=False)
        return _HttpxStream(response)

    def close(self) -> None:
        """Close the httpx client."""
        self._client.close()
