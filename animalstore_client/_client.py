"""The two clients: shared configuration, then the sync and the async I/O shells.

Everything that does not touch the network lives in ``_operations`` (requests
and responses) and ``_retry`` (the retry policy); the classes here only send,
sleep and retry, and their operation methods are a build, a send and a parse.
"""

from __future__ import annotations

import copy
import functools
import inspect
import os
import sys
import time
import warnings
import weakref
from collections.abc import Callable, Mapping
from functools import cached_property
from typing import Any, Protocol, TypeVar

import httpx
from typing_extensions import ParamSpec, Self, deprecated

from ._environments import API_KEY_VARIABLE, Environment, normalize_base_url, parse_environment, resolve_base_url
from ._exceptions import AnimalStoreError, APIConnectionError, APITimeoutError, ClientValidationError
from ._logging import configure_from_env, logger
from ._models import Pet, PetStatus
from ._operations import (
    RequestConfig,
    build_create_pet,
    build_get_pet,
    build_list_pets,
    build_request,
    parse_create_pet,
    parse_get_pet,
    parse_list_pets,
    parse_raw,
)
from ._response import APIResponse
from ._retry import delay_after_error, delay_after_response
from ._validation import NOT_GIVEN, NotGiven, check_api_key, check_headers, check_max_retries, check_timeout
from ._version import __version__

__all__ = [
    "DEFAULT_LIMITS",
    "DEFAULT_MAX_RETRIES",
    "DEFAULT_TIMEOUT",
    "AnimalStoreClient",
    "AsyncAnimalStoreClient",
    "InsecureTransportWarning",
]

T = TypeVar("T")

DEFAULT_TIMEOUT = httpx.Timeout(30.0, connect=5.0)
"""30 s to read, write or wait for a pooled connection; 5 s to connect."""
DEFAULT_MAX_RETRIES = 2
"""Retries after the first attempt."""
DEFAULT_LIMITS = httpx.Limits(max_connections=1000, max_keepalive_connections=100)
"""Connection pool limits: enough that hundreds of concurrent async calls queue
briefly instead of running into ``PoolTimeout``; idle keep-alive bounded."""

_HTTPX_DEFAULT_TIMEOUT = httpx.Timeout(5.0)

Timeout = float | httpx.Timeout | None


class InsecureTransportWarning(UserWarning):
    """The base URL is plain ``http://`` to a host that is not loopback.

    The bearer key would cross the network in clear text. Use ``https://``;
    ``http://`` is silent only for ``localhost``, ``127.0.0.0/8`` and ``::1``.
    """


def _is_loopback(host: str) -> bool:
    if host == "localhost" or host.endswith(".localhost"):
        return True
    import ipaddress  # only for plain-http URLs; keeps the import light

    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def _warn_if_insecure(base_url: str, stacklevel: int) -> None:
    url = httpx.URL(base_url)
    if url.scheme == "http" and not _is_loopback(url.host):
        warnings.warn(
            f"base_url {base_url!r} is plain http:// to a non-loopback host: the API key would be "
            "sent in clear text. Use https://.",
            InsecureTransportWarning,
            stacklevel=stacklevel + 1,
        )


def _user_agent() -> str:
    python = "{}.{}.{}".format(*sys.version_info[:3])
    return f"animalstore-client-python/{__version__} httpx/{httpx.__version__} Python/{python}"


def _check_http_client(http_client: object, expected: type[Any]) -> None:
    if http_client is not None and not isinstance(http_client, expected):
        raise ClientValidationError(
            f"http_client must be an httpx.{expected.__name__}, got {type(http_client).__name__}",
            argument="http_client",
            rule=f"an httpx.{expected.__name__}",
            value=http_client,
        )


def _connection_error(exc: httpx.RequestError, request: httpx.Request, attempts: int) -> APIConnectionError:
    after = f" after {attempts} attempts" if attempts > 1 else ""
    where = f"{request.method} {request.url}"
    if isinstance(exc, httpx.TimeoutException):
        return APITimeoutError(f"Request timed out: {where}{after} ({exc!r})", request=request, attempts=attempts)
    return APIConnectionError(f"Connection error: {where}{after} ({exc!r})", request=request, attempts=attempts)


def _build_config(
    http: httpx.Client | httpx.AsyncClient,
    base_url: str,
    api_key: str,
    default_headers: Mapping[str, str],
    timeout: httpx.Timeout,
) -> RequestConfig:
    # The httpx client's own headers (Accept-Encoding, a caller's tracing
    # headers) come first, so that headers the SDK needs always win.
    headers = httpx.Headers(http.headers)
    headers["Accept"] = "application/json"
    headers["User-Agent"] = _user_agent()
    for name, value in default_headers.items():
        headers[name] = value
    headers["Authorization"] = f"Bearer {api_key}"
    return RequestConfig(base_url=base_url, headers=dict(headers.items()), timeout=timeout)


_GET_PET_DEPRECATION = (
    "get_pet() is deprecated: GET /pets/{petId} will be removed from the animal store "
    "on 2030-12-05. Use list_pets(status=...) instead."
)
P = ParamSpec("P")
R = TypeVar("R")


def _warns_deprecated(function: Callable[P, R]) -> Callable[P, R]:
    """Warn at the caller's line on every call of ``function``, sync or async.

    ``typing_extensions.deprecated`` does this too, but for a coroutine
    function on Python < 3.12 it imports asyncio, which would double the cost
    of importing this package; it is kept (with ``category=None``) for the
    static marker type checkers read, and the message is the same.
    """

    @functools.wraps(function)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        # Warned when called, not when awaited: the caller's line is then on the stack.
        warnings.warn(_GET_PET_DEPRECATION, DeprecationWarning, stacklevel=2)
        return function(*args, **kwargs)

    mark = getattr(inspect, "markcoroutinefunction", None)  # Python 3.12+
    if mark is not None and inspect.iscoroutinefunction(function):
        return mark(wrapper)  # type: ignore[no-any-return]
    return wrapper


def _get_running_loop() -> Any:
    # Imported on first use: sync-only users should not pay for asyncio.
    global _get_running_loop  # noqa: PLW0603 (replaces itself with the real function)
    import asyncio

    _get_running_loop = asyncio.get_running_loop
    return asyncio.get_running_loop()


class _Pool:
    """The httpx client behind one client and everything `with_options` derives from it."""

    def __init__(self, http: Any, *, owned: bool) -> None:
        self.http = http
        self.owned = owned
        self.loop: weakref.ref[Any] | None = None


class _BaseClient:
    """Configuration shared by both clients, and the bookkeeping of sending; no I/O."""

    _pool: _Pool
    _owns_pool: bool
    _config: RequestConfig

    @staticmethod
    def _jitter() -> float:
        """Random jitter in [0, 1); replaced by tests to make backoff exact."""
        import random  # needed only once a request fails

        return random.random()

    def __init__(
        self,
        api_key: str | None,
        *,
        environment: Environment | str | None,
        base_url: str | None,
        timeout: object,
        max_retries: int,
        default_headers: Mapping[str, str] | None,
        http_client: httpx.Client | httpx.AsyncClient | None,
    ) -> None:
        env = os.environ
        configure_from_env(env)
        if api_key is None:
            api_key = env.get(API_KEY_VARIABLE, "").strip() or None
            if api_key is None:
                raise AnimalStoreError(
                    "No API key given: pass api_key=... to the client or set the "
                    f"{API_KEY_VARIABLE} environment variable."
                )
        self._api_key = check_api_key(api_key)
        self._base_url = resolve_base_url(base_url=base_url, environment=environment, env=env)
        if timeout is NOT_GIVEN:
            # A caller's own httpx client keeps its timeout unless it is
            # httpx's stock 5 s, which is shorter than this API needs.
            timeout = (
                http_client.timeout
                if http_client is not None and http_client.timeout != _HTTPX_DEFAULT_TIMEOUT
                else DEFAULT_TIMEOUT
            )
        self._timeout = check_timeout(timeout)
        self._max_retries = check_max_retries(max_retries)
        self._default_headers = check_headers(default_headers, "default_headers")
        self._closed = False
        # Frames: here, the subclass __init__, the caller.
        _warn_if_insecure(self._base_url, stacklevel=3)

    def _request_config(self) -> RequestConfig:
        return _build_config(self._pool.http, self._base_url, self._api_key, self._default_headers, self._timeout)

    def _derive(
        self,
        *,
        api_key: object,
        environment: object,
        base_url: object,
        timeout: object,
        max_retries: object,
        default_headers: object,
    ) -> Self:
        # Only the client that created the pool closes it.
        changes: dict[str, object] = {"_owns_pool": False, "_closed": False}
        if api_key is not NOT_GIVEN:
            changes["_api_key"] = check_api_key(api_key)
        if base_url is not NOT_GIVEN:
            changes["_base_url"] = normalize_base_url(base_url, argument="base_url")
            # Frames: here, with_options, the caller.
            _warn_if_insecure(str(changes["_base_url"]), stacklevel=3)
        elif environment is not NOT_GIVEN:
            changes["_base_url"] = parse_environment(environment, argument="environment").base_url
        if timeout is not NOT_GIVEN:
            changes["_timeout"] = check_timeout(timeout)
        if max_retries is not NOT_GIVEN:
            changes["_max_retries"] = check_max_retries(max_retries)
        if default_headers is not NOT_GIVEN:
            changes["_default_headers"] = {**self._default_headers, **check_headers(default_headers, "default_headers")}
        clone = copy.copy(self)
        state = vars(clone)
        state.pop("with_raw_response", None)  # the cached view is bound to this client's config
        state.update(changes)
        state["_config"] = _build_config(
            state["_pool"].http, state["_base_url"], state["_api_key"], state["_default_headers"], state["_timeout"]
        )
        return clone

    def with_options(
        self,
        *,
        api_key: str | NotGiven = NOT_GIVEN,
        environment: Environment | str | NotGiven = NOT_GIVEN,
        base_url: str | NotGiven = NOT_GIVEN,
        timeout: Timeout | NotGiven = NOT_GIVEN,
        max_retries: int | NotGiven = NOT_GIVEN,
        default_headers: Mapping[str, str] | NotGiven = NOT_GIVEN,
    ) -> Self:
        """A new client with some options changed, sharing this one's connection pool.

        ``default_headers`` are merged into the current ones; ``base_url``
        wins over ``environment``. Closing the new client leaves the pool open.

        ```python
        patient = client.with_options(timeout=120, max_retries=5)
        ```
        """
        return self._derive(
            api_key=api_key,
            environment=environment,
            base_url=base_url,
            timeout=timeout,
            max_retries=max_retries,
            default_headers=default_headers,
        )

    @property
    def base_url(self) -> str:
        """The base URL requests go to, without a trailing slash."""
        return self._base_url

    @property
    def timeout(self) -> httpx.Timeout:
        """The timeout applied to each request unless a call passes its own."""
        return self._timeout

    @property
    def max_retries(self) -> int:
        """How many times a failed request may be retried."""
        return self._max_retries

    @property
    def is_closed(self) -> bool:
        """Whether this client was closed (or shares a pool that was)."""
        return self._closed or bool(self._pool.http.is_closed)

    def __repr__(self) -> str:
        # The key is deliberately absent: reprs end up in logs and tracebacks.
        return f"{type(self).__name__}(base_url={self._base_url!r}, max_retries={self._max_retries})"

    def _check_open(self) -> None:
        if self._closed or self._pool.http.is_closed:
            raise AnimalStoreError(f"This {type(self).__name__} is closed; create a new client.")

    def _after_error(self, request: httpx.Request, exc: httpx.RequestError, retries: int, started: float) -> float:
        """Log a failed attempt; return the delay before retrying or raise the final error."""
        elapsed = (time.perf_counter() - started) * 1000
        logger.debug(
            "%s %s failed after %.1f ms (attempt %d): %r", request.method, request.url, elapsed, retries + 1, exc
        )
        delay = delay_after_error(
            request.method, exc, retries_done=retries, max_retries=self._max_retries, jitter=self._jitter()
        )
        if delay is None:
            raise _connection_error(exc, request, retries + 1) from exc
        logger.info(
            "Retrying %s %s in %.2f s (retry %d of %d) after %s",
            request.method,
            request.url,
            delay,
            retries + 1,
            self._max_retries,
            type(exc).__name__,
        )
        return delay

    def _after_response(self, response: httpx.Response, retries: int, started: float) -> float | None:
        """Log a response; return the delay before retrying, or None to hand it to the parser."""
        request = response.request
        if logger.isEnabledFor(10):  # DEBUG; skip the formatting work otherwise
            logger.debug(
                "%s %s -> %d %s in %.1f ms (attempt %d)",
                request.method,
                request.url,
                response.status_code,
                response.reason_phrase,
                (time.perf_counter() - started) * 1000,
                retries + 1,
            )
        if response.is_success:
            return None
        delay = delay_after_response(
            request.method,
            response.status_code,
            response.headers,
            retries_done=retries,
            max_retries=self._max_retries,
            jitter=self._jitter(),
        )
        if delay is not None:
            logger.info(
                "Retrying %s %s in %.2f s (retry %d of %d) after %d %s",
                request.method,
                request.url,
                delay,
                retries + 1,
                self._max_retries,
                response.status_code,
                response.reason_phrase,
            )
        return delay


class AnimalStoreClient(_BaseClient):
    """A synchronous client for the animal store. Safe to share across threads.

    ```python
    from animalstore_client import AnimalStoreClient

    with AnimalStoreClient() as client:  # key from ANIMALSTORE_API_KEY
        for pet in client.list_pets(limit=10, status="available"):
            print(pet.id, pet.name)
    ```

    Args:
        api_key: The bearer API key; defaults to ``ANIMALSTORE_API_KEY``.
        environment: ``"production"``, ``"staging"`` or an `Environment`.
        base_url: A full base URL replacing the environment's.
        timeout: Seconds, an `httpx.Timeout`, or ``None`` for no timeout at all.
        max_retries: Retries after the first attempt; ``0`` disables them.
        default_headers: Headers sent with every request.
        http_client: An `httpx.Client` to send through; the SDK does not close it.
    """

    # Injectable so tests run retries without waiting.
    _sleep: Callable[[float], None] = staticmethod(time.sleep)

    def __init__(
        self,
        api_key: str | None = None,
        *,
        environment: Environment | str | None = None,
        base_url: str | None = None,
        timeout: Timeout | NotGiven = NOT_GIVEN,
        max_retries: int = DEFAULT_MAX_RETRIES,
        default_headers: Mapping[str, str] | None = None,
        http_client: httpx.Client | None = None,
    ) -> None:
        _check_http_client(http_client, httpx.Client)
        super().__init__(
            api_key,
            environment=environment,
            base_url=base_url,
            timeout=timeout,
            max_retries=max_retries,
            default_headers=default_headers,
            http_client=http_client,
        )
        self._owns_pool = http_client is None
        self._pool = _Pool(
            http_client or httpx.Client(limits=DEFAULT_LIMITS, follow_redirects=False), owned=http_client is None
        )
        self._config = self._request_config()

    def _send(self, request: httpx.Request) -> tuple[httpx.Response, int]:
        """Send with retries; return the final response and the number of attempts."""
        self._check_open()
        http: httpx.Client = self._pool.http
        retries = 0
        while True:
            started = time.perf_counter()
            try:
                # Never follow redirects: the key must not travel to another host.
                response = http.send(request, follow_redirects=False)
            except httpx.RequestError as exc:
                delay = self._after_error(request, exc, retries, started)
            else:
                retry_delay = self._after_response(response, retries, started)
                if retry_delay is None:
                    return response, retries + 1
                delay = retry_delay
                response.close()
            retries += 1
            self._sleep(delay)

    def _send_raw(self, request: httpx.Request, parser: Callable[[httpx.Response, int], T]) -> APIResponse[T]:
        response, attempts = self._send(request)
        parse_raw(response, attempts)
        return APIResponse(response, attempts, parser)

    def list_pets(
        self,
        *,
        limit: int | None = None,
        status: PetStatus | str | None = None,
        timeout: Timeout | NotGiven = NOT_GIVEN,
        extra_headers: Mapping[str, str] | None = None,
    ) -> list[Pet]:
        """List animals (``GET /pets``): at most ``limit`` (1 to 100; the service defaults to 20)."""
        request = build_list_pets(
            self._config, limit=limit, status=status, timeout=timeout, extra_headers=extra_headers
        )
        return parse_list_pets(*self._send(request))

    def create_pet(
        self,
        *,
        name: str,
        category_id: int,
        status: PetStatus | str | None = None,
        timeout: Timeout | NotGiven = NOT_GIVEN,
        extra_headers: Mapping[str, str] | None = None,
    ) -> Pet:
        """Add an animal (``POST /pets``) and return it with the id the service assigned.

        Retries: only where the service cannot have stored the pet (a failure
        to connect, 429, 503); never after a read timeout, 500, 502 or 504,
        so a retry never creates a duplicate.
        """
        request = build_create_pet(
            self._config,
            name=name,
            category_id=category_id,
            status=status,
            timeout=timeout,
            extra_headers=extra_headers,
        )
        return parse_create_pet(*self._send(request))

    @deprecated(
        "get_pet() is deprecated: GET /pets/{petId} will be removed from the animal store "
        "on 2030-12-05. Use list_pets(status=...) instead.",
        category=None,
    )
    @_warns_deprecated
    def get_pet(
        self,
        pet_id: int,
        *,
        timeout: Timeout | NotGiven = NOT_GIVEN,
        extra_headers: Mapping[str, str] | None = None,
    ) -> Pet:
        """Fetch one animal by id (``GET /pets/{petId}``).

        Deprecated: the service removes this operation on 2030-12-05. Use
        `list_pets` with ``status=`` instead.
        """
        request = build_get_pet(self._config, pet_id, timeout=timeout, extra_headers=extra_headers)
        return parse_get_pet(*self._send(request))

    def request(
        self,
        method: str,
        path: str,
        *,
        params: Mapping[str, Any] | None = None,
        json: object = None,
        headers: Mapping[str, str] | None = None,
        timeout: Timeout | NotGiven = NOT_GIVEN,
    ) -> httpx.Response:
        """Send any request under the base URL, for paths the SDK has no method for.

        Same authentication, error mapping, logging and retry rules as the
        operations: GET, HEAD and OPTIONS retry like `list_pets`, every other
        method like `create_pet`. Returns the 2xx `httpx.Response`.

        ```python
        reply = client.request("POST", "/messages", json={"message": "hello"})
        ```
        """
        built = build_request(self._config, method, path, params=params, json=json, headers=headers, timeout=timeout)
        return parse_raw(*self._send(built))

    @cached_property
    def with_raw_response(self) -> AnimalStoreClientWithRawResponse:
        """The same operations, returning `APIResponse` (status, headers, attempts, ``parse()``)."""
        return AnimalStoreClientWithRawResponse(self._config, self._send_raw)

    def close(self) -> None:
        """Close the connection pool, unless it belongs to a caller-supplied ``http_client``."""
        if not self._closed:
            self._closed = True
            if self._owns_pool:
                self._pool.http.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


class AsyncAnimalStoreClient(_BaseClient):
    """An asyncio client for the animal store; the same API as `AnimalStoreClient`.

    Safe to share across the tasks of one event loop. Used from a new event
    loop (a second ``asyncio.run``), it starts a fresh connection pool there.

    ```python
    from animalstore_client import AsyncAnimalStoreClient

    async with AsyncAnimalStoreClient() as client:
        pets = await client.list_pets(status="available")
    ```

    Args:
        api_key: The bearer API key; defaults to ``ANIMALSTORE_API_KEY``.
        environment: ``"production"``, ``"staging"`` or an `Environment`.
        base_url: A full base URL replacing the environment's.
        timeout: Seconds, an `httpx.Timeout`, or ``None`` for no timeout at all.
        max_retries: Retries after the first attempt; ``0`` disables them.
        default_headers: Headers sent with every request.
        http_client: An `httpx.AsyncClient` to send through; the SDK does not close it.
    """

    @staticmethod
    async def _sleep(seconds: float) -> None:
        # anyio works under asyncio and trio alike; imported on the first
        # retry only, to keep `import animalstore_client` light.
        import anyio

        await anyio.sleep(seconds)

    def __init__(
        self,
        api_key: str | None = None,
        *,
        environment: Environment | str | None = None,
        base_url: str | None = None,
        timeout: Timeout | NotGiven = NOT_GIVEN,
        max_retries: int = DEFAULT_MAX_RETRIES,
        default_headers: Mapping[str, str] | None = None,
        http_client: httpx.AsyncClient | None = None,
    ) -> None:
        _check_http_client(http_client, httpx.AsyncClient)
        super().__init__(
            api_key,
            environment=environment,
            base_url=base_url,
            timeout=timeout,
            max_retries=max_retries,
            default_headers=default_headers,
            http_client=http_client,
        )
        self._owns_pool = http_client is None
        self._pool = _Pool(http_client or self._new_http(), owned=http_client is None)
        self._config = self._request_config()

    @staticmethod
    def _new_http() -> httpx.AsyncClient:
        return httpx.AsyncClient(limits=DEFAULT_LIMITS, follow_redirects=False)

    def _http_for_this_loop(self) -> httpx.AsyncClient:
        """The pool to use, replaced by a fresh one when the event loop has changed."""
        pool = self._pool
        try:
            loop = _get_running_loop()
        except RuntimeError:  # not asyncio (trio): nothing to check
            return pool.http  # type: ignore[no-any-return]
        if pool.loop is None or pool.loop() is not loop:
            if pool.loop is not None:
                # Pooled connections belong to the old loop; reusing one
                # fails with "Event loop is closed" or hangs.
                if not pool.owned:
                    raise AnimalStoreError(
                        f"This {type(self).__name__} was first used in another event loop, and its "
                        "http_client belongs to you, so it cannot be replaced: create the client "
                        "(and its httpx.AsyncClient) inside the event loop that uses it."
                    )
                logger.debug("Event loop changed: starting a new connection pool")
                pool.http = self._new_http()
            pool.loop = weakref.ref(loop)
        return pool.http  # type: ignore[no-any-return]

    async def _send(self, request: httpx.Request) -> tuple[httpx.Response, int]:
        """Send with retries; return the final response and the number of attempts."""
        self._check_open()
        http = self._http_for_this_loop()
        retries = 0
        while True:
            started = time.perf_counter()
            try:
                response = await http.send(request, follow_redirects=False)
            except httpx.RequestError as exc:
                delay = self._after_error(request, exc, retries, started)
            else:
                retry_delay = self._after_response(response, retries, started)
                if retry_delay is None:
                    return response, retries + 1
                delay = retry_delay
                await response.aclose()
            retries += 1
            await self._sleep(delay)

    async def _send_raw(self, request: httpx.Request, parser: Callable[[httpx.Response, int], T]) -> APIResponse[T]:
        response, attempts = await self._send(request)
        parse_raw(response, attempts)
        return APIResponse(response, attempts, parser)

    async def list_pets(
        self,
        *,
        limit: int | None = None,
        status: PetStatus | str | None = None,
        timeout: Timeout | NotGiven = NOT_GIVEN,
        extra_headers: Mapping[str, str] | None = None,
    ) -> list[Pet]:
        """List animals (``GET /pets``): at most ``limit`` (1 to 100; the service defaults to 20)."""
        request = build_list_pets(
            self._config, limit=limit, status=status, timeout=timeout, extra_headers=extra_headers
        )
        return parse_list_pets(*await self._send(request))

    async def create_pet(
        self,
        *,
        name: str,
        category_id: int,
        status: PetStatus | str | None = None,
        timeout: Timeout | NotGiven = NOT_GIVEN,
        extra_headers: Mapping[str, str] | None = None,
    ) -> Pet:
        """Add an animal (``POST /pets``) and return it with the id the service assigned.

        Retries: only where the service cannot have stored the pet (a failure
        to connect, 429, 503); never after a read timeout, 500, 502 or 504,
        so a retry never creates a duplicate.
        """
        request = build_create_pet(
            self._config,
            name=name,
            category_id=category_id,
            status=status,
            timeout=timeout,
            extra_headers=extra_headers,
        )
        return parse_create_pet(*await self._send(request))

    @deprecated(
        "get_pet() is deprecated: GET /pets/{petId} will be removed from the animal store "
        "on 2030-12-05. Use list_pets(status=...) instead.",
        category=None,
    )
    @_warns_deprecated
    async def get_pet(
        self,
        pet_id: int,
        *,
        timeout: Timeout | NotGiven = NOT_GIVEN,
        extra_headers: Mapping[str, str] | None = None,
    ) -> Pet:
        """Fetch one animal by id (``GET /pets/{petId}``).

        Deprecated: the service removes this operation on 2030-12-05. Use
        `list_pets` with ``status=`` instead.
        """
        request = build_get_pet(self._config, pet_id, timeout=timeout, extra_headers=extra_headers)
        return parse_get_pet(*await self._send(request))

    async def request(
        self,
        method: str,
        path: str,
        *,
        params: Mapping[str, Any] | None = None,
        json: object = None,
        headers: Mapping[str, str] | None = None,
        timeout: Timeout | NotGiven = NOT_GIVEN,
    ) -> httpx.Response:
        """Send any request under the base URL, for paths the SDK has no method for.

        Same authentication, error mapping, logging and retry rules as the
        operations: GET, HEAD and OPTIONS retry like `list_pets`, every other
        method like `create_pet`. Returns the 2xx `httpx.Response`.

        ```python
        reply = await client.request("POST", "/messages", json={"message": "hello"})
        ```
        """
        built = build_request(self._config, method, path, params=params, json=json, headers=headers, timeout=timeout)
        return parse_raw(*await self._send(built))

    @cached_property
    def with_raw_response(self) -> AsyncAnimalStoreClientWithRawResponse:
        """The same operations, returning `APIResponse` (status, headers, attempts, ``parse()``)."""
        return AsyncAnimalStoreClientWithRawResponse(self._config, self._send_raw)

    async def aclose(self) -> None:
        """Close the connection pool, unless it belongs to a caller-supplied ``http_client``."""
        if not self._closed:
            self._closed = True
            if self._owns_pool:
                # On a new event loop the old pool's sockets cannot be closed
                # gracefully; they are left to the garbage collector.
                await self._http_for_this_loop().aclose()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()


class _SendRaw(Protocol):
    def __call__(self, request: httpx.Request, parser: Callable[[httpx.Response, int], T], /) -> APIResponse[T]: ...


class _AsyncSendRaw(Protocol):
    async def __call__(
        self, request: httpx.Request, parser: Callable[[httpx.Response, int], T], /
    ) -> APIResponse[T]: ...


class AnimalStoreClientWithRawResponse:
    """`AnimalStoreClient`'s operations returning `APIResponse` instead of the parsed result."""

    def __init__(self, config: RequestConfig, send_raw: _SendRaw) -> None:
        self._config = config
        self._send_raw = send_raw

    def list_pets(
        self,
        *,
        limit: int | None = None,
        status: PetStatus | str | None = None,
        timeout: Timeout | NotGiven = NOT_GIVEN,
        extra_headers: Mapping[str, str] | None = None,
    ) -> APIResponse[list[Pet]]:
        """`AnimalStoreClient.list_pets`, with the raw response."""
        request = build_list_pets(
            self._config, limit=limit, status=status, timeout=timeout, extra_headers=extra_headers
        )
        return self._send_raw(request, parse_list_pets)

    def create_pet(
        self,
        *,
        name: str,
        category_id: int,
        status: PetStatus | str | None = None,
        timeout: Timeout | NotGiven = NOT_GIVEN,
        extra_headers: Mapping[str, str] | None = None,
    ) -> APIResponse[Pet]:
        """`AnimalStoreClient.create_pet`, with the raw response."""
        request = build_create_pet(
            self._config,
            name=name,
            category_id=category_id,
            status=status,
            timeout=timeout,
            extra_headers=extra_headers,
        )
        return self._send_raw(request, parse_create_pet)

    @deprecated(
        "get_pet() is deprecated: GET /pets/{petId} will be removed from the animal store "
        "on 2030-12-05. Use list_pets(status=...) instead.",
        category=None,
    )
    @_warns_deprecated
    def get_pet(
        self,
        pet_id: int,
        *,
        timeout: Timeout | NotGiven = NOT_GIVEN,
        extra_headers: Mapping[str, str] | None = None,
    ) -> APIResponse[Pet]:
        """`AnimalStoreClient.get_pet`, with the raw response (deprecated likewise)."""
        request = build_get_pet(self._config, pet_id, timeout=timeout, extra_headers=extra_headers)
        return self._send_raw(request, parse_get_pet)


class AsyncAnimalStoreClientWithRawResponse:
    """`AsyncAnimalStoreClient`'s operations returning `APIResponse` instead of the parsed result."""

    def __init__(self, config: RequestConfig, send_raw: _AsyncSendRaw) -> None:
        self._config = config
        self._send_raw = send_raw

    async def list_pets(
        self,
        *,
        limit: int | None = None,
        status: PetStatus | str | None = None,
        timeout: Timeout | NotGiven = NOT_GIVEN,
        extra_headers: Mapping[str, str] | None = None,
    ) -> APIResponse[list[Pet]]:
        """`AsyncAnimalStoreClient.list_pets`, with the raw response."""
        request = build_list_pets(
            self._config, limit=limit, status=status, timeout=timeout, extra_headers=extra_headers
        )
        return await self._send_raw(request, parse_list_pets)

    async def create_pet(
        self,
        *,
        name: str,
        category_id: int,
        status: PetStatus | str | None = None,
        timeout: Timeout | NotGiven = NOT_GIVEN,
        extra_headers: Mapping[str, str] | None = None,
    ) -> APIResponse[Pet]:
        """`AsyncAnimalStoreClient.create_pet`, with the raw response."""
        request = build_create_pet(
            self._config,
            name=name,
            category_id=category_id,
            status=status,
            timeout=timeout,
            extra_headers=extra_headers,
        )
        return await self._send_raw(request, parse_create_pet)

    @deprecated(
        "get_pet() is deprecated: GET /pets/{petId} will be removed from the animal store "
        "on 2030-12-05. Use list_pets(status=...) instead.",
        category=None,
    )
    @_warns_deprecated
    async def get_pet(
        self,
        pet_id: int,
        *,
        timeout: Timeout | NotGiven = NOT_GIVEN,
        extra_headers: Mapping[str, str] | None = None,
    ) -> APIResponse[Pet]:
        """`AsyncAnimalStoreClient.get_pet`, with the raw response (deprecated likewise)."""
        request = build_get_pet(self._config, pet_id, timeout=timeout, extra_headers=extra_headers)
        return await self._send_raw(request, parse_get_pet)
