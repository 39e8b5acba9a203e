"""The pytest plugin: fresh fake-store fixtures for every test, registered when the package is installed.

pytest finds it through the ``pytest11`` entry point ``animalstore``, so no
``conftest.py`` is needed; ``pytest -p no:animalstore`` turns it off.

```python
from animalstore_client import AnimalStoreClient
from animalstore_client.testing import FakeAnimalStore


def test_restock(animalstore_fake: FakeAnimalStore, animalstore_fake_client: AnimalStoreClient) -> None:
    animalstore_fake.fail_next(503)
    animalstore_fake_client.create_pet(name="Rex", category_id=1)
    assert [pet.name for pet in animalstore_fake.pets] == ["Rex"]
    assert animalstore_fake.retry_delays == [0.5]  # retried at once: nothing slept
```

The SDK is imported when a fixture is first used, not when pytest starts.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from animalstore_client import AnimalStoreClient, AsyncAnimalStoreClient
    from animalstore_client.testing import FakeAnimalStore

__all__ = ["animalstore_fake", "animalstore_fake_async_client", "animalstore_fake_client"]


@pytest.fixture
def animalstore_fake() -> FakeAnimalStore:
    """A fresh, empty `FakeAnimalStore` accepting the key ``test-key``; seed it with ``add_pets``."""
    from animalstore_client.testing import FakeAnimalStore

    return FakeAnimalStore()


@pytest.fixture
def animalstore_fake_client(animalstore_fake: FakeAnimalStore) -> Iterator[AnimalStoreClient]:
    """An `AnimalStoreClient` wired in-process to `animalstore_fake`; retries record their delays, not sleep."""
    with animalstore_fake.client() as client:
        yield client


@pytest.fixture
def animalstore_fake_async_client(animalstore_fake: FakeAnimalStore) -> Iterator[AsyncAnimalStoreClient]:
    """An `AsyncAnimalStoreClient` wired in-process to `animalstore_fake`.

    A plain (not async) fixture, so it serves tests run by pytest-asyncio and
    by anyio's plugin alike: the client starts its in-process transport in
    whichever event loop first uses it.
    """
    import asyncio

    client = animalstore_fake.async_client()
    yield client
    try:
        asyncio.get_running_loop()
    except RuntimeError:  # the usual case: teardown runs outside any loop
        asyncio.run(client.aclose())
    # Inside a running loop it cannot be awaited here; it holds no sockets, so nothing leaks.
