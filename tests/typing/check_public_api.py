"""The public API as a user's type checker sees it; checked by mypy and pyright, never run.

mypy runs this with ``--enable-error-code deprecated`` and pyright in strict
mode: each deprecated call below carries an ignore for exactly that code, and
``warn_unused_ignores`` (mypy) / ``reportUnnecessaryTypeIgnoreComment``
(pyright) fail the check if the deprecation stops being reported.
"""

from __future__ import annotations

from typing import Any, assert_type

import aiohttp
import httpx
import httpx2
import pyreqwest.client
import urllib3
from opentelemetry import metrics, trace
from opentelemetry.sdk.metrics import MeterProvider as SDKMeterProvider
from opentelemetry.sdk.trace import TracerProvider as SDKTracerProvider

from animalstore_client import (
    AnimalStoreClient,
    APIResponse,
    APIStatusError,
    AsyncAnimalStoreClient,
    AsyncCallNext,
    AsyncHTTPClient,
    AsyncMiddleware,
    AttemptInfo,
    CallNext,
    ClientValidationError,
    ErrorBody,
    HTTPClient,
    Middleware,
    NewPet,
    Pet,
    PetStatus,
    PetStatusLiteral,
    RetryBudget,
    attempt_info,
)
from animalstore_client.testing import FakeAnimalStore, make_status_error


def sync_usage(client: AnimalStoreClient) -> None:
    assert_type(client.list_pets(), list[Pet])
    assert_type(client.list_pets(limit=5, status=PetStatus.SOLD), list[Pet])
    assert_type(client.list_pets(status="available", timeout=2.0, extra_headers={"X": "1"}), list[Pet])
    assert_type(client.create_pet(name="Rex", category_id=1), Pet)
    assert_type(client.get_pet(1), Pet)  # type: ignore[deprecated]  # pyright: ignore[reportDeprecated]
    assert_type(client.with_raw_response.list_pets(), APIResponse[list[Pet]])
    assert_type(client.with_raw_response.create_pet(name="Rex", category_id=1).parse(), Pet)
    assert_type(client.request("GET", "/store/orders"), httpx.Response)
    assert_type(client.with_options(max_retries=0), AnimalStoreClient)
    assert_type(client.base_url, str)
    pet = client.create_pet(name="Rex", category_id=1)
    assert_type(pet.status, PetStatus | None)
    assert_type(pet.to_dict(), dict[str, Any])
    assert_type(Pet.from_dict({}), Pet)
    assert_type(NewPet.from_dict({}), NewPet)
    assert_type(ErrorBody.from_dict({}), ErrorBody)


async def async_usage(client: AsyncAnimalStoreClient) -> None:
    assert_type(await client.list_pets(), list[Pet])
    assert_type(await client.create_pet(name="Rex", category_id=1), Pet)
    assert_type(await client.get_pet(1), Pet)  # type: ignore[deprecated]  # pyright: ignore[reportDeprecated]
    assert_type(await client.with_raw_response.get_pet(1), APIResponse[Pet])  # type: ignore[deprecated]  # pyright: ignore[reportDeprecated]
    assert_type(await client.request("POST", "/messages", json={"message": "hi"}), httpx.Response)
    assert_type(client.with_options(timeout=None), AsyncAnimalStoreClient)


def errors(exc: APIStatusError) -> None:
    assert_type(exc.status_code, int)
    assert_type(exc.code, str | None)
    assert_type(exc.error, ErrorBody | None)
    assert_type(exc.request_id, str | None)
    assert_type(exc.attempts, int)


def misuse(client: AnimalStoreClient) -> None:
    client.list_pets(limit="5")  # type: ignore[arg-type]  # pyright: ignore[reportArgumentType]
    client.create_pet(name="Rex")  # type: ignore[call-arg]  # pyright: ignore[reportCallIssue]
    client.list_pets(5)  # type: ignore[call-arg]  # pyright: ignore[reportCallIssue]


def testing_kit(store: FakeAnimalStore) -> None:
    assert_type(store.client(max_retries=0, timeout=1.0), AnimalStoreClient)
    assert_type(store.async_client(api_key="wrong-key"), AsyncAnimalStoreClient)
    assert_type(store.retry_delays, list[float])
    assert_type(store.requests[0].request_id, str)
    assert_type(make_status_error(404, code="not_found"), APIStatusError)
    store.fail_next_connection("reset", times=2)
    store.client(max_retrys=0)  # type: ignore[call-arg]  # pyright: ignore[reportCallIssue]
    store.async_client(base_url="http://x")  # type: ignore[call-arg]  # pyright: ignore[reportCallIssue]
    store.fail_next_connection("dropped")  # type: ignore[arg-type]  # pyright: ignore[reportArgumentType]
    ClientValidationError("limit must be 1..100")


def status_literals(client: AnimalStoreClient, status: PetStatusLiteral) -> None:
    client.list_pets(status="available")
    client.list_pets(status="pending")
    client.list_pets(status="sold")
    client.list_pets(status=PetStatus.SOLD)
    client.list_pets(status=status)
    client.create_pet(name="Rex", category_id=1, status="pending")
    client.list_pets(status="availble")  # type: ignore[arg-type]  # pyright: ignore[reportArgumentType]
    client.create_pet(name="Rex", category_id=1, status="adopted")  # type: ignore[arg-type]  # pyright: ignore[reportArgumentType]
    assert_type(NewPet(name="Rex", category_id=1, status="available").status, PetStatus | None)
    Pet(id=1, name="Rex", category_id=1, status="sold")
    NewPet(name="Rex", category_id=1, status="availble")  # type: ignore[arg-type]  # pyright: ignore[reportArgumentType]


async def async_status_literals(client: AsyncAnimalStoreClient) -> None:
    await client.list_pets(status="sold")
    await client.list_pets(status="sould")  # type: ignore[arg-type]  # pyright: ignore[reportArgumentType]


def plain_middleware(request: httpx.Request, call_next: CallNext) -> httpx.Response:
    return call_next(request)


async def async_middleware(request: httpx.Request, call_next: AsyncCallNext) -> httpx.Response:
    return await call_next(request)


def middleware_and_budget() -> None:
    sync_client = AnimalStoreClient(middleware=[plain_middleware], retry_budget=RetryBudget(percent=0.1))
    async_client = AsyncAnimalStoreClient(middleware=[async_middleware], retry_budget=None)
    assert_type(sync_client.retry_budget, RetryBudget | None)
    assert_type(async_client.with_options(middleware=[]), AsyncAnimalStoreClient)
    assert_type(sync_client.middleware, tuple[Middleware, ...])
    assert_type(async_client.middleware, tuple[AsyncMiddleware, ...])
    sync_list: list[Middleware] = [plain_middleware]
    async_list: list[AsyncMiddleware] = [async_middleware]
    AnimalStoreClient(middleware=sync_list)
    AsyncAnimalStoreClient(middleware=async_list)
    # Each client's kind of middleware only: the other is a type error before it is a runtime one.
    AnimalStoreClient(middleware=[async_middleware])  # type: ignore[list-item]  # pyright: ignore[reportArgumentType]
    AsyncAnimalStoreClient(middleware=[plain_middleware])  # type: ignore[list-item]  # pyright: ignore[reportArgumentType]
    AnimalStoreClient(retry_budget=0.2)  # type: ignore[arg-type]  # pyright: ignore[reportArgumentType]


def typed_attempt_info(request: httpx.Request) -> None:
    info = attempt_info(request)
    assert_type(info, AttemptInfo)
    assert_type(info.operation, str)
    assert_type(info.attempt, int)
    assert_type(info.call_id, str)
    info.attempt = 2  # type: ignore[misc]  # pyright: ignore[reportAttributeAccessIssue]
    attempt_info({})  # type: ignore[arg-type]  # pyright: ignore[reportArgumentType]


class SessionLike:
    """A requests.Session look-alike: request() returns a response, close() is not awaited."""

    def request(self, method: str, url: str) -> httpx.Response:
        raise NotImplementedError

    def close(self) -> None: ...


def http_clients(
    httpx_sync: httpx.Client,
    httpx_async: httpx.AsyncClient,
    httpx2_sync: httpx2.Client,
    httpx2_async: httpx2.AsyncClient,
    pool_manager: urllib3.PoolManager,
    session: aiohttp.ClientSession,
    pyreqwest_sync: pyreqwest.client.SyncClient,
    pyreqwest_async: pyreqwest.client.Client,
    lookalike: SessionLike,
) -> None:
    # Each library's class for its client, as the user's type checker sees it with the library installed.
    AnimalStoreClient(http_client=httpx_sync)
    AnimalStoreClient(http_client=httpx2_sync)
    AsyncAnimalStoreClient(http_client=httpx_async)
    AsyncAnimalStoreClient(http_client=httpx2_async)
    AsyncAnimalStoreClient(http_client=session)
    sync_ones: list[HTTPClient] = [httpx_sync, httpx2_sync]
    async_ones: list[AsyncHTTPClient] = [httpx_async, httpx2_async, session]
    print(sync_ones, async_ones)
    # A pyreqwest client is refused (it may follow redirects unseen): backend="pyreqwest" builds the SDK's own.
    AnimalStoreClient(http_client=pyreqwest_sync)  # type: ignore[arg-type]  # pyright: ignore[reportArgumentType]
    AsyncAnimalStoreClient(http_client=pyreqwest_async)  # type: ignore[arg-type]  # pyright: ignore[reportArgumentType]
    # ... and not the other client's kind, nor another object with a request() and a close().
    AnimalStoreClient(http_client=httpx_async)  # type: ignore[arg-type]  # pyright: ignore[reportArgumentType]
    AnimalStoreClient(http_client=httpx2_async)  # type: ignore[arg-type]  # pyright: ignore[reportArgumentType]
    AnimalStoreClient(http_client=session)  # type: ignore[arg-type]  # pyright: ignore[reportArgumentType]
    AnimalStoreClient(http_client=pyreqwest_async)  # type: ignore[arg-type]  # pyright: ignore[reportArgumentType]
    AnimalStoreClient(http_client=lookalike)  # type: ignore[arg-type]  # pyright: ignore[reportArgumentType]
    AsyncAnimalStoreClient(http_client=httpx_sync)  # type: ignore[arg-type]  # pyright: ignore[reportArgumentType]
    AsyncAnimalStoreClient(http_client=httpx2_sync)  # type: ignore[arg-type]  # pyright: ignore[reportArgumentType]
    AsyncAnimalStoreClient(http_client=pool_manager)  # type: ignore[arg-type]  # pyright: ignore[reportArgumentType]
    # urllib3 is no backend since 2.0: its PoolManager is refused by the types too.
    AnimalStoreClient(http_client=pool_manager)  # type: ignore[arg-type]  # pyright: ignore[reportArgumentType]
    AsyncAnimalStoreClient(http_client=pyreqwest_sync)  # type: ignore[arg-type]  # pyright: ignore[reportArgumentType]
    AsyncAnimalStoreClient(http_client=lookalike)  # type: ignore[arg-type]  # pyright: ignore[reportArgumentType]


def telemetry_providers(store: FakeAnimalStore) -> None:
    # OpenTelemetry's API and SDK providers, as tracer_provider and meter_provider; not the one for the other.
    AnimalStoreClient(tracer_provider=trace.get_tracer_provider(), meter_provider=metrics.get_meter_provider())
    AsyncAnimalStoreClient(tracer_provider=SDKTracerProvider(), meter_provider=SDKMeterProvider())
    assert_type(store.client(tracer_provider=SDKTracerProvider()), AnimalStoreClient)
    AnimalStoreClient(tracer_provider=SDKMeterProvider())  # type: ignore[arg-type]  # pyright: ignore[reportArgumentType]
    AnimalStoreClient(meter_provider=SDKTracerProvider())  # type: ignore[arg-type]  # pyright: ignore[reportArgumentType]
