"""Hundreds of concurrent calls through one AsyncAnimalStoreClient, bounded by a semaphore.

One client (one connection pool) serves every task; the semaphore caps how
many requests are in flight so a burst does not flood the service.

    python examples/async_concurrency.py
"""

from __future__ import annotations

import asyncio
import os
import time

from animalstore_client import AsyncAnimalStoreClient, Pet
from animalstore_client.testing import FakeAnimalStore

CALLS = 300
IN_FLIGHT = 50


def open_client() -> AsyncAnimalStoreClient:
    """The real service when a key is set, else an offline FakeAnimalStore."""
    if os.environ.get("ANIMALSTORE_API_KEY"):
        client = AsyncAnimalStoreClient()
        print(f"Using the animal store at {client.base_url} (key from ANIMALSTORE_API_KEY).")
        return client
    print("No ANIMALSTORE_API_KEY set: running offline against a FakeAnimalStore.")
    return FakeAnimalStore().async_client()


async def main() -> None:
    """Create CALLS pets concurrently, then list them."""
    limit = asyncio.Semaphore(IN_FLIGHT)

    async with open_client() as client:

        async def create(index: int) -> Pet:
            async with limit:
                return await client.create_pet(name=f"pet-{index}", category_id=1, status="available")

        started = time.perf_counter()
        pets = await asyncio.gather(*(create(i) for i in range(CALLS)))
        elapsed = time.perf_counter() - started
        print(f"created {len(pets)} pets with at most {IN_FLIGHT} in flight in {elapsed:.2f} s")
        print(f"distinct ids: {len({pet.id for pet in pets})}")
        page = await client.list_pets(limit=100, status="available")
        print(f"first page of available pets: {len(page)}")


if __name__ == "__main__":
    asyncio.run(main())
