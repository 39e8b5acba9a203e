"""Import many pets without losing a row or storing one twice, and resume an interrupted import.

Every row ends with an outcome, written to a journal (one JSON line each) as it happens:

- ``created``: stored, with its id;
- ``refused``: a bad row (the rule it broke is recorded): one the reader could not read, one the SDK refused before
  sending, or one the service refused (a 4xx but 408 and 429, and but 401, 403 and 404, which are the run's: a wrong
  key or base URL); never sent again;
- ``not stored``: the service certainly did not act (after the SDK's own retries): the next run sends it again;
- ``may have been stored``: the outcome is unknown; reconcile it by hand, never send it again.

Before a row is sent, ``sending`` is written: a run killed between the two finds the row with no outcome and
records it as ``may have been stored``, so a second run stores nothing twice.

    python examples/bulk_import.py                         # offline: a fake store with faults and bad rows
    python examples/bulk_import.py rows.csv journal.jsonl  # name,categoryId,status rows; ANIMALSTORE_* for the service

Two identical rows are two pets (two cats may share a name): remove repeated rows from the file first if they are
mistakes.
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
THE_RUNS = (401, 403, 404, 408, 429)
"""Refusals that are not the row's: the key, its rights or the base URL is wrong, or the service is busy (408 may
have been stored: the SDK says so). Every other 4xx (400, 409, 413 for a name too large, 422, ...) refuses the row."""


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
        status = getattr(exc, "status_code", 0)
        if 400 <= status <= 499 and status not in THE_RUNS:  # the service refused the row itself: never sent again
            journal.write(key, "refused", rule=str(exc))
            return "refused"
        # Anything else the service certainly did not act on (a 401 for a wrong key, a 404 for a wrong base URL,
        # a 429, a refused connection) is the run's, not the row's: the next run sends the row again.
        journal.write(key, "not stored", error=str(exc))
        return "not stored"
    journal.write(key, "created", id=pet.id)
    return "created"


def import_rows(
    client: AnimalStoreClient,
    rows: Iterable[Row],
    journal_path: Path,
    workers: int = 16,
    unreadable: Iterable[tuple[str, str]] = (),
) -> Journal:
    """Import ``rows`` that have no final outcome in the journal yet; returns the journal, every row in it.

    ``unreadable`` holds the rows the reader refused, as (key, why): recorded as refused, never sent.
    """
    journal = Journal(journal_path)
    for key, entry in list(journal.states.items()):
        if entry["state"] == "sending":  # sent by a run that stopped before the outcome: it may be stored
            journal.write(key, "may have been stored", error="the run stopped before the outcome was known")
    for key, why in unreadable:
        if journal.states.get(key, {}).get("state") not in FINAL:
            journal.write(key, "refused", rule=why)
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


MAX_NAME = 1_000
"""The longest name this import accepts, in characters. The service publishes no limit (its body limit answers
413); a longer "name" is most often a quote left open, which reads the lines after it into one field."""


def read_rows(path: Path) -> tuple[list[Row], list[tuple[str, str]]]:
    """``name,categoryId,status`` rows of a CSV file with a header line, and the rows refused as read, as (key, why).

    A row is refused here when it cannot be a pet: unreadable as CSV, the wrong number of fields, an empty or
    overlong name, one holding a control character or bytes that are not UTF-8, a ``categoryId`` that is not a
    whole number. The SDK refuses the rest before sending (an unknown status, a ``categoryId`` past int64),
    naming the rule. A row's key is its content, numbered among identical rows: removing or adding another row
    (a refused one, fixed) changes no other row's key, so a resumed run never takes one row's outcome for another's.
    """
    import csv
    import hashlib

    rows: list[Row] = []
    unreadable: list[tuple[str, str]] = []
    seen: dict[str, int] = {}
    # utf-8-sig: a spreadsheet's byte order mark is not part of the first column's name; bytes that are not UTF-8
    # are kept as they are (surrogateescape) and refuse their row alone, not the whole file.
    with path.open(newline="", encoding="utf-8-sig", errors="surrogateescape") as file:
        reader = csv.DictReader(file)
        lacking = {"name", "categoryId"} - set(reader.fieldnames or ())
        if lacking:
            raise SystemExit(f"{path}: the header line must name name,categoryId and optionally status")
        while True:
            try:
                record = next(reader)
            except StopIteration:
                break
            except csv.Error as exc:  # a field over the csv module's limit (131,072 characters), a NUL byte
                line = reader.line_num + 1  # the line that failed is not counted
                unreadable.append((f"line {line}", f"line {line}: not readable as CSV ({exc})"))
                continue
            name, category, status = record["name"], record["categoryId"], record.get("status") or ""
            content = json.dumps([name, category, status])
            if len(content) > 2 * MAX_NAME:  # an overlong row's key is its digest, not a line as long as it
                content = hashlib.sha256(content.encode("utf-8", "surrogateescape")).hexdigest()
            seen[content] = seen.get(content, 0) + 1
            key = f"{content}#{seen[content]}"
            why = _malformed(record)
            if why is not None:  # the record's last line (a quote left open spans many)
                unreadable.append((key, f"line {reader.line_num}: {why}"))
            else:
                rows.append((key, name, int(category), status or None))
    return rows, unreadable


def _malformed(record: dict[str | Any, Any]) -> str | None:
    """Why the reader refuses a CSV record, or None."""
    import re

    if None in record:  # the fields past the header's, which csv.DictReader files under None
        return f"{len(record) - 1 + len(record[None])} fields, more than the header's {len(record) - 1}"
    if any(value is None for value in record.values()):
        return "fewer fields than the header"
    category = record["categoryId"].strip()
    if not re.fullmatch(r"[+-]?[0-9]+", category):  # ASCII digits only: int() would also take "1_000" and "١٢"
        return f"categoryId {category[:50]!r} is not a whole number"
    return _bad_name(record["name"])


def _bad_name(name: str) -> str | None:
    """Why the reader refuses a name, or None."""
    import unicodedata

    if not name.strip():
        return "the name is empty"
    if len(name) > MAX_NAME:
        return f"the name is {len(name):,} characters, over the {MAX_NAME:,} this import takes (a quote left open?)"
    for char in name:
        if "\udc80" <= char <= "\udcff":
            return "the name is not UTF-8 text"
        if unicodedata.category(char) == "Cc":
            return f"the name holds a control character (U+{ord(char):04X})"
    return None


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
    rows, unreadable = read_rows(rows_path)
    with AnimalStoreClient() as client:
        journal = import_rows(client, rows, journal_path, unreadable=unreadable)
    print(f"outcomes: {summary(journal)}")


if __name__ == "__main__":
    import sys

    main(sys.argv[1:])
