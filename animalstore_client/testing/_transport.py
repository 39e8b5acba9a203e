"""httpx transports that hand requests to a `FakeAnimalStore` in-process.

They report each step of the exchange as a real connection would, through
the request's ``trace`` extension with httpcore's event names (connecting,
writing, answered): a client over them knows, as over a socket, that an
injected refusal wrote nothing and that a reset came after the request was
written, so its retries are the ones a real network gives.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, cast

import httpcore
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


def _steps(request: httpx.Request) -> list[tuple[str, dict[str, Any]]]:
    """What a connection reports before the store reads ``request``: httpcore's events, up to the whole request."""
    url = request.url
    core = httpcore.Request(
        request.method.encode("ascii"),
        httpcore.URL(scheme=url.raw_scheme, host=url.raw_host, port=url.port, target=url.raw_path),
        headers=request.headers.raw,
    )
    info: dict[str, Any] = {"request": core}
    return [
        ("connection.connect_tcp.complete", {}),
        ("http11.send_request_headers.started", info),
        ("http11.send_request_body.started", info),
        ("http11.send_request_body.complete", info),
    ]


_ANSWERED = "http11.receive_response_headers.complete"


def _trace(request: httpx.Request) -> Callable[..., Any] | None:
    trace: object = request.extensions.get("trace")
    return cast("Callable[..., Any]", trace) if callable(trace) else None


def _fault(request: httpx.Request, fault: str | None) -> None:
    """Raise what a real network gives for an injected connection fault; the store has acted unless refused."""
    if fault == "refused":
        raise httpx.ConnectError("FakeAnimalStore: connection refused (injected)", request=request)
    if fault == "reset":
        raise httpx.ReadError("FakeAnimalStore: connection reset by peer (injected)", request=request)
    if fault == "timeout":
        raise httpx.ReadTimeout("FakeAnimalStore: the answer did not come in time (injected)", request=request)


class FakeTransport(httpx.BaseTransport):
    """A sync transport answering from a `FakeAnimalStore`; no sockets are opened."""

    def __init__(self, store: FakeAnimalStore) -> None:
        self.store = store

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        """Answer ``request`` from the store, after any injected delay, reporting each step as a connection does."""
        request.read()
        trace = _trace(request)
        fault = self.store.connection_fault(request.method)
        if trace is not None:
            trace("connection.connect_tcp.started", {})
        if fault == "refused":
            _fault(request, fault)  # nothing written
        if trace is not None:
            for event, info in _steps(request):
                trace(event, info)
        # Served at once, answered late: a slow answer may follow a stored pet.
        response = _to_httpx(self.store.serve_request(*_parts(request), fault), request)
        _fault(request, fault)
        delay = self.store.next_delay()
        limit = _read_timeout(request)
        if delay:
            # A slower answer than the read timeout allows is a timeout, as
            # it would be over a socket.
            time.sleep(min(delay, limit) if limit is not None else delay)
            if limit is not None and delay > limit:
                raise httpx.ReadTimeout("FakeAnimalStore: answer delayed past the read timeout", request=request)
        if trace is not None:
            trace(_ANSWERED, {})
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
        trace = _trace(request)
        fault = self.store.connection_fault(request.method)
        if trace is not None:
            await trace("connection.connect_tcp.started", {})
        if fault == "refused":
            _fault(request, fault)  # nothing written
        if trace is not None:
            for event, info in _steps(request):
                await trace(event, info)
        response = _to_httpx(self.store.serve_request(*_parts(request), fault), request)
        _fault(request, fault)
        delay = self.store.next_delay()
        limit = _read_timeout(request)
        if delay:
            await anyio.sleep(min(delay, limit) if limit is not None else delay)
            if limit is not None and delay > limit:
                raise httpx.ReadTimeout("FakeAnimalStore: answer delayed past the read timeout", request=request)
        if trace is not None:
            await trace(_ANSWERED, {})
        return response
