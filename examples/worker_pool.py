"""A pool of worker processes (multiprocessing, Celery, gunicorn alike): one client per process.

    python examples/worker_pool.py

Each worker process makes its own `AnimalStoreClient` when it starts (the
pool's ``initializer``; Celery's ``worker_process_init`` signal and
gunicorn's ``post_fork`` hook are the same place) and reuses it for every job
it runs. A client made in the parent and used in a forked child would start a
fresh connection pool there anyway (see docs/limits-and-safety.md), but one
client per process, made after the fork, is the clear way to write it.
"""

from __future__ import annotations

# --8<-- [start:worker]
import multiprocessing
import os
from concurrent.futures import ProcessPoolExecutor

from animalstore_client import AnimalStoreClient

_client: AnimalStoreClient | None = None


def start_worker() -> None:
    """Runs once in each worker process, after it started: the process's own client."""
    global _client  # noqa: PLW0603 (one client per process is the point)
    _client = AnimalStoreClient()  # key and base URL from the environment the parent set


def import_pet(name: str) -> int:
    """A job: add one pet; returns its new id."""
    assert _client is not None, "start_worker did not run"
    return _client.create_pet(name=name, category_id=1, status="available").id


def import_pets(names: list[str], workers: int = 2) -> list[int]:
    """Run the jobs in a pool of ``workers`` worker processes, each with its own client."""
    # "spawn": each worker is a fresh interpreter, as under most process managers.
    context = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(max_workers=workers, mp_context=context, initializer=start_worker) as pool:
        return list(pool.map(import_pet, names))


# --8<-- [end:worker]


def main() -> None:
    """Import 20 pets through 2 worker processes, against a fake store unless a key is set."""
    import contextlib

    from animalstore_client.testing import FakeAnimalStore  # only for the offline run

    names = [f"pet-{i}" for i in range(20)]
    store: FakeAnimalStore | None = None
    with contextlib.ExitStack() as stack:
        if os.environ.get("ANIMALSTORE_API_KEY"):
            print("Using the animal store from ANIMALSTORE_API_KEY (and ANIMALSTORE_BASE_URL, if set).")
        else:
            print("No ANIMALSTORE_API_KEY set: running offline against a FakeAnimalStore.")
            store = FakeAnimalStore()
            base_url = stack.enter_context(store.serve())  # over HTTP: workers are other processes
            os.environ.update(ANIMALSTORE_API_KEY=store.api_key, ANIMALSTORE_BASE_URL=base_url)
        ids = import_pets(names, workers=2)
    # Both processes start and make their client; which of them runs a given job is the pool's choice
    # (with jobs this short, the first one up may run them all).
    print(f"imported {len(ids)} pets through a pool of 2 worker processes, each with its own client")
    print(f"distinct ids: {len(set(ids))}")
    if store is not None:
        print(f"the store holds {len(store.pets)} pets")


if __name__ == "__main__":
    main()
