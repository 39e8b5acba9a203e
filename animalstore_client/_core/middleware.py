"""Middleware: the caller's code around each attempt, inside the retry loop, on every backend, the first outermost.

The rules a middleware must keep are checked here (docs/architecture.md, "Guarantees above the seam"; the user's
side: docs/production.md). What ``call_next`` raised passes through unchanged, retried as without middleware.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Protocol, cast

import httpx

from animalstore_client._core.attempts import ATTEMPT, CALL_ID, OPERATION
from animalstore_client._core.exceptions import ClientValidationError, MiddlewareError
from animalstore_client._core.failures import callers_text
from animalstore_client._core.validation import CLIENT_HEADERS

if TYPE_CHECKING:
    from animalstore_client._core.attempts import Attempts

__all__ = [
    "AsyncCallNext",
    "AsyncMiddleware",
    "AsyncSend",
    "AttemptInfo",
    "AttemptState",
    "CallNext",
    "Middleware",
    "Send",
    "attempt_info",
    "awaited_async",
    "awaited_sync",
    "called_twice",
    "check_middleware",
    "check_middleware_async",
    "check_middleware_sync",
    "checked_request",
    "checked_response",
    "wrapped_error",
]

Send = Callable[[httpx.Request], httpx.Response]
"""The innermost step of a sync attempt: send, read the body, return the finished response."""
AsyncSend = Callable[[httpx.Request], Awaitable[httpx.Response]]
"""The innermost step of an async attempt."""

MAX_MIDDLEWARE = 100
"""The most middleware one client takes: a longer list is a mistake (a list grown in a loop), not a design."""


class AttemptInfo:
    """Which attempt of which call a request is: what `attempt_info` reads for a middleware.

    Read-only; equal when all three are. The request carries the same values
    in ``request.extensions`` as ``"animalstore.operation"``,
    ``"animalstore.attempt"`` and ``"animalstore.call_id"``; this is their
    typed view.
    """

    __slots__ = ("_attempt", "_call_id", "_operation")

    def __init__(self, *, operation: str, attempt: int, call_id: str) -> None:
        self._operation = operation
        self._attempt = attempt
        self._call_id = call_id

    @property
    def operation(self) -> str:
        """The client method called: ``"list_pets"``, ``"create_pet"``, ``"get_pet"``, or ``"request"``."""
        return self._operation

    @property
    def attempt(self) -> int:
        """The attempt's number: 1 for the first, 2 for the first retry..."""
        return self._attempt

    @property
    def call_id(self) -> str:
        """An id (16 hex digits) every attempt of one call shares, and no other: a request id that survives retries."""
        return self._call_id

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, AttemptInfo):
            return NotImplemented
        return (self._operation, self._attempt, self._call_id) == (other._operation, other._attempt, other._call_id)

    def __hash__(self) -> int:
        return hash((self._operation, self._attempt, self._call_id))

    def __repr__(self) -> str:
        return f"AttemptInfo(operation={self._operation!r}, attempt={self._attempt!r}, call_id={self._call_id!r})"


def attempt_info(request: httpx.Request) -> AttemptInfo:
    """Which attempt of which call ``request`` is, typed: for a middleware, given the attempt's request.

    ```python
    import httpx

    from animalstore_client import AnimalStoreClient, CallNext, attempt_info


    def tag_attempts(request: httpx.Request, call_next: CallNext) -> httpx.Response:
        info = attempt_info(request)
        request.headers["X-Attempt"] = f"{info.operation}/{info.attempt}"
        request.headers["X-Call-Id"] = info.call_id
        return call_next(request)


    with AnimalStoreClient(middleware=[tag_attempts]) as client:
        client.list_pets()
    ```

    Raises:
        ClientValidationError: ``request`` was not built by a client for an attempt (a request of your
            own, or a new one an outer middleware passed to ``call_next`` in place of the one it got).
    """
    extensions = request.extensions
    try:
        operation, attempt, call_id = extensions[OPERATION], extensions[ATTEMPT], extensions[CALL_ID]
    except KeyError:
        raise ClientValidationError(
            "attempt_info(request) reads the request of an attempt, which a client passes to its middleware: this "
            f"request has no {ATTEMPT!r} extension (a middleware that passes call_next a new request must copy "
            "request.extensions to it)",
            argument="request",
            rule="an attempt's request, as a client passes it to middleware",
        ) from None  # no value: the request may carry the key
    return AttemptInfo(operation=operation, attempt=attempt, call_id=call_id)


class CallNext(Protocol):
    """What a sync `Middleware` calls to go on: the next middleware, or the send itself."""

    def __call__(self, request: httpx.Request, /) -> httpx.Response:
        """Send ``request`` (through the middleware after this one) and return the read response."""
        ...


class AsyncCallNext(Protocol):
    """What an `AsyncMiddleware` awaits to go on: the next middleware, or the send itself."""

    def __call__(self, request: httpx.Request, /) -> Awaitable[httpx.Response]:
        """Send ``request`` (through the middleware after this one); await it for the read response."""
        ...


class Middleware(Protocol):
    """A function run around each attempt of `AnimalStoreClient`: ``(request, call_next) -> response``.

    It runs once per attempt, inside the retry loop, after the SDK built and
    checked the request and before any HTTP library sees it;
    ``attempt_info(request)`` says which attempt (an `AttemptInfo`: the
    operation, ``"list_pets"``, ``"create_pet"``, ``"get_pet"`` or
    ``"request"``; the attempt number, 1 for the first; and an id the
    attempts of one call share, a request id that survives retries). It may
    change headers (not those the client sets: ``Authorization``, ``Host``,
    ``Content-Length``, ``Transfer-Encoding``...), record, return a response
    of its own, or raise.

    ```python
    import httpx

    from animalstore_client import AnimalStoreClient, CallNext, attempt_info


    def tag_attempts(request: httpx.Request, call_next: CallNext) -> httpx.Response:
        request.headers["X-Attempt"] = str(attempt_info(request).attempt)
        return call_next(request)


    client = AnimalStoreClient(middleware=[tag_attempts])
    ```
    """

    def __call__(self, request: httpx.Request, call_next: CallNext, /) -> httpx.Response:
        """Handle one attempt: usually ``return call_next(request)``, with work before or after."""
        ...


class AsyncMiddleware(Protocol):
    """A coroutine function run around each attempt of `AsyncAnimalStoreClient`; ``call_next`` is awaited.

    The same rules as `Middleware`.

    ```python
    import httpx

    from animalstore_client import AsyncAnimalStoreClient, AsyncCallNext, attempt_info


    async def tag_attempts(request: httpx.Request, call_next: AsyncCallNext) -> httpx.Response:
        request.headers["X-Attempt"] = str(attempt_info(request).attempt)
        return await call_next(request)


    client = AsyncAnimalStoreClient(middleware=[tag_attempts])
    ```
    """

    def __call__(self, request: httpx.Request, call_next: AsyncCallNext, /) -> Awaitable[httpx.Response]:
        """Handle one attempt: usually ``return await call_next(request)``, with work before or after."""
        ...


def _name(middleware: object) -> str:
    name = getattr(middleware, "__qualname__", None) or type(middleware).__qualname__
    return str(name)


def _is_async(middleware: object) -> bool:
    call = middleware if inspect.isfunction(middleware) or inspect.ismethod(middleware) else None
    if call is None:
        call = getattr(middleware, "__call__", None)  # noqa: B004  # a callable object's own method
    return inspect.iscoroutinefunction(middleware) or inspect.iscoroutinefunction(call)


def check_middleware(value: object, *, is_async: bool, argument: str = "middleware") -> tuple[object, ...]:
    """``value`` as a tuple of middleware, or a `ClientValidationError` naming what is wrong."""

    def bad(message: str, rule: str, value: object) -> ClientValidationError:
        return ClientValidationError(message, argument=argument, rule=rule, value=value)

    if value is None:
        return ()
    if callable(value) or isinstance(value, (str, bytes)) or not isinstance(value, Sequence):
        raise bad(
            f"{argument} must be a list or tuple of middleware functions (the order is the order of nesting), "
            f"got {type(value).__name__}: wrap a single one in a list",
            "a list or tuple of callables",
            value,
        )
    value = cast("Sequence[object]", value)
    if len(value) > MAX_MIDDLEWARE:
        raise bad(
            f"{argument} may hold at most {MAX_MIDDLEWARE} middleware, got {len(value)}",
            f"at most {MAX_MIDDLEWARE} items",
            f"a list of {len(value)}",
        )
    items = tuple(value)
    for index, item in enumerate(items):
        if not callable(item):
            raise bad(
                f"{argument}[{index}] must be a callable (request, call_next) -> response, got {item!r}",
                "a list or tuple of callables",
                item,
            )
        if is_async and inspect.isfunction(item) and not _is_async(item):
            raise bad(
                f"{argument}[{index}] ({_name(item)}) is a plain function, but AsyncAnimalStoreClient needs "
                "async middleware: async def ...(request, call_next): return await call_next(request)",
                "coroutine functions for AsyncAnimalStoreClient",
                item,
            )
        if not is_async and _is_async(item):
            raise bad(
                f"{argument}[{index}] ({_name(item)}) is a coroutine function, but AnimalStoreClient is sync: "
                "give it a plain function, or use it with AsyncAnimalStoreClient",
                "sync callables for AnimalStoreClient",
                item,
            )
    return items


def check_middleware_async(value: object) -> tuple[AsyncMiddleware, ...]:
    """``middleware=`` of `AsyncAnimalStoreClient`: checked as its own (coroutine functions)."""
    return cast("tuple[AsyncMiddleware, ...]", check_middleware(value, is_async=True))  # what the check proves


def check_middleware_sync(value: object) -> tuple[Middleware, ...]:
    """``middleware=`` of `AnimalStoreClient`: checked as its own (plain callables)."""
    return cast("tuple[Middleware, ...]", check_middleware(value, is_async=False))  # what the check proves


class AttemptState:
    """One attempt's bookkeeping: what the SDK built (a middleware may change the request in place), what was raised."""

    __slots__ = ("body", "error", "method", "origin", "owned")

    def __init__(self, original: httpx.Request) -> None:
        self.owned = _owned_headers(original)
        self.method = original.method
        self.origin = _origin(original.url)
        self.body = _body(original)
        self.error: BaseException | None = None


_OWNED = frozenset(name.encode("ascii") for name in CLIENT_HEADERS)


def _owned_headers(request: httpx.Request) -> dict[bytes, list[bytes]]:
    """The values of each header only the client sets (`CLIENT_HEADERS`), by lower-case name."""
    owned: dict[bytes, list[bytes]] = {}
    for name, value in request.headers.raw:
        lower = name.lower()
        if lower in _OWNED:
            owned.setdefault(lower, []).append(value)
    return owned


def _changed_header(before: dict[bytes, list[bytes]], after: dict[bytes, list[bytes]]) -> str:
    """The name of a client-set header whose values differ between ``before`` and ``after``, as usually spelled."""
    name = min(name for name in before.keys() | after.keys() if before.get(name) != after.get(name))
    return "-".join(part.capitalize() for part in name.decode("ascii", "replace").split("-"))


def _body(request: httpx.Request) -> bytes | None:
    """The request's body, or ``None`` for a streamed one that was never read (not the SDK's: it sends bytes)."""
    try:
        return request.content
    except httpx.RequestNotRead:
        return None


def _origin(url: httpx.URL) -> str:
    # A user:password@ counts: with one, some libraries would replace the bearer key by Basic auth.
    port = "" if url.port is None else f":{url.port}"
    userinfo = "***@" if url.userinfo else ""
    return f"{url.scheme}://{userinfo}{url.host}{port}"


def called_twice(middleware: object, attempts: Attempts) -> MiddlewareError:
    """The error of a middleware that called ``call_next`` a second time in one attempt (only the first was sent)."""
    return attempts.middleware_error(
        f"middleware {_name(middleware)} called call_next twice in attempt {attempts.count}: the first request was "
        "sent, the second was not. The client retries itself (within its retry budget, and never repeating a "
        "request the service may have acted on): call it once"
    )


def checked_request(state: AttemptState, request: object, middleware: object, attempts: Attempts) -> httpx.Request:
    """The request a middleware passed to ``call_next``, once it keeps the rules; else a `ClientValidationError`."""
    who = f"middleware {_name(middleware)}"
    sent = attempts.count - 1
    earlier = (
        f" on attempt {attempts.count} ({sent} earlier {'one was' if sent == 1 else 'ones were'} sent)" if sent else ""
    )

    def broken(message: str, rule: str) -> ClientValidationError:
        return ClientValidationError(message, argument="middleware", rule=rule, value=middleware)

    if not isinstance(request, httpx.Request):
        raise broken(
            f"{who} passed {type(request).__name__} to call_next, not an httpx.Request",
            "call_next(request) with an httpx.Request",
        )
    owned = _owned_headers(request)
    if owned != state.owned:
        name = _changed_header(state.owned, owned)
        if name == "Authorization":
            why = "the client sets it from its API key; use client.with_options(api_key=...) for another key"
        elif name == "Host":
            why = "it says which server gets the API key; use base_url= for another one"
        else:
            why = "it frames the message or belongs to one hop, so the client (or its HTTP library) sets it"
        raise broken(f"{who} changed the {name} header{earlier}: {why}", f"the {name} header left as the client set it")
    if request.stream is not attempts.request.stream and _body(request) != state.body:
        raise broken(
            f"{who} changed the request body{earlier}: the client frames the body it built; a middleware may "
            "change headers (not those the client sets), the path and the query",
            "the body left as the client built it",
        )
    if request.method != state.method or _origin(request.url) != state.origin:
        raise broken(
            f"{who} changed the request to {request.method} {_origin(request.url)}{earlier}; a middleware may change "
            "headers, the path and the query, but not the method or where the API key is sent "
            f"({state.method} {state.origin})",
            "the method and the origin left as the client built them",
        )
    return request


def wrapped_error(exc: Exception, middleware: object, attempts: Attempts) -> MiddlewareError:
    error = attempts.middleware_error(
        f"middleware {_name(middleware)} raised {type(exc).__name__}{callers_text(exc, attempts.request)}"
    )
    error.__cause__ = exc
    return error


def checked_response(result: object, middleware: object, attempts: Attempts, request: httpx.Request) -> httpx.Response:
    """The middleware's result, once it is a response the SDK can parse."""
    if not isinstance(result, httpx.Response):
        raise attempts.middleware_error(
            f"middleware {_name(middleware)} returned {type(result).__name__}, not an httpx.Response"
        )
    try:
        result.content  # noqa: B018  # a streamed response nobody read would fail later, outside any rule
    except httpx.ResponseNotRead:
        raise attempts.middleware_error(
            f"middleware {_name(middleware)} returned a response whose body was not read: call .read() on it"
        ) from None
    except Exception as exc:  # a Response subclass of the middleware's whose .content raises
        raise wrapped_error(exc, middleware, attempts) from exc
    try:
        result.request  # noqa: B018
    except RuntimeError:  # a response the middleware made itself
        result.request = request
    return result


def awaited_sync(result: object, handler: object, attempts: Attempts) -> object:
    """What a sync middleware returned, as it is (`checked_response` looks at it next)."""
    return result


async def awaited_async(result: object, handler: object, attempts: Attempts) -> object:
    """What an async middleware's call gave, awaited; a `MiddlewareError` if it gave no awaitable."""
    if not inspect.isawaitable(result):
        raise attempts.middleware_error(
            f"middleware {_name(handler)} returned {type(result).__name__}, not an awaitable: "
            "AsyncAnimalStoreClient needs async middleware (async def ...: return await call_next(request))"
        )
    return await result
