"""Replacing the deprecated get_pet (removed 2030-12-05) with list_pets(status=...).

The service names list_pets with the status filter as the replacement. The
list has no id filter and returns at most 100 animals per call, so look the
animal up among the pets of the status you expect.

    python examples/migrate_from_get_pet.py
"""

from __future__ import annotations

import os
import warnings

from animalstore_client import AnimalStoreClient, Pet, PetStatus
from animalstore_client.testing import FakeAnimalStore


def find_pet(client: AnimalStoreClient, pet_id: int, status: PetStatus) -> Pet | None:
    """The pet with ``pet_id`` among the first 100 pets of ``status``, or None."""
    return next((pet for pet in client.list_pets(limit=100, status=status) if pet.id == pet_id), None)


def open_client() -> AnimalStoreClient:
    """The real service when a key is set, else an offline FakeAnimalStore."""
    if os.environ.get("ANIMALSTORE_API_KEY"):
        print("Using the animal store (key from ANIMALSTORE_API_KEY).")
        return AnimalStoreClient()
    print("No ANIMALSTORE_API_KEY set: running offline against a FakeAnimalStore.")
    return FakeAnimalStore().client()


def main() -> None:
    """Fetch one pet the old way and the new way and compare."""
    with open_client() as client:
        pet = client.create_pet(name="Biscuit", category_id=1, status="available")

        # Before: deprecated, warns at this line, and pyright/mypy flag it.
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            old = client.get_pet(pet.id)  # type: ignore[deprecated]  # the call being replaced
        print(f"get_pet({pet.id}) -> {old.name}   [{caught[0].category.__name__}]")

        # After: no warning, one list call.
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            new = find_pet(client, pet.id, PetStatus.AVAILABLE)
        print(f"find_pet({pet.id}, available) -> {new.name if new else None}")
        print(f"same pet: {new == old}")


if __name__ == "__main__":
    main()
