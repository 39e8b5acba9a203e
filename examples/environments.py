"""Choosing production, staging, or your own base URL.

python examples/environments.py
"""

from __future__ import annotations

import os

from animalstore_client import AnimalStoreClient, ClientValidationError, Environment
from animalstore_client.testing import FakeAnimalStore


def main() -> None:
    """Show which base URL each way of configuring picks, then use an override."""
    has_key = bool(os.environ.get("ANIMALSTORE_API_KEY"))
    if has_key:
        print("Using the animal store configured by ANIMALSTORE_* variables.")
    else:
        print("No ANIMALSTORE_API_KEY set: running offline against a FakeAnimalStore.")
    key = os.environ.get("ANIMALSTORE_API_KEY", "demo-key")

    # Constructing a client sends nothing, so these work offline.
    for environment in Environment:
        with AnimalStoreClient(key, environment=environment) as client:
            print(f"{environment.value:>10}: {client.base_url}")
    with AnimalStoreClient(key, environment="staging") as client:
        print(f"{'by name':>10}: {client.base_url}")

    try:
        AnimalStoreClient(key, environment="qa")
    except ClientValidationError as exc:
        print(f"{'bad name':>10}: {exc}")

    # base_url replaces the environment's; here it points at a local server.
    # Precedence: base_url, environment, ANIMALSTORE_BASE_URL, ANIMALSTORE_ENVIRONMENT, production.
    if has_key:
        with AnimalStoreClient() as client:
            print(f"{'in use':>10}: {client.base_url}: {len(client.list_pets(limit=5))} pets")
        return
    store = FakeAnimalStore(pets=[{"id": 1, "name": "Biscuit", "categoryId": 1}])
    with store.serve() as base_url, AnimalStoreClient(store.api_key, base_url=base_url + "/") as client:
        print(f"{'override':>10}: {client.base_url}: {[pet.name for pet in client.list_pets()]}")


if __name__ == "__main__":
    main()
