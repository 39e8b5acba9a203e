"""How to test a FastAPI app that uses the SDK: replace its client dependency, keep its lifespan.

Run it with ``python -m pytest examples/test_fastapi_app.py`` (or
``python examples/test_fastapi_app.py``); it needs ``fastapi``, ``pytest``
and ``httpx2`` beside the SDK: Starlette's ``TestClient`` runs on httpx2,
and warns when it has to fall back to httpx.
The app is ``examples/fastapi_app.py``. Each test
runs the app inside ``with TestClient(app)``, which runs the app's lifespan,
after replacing the ``get_animals`` dependency with the pytest plugin's
``animalstore_fake_async_client``. The lifespan then makes no client, so the
tests need no API key and make no call to the real service even when
``ANIMALSTORE_API_KEY`` is set in their environment.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator

import pytest
from fastapi.testclient import TestClient  # on httpx2 (pip install httpx2): no warning to hide
from fastapi_app import app, get_animals  # in your project: from yourpackage.main import app, get_animals

from animalstore_client import DEFAULT_MAX_RETRIES, AsyncAnimalStoreClient
from animalstore_client.testing import FakeAnimalStore


# --8<-- [start:tests]
@pytest.fixture
def shop(animalstore_fake_async_client: AsyncAnimalStoreClient) -> Iterator[TestClient]:
    """The app, lifespan running, its client replaced by one wired in-process to the plugin's fake store."""
    app.dependency_overrides[get_animals] = lambda: animalstore_fake_async_client
    try:
        with TestClient(app) as client:  # runs the lifespan, which sees the override and makes no client
            yield client
    finally:
        app.dependency_overrides.clear()


def test_list_pets_answers_the_stores_json(shop: TestClient, animalstore_fake: FakeAnimalStore) -> None:
    """GET /pets returns the pets in the service's own JSON shape."""
    animalstore_fake.add_pets([{"id": 1, "name": "Biscuit", "categoryId": 1, "status": "available"}])
    response = shop.get("/pets", params={"status": "available"})
    assert response.json() == [{"id": 1, "name": "Biscuit", "categoryId": 1, "status": "available"}]


def test_add_pet_stores_an_available_pet(shop: TestClient, animalstore_fake: FakeAnimalStore) -> None:
    """POST /pets creates the pet in the store, as available."""
    response = shop.post("/pets", params={"name": "Rex", "category_id": 2})
    assert response.status_code == 201
    assert [(pet.name, pet.status) for pet in animalstore_fake.pets] == [("Rex", "available")]


def test_a_bad_limit_is_the_callers_mistake(shop: TestClient, animalstore_fake: FakeAnimalStore) -> None:
    """A limit the SDK refuses is a 422, and nothing reaches the store."""
    assert shop.get("/pets", params={"limit": 500}).status_code == 422
    assert animalstore_fake.requests == []


def test_a_store_outage_is_a_502(shop: TestClient, animalstore_fake: FakeAnimalStore) -> None:
    """A 500 to the call and to each of its retries (none slept) becomes this service's 502."""
    animalstore_fake.fail_next(500, times=1 + DEFAULT_MAX_RETRIES)
    response = shop.get("/pets")
    assert response.status_code == 502
    assert "answered 500" in response.json()["detail"]
    assert len(animalstore_fake.retry_delays) == DEFAULT_MAX_RETRIES  # recorded, not slept


def test_an_unreachable_store_is_a_503(shop: TestClient, animalstore_fake: FakeAnimalStore) -> None:
    """A store that refuses every connection is this service's 503."""
    animalstore_fake.fail_next_connection("refused", times=1 + DEFAULT_MAX_RETRIES)
    assert shop.get("/pets").status_code == 503


# --8<-- [end:tests]


if __name__ == "__main__":
    print(
        "No ANIMALSTORE_API_KEY needed: these tests run offline against a FakeAnimalStore, even with one set.",
        flush=True,
    )
    # A fresh interpreter: pytest must load its plugins before the SDK is imported.
    sys.exit(subprocess.call([sys.executable, "-m", "pytest", __file__, "-q", "-p", "no:cacheprovider"], timeout=300))
