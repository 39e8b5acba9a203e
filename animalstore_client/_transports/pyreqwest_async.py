"""The transport seam over a `pyreqwest.client.Client` (``backend="pyreqwest"``); `_transports.pyreqwest` says how."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING

import httpx
import pyreqwest.client
import pyreqwest.response

from animalstore_client._core.exchange import Exchange
from animalstore_client._transports.pyreqwest import (
    FAILURES,
    LIBRARY,
    PyreqwestHead,
    Settings,
    forked_error,
    library_failure,
    refusal,
    released,
    request_builder,
)
from animalstore_client._transports.shared import NO_HEADERS, no_callers_code

if TYPE_CHECKING:
    import pyreqwest.request

__all__ = ["AsyncPyreqwestTransport"]


class _AsyncPyreqwestStream(PyreqwestHead[pyreqwest.response.Response]):
    """A pyreqwest response whose body is still to be read."""

    __slots__ = ("_opened",)

    def __init__(
        self,
        opened: pyreqwest.request.StreamRequest,
        response: pyreqwest.response.Response,
        request: httpx.Request,
        started: float,
    ) -> None:
        super().__init__(response, response.status, request, started)
        self._opened = opened
        self._raw = None

    async def whole_body(self) -> bytes | None:
        if not self._read_ahead_whole():
            return None
        try:
            return bytes(await self._response.body_reader.bytes())
        except FAILURES as exc:
            failure = library_failure(exc, self._request)
            raise failure from failure.__cause__

    async def aiter_raw(self) -> AsyncIterator[bytes]:
        read = self._response.body_reader.read_chunk
        try:
            while (chunk := await read()) is not None:
                yield bytes(chunk)
        except FAILURES as exc:
            failure = library_failure(exc, self._request)
            raise failure from failure.__cause__

    async def aclose(self) -> None:
        # Read to the end, the connection goes back to the pool; cut short, hyper drops it.
        await self._opened.__aexit__(None, None, None)


class AsyncPyreqwestTransport:
    """The seam over the SDK's own `pyreqwest.client.Client`s, built on first use (a caller's is refused)."""

    __slots__ = ("_settings",)
    library = LIBRARY
    refusal = staticmethod(refusal)

    def __init__(self, client: None = None, *, verify: bool | str = True) -> None:
        self._settings = Settings(verify)

    def _new(self, proxy: str | None, key: tuple[float | None, ...]) -> pyreqwest.client.Client:
        builder = pyreqwest.client.ClientBuilder()
        self._settings.configure(builder, proxy, key)
        return builder.build()

    default_headers = NO_HEADERS
    callers_part = staticmethod(no_callers_code)

    @property
    def is_closed(self) -> bool:
        """Whether the SDK closed this transport."""
        return self._settings.closed

    async def send(self, exchange: Exchange) -> _AsyncPyreqwestStream:
        """Send through the library client; return once the status and headers have arrived."""
        request = exchange.request
        opened = request_builder(self._settings, self._new, request, exchange.deadline).build_streamed()
        started = time.monotonic()
        try:
            response = await opened.__aenter__()
        except FAILURES as exc:
            failure = library_failure(exc, request, exchange)
            raise failure from failure.__cause__
        except RuntimeError as exc:
            if "fork" not in str(exc):
                raise
            raise forked_error(f"pyreqwest: {exc}") from exc
        return _AsyncPyreqwestStream(opened, response, request, started)

    async def aclose(self) -> None:
        """Close the library clients the SDK built."""
        clients = self._settings.close()
        for client in clients:
            await client.close()
        released(clients)

    def abandon(self) -> None:
        """Let go of the library clients without calling them: dropped, pyreqwest's runtime closes their connections.

        For the transport of an event loop that has ended, where ``aclose()`` can no longer be awaited.
        """
        released(self._settings.close())


if TYPE_CHECKING:
    from animalstore_client._transports.seam_async import AsyncTransport

    # The type checkers hold the class to the seam: a method missing or of another type fails them.
    _SEAM: type[AsyncTransport] = AsyncPyreqwestTransport
