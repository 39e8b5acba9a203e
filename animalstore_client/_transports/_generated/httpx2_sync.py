# Generated from _transports/httpx2_async.py by scripts/unasync.py: do not edit; regenerate with `python scripts/unasync.py`.
"""The seam over a caller's `httpx2.Client`: httpx2 sends, and the SDK's own types stay httpx's.

httpx2 is httpx under new names: each request is copied into httpx2's class as it leaves, each response's head
and chunks read back, each failure translated to the httpx class of the same name. Imported only when such a
client is passed (the ``[httpx2]`` extra, Python 3.11+); ``backend="httpx2"`` alone is the SDK's own pool over
httpcore2 (`_transports.pool._generated.httpcore2.httpcore2_sync`).
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import TYPE_CHECKING

import httpx
import httpx2

from animalstore_client._core.body import codings_in
from animalstore_client._core.exchange import ClientRuleBroken, Exchange, composed_trace_sync
from animalstore_client._core.failures import contradicts_the_exchange, raised_by_callers_code
from animalstore_client._core.httpx_private import headers_from_library
from animalstore_client._transports.shared import (
    callers_part_in_httpx,
    request_hooks_in_httpx,
    same_named,
    translated,
)
from animalstore_client._transports._generated.stream_sync import LibraryStream

__all__ = ["Httpx2Transport"]

# As httpx's (`_transports.httpx_sync._NO_AUTH`): httpx2 too reads auth=None as "the client's own".
_NO_AUTH = httpx2.Auth()

_HTTPX2_FAILURES = same_named(httpx2)  # each of its failures to httpx's class of the same name


class _Httpx2Stream(LibraryStream[httpx2.Response]):
    """An httpx2 response whose body is still to be read."""

    __slots__ = ()

    def __init__(self, response: httpx2.Response, request: httpx.Request, started: float) -> None:
        super().__init__(response, response.status_code, request, started)
        # A mock transport (httpx2.MockTransport) answers with a body httpx2 has already read and decoded.
        self.content = response.content if response.is_stream_consumed else None

    def _library_headers(self) -> httpx.Headers:
        return headers_from_library(self._response.headers.raw)

    def content_codings(self) -> list[bytes]:
        return codings_in(self._response.headers.raw)

    def _reason(self) -> str | None:
        return self._response.reason_phrase

    def iter_raw(self) -> Iterator[bytes]:
        return self._translated(self._response.iter_raw(), (httpx2.TransportError,), _HTTPX2_FAILURES)

    def close(self) -> None:
        self._response.close()


class Httpx2Transport:
    """The seam over a caller's `httpx2.Client`, used as it is (the deadline kept between reads of the body)."""

    __slots__ = ("_client",)
    library = f"httpx2/{httpx2.__version__}"

    def __init__(self, client: httpx2.Client) -> None:
        self._client = client

    @property
    def default_headers(self) -> httpx.Headers:
        """The httpx2 client's default headers, as httpx's."""
        return headers_from_library(self._client.headers.raw)

    @property
    def is_closed(self) -> bool:
        """Whether the httpx2 client was closed."""
        return self._client.is_closed

    def callers_part(self, called_by: tuple[str, str] | None) -> str:
        """An event hook of the httpx2 client, or its transport (an ``httpx2.MockTransport``'s handler among them)."""
        return callers_part_in_httpx("httpx2", called_by)

    def send(self, exchange: Exchange) -> _Httpx2Stream:
        """Send through the httpx2 client, streaming the body."""
        # httpx2 reads the timeouts from the request, ahead of the client's own.
        request = exchange.request
        outgoing = httpx2.Request(
            request.method,
            str(request.url),
            headers=request.headers.raw,
            content=request.content,
            # httpcore2, under the client's own transport, reports each step to the attempt's exchange.
            extensions={
                "timeout": exchange.timeouts,
                "trace": composed_trace_sync(exchange, request.extensions.get("trace")),
            },
        )
        started = time.monotonic()
        try:
            response = self._client.send(outgoing, stream=True, auth=_NO_AUTH, follow_redirects=False)
        except ClientRuleBroken as exc:  # a hook of the client's changed the URL or the Host: named, not "http_client"
            raise exc.naming(request_hooks_in_httpx(self._client, exc)) from None
        except httpx2.TransportError as exc:
            failure = translated(exc, request, _HTTPX2_FAILURES)
            if contradicts_the_exchange(exchange, failure) and raised_by_callers_code(exc):
                raise  # a hook's own call failing once the request was written: `unknown_failure` judges
            raise failure from exc
        return _Httpx2Stream(response, request, started)

    def close(self) -> None:
        """Close the httpx2 client."""
        self._client.close()


if TYPE_CHECKING:
    from animalstore_client._transports._generated.seam_sync import Transport

    # The type checkers hold the class to the seam: a method missing or of another type fails them.
    _SEAM: type[Transport] = Httpx2Transport
