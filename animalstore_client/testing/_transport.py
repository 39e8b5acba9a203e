"""httpx transports that hand requests to a `FakeAnimalStore` in-process."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, cast

import httpx

if TYPE_CHECKING:
    from ._messages import FakeResponse
    from ._store import FakeAnimalStore

__all__ = ["AsyncFakeTransport", "FakeTransport"]


def _parts(request: httpx.Request) -> tuple[str, str, str, dict[str, str], bytes]:
    headers = {name.lower(): value for name, value in request.headers.items()}
    return request.method, request.url.path, request.url.query.decode("ascii"), headers, request.content


def _read_timeout(request: httpx.Request) -> float | None:
    timeout: object = request.extensions.get("timeout")
    value = cast("dict[str, object]", timeout).get("read") if isinstance(timeout, dict) else None
    return float(value) if isinstance(value, (int, float)) else None


def _to_httpx(response: FakeResponse, request: httpx.Request) -> httpx.Response:
    return httpx.Response(response.status, headers=response.headers, content=response.content, request=request)


def _answer(store: FakeAnimalStore, request: httpx.Request) -> httpx.Response:
    """The store's answer, or the httpx exception a real network gives for an injected connection fault."""
    response, fault = store.exchange(*_parts(request))
    if fault == "refused":
        raise httpx.ConnectError("FakeAnimalStore: connection refused (injected)", request=request)
    if fault == "reset":
        raise httpx.ReadError("FakeAnimalStore: connection reset by peer (injected)", request=request)
    if fault == "timeout":
        raise httpx.ReadTimeout("FakeAnimalStore: the answer did not come in time (injected)", request=request)
    assert response is not None
    return _to_httpx(response, request)


class FakeTransport(httpx.BaseTransport):
    """A sync transport answering from a `FakeAnimalStore`; no sockets are opened."""

    def __init__(self, store: FakeAnimalStore) -> None:
        self.store = store

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        """Answer ``request`` from the store, after any injected delay."""
        request.read()
        # Served at once, answered late: a slow answer may follow a stored pet.
        response = _answer(self.store, request)
        delay = self.store.next_delay()
        limit = _read_timeout(request)
        if delay:
            # A slower answer than the read timeout allows is a timeout, as
            # it would be over a socket.
            time.sleep(min(delay, limit) if limit is not None else delay)
            if limit is not None and delay > limit:
                raise httpx.ReadTimeout("FakeAnimalStore: answer delayed past the read timeout", request=request)
        return response


class AsyncFakeTransport(httpx.AsyncBaseTransport):
    """An async transport answering from a `FakeAnimalStore`; no sockets are opened."""

    def __init__(self, store: FakeAnimalStore) -> None:
        self.store = store

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        """Answer ``request`` from the store, after any injected delay.

        Each request first lets the other tasks run, as a socket's wait would: concurrent calls on the
        in-process store interleave attempt by attempt, as they would over a network, rather than each
        running all its retries first.
        """
        import anyio

        await anyio.sleep(0)
        await request.aread()
        response = _answer(self.store, request)
        delay = self.store.next_delay()
        limit = _read_timeout(request)
        if delay:
            await anyio.sleep(min(delay, limit) if limit is not None else delay)
            if limit is not None and delay > limit:
                raise httpx.ReadTimeout("FakeAnimalStore: answer delayed past the read timeout", request=request)
        return response
