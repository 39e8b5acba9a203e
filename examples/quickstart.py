"""List, create and fetch pets with the animal store SDK.

With ANIMALSTORE_API_KEY set this talks to the real service (production unless
ANIMALSTORE_ENVIRONMENT or ANIMALSTORE_BASE_URL says otherwise). Without it,
it runs offline against the SDK's own FakeAnimalStore, and says so first.

    python examples/quickstart.py
"""

from __future__ import annotations

import os
import warnings

from animalstore_client import AnimalStoreClient, PetStatus
from animalstore_client.testing import FakeAnimalStore


def open_client() -> AnimalStoreClient:
    """The real service when a key is set, else an offline store with two pets."""
    if os.environ.get("ANIMALSTORE_API_KEY"):
        client = AnimalStoreClient()
        print(f"Using the animal store at {client.base_url} (key from ANIMALSTORE_API_KEY).")
        return client
    print("No ANIMALSTORE_API_KEY set: running offline against a FakeAnimalStore.")
    store = FakeAnimalStore(
        pets=[
            {"id": 1, "name": "Biscuit", "categoryId": 1, "status": "available"},
            {"id": 2, "name": "Mochi", "categoryId": 2, "status": "sold"},
        ]
    )
    return store.client()


def main() -> None:
    """List the available pets, add one, and fetch it back."""
    with open_client() as client:
        # Arguments are checked before anything is sent: limit=500 would raise
        # ClientValidationError here instead of reaching the service.
        for pet in client.list_pets(limit=10, status=PetStatus.AVAILABLE):
            print(f"available: #{pet.id} {pet.name}")

        created = client.create_pet(name="Pepper", category_id=1, status="pending")
        print(f"created:   #{created.id} {created.name} ({created.status})")

        # get_pet is deprecated (the endpoint goes away on 2030-12-05); record
        # the warning to show it, since Python hides DeprecationWarning by default.
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            fetched = client.get_pet(created.id)  # type: ignore[deprecated]  # shown on purpose
        print(f"fetched:   #{fetched.id} {fetched.name}")
        for warning in caught:
            print(f"warning:   {warning.category.__name__}: {warning.message}")


if __name__ == "__main__":
    main()
