"""Import many pets without losing a row or storing one twice, and resume an interrupted import.

Every row ends with an outcome, written to a journal (one JSON line each) as it happens:

- ``created``: stored, with its id;
- ``refused``: a bad row (the rule it broke is recorded), nothing sent or nothing stored;
- ``not stored``: the service certainly did not act (after the SDK's own retries): the next run sends it again;
- ``may have been stored``: the outcome is unknown; reconcile it by hand, never send it again.

Before a row is sent, ``sending`` is written: a run killed between the two finds the row with no outcome and
records it as ``may have been stored``, so a second run stores nothing twice.

    python examples/bulk_import.py                         # offline: a fake store with faults and bad rows
    python examples/bulk_import.py rows.csv journal.jsonl  # name,categoryId,status rows; ANIMALSTORE_* for the service
"""

from __future__ import annotations

# --8<-- [start:import]
import json
import os
import threading
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from animalstore_client import AnimalStoreClient, AnimalStoreError, ClientValidationError

Row = tuple[str, str, int, Any]
"""A row: its key (unique, and the same in every run: from the row's content, not its place in the file), name,
category id, and status as read (a str from a file, or None): the SDK checks it, refusing a mistyped one unsent."""
FINAL = ("created", "refused", "may have been stored")
"""Outcomes a later run leaves alone; "not stored" is sent again."""


class Journal:
    """Each row's latest state, appended to a JSON-lines file as it happens (safe to share between threads)."""

    def __init__(self, path: Path) -> None:
        self.states: dict[str, dict[str, object]] = {}
        if path.exists():
            for line in path.read_text(encoding="utf-8").splitlines():
                if line.strip():  # a line cut short by a kill is the last one: no row's final word
                    try:
                        entry = json.loads(line)
                    except ValueError:
                        continue
                    self.states[entry["row"]] = entry
        self._file = path.open("a", encoding="utf-8")
        if self._file.tell() and not path.read_bytes().endswith(b"\n"):
            self._file.write("\n")  # a line a kill cut short ends here: the next entry starts a line of its own
        self._lock = threading.Lock()

    def write(self, row: str, state: str, **details: object) -> None:
        """Record ``row``'s ``state`` now: flushed, so a crash right after it keeps it."""
        entry = {"row": row, "state": state, **details}
        with self._lock:
            self.states[row] = entry
            self._file.write(json.dumps(entry) + "\n")
            self._file.flush()
            os.fsync(self._file.fileno())  # on the disk before the row is sent: a power cut keeps "sending" too

    def close(self) -> None:
        self._file.close()


def import_row(client: AnimalStoreClient, journal: Journal, row: Row) -> str:
    """Create one row's pet, recording its outcome; returns it. Nothing but the journal says what happened."""
    key, name, category_id, status = row
    journal.write(key, "sending")
    try:
        pet = client.create_pet(name=name, category_id=category_id, status=status)
    except ClientValidationError as exc:  # a bad row: refused before anything was sent
        journal.write(key, "refused", rule=str(exc))
        return "refused"
    except AnimalStoreError as exc:
        if getattr(exc, "may_have_been_processed", True):
            journal.write(key, "may have been stored", error=str(exc))
            return "may have been stored"
        if getattr(exc, "status_code", 0) in (400, 409, 422):  # the service refused the row itself
            journal.write(key, "refused", rule=str(exc))
            return "refused"
        # Anything else the service certainly did not act on (a 401 for a wrong key, a 404 for a wrong base URL,
        # a 429, a refused connection) is the run's, not the row's: the next run sends the row again.
        journal.write(key, "not stored", error=str(exc))
        return "not stored"
    journal.write(key, "created", id=pet.id)
    return "created"


def import_rows(client: AnimalStoreClient, rows: Iterable[Row], journal_path: Path, workers: int = 16) -> Journal:
    """Import ``rows`` that have no final outcome in the journal yet; returns the journal, every row in it."""
    journal = Journal(journal_path)
    for key, entry in list(journal.states.items()):
        if entry["state"] == "sending":  # sent by a run that stopped before the outcome: it may be stored
            journal.write(key, "may have been stored", error="the run stopped before the outcome was known")
    todo = [row for row in rows if journal.states.get(row[0], {}).get("state") not in FINAL]

    def one(row: Row) -> str:
        return import_row(client, journal, row)

    try:
        with ThreadPoolExecutor(max_workers=workers) as pool:
            list(pool.map(one, todo))
    finally:
        journal.close()
    return journal


# --8<-- [end:import]


def read_rows(path: Path) -> list[Row]:
    """``name,categoryId,status`` rows of a CSV file with a header line.

    A row's key is its content, numbered among identical rows: removing or adding another row (a refused
    one, fixed) changes no other row's key, so a resumed run never takes one row's outcome for another's.
    """
    import csv

    rows: list[Row] = []
    seen: dict[str, int] = {}
    with path.open(newline="", encoding="utf-8") as file:
        for record in csv.DictReader(file):
            content = json.dumps([record["name"], record["categoryId"], record.get("status") or ""])
            seen[content] = seen.get(content, 0) + 1
            key = f"{content}#{seen[content]}"
            rows.append((key, record["name"], int(record["categoryId"]), record.get("status") or None))
    return rows


def summary(journal: Journal) -> dict[str, int]:
    """How many rows ended with each outcome, in the order of the module's docstring."""
    states = [str(entry["state"]) for entry in journal.states.values()]
    order = ("created", "refused", "not stored", "may have been stored", "sending")
    return {state: states.count(state) for state in order if state in states}


def offline() -> None:
    """200 rows, two of them bad, against a fake store served on 127.0.0.1 that fails some requests."""
    import tempfile

    from animalstore_client.testing import FakeAnimalStore

    store = FakeAnimalStore(api_keys=["offline-key"])
    store.fail_next(429, times=5)  # busy: a refusal, which the SDK sends again by itself
    store.fail_next(500, method="POST")  # the service failed, maybe after storing
    store.fail_next_connection("reset", method="POST")  # stored, and the answer lost
    rows: list[Row] = [(str(n), f"pet-{n}", 1 + n % 3, "available") for n in range(200)]
    rows[7] = ("7", "pet-7", 1, "availble")  # a typo: refused before anything is sent
    rows[9] = ("9", "pet-9", 2**63, None)  # a category id past int64: refused too
    with (
        tempfile.TemporaryDirectory() as scratch,
        store.serve() as url,
        AnimalStoreClient("offline-key", base_url=url) as client,
    ):
        journal = import_rows(client, rows, Path(scratch) / "journal.jsonl")
    print(f"outcomes: {summary(journal)}")
    names = [pet.name for pet in store.pets]
    print(f"stored {len(names)} pets, {len(names) - len(set(names))} of them twice")


def main(argv: list[str]) -> None:
    """Import a CSV file's rows with its journal, or (no arguments) run offline against a fake store."""
    import os

    if not argv:
        if os.environ.get("ANIMALSTORE_API_KEY"):
            raise SystemExit("usage: python examples/bulk_import.py rows.csv journal.jsonl (rows for the service)")
        print("No ANIMALSTORE_API_KEY set: running offline against a FakeAnimalStore served on 127.0.0.1.")
        offline()
        return
    rows_path, journal_path = Path(argv[0]), Path(argv[1])
    with AnimalStoreClient() as client:
        journal = import_rows(client, read_rows(rows_path), journal_path)
    print(f"outcomes: {summary(journal)}")


if __name__ == "__main__":
    import sys

    main(sys.argv[1:])
