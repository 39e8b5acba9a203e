# Generated from _clients/client_async.py by scripts/unasync.py: do not edit; regenerate with `python scripts/unasync.py`.
"""The client and its raw-response view: each operation, a build (``_core.operations``), a send and a parse."""

from __future__ import annotations

import os
import ssl
from collections.abc import Callable, Mapping, Sequence
from functools import cached_property
from typing import TYPE_CHECKING, Protocol, Self, TypeVar

import httpx

from animalstore_client._clients.backends import BackendName, choose_backend_sync, new_transport_sync
from animalstore_client._clients.base import BaseClient, telemetry_for
from animalstore_client._clients.options import Arguments
from animalstore_client._clients.response import APIResponse
from animalstore_client._clients._generated.send_loop_sync import Sender
from animalstore_client._clients.shells import SYNC_IO, IOStrategy, Wiring, no_jitter
from animalstore_client._core.attempts import Finished
from animalstore_client._core.budget import RetryBudget
from animalstore_client._core.defaults import DEFAULT_MAX_RESPONSE_BYTES, DEFAULT_MAX_RETRIES, DEFAULT_TOTAL_TIMEOUT
from animalstore_client._core.environments import Environment
from animalstore_client._core.middleware import Middleware, check_middleware_sync
from animalstore_client._core.operations import RequestConfig, build_request, parse_raw
from animalstore_client._core.secrets import forget_locals
from animalstore_client._core.validation import NOT_GIVEN, NotGiven, QueryParams

if TYPE_CHECKING:
    from animalstore_client._clients.optional_types import HTTPClient, MeterProvider, TracerProvider

# <operations: imports> written by scripts/codegen.py from _core.operations.OPERATIONS
from typing_extensions import deprecated

from animalstore_client._core.deprecation import GET_PET_DEPRECATION, warns_deprecated
from animalstore_client._core.models import Pet, PetStatus, PetStatusLiteral
from animalstore_client._core.operations import (
    build_create_pet,
    build_get_pet,
    build_list_pets,
    parse_create_pet,
    parse_get_pet,
    parse_list_pets,
)

# </operations>

__all__ = ["AnimalStoreClient", "AnimalStoreClientWithRawResponse"]

T = TypeVar("T")


class AnimalStoreClient(BaseClient[Sender]):
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
        http_client: A client of one of the libraries `HTTPClient` names, to send
            through; the SDK does not close it. Typed by the members of the
            optional libraries' classes (Protocols), so the type is complete
            without them installed; the class itself is checked when the client
            is made.
        total_timeout: Seconds one call may take in all (attempts, sleeps, bodies);
            ``None`` for no deadline.
        max_response_bytes: The largest response body read, after decoding;
            ``None`` for no cap (unsafe with servers you do not trust).
        backend: The HTTP library to send through, by name: one of `BackendName`,
            whose docs say the extra and Python each needs. Left out, the library
            of ``http_client``, else ``"httpx"``.
        verify: Which TLS certificates the SDK's own connection pool trusts: ``True``
            (certifi's bundle, or ``SSL_CERT_FILE``/``SSL_CERT_DIR``), the path of a CA
            bundle, an `ssl.SSLContext`, or ``False`` (no check; warns unless the host
            is loopback). A caller's ``http_client`` keeps its own trust settings.
        middleware: `Middleware` run around each attempt, the first outermost.
        retry_budget: The `RetryBudget` bounding this client's retries (by default a
            new ``RetryBudget()``: 20 % of recent calls, at least 10 a second);
            ``None`` for none.
        tracer_provider: The OpenTelemetry tracer provider for spans (installed by the
            ``[otel]`` extra); by default the global one, if set.
        meter_provider: The OpenTelemetry meter provider for metrics; by default the
            global one.
    """

    def __init__(
        self,
        # <options: constructor> written by scripts/codegen.py from _clients.options.OPTIONS
        api_key: str | None = None,
        *,
        environment: Environment | str | None = None,
        base_url: str | None = None,
        timeout: float | httpx.Timeout | NotGiven | None = NOT_GIVEN,
        max_retries: int = DEFAULT_MAX_RETRIES,
        default_headers: Mapping[str, str] | None = None,
        http_client: HTTPClient | None = None,
        total_timeout: float | None = DEFAULT_TOTAL_TIMEOUT,
        max_response_bytes: int | None = DEFAULT_MAX_RESPONSE_BYTES,
        backend: BackendName | None = None,
        verify: bool | str | os.PathLike[str] | ssl.SSLContext = True,
        middleware: Sequence[Middleware] | None = None,
        retry_budget: RetryBudget | NotGiven | None = NOT_GIVEN,
        tracer_provider: TracerProvider | None = None,
        meter_provider: MeterProvider | None = None,
        # </options>
    ) -> None:
        # <options: given> written by scripts/codegen.py from _clients.options.OPTIONS
        given = Arguments(
            api_key=api_key,
            environment=environment,
            base_url=base_url,
            timeout=timeout,
            max_retries=max_retries,
            default_headers=default_headers,
            http_client=http_client,
            total_timeout=total_timeout,
            max_response_bytes=max_response_bytes,
            backend=backend,
            verify=verify,
            middleware=middleware,
            retry_budget=retry_budget,
            tracer_provider=tracer_provider,
            meter_provider=meter_provider,
        )
        # </options>
        try:
            settings = self._checked(given, choose_backend_sync, check_middleware_sync)
            pool = self._pool_for(settings, http_client)
            telemetry = telemetry_for(settings.tracer_provider, settings.meter_provider)
            self._sender = Sender(type(self).__name__, settings, pool, SYNC_IO, telemetry)
            self._config = self._request_config()
            # Last: the client is made, so a failed construction says only why it failed.
            self._warn_once_made(http_client)
        except BaseException as exc:
            # The traceback keeps this frame, and those below it, for a crash reporter to read: no secret.
            forget_locals(exc, (api_key,) if isinstance(api_key, str) else ())
            # This frame is still running, so it cannot be cleared: its secrets go by hand.
            del api_key, base_url, default_headers, given
            raise

    _new_transport = staticmethod(new_transport_sync)
    _check_middleware = staticmethod(check_middleware_sync)

    @property
    def backend(self) -> BackendName:
        """The HTTP library this client sends through."""
        return self._sender.settings.backend

    @property
    def middleware(self) -> tuple[Middleware, ...]:
        """The middleware run around each attempt, outermost first."""
        return self._sender.settings.middleware

    def _wire(self, wiring: Wiring) -> None:
        """Hand this client (and the `with_options` copies made from it) to the testing kit: its I/O strategy, and
        its in-process transport as a pool the client owns (remade from ``wiring.new_transport``)."""
        self._wiring = wiring
        sender = self._sender
        sender.io = IOStrategy(wiring.sleep, wiring.clock, no_jitter, guards=not wiring.in_memory)
        if wiring.new_transport is not None:
            sender.pool.remake = wiring.new_transport
            sender.pool.owned = self._owns_pool = True

    def _call(self, operation: str, request: httpx.Request, parse: Callable[[Finished, int], T]) -> T:
        return self._sender.call(operation, request, parse)

    def _send_raw(
        self, operation: str, request: httpx.Request, parser: Callable[[httpx.Response, int], T]
    ) -> APIResponse[T]:
        def parse(response: Finished, attempts: int) -> APIResponse[T]:
            return APIResponse(parse_raw(response, attempts), attempts, parser)

        return self._call(operation, request, parse)

    # <operations: client> written by scripts/codegen.py from _core.operations.OPERATIONS
    def list_pets(
        self,
        *,
        limit: int | None = None,
        status: PetStatus | PetStatusLiteral | None = None,
        timeout: float | httpx.Timeout | NotGiven | None = NOT_GIVEN,
        extra_headers: Mapping[str, str] | None = None,
    ) -> list[Pet]:
        """List animals (``GET /pets``): at most ``limit`` (1 to 100; the service defaults to 20)."""
        request = build_list_pets(
            self._config,
            limit=limit,
            status=status,
            timeout=timeout,
            extra_headers=extra_headers,
        )
        return self._call("list_pets", request, parse_list_pets)

    def create_pet(
        self,
        *,
        name: str,
        category_id: int,
        status: PetStatus | PetStatusLiteral | None = None,
        timeout: float | httpx.Timeout | NotGiven | None = NOT_GIVEN,
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
        return self._call("create_pet", request, parse_create_pet)

    @deprecated(
        # GET_PET_DEPRECATION, copied in by scripts/codegen.py: checkers read only a literal.
        "get_pet() is deprecated: GET /pets/{petId} will be removed from the animal store"
        " on 2030-12-05. Use list_pets(status=..., limit=100) and pick the pet by id "
        "(only the first 100 pets can be seen), or keep the Pet that create_pet returned;"
        " help(AnimalStoreClient.get_pet) lists the recipes.",
        category=None,
    )
    @warns_deprecated(GET_PET_DEPRECATION)
    def get_pet(
        self,
        pet_id: int,
        *,
        timeout: float | httpx.Timeout | NotGiven | None = NOT_GIVEN,
        extra_headers: Mapping[str, str] | None = None,
    ) -> Pet:
        """Fetch one animal by id (``GET /pets/{petId}``).

        Deprecated: the service removes this operation on 2030-12-05. The
        replacement it names, `list_pets` with ``status=``, is not a lookup
        by id: there is no id filter, and a page holds at most 100 pets
        (lowest ids first). Instead of ``get_pet(pet_id)``:

        - status known: take the pet with that id from
          ``list_pets(status=..., limit=100)``; found only among the first
          100 pets with that status;
        - status unknown: the same without ``status``; found only among the
          first 100 pets of the store;
        - a pet you just created: keep the `Pet` that `create_pet` returned;
        - after an ambiguous `create_pet` failure: list and match name and
          category; "not found" does not prove it was not stored.
        """
        request = build_get_pet(
            self._config,
            pet_id,
            timeout=timeout,
            extra_headers=extra_headers,
        )
        return self._call("get_pet", request, parse_get_pet)

    # </operations>

    def request(
        self,
        method: str,
        path: str,
        *,
        params: QueryParams | None = None,
        json: object = None,
        headers: Mapping[str, str] | None = None,
        timeout: float | httpx.Timeout | NotGiven | None = NOT_GIVEN,
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
        return self._call("request", built, parse_raw)

    @cached_property
    def with_raw_response(self) -> AnimalStoreClientWithRawResponse:
        """The same operations, returning `APIResponse` (status, headers, attempts, ``parse()``)."""
        return AnimalStoreClientWithRawResponse(self._config, self._send_raw)

    def close(self) -> None:
        """Close the connection pool, unless it belongs to a caller-supplied ``http_client``."""
        if self._owns_pool and not self.is_closed:
            try:
                self._sender.pool.close_sync(type(self).__name__)
            finally:
                self._closed_by_owner()
        self._sender.closed = True

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


class _SendRaw(Protocol):
    def __call__(
        self,
        operation: str,
        request: httpx.Request,
        parser: Callable[[httpx.Response, int], T],
        /,
    ) -> APIResponse[T]: ...


class AnimalStoreClientWithRawResponse:
    """`AnimalStoreClient`'s operations returning `APIResponse` instead of the parsed result."""

    def __init__(self, config: RequestConfig, send_raw: _SendRaw) -> None:
        self._config = config
        self._send_raw = send_raw

    # <operations: raw> written by scripts/codegen.py from _core.operations.OPERATIONS
    def list_pets(
        self,
        *,
        limit: int | None = None,
        status: PetStatus | PetStatusLiteral | None = None,
        timeout: float | httpx.Timeout | NotGiven | None = NOT_GIVEN,
        extra_headers: Mapping[str, str] | None = None,
    ) -> APIResponse[list[Pet]]:
        """`AnimalStoreClient.list_pets`, with the raw response."""
        request = build_list_pets(
            self._config,
            limit=limit,
            status=status,
            timeout=timeout,
            extra_headers=extra_headers,
        )
        return self._send_raw("list_pets", request, parse_list_pets)

    def create_pet(
        self,
        *,
        name: str,
        category_id: int,
        status: PetStatus | PetStatusLiteral | None = None,
        timeout: float | httpx.Timeout | NotGiven | None = NOT_GIVEN,
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
        return self._send_raw("create_pet", request, parse_create_pet)

    @deprecated(
        # GET_PET_DEPRECATION, copied in by scripts/codegen.py: checkers read only a literal.
        "get_pet() is deprecated: GET /pets/{petId} will be removed from the animal store"
        " on 2030-12-05. Use list_pets(status=..., limit=100) and pick the pet by id "
        "(only the first 100 pets can be seen), or keep the Pet that create_pet returned;"
        " help(AnimalStoreClient.get_pet) lists the recipes.",
        category=None,
    )
    @warns_deprecated(GET_PET_DEPRECATION)
    def get_pet(
        self,
        pet_id: int,
        *,
        timeout: float | httpx.Timeout | NotGiven | None = NOT_GIVEN,
        extra_headers: Mapping[str, str] | None = None,
    ) -> APIResponse[Pet]:
        """`AnimalStoreClient.get_pet`, with the raw response (deprecated likewise)."""
        request = build_get_pet(
            self._config,
            pet_id,
            timeout=timeout,
            extra_headers=extra_headers,
        )
        return self._send_raw("get_pet", request, parse_get_pet)

    # </operations>
