"""Import pets from a CSV file on a Dask cluster: one client, made in the driver, shipped to the workers.

    pip install "dask[distributed]"
    python examples/dask_import.py                      # 5,000 pets, Dask LocalCluster, 2 worker processes
    python examples/dask_import.py --engine ray         # Ray (pip install ray): two actors
    python examples/dask_import.py --engine spawn       # concurrent.futures.ProcessPoolExecutor, spawn
    python examples/dask_import.py --engine fork        # ... fork
    python examples/dask_import.py --engine async       # one process, AsyncAnimalStoreClient, for comparison

An `AnimalStoreClient` pickles as its settings (base URL, key, timeouts,
retries, middleware, retry budget): loaded in a worker process it is the
same client with a connection pool of its own, opened on first use. So the
driver makes the client once and ships it. With Dask, `scatter(...,
broadcast=True)` loads it once per worker, and every task in that worker
shares it (a client is safe to share across threads); with a process pool,
the ``initializer`` loads it once per process.

Offline, the script serves a FakeAnimalStore on 127.0.0.1, injects 429s
into the creates (which the SDK retries: a 429 is a refusal, nothing was
stored) and connection resets into the reads (retried too), then checks
that every pet in the CSV was created exactly once, and that each worker
process used a client of its own. Resets and 5xx answers are kept away
from the creates on purpose: after either, a create may or may not have
been stored, the SDK does not retry it, and this interface has no
idempotency key to make a retry safe.
"""

from __future__ import annotations

# --8<-- [start:job]
import argparse
import asyncio
import csv
import os
import sys
import tempfile
import threading
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from animalstore_client import AnimalStoreClient, AsyncAnimalStoreClient, RetryBudget

if TYPE_CHECKING:
    from animalstore_client.testing import FakeAnimalStore

Row = tuple[str, int]

_shipped: AnimalStoreClient | None = None


def import_rows(client: AnimalStoreClient, rows: Sequence[Row]) -> tuple[int, int, list[int]]:
    """A task: create ``rows``; returns this worker's pid, which client did it, and the new ids."""
    client.list_pets(limit=1)  # the service is up (and the reads take the injected resets)
    ids = [client.create_pet(name=name, category_id=category, status="available").id for name, category in rows]
    return os.getpid(), id(client), ids


def import_with_dask(client: AnimalStoreClient, chunks: list[list[Row]]) -> list[tuple[int, int, list[int]]]:
    """Run the tasks on a LocalCluster of 2 worker processes; the client is pickled once per worker."""
    import importlib

    distributed: Any = importlib.import_module("dask.distributed")  # an untyped library: typed here as Any

    with (
        # ":0": a free port for the scheduler's HTTP server (None still tries 8787, which another run may hold).
        distributed.LocalCluster(n_workers=2, threads_per_worker=4, processes=True, dashboard_address=":0") as cluster,
        distributed.Client(cluster) as dask,
    ):
        shipped = dask.scatter(client, broadcast=True)  # one copy per worker, loaded once there
        futures = [dask.submit(import_rows, shipped, chunk, pure=False) for chunk in chunks]
        results: list[tuple[int, int, list[int]]] = dask.gather(futures)
        return results


def import_with_ray(client: AnimalStoreClient, chunks: list[list[Row]]) -> list[tuple[int, int, list[int]]]:
    """The same on Ray: two actors (worker processes), each holding the client it was given, loaded once."""
    import importlib

    ray: Any = importlib.import_module("ray")  # an untyped library: typed here as Any

    class Importer:
        def __init__(self, client: AnimalStoreClient) -> None:
            self.client = client

        def run(self, rows: list[Row]) -> tuple[int, int, list[int]]:
            return import_rows(self.client, rows)

    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, object_store_memory=100 * 1024 * 1024)
    try:
        actor = ray.remote(Importer)
        importers = [actor.remote(client) for _ in range(2)]
        futures = [importers[index % 2].run.remote(chunk) for index, chunk in enumerate(chunks)]
        results: list[tuple[int, int, list[int]]] = ray.get(futures)
        return results
    finally:
        ray.shutdown()


def keep_shipped_client(client: AnimalStoreClient) -> None:
    """A process pool's initializer: keep the client the parent shipped, loaded in this process."""
    global _shipped  # noqa: PLW0603 (one client per worker process is the point)
    _shipped = client


def import_chunk(rows: Sequence[Row]) -> tuple[int, int, list[int]]:
    """A process pool's task: the rows, through this process's client."""
    assert _shipped is not None, "keep_shipped_client did not run"
    return import_rows(_shipped, rows)


def import_with_processes(
    client: AnimalStoreClient, chunks: list[list[Row]], method: str
) -> list[tuple[int, int, list[int]]]:
    """The same with concurrent.futures: 2 processes started with ``method`` ("spawn" or "fork")."""
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    context = multiprocessing.get_context(method)
    with ProcessPoolExecutor(2, mp_context=context, initializer=keep_shipped_client, initargs=(client,)) as pool:
        return list(pool.map(import_chunk, chunks))


# --8<-- [end:job]


async def import_async(base_url: str, api_key: str, rows: list[Row]) -> list[int]:
    """The same import in one process: an async client, 32 creates in flight."""
    limit = asyncio.Semaphore(32)
    async with AsyncAnimalStoreClient(api_key, base_url=base_url, max_retries=5) as client:

        async def create(name: str, category: int) -> int:
            async with limit:
                return (await client.create_pet(name=name, category_id=category, status="available")).id

        await client.list_pets(limit=1)
        return list(await asyncio.gather(*(create(name, category) for name, category in rows)))


def inject_faults(store: FakeAnimalStore, done: threading.Event) -> None:
    """Resets for the first reads; then, while the import runs, a 429 for the next create every 50 requests.

    Both are faults the SDK survives without a duplicate: a 429 is a refusal
    (nothing was stored), and a read may always be sent again.
    """
    store.fail_next_connection("reset", times=3, method="GET")
    injected_at = 0
    while not done.wait(0.01):
        seen = len(store.requests) + store.dropped_requests  # the store keeps the last 10,000
        if seen >= injected_at + 50:  # one 429 per 50 requests, however fast they come
            store.fail_next(429, retry_after=0, method="POST")
            injected_at = seen


def write_csv(path: Path, count: int) -> None:
    """A CSV of ``count`` pets: name, category."""
    with path.open("w", newline="") as file:
        writer = csv.writer(file)
        writer.writerow(["name", "category_id"])
        writer.writerows((f"pet-{index:05d}", index % 7 + 1) for index in range(count))


def read_csv(path: Path) -> list[Row]:
    """The rows of the CSV."""
    with path.open(newline="") as file:
        return [(row["name"], int(row["category_id"])) for row in csv.DictReader(file)]


def chunked(rows: list[Row], size: int) -> Iterator[list[Row]]:
    """``rows`` in lists of ``size``."""
    for start in range(0, len(rows), size):
        yield rows[start : start + size]


def run_import(engine: str, base_url: str, api_key: str, rows: list[Row]) -> tuple[list[int], dict[int, set[int]]]:
    """Import ``rows`` on ``engine``; return the new ids, and the clients each worker process used."""
    if engine == "async":
        return asyncio.run(import_async(base_url, api_key, rows)), {os.getpid(): {0}}
    # Made once, here: the workers get it by pickling. A generous budget: the faults
    # this script injects are a test's, all at once, not an outage.
    client = AnimalStoreClient(api_key, base_url=base_url, max_retries=5, retry_budget=RetryBudget(1))
    chunks = list(chunked(rows, 250))
    if engine == "dask":
        results = import_with_dask(client, chunks)
    elif engine == "ray":
        results = import_with_ray(client, chunks)
    else:
        results = import_with_processes(client, chunks, engine)
    workers: dict[int, set[int]] = {}
    for pid, client_id, _ids in results:
        workers.setdefault(pid, set()).add(client_id)
    return [pet_id for _pid, _client_id, chunk_ids in results for pet_id in chunk_ids], workers


def problems_with(store: FakeAnimalStore, rows: list[Row], ids: list[int], workers: dict[int, set[int]]) -> list[str]:
    """What went wrong: a pet missing or twice, an id twice, a worker without a client of its own."""
    problems: list[str] = []
    names = sorted(pet.name for pet in store.pets)
    if names != sorted(name for name, _category in rows):
        problems.append(f"the store holds {len(names)} pets, {len(set(names))} names; expected {len(rows)}")
    if len(set(ids)) != len(rows):
        problems.append("an id was given twice")
    if os.getpid() not in workers and (len(workers) != 2 or any(len(c) != 1 for c in workers.values())):
        problems.append(f"expected 2 worker processes with one client each, got {workers}")
    return problems


def main(argv: Sequence[str] | None = None) -> int:
    """Import the CSV on the chosen engine against a fake store with faults; check every pet landed once."""
    from animalstore_client.testing import FakeAnimalStore  # only for the offline run

    parser = argparse.ArgumentParser(description="Import pets from a CSV file on a Dask cluster or a process pool.")
    parser.add_argument("--engine", choices=["dask", "ray", "spawn", "fork", "async"], default="dask")
    parser.add_argument("--pets", type=int, default=5000, help="pets to write to the CSV (default 5000)")
    parser.add_argument("--csv", type=Path, help="a CSV with name,category_id columns to import instead")
    args = parser.parse_args(argv)
    if os.environ.get("ANIMALSTORE_API_KEY"):
        print("ANIMALSTORE_API_KEY is set, but this example runs offline against a FakeAnimalStore to count pets.")
    else:
        print("No ANIMALSTORE_API_KEY set: running offline against a FakeAnimalStore.")

    with tempfile.TemporaryDirectory() as scratch:
        path = args.csv or Path(scratch) / "pets.csv"
        if args.csv is None:
            write_csv(path, args.pets)
        rows = read_csv(path)
    store = FakeAnimalStore()
    done = threading.Event()
    faults = threading.Thread(target=inject_faults, args=(store, done), daemon=True)
    with store.serve() as base_url:
        faults.start()
        started = time.perf_counter()
        try:
            ids, workers = run_import(args.engine, base_url, store.api_key, rows)
        finally:
            elapsed = time.perf_counter() - started
            done.set()
            faults.join(timeout=5)
    print(
        f"{args.engine}: {len(ids)} pets in {elapsed:.1f} s ({len(ids) / elapsed:.0f}/s) by {len(workers)} "
        f"process(es); {len(store.requests) + store.dropped_requests} requests with the retries"
    )
    problems = problems_with(store, rows, ids, workers)
    for problem in problems:
        print(f"FAILED: {problem}", file=sys.stderr)
    if not problems:
        print("Every pet was created exactly once; each worker process used its own client.")
    return 1 if problems else 0


if __name__ == "__main__":
    raise SystemExit(main())
