"""How to test your own code with FakeAnimalStore under pytest.

Run it with ``python -m pytest examples/test_my_app.py`` (or
``python examples/test_my_app.py``). The code under test takes a client,
so tests hand it one wired to an in-memory store: no network, no key, and
the store's state, recorded requests and fault injection are there to assert on.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator

import pytest

from animalstore_client import AnimalStoreClient, APIStatusError, PetStatus
from animalstore_client.testing import FakeAnimalStore


# --- the application code under test (normally in your own package) ---------------------
def restock(client: AnimalStoreClient, names: list[str], category_id: int) -> list[int]:
    """Add each named pet as available; return the new ids."""
    return [client.create_pet(name=name, category_id=category_id, status=PetStatus.AVAILABLE).id for name in names]


def available_names(client: AnimalStoreClient) -> list[str]:
    """Names of up to 100 available pets, or [] when the service is down."""
    try:
        return [pet.name for pet in client.list_pets(limit=100, status=PetStatus.AVAILABLE)]
    except APIStatusError:
        return []


# --- the tests ------------------------------------------------------------------------------
@pytest.fixture
def store() -> FakeAnimalStore:
    """A store with one sold pet."""
    return FakeAnimalStore(pets=[{"id": 1, "name": "Old Tom", "categoryId": 2, "status": "sold"}])


@pytest.fixture
def client(store: FakeAnimalStore) -> Iterator[AnimalStoreClient]:
    """An SDK client wired to the store; max_retries=0 keeps failure tests instant."""
    with store.client(max_retries=0) as client:
        yield client


def test_restock_adds_available_pets(store: FakeAnimalStore, client: AnimalStoreClient) -> None:
    """restock stores each pet as available and returns the ids the service assigned."""
    assert restock(client, ["Rex", "Ash"], category_id=3) == [2, 3]
    assert [(p.name, p.status) for p in store.pets[1:]] == [("Rex", "available"), ("Ash", "available")]
    assert [r.json for r in store.requests] == [
        {"name": "Rex", "categoryId": 3, "status": "available"},
        {"name": "Ash", "categoryId": 3, "status": "available"},
    ]


def test_available_names_skips_sold_pets(client: AnimalStoreClient) -> None:
    """Only available pets are named."""
    restock(client, ["Rex"], category_id=3)
    assert available_names(client) == ["Rex"]


def test_available_names_survives_an_outage(store: FakeAnimalStore, client: AnimalStoreClient) -> None:
    """A 503 from the service gives an empty list rather than an exception."""
    store.fail_next(503)
    assert available_names(client) == []


if __name__ == "__main__":
    print("No ANIMALSTORE_API_KEY needed: these tests run offline against a FakeAnimalStore.", flush=True)
    sys.exit(pytest.main([__file__, "-q", "-p", "no:cacheprovider"]))
