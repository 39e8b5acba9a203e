"""A FastAPI service on the async client: one client for the app's whole life, pets returned as JSON.

    python examples/fastapi_app.py                 # offline: calls its own endpoints against a fake store
    uvicorn examples.fastapi_app:app --port 8000   # for real, with ANIMALSTORE_API_KEY set
    python -m pytest examples/test_fastapi_app.py  # its tests, on a fake store whatever the environment says

The client is created when the app starts (FastAPI's lifespan) and closed when
it stops, so every request shares one connection pool. Endpoints receive it
through the dependency ``get_animals``, which a test replaces with
``app.dependency_overrides``: the lifespan then makes no client at all, so the
test needs no key and cannot reach the real service. FastAPI cannot return an
attrs `Pet` itself, so endpoints return ``pet.to_dict()``: the service's own
JSON shape. The SDK's exceptions become HTTP answers of this service.
"""

from __future__ import annotations

import os

# --8<-- [start:app]
from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager
from typing import Annotated, Any

from fastapi import Depends, FastAPI, HTTPException, Request

from animalstore_client import (
    DEFAULT_MAX_RETRIES,
    APIConnectionError,
    APIStatusError,
    AsyncAnimalStoreClient,
    ClientValidationError,
    PetStatusLiteral,
)


def get_animals(request: Request) -> AsyncAnimalStoreClient:
    """The app's client, as a dependency: tests replace it through ``app.dependency_overrides``."""
    client: AsyncAnimalStoreClient = request.app.state.animals
    return client


Animals = Annotated[AsyncAnimalStoreClient, Depends(get_animals)]


@asynccontextmanager
async def lifespan(app: FastAPI) -> AsyncGenerator[None, None]:
    """One client per app (and so per worker process): made at start-up, closed at shutdown."""
    if get_animals in app.dependency_overrides:  # a test brings its own client: make none, need no key
        yield
        return
    async with AsyncAnimalStoreClient() as client:  # key and base URL from the environment
        app.state.animals = client
        yield


app = FastAPI(title="Pet shop front", lifespan=lifespan)


@app.get("/pets")
async def list_pets(animals: Animals, status: PetStatusLiteral | None = None, limit: int = 20) -> list[dict[str, Any]]:
    """The store's pets, as the service's JSON."""
    try:
        pets = await animals.list_pets(limit=limit, status=status)
    except ClientValidationError as exc:  # a bad limit: the caller's mistake, not the store's
        raise HTTPException(422, str(exc)) from exc
    except APIStatusError as exc:
        raise HTTPException(502, f"the animal store answered {exc.status_code} (request id {exc.request_id})") from exc
    except APIConnectionError as exc:
        raise HTTPException(503, "the animal store cannot be reached") from exc
    return [pet.to_dict() for pet in pets]


@app.post("/pets", status_code=201)
async def add_pet(animals: Animals, name: str, category_id: int) -> dict[str, Any]:
    """Add an available pet."""
    try:
        pet = await animals.create_pet(name=name, category_id=category_id, status="available")
    except ClientValidationError as exc:
        raise HTTPException(422, str(exc)) from exc
    except (APIStatusError, APIConnectionError) as exc:
        raise HTTPException(502, f"the animal store failed: {type(exc).__name__}") from exc
    return pet.to_dict()


# --8<-- [end:app]


async def call_the_app(store: Any) -> None:
    """Run the app in-process (its lifespan included) and call its endpoints over ASGI."""
    import httpx

    async with (
        app.router.lifespan_context(app),
        httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://shop-front") as http,
    ):  # the lifespan opens the store client here and closes it at the end
        print("POST /pets ->", (await http.post("/pets", params={"name": "Rex", "category_id": 2})).json())
        print("GET /pets ->", (await http.get("/pets", params={"status": "available"})).json())
        print("GET /pets?limit=500 ->", (await http.get("/pets", params={"limit": 500})).status_code)
        if store is not None:
            store.fail_next(500, times=1 + DEFAULT_MAX_RETRIES)  # every attempt of the call fails
            print("during an outage ->", (await http.get("/pets")).json()["detail"])


def main() -> None:
    """Call the app's own endpoints, against a fake store unless a key is set."""
    import asyncio

    from animalstore_client.testing import FakeAnimalStore

    if os.environ.get("ANIMALSTORE_API_KEY"):
        print("Using the animal store from ANIMALSTORE_API_KEY (and ANIMALSTORE_BASE_URL, if set).")
        asyncio.run(call_the_app(None))
        return
    print("No ANIMALSTORE_API_KEY set: running offline against a FakeAnimalStore.")
    store = FakeAnimalStore(pets=[{"id": 1, "name": "Biscuit", "categoryId": 1, "status": "available"}])
    with store.serve() as base_url:
        os.environ.update(ANIMALSTORE_API_KEY=store.api_key, ANIMALSTORE_BASE_URL=base_url)
        asyncio.run(call_the_app(store))


if __name__ == "__main__":
    main()
