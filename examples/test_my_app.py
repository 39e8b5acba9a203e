"""How to test your own code with the SDK's pytest fixtures: no network, no key, no sleeping.

Run it with ``python -m pytest examples/test_my_app.py`` (or
``python examples/test_my_app.py``). Installing animalstore-client installs
its pytest plugin, so the fixtures ``animalstore_fake`` (a fresh
`FakeAnimalStore`), ``animalstore_fake_client`` and
``animalstore_fake_async_client`` (clients wired to it in-process) need no
conftest.py. Retries of those clients do not sleep: the delays they would
have slept are recorded in ``animalstore_fake.retry_delays``.
"""

from __future__ import annotations

import subprocess
import sys

import pytest

from animalstore_client import (
    DEFAULT_MAX_RETRIES,
    AnimalStoreClient,
    APIConnectionError,
    APIStatusError,
    AsyncAnimalStoreClient,
    PetStatus,
)
from animalstore_client.testing import FakeAnimalStore


# --- the application code under test (normally in your own package) ---------------------
def restock(client: AnimalStoreClient, names: list[str], category_id: int) -> list[int]:
    """Add each named pet as available; return the new ids."""
    return [client.create_pet(name=name, category_id=category_id, status=PetStatus.AVAILABLE).id for name in names]


def available_names(client: AnimalStoreClient) -> list[str]:
    """Names of up to 100 available pets, or [] when the service is down."""
    try:
        return [pet.name for pet in client.list_pets(limit=100, status=PetStatus.AVAILABLE)]
    except (APIStatusError, APIConnectionError):
        return []


async def count_available(client: AsyncAnimalStoreClient) -> int:
    """How many pets are available (async code under test)."""
    return len(await client.list_pets(limit=100, status="available"))


# --- the tests ------------------------------------------------------------------------------
@pytest.fixture
def store(animalstore_fake: FakeAnimalStore) -> FakeAnimalStore:
    """The plugin's empty store, seeded with one sold pet."""
    animalstore_fake.add_pets([{"id": 1, "name": "Old Tom", "categoryId": 2, "status": "sold"}])
    return animalstore_fake


def test_restock_adds_available_pets(store: FakeAnimalStore, animalstore_fake_client: AnimalStoreClient) -> None:
    """restock stores each pet as available and returns the ids the service assigned."""
    assert restock(animalstore_fake_client, ["Rex", "Ash"], category_id=3) == [2, 3]
    assert [(p.name, p.status) for p in store.pets[1:]] == [("Rex", "available"), ("Ash", "available")]
    assert [r.json for r in store.requests] == [
        {"name": "Rex", "categoryId": 3, "status": "available"},
        {"name": "Ash", "categoryId": 3, "status": "available"},
    ]


def test_available_names_skips_sold_pets(store: FakeAnimalStore, animalstore_fake_client: AnimalStoreClient) -> None:
    """Only available pets are named."""
    restock(animalstore_fake_client, ["Rex"], category_id=3)
    assert available_names(animalstore_fake_client) == ["Rex"]


def test_a_passing_outage_is_retried_without_waiting(
    store: FakeAnimalStore, animalstore_fake_client: AnimalStoreClient
) -> None:
    """Two 503s are retried (backoff 0.5 s, then 1 s, recorded, not slept) and the third attempt answers."""
    store.fail_next(503, times=2)
    assert available_names(animalstore_fake_client) == []  # Old Tom is sold
    assert store.retry_delays == [0.5, 1.0]


def test_available_names_survives_a_dead_service(
    store: FakeAnimalStore, animalstore_fake_client: AnimalStoreClient
) -> None:
    """A service that refuses every connection gives an empty list rather than an exception."""
    store.fail_next_connection("refused", times=1 + DEFAULT_MAX_RETRIES)  # the first attempt and every retry
    assert available_names(animalstore_fake_client) == []
    assert store.requests == []  # refused: nothing reached the store


def test_a_reset_create_is_not_sent_twice(store: FakeAnimalStore, animalstore_fake_client: AnimalStoreClient) -> None:
    """The store stores the pet, the answer is lost; the SDK does not retry a create, so there is no duplicate."""
    store.fail_next_connection("reset")
    with pytest.raises(APIConnectionError):
        restock(animalstore_fake_client, ["Rex"], category_id=3)
    assert [p.name for p in store.pets] == ["Old Tom", "Rex"]


def test_async_code_gets_its_own_fixture(
    store: FakeAnimalStore, animalstore_fake_async_client: AsyncAnimalStoreClient
) -> None:
    """The async client fixture works in any event loop (here asyncio.run; pytest-asyncio or anyio alike)."""
    import asyncio

    store.add_pets([{"id": 2, "name": "Rex", "categoryId": 3, "status": "available"}])
    assert asyncio.run(count_available(animalstore_fake_async_client)) == 1


if __name__ == "__main__":
    print("No ANIMALSTORE_API_KEY needed: these tests run offline against a FakeAnimalStore.", flush=True)
    # A fresh interpreter: pytest must load its plugins before the SDK is imported.
    sys.exit(subprocess.call([sys.executable, "-m", "pytest", __file__, "-q", "-p", "no:cacheprovider"]))
