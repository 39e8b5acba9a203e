"""Every construction of an httpx object that goes around its public constructor, in one guarded module.

httpx is the SDK's vocabulary (requests and responses shown to middleware,
raw views and exceptions), and its public constructors cost more than the
call they describe on a fast backend: a request is copied rather than built
(`copy_request`), and a response is made with the body the SDK decoded
already (`finished_response`, `headers_from_library`). Each private name
written is checked when this module is imported (`require_private`), and
``docs/architecture.md`` lists them with their reasons.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Iterable, Iterator
from datetime import timedelta
from typing import Any

import httpx

__all__ = ["copy_request", "finished_response", "headers_from_library", "require_private", "response_from_library"]


def copy_request(template: httpx.Request, extensions: dict[str, Any]) -> httpx.Request:
    """A request like ``template`` with headers and extensions of its own; the body (bytes) is shared.

    httpx builds a Request in ~10 µs, this copy takes under one.
    """
    request: httpx.Request = object.__new__(httpx.Request)
    request.__dict__.update(template.__dict__)
    request.headers = template.headers.copy()
    request.extensions = extensions
    return request


def require_private(owner: object, name: str, why: str) -> None:
    """Fail loudly, naming it, when a library no longer has a private attribute the SDK writes.

    Writing an attribute that is gone would not fail: it would quietly make a
    new one, and the SDK would hand out empty headers or bodies.
    """
    if not hasattr(owner, name):
        raise ImportError(
            f"animalstore_client needs {type(owner).__module__}.{type(owner).__name__}.{name} ({why}), "
            f"which httpx {httpx.__version__} no longer has: install the httpx release this SDK was tested "
            "with, or a newer animalstore-client"
        )


require_private(httpx.Response(200, content=b""), "_content", "a finished response's body, set as read() sets it")
require_private(httpx.Headers(), "_list", "headers filled from a library's raw pairs")


def _check_copy() -> None:
    """Fail loudly if `copy_request` no longer makes a request equal to its template (httpx moved its state)."""
    template = httpx.Request("POST", "http://h/v1/pets", headers={"A": "1"}, content=b"{}", extensions={"x": 1})
    copy = copy_request(template, {"y": 2})
    copy.headers["B"] = "2"
    if (
        copy.method != "POST"
        or copy.url != template.url
        or copy.content != b"{}"
        or copy.extensions != {"y": 2}
        or "B" in template.headers
        or copy.headers["A"] != "1"
    ):
        raise ImportError(
            f"animalstore_client copies httpx requests through their __dict__ (copy_request), and httpx "
            f"{httpx.__version__} keeps a request's state elsewhere: install the httpx release this SDK was tested "
            "with, or a newer animalstore-client"
        )


_check_copy()


def finished_response(
    status_code: int,
    headers: httpx.Headers,
    content: bytes,
    request: httpx.Request,
    extensions: dict[str, Any],
) -> httpx.Response:
    """An `httpx.Response` holding the decoded ``content`` under the server's own ``headers``.

    Given ``content``, httpx would run it through its decoders (again, for a
    body the SDK already decoded) on a path that costs a fifth of a fast
    backend's whole call; so the response is made empty and the body set as
    httpx's own ``read()`` sets it. ``tests/test_seam.py`` checks the result
    behaves as a read response (``content``, ``text``, ``json()``).
    """
    response = httpx.Response(status_code, request=request, extensions=extensions, stream=_DONE)
    response.headers = headers  # the transport's own object: no copy, and its encoding is known already
    response._content = content  # noqa: SLF001  # pyright: ignore[reportPrivateUsage]  # as read() sets it
    response.is_stream_consumed = True
    response.is_closed = True
    return response


def headers_from_library(pairs: Iterable[tuple[bytes, bytes]]) -> httpx.Headers:
    """An `httpx.Headers` holding a library's raw header pairs as they came.

    ``httpx.Headers(pairs)`` normalises and type-checks each name and value
    that arrived as bytes already; this fills httpx's own list directly
    (tests/test_seam.py checks the result against ``httpx.Headers(pairs)``).
    """
    headers = httpx.Headers()
    headers._list = [(name, name.lower(), value) for name, value in pairs]  # noqa: SLF001  # pyright: ignore[reportPrivateUsage]
    return headers


def response_from_library(
    status_code: int, headers: httpx.Headers, content: bytes, request: httpx.Request, reason: str | None, started: float
) -> httpx.Response:
    """`finished_response` for a library other than httpx: HTTP/1.1, its reason phrase, and the time taken."""
    extensions: dict[str, Any] = {
        "http_version": b"HTTP/1.1",
        "reason_phrase": (reason or "").encode("latin-1", "replace"),
    }
    response = finished_response(status_code, headers, content, request, extensions)
    response.elapsed = timedelta(seconds=time.monotonic() - started)
    return response


class _Done(httpx.SyncByteStream, httpx.AsyncByteStream):
    """The stream of a response whose body the SDK has read already."""

    def __iter__(self) -> Iterator[bytes]:
        return iter(())

    async def __aiter__(self) -> AsyncIterator[bytes]:
        return
        yield b""


_DONE = _Done()
