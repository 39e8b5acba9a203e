"""The transport over a caller's `httpx.AsyncClient` (and the testing kit's in-process one)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import TYPE_CHECKING

import httpx

from animalstore_client._core.body import codings_in
from animalstore_client._core.exchange import ClientRuleBroken, Exchange, composed_trace_async
from animalstore_client._core.httpx_private import finished_response
from animalstore_client._transports.shared import callers_part_in_httpx, request_hooks_in_httpx
from animalstore_client._transports.stream_async import AsyncLibraryStream

__all__ = ["AsyncHttpxTransport"]

# Passed as auth= on every send through a caller's client, so that auth it was given (at construction, which
# `_clients.backends` refuses, or set on it later) never replaces the SDK's Bearer key: httpx reads auth=None as "the
# client's own", and its base Auth sends each request as it is.
_NO_AUTH = httpx.Auth()


class _AsyncHttpxStream(AsyncLibraryStream[httpx.Response]):
    """An httpx response whose body is still to be read (or was read already, by a mock)."""

    __slots__ = ()

    def __init__(self, response: httpx.Response) -> None:
        # httpx times the response itself (its elapsed), so nothing is started here.
        super().__init__(response, response.status_code, response.request, 0.0)
        self._headers = response.headers
        # Mock transports (respx, httpx.MockTransport, the fake store) answer with a body httpx read and decoded.
        self.content = response.content if response.is_stream_consumed else None

    def content_codings(self) -> list[bytes]:
        return codings_in(self._response.headers.raw)

    def aiter_raw(self) -> AsyncIterator[bytes]:
        return self._response.aiter_raw()

    async def aclose(self) -> None:
        await self._response.aclose()

    def complete(self, content: bytes) -> httpx.Response:
        original = self._response
        if content is self.content:
            return original
        response = finished_response(
            original.status_code, original.headers, content, original.request, original.extensions
        )
        response.elapsed = original.elapsed
        return response


class AsyncHttpxTransport:
    """The seam over a caller's `httpx.AsyncClient`, used as it is (the deadline kept between reads of the body)."""

    __slots__ = ("_client",)
    library = f"httpx/{httpx.__version__}"

    def __init__(self, client: httpx.AsyncClient) -> None:
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

    async def send(self, exchange: Exchange) -> _AsyncHttpxStream:
        """Send through the httpx client, streaming the body."""
        # httpx reads the timeouts from the request, ahead of the client's; httpcore reports to the exchange.
        request = exchange.request
        extensions = request.extensions
        extensions["timeout"] = exchange.timeouts
        carried = extensions.get("trace")
        extensions["trace"] = composed_trace_async(exchange, carried)
        try:
            # Whatever the client's own settings: no auth of its own, no redirect followed, on every send.
            response = await self._client.send(request, stream=True, auth=_NO_AUTH, follow_redirects=False)
        except ClientRuleBroken as exc:  # a hook of the client's changed the URL or the Host: named, not "http_client"
            raise exc.naming(request_hooks_in_httpx(self._client, exc)) from None
        finally:
            # The request handed back (exc.request, response.request) carries the caller's own trace again, not
            # this attempt's checks of the deadline and the Host; the body's steps, read later, report nothing.
            if carried is None:
                del extensions["trace"]
            else:
                extensions["trace"] = carried
        return _AsyncHttpxStream(response)

    async def aclose(self) -> None:
        """Close the httpx client."""
        await self._client.aclose()


if TYPE_CHECKING:
    from animalstore_client._transports.seam_async import AsyncTransport

    # The type checkers hold the class to the seam: a method missing or of another type fails them.
    _SEAM: type[AsyncTransport] = AsyncHttpxTransport
