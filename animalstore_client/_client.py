"""The two clients: shared configuration, then the sync and the async I/O shells.

Everything that does not touch the network lives in ``_operations``; the
methods here only build, send and parse.
"""

from __future__ import annotations

import os
import platform
from collections.abc import Mapping
from typing import Any, TypeVar

import httpx
from typing_extensions import Self, deprecated

from ._environments import API_KEY_VARIABLE, Environment, resolve_base_url
from ._exceptions import AnimalStoreError, APIConnectionError, APITimeoutError, ClientValidationError
from ._models import Pet, PetStatus
from ._operations import (
    RequestConfig,
    build_create_pet,
    build_get_pet,
    build_list_pets,
    parse_create_pet,
    parse_get_pet,
    parse_list_pets,
)
from ._validation import check_api_key, check_headers, check_max_retries, check_timeout
from ._version import __version__

__all__ = ["DEFAULT_MAX_RETRIES", "DEFAULT_TIMEOUT", "AnimalStoreClient", "AsyncAnimalStoreClient"]

T = TypeVar("T")

DEFAULT_TIMEOUT = httpx.Timeout(30.0, connect=5.0)
"""30 s to read, write or wait for a pooled connection; 5 s to connect."""
DEFAULT_MAX_RETRIES = 2
"""Retries after the first attempt."""
# Enough that hundreds of concurrent async calls queue briefly instead of
# running into PoolTimeout; keep-alive bounded so idle sockets are released.
DEFAULT_LIMITS = httpx.Limits(max_connections=1000, max_keepalive_connections=100)


class _Unset:
    """Marks an argument the caller left out (``None`` means "no timeout")."""

    def __repr__(self) -> str:
        return "<default>"


_UNSET: Any = _Unset()


def _user_agent() -> str:
    return f"animalstore-client-python/{__version__} httpx/{httpx.__version__} Python/{platform.python_version()}"


class _BaseClient:
    """Configuration shared by both clients; holds no I/O."""

    _owns_http: bool
    _closed: bool

    def __init__(
        self,
        api_key: str | None,
        *,
        environment: Environment | str | None,
        base_url: str | None,
        timeout: float | httpx.Timeout | None,
        max_retries: int,
        default_headers: Mapping[str, str] | None,
        http_client: httpx.Client | httpx.AsyncClient | None,
    ) -> None:
        env = os.environ
        if api_key is None:
            api_key = env.get(API_KEY_VARIABLE) or None
            if api_key is None:
                raise AnimalStoreError(
                    "No API key given: pass api_key=... to the client or set the "
                    f"{API_KEY_VARIABLE} environment variable."
                )
            api_key = api_key.strip()
        self._api_key = check_api_key(api_key)
        self._base_url = resolve_base_url(base_url=base_url, environment=environment, env=env)
        if timeout is _UNSET:
            # A caller's own httpx client keeps its timeout unless it is
            # httpx's stock one, which is shorter than this API needs.
            timeout = (
                http_client.timeout
                if http_client is not None and http_client.timeout != httpx.Timeout(5.0)
                else DEFAULT_TIMEOUT
            )
        self._timeout = check_timeout(timeout)
        self._max_retries = check_max_retries(max_retries)
        self._default_headers = check_headers(default_headers, "default_headers")
        self._closed = False

    def _request_config(self, http: httpx.Client | httpx.AsyncClient) -> RequestConfig:
        # The httpx client's own headers (Accept-Encoding, a caller's tracing
        # headers) come first, so that headers the SDK needs always win.
        headers = httpx.Headers(http.headers)
        headers["Accept"] = "application/json"
        headers["User-Agent"] = _user_agent()
        for name, value in self._default_headers.items():
            headers[name] = value
        headers["Authorization"] = f"Bearer {self._api_key}"
        return RequestConfig(base_url=self._base_url, headers=dict(headers.items()), timeout=self._timeout)

    @property
    def base_url(self) -> str:
        """The base URL requests go to, without a trailing slash."""
        return self._base_url

    @property
    def timeout(self) -> httpx.Timeout:
        """The timeout applied to each request."""
        return self._timeout

    @property
    def max_retries(self) -> int:
        """How many times a failed request may be retried."""
        return self._max_retries

    @property
    def is_closed(self) -> bool:
        """Whether `close` (or ``aclose``) has been called."""
        return self._closed

    def __repr__(self) -> str:
        # The key is deliberately absent: reprs end up in logs and tracebacks.
        return f"{type(self).__name__}(base_url={self._base_url!r}, max_retries={self._max_retries})"

    def _check_open(self) -> None:
        if self._closed:
            raise AnimalStoreError(f"This {type(self).__name__} is closed; create a new client.")


def _check_http_client(http_client: object, expected: type[Any]) -> None:
    if http_client is not None and not isinstance(http_client, expected):
        raise ClientValidationError(
            f"http_client must be an httpx.{expected.__name__}, got {type(http_client).__name__}",
            argument="http_client",
            rule=f"an httpx.{expected.__name__}",
            value=http_client,
        )


def _connection_error(exc: httpx.RequestError, request: httpx.Request) -> APIConnectionError:
    if isinstance(exc, httpx.TimeoutException):
        return APITimeoutError(f"Request timed out: {request.method} {request.url} ({exc!r})", request=request)
    return APIConnectionError(f"Connection error: {request.method} {request.url} ({exc!r})", request=request)


class AnimalStoreClient(_BaseClient):
    """A synchronous client for the animal store.

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
        timeout: Seconds, an `httpx.Timeout`, or ``None`` for no timeout.
        max_retries: Retries after the first attempt.
        default_headers: Headers sent with every request.
        http_client: An `httpx.Client` to send through; the SDK does not close it.
    """

    _http: httpx.Client

    def __init__(
        self,
        api_key: str | None = None,
        *,
        environment: Environment | str | None = None,
        base_url: str | None = None,
        timeout: float | httpx.Timeout | None = _UNSET,
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
        self._owns_http = http_client is None
        self._http = http_client or httpx.Client(limits=DEFAULT_LIMITS, follow_redirects=False)
        self._config = self._request_config(self._http)

    def _send(self, request: httpx.Request) -> httpx.Response:
        self._check_open()
        try:
            # Never follow redirects: the key must not travel to another host.
            return self._http.send(request, follow_redirects=False)
        except httpx.RequestError as exc:
            raise _connection_error(exc, request) from exc

    def list_pets(self, *, limit: int | None = None, status: PetStatus | str | None = None) -> list[Pet]:
        """List animals (``GET /pets``), at most ``limit`` (1 to 100; the service defaults to 20)."""
        return parse_list_pets(self._send(build_list_pets(self._config, limit=limit, status=status)))

    def create_pet(self, *, name: str, category_id: int, status: PetStatus | str | None = None) -> Pet:
        """Add an animal (``POST /pets``) and return it with the id the service assigned."""
        request = build_create_pet(self._config, name=name, category_id=category_id, status=status)
        return parse_create_pet(self._send(request))

    @deprecated(
        "get_pet() is deprecated: GET /pets/{petId} will be removed from the animal store "
        "on 2030-12-05. Use list_pets(status=...) instead."
    )
    def get_pet(self, pet_id: int) -> Pet:
        """Fetch one animal by id (``GET /pets/{petId}``).

        Deprecated: the service removes this operation on 2030-12-05. Use
        `list_pets` with ``status=`` instead.
        """
        return parse_get_pet(self._send(build_get_pet(self._config, pet_id)))

    def close(self) -> None:
        """Close the connection pool, unless it belongs to a caller-supplied ``http_client``."""
        if not self._closed:
            self._closed = True
            if self._owns_http:
                self._http.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


class AsyncAnimalStoreClient(_BaseClient):
    """An asyncio client for the animal store; the same API as `AnimalStoreClient`.

    ```python
    from animalstore_client import AsyncAnimalStoreClient

    async with AsyncAnimalStoreClient() as client:
        pets = await client.list_pets(status="available")
    ```

    Args:
        api_key: The bearer API key; defaults to ``ANIMALSTORE_API_KEY``.
        environment: ``"production"``, ``"staging"`` or an `Environment`.
        base_url: A full base URL replacing the environment's.
        timeout: Seconds, an `httpx.Timeout`, or ``None`` for no timeout.
        max_retries: Retries after the first attempt.
        default_headers: Headers sent with every request.
        http_client: An `httpx.AsyncClient` to send through; the SDK does not close it.
    """

    _http: httpx.AsyncClient

    def __init__(
        self,
        api_key: str | None = None,
        *,
        environment: Environment | str | None = None,
        base_url: str | None = None,
        timeout: float | httpx.Timeout | None = _UNSET,
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
        self._owns_http = http_client is None
        self._http = http_client or httpx.AsyncClient(limits=DEFAULT_LIMITS, follow_redirects=False)
        self._config = self._request_config(self._http)

    async def _send(self, request: httpx.Request) -> httpx.Response:
        self._check_open()
        try:
            return await self._http.send(request, follow_redirects=False)
        except httpx.RequestError as exc:
            raise _connection_error(exc, request) from exc

    async def list_pets(self, *, limit: int | None = None, status: PetStatus | str | None = None) -> list[Pet]:
        """List animals (``GET /pets``), at most ``limit`` (1 to 100; the service defaults to 20)."""
        return parse_list_pets(await self._send(build_list_pets(self._config, limit=limit, status=status)))

    async def create_pet(self, *, name: str, category_id: int, status: PetStatus | str | None = None) -> Pet:
        """Add an animal (``POST /pets``) and return it with the id the service assigned."""
        request = build_create_pet(self._config, name=name, category_id=category_id, status=status)
        return parse_create_pet(await self._send(request))

    @deprecated(
        "get_pet() is deprecated: GET /pets/{petId} will be removed from the animal store "
        "on 2030-12-05. Use list_pets(status=...) instead."
    )
    async def get_pet(self, pet_id: int) -> Pet:
        """Fetch one animal by id (``GET /pets/{petId}``).

        Deprecated: the service removes this operation on 2030-12-05. Use
        `list_pets` with ``status=`` instead.
        """
        return parse_get_pet(await self._send(build_get_pet(self._config, pet_id)))

    async def aclose(self) -> None:
        """Close the connection pool, unless it belongs to a caller-supplied ``http_client``."""
        if not self._closed:
            self._closed = True
            if self._owns_http:
                await self._http.aclose()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()
