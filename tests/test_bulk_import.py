"""The documented bulk import (``examples/bulk_import.py``, included in docs/howto.md) loses no row and stores no pet
twice: with faults and bad rows, and when killed at a random row and run again.

The fake store is served over HTTP on 127.0.0.1, as the service would be; the import runs as the page shows it.
"""

from __future__ import annotations

import csv
import importlib.util
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path
from types import ModuleType
from typing import Any

from animalstore_client import AnimalStoreClient
from animalstore_client.testing import FakeAnimalStore

from .conftest import scaled

EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "bulk_import.py"
KEY = "import-test-key"
OUTCOMES = {"created", "refused", "not stored", "may have been stored"}
BAD = {
    "17": "availble",  # a mistyped status
    "404": "sold out",
    "1001": "",
    "1500": "pending ",
    "1999": "AVAILABLE!",
}
"""Five bad rows among the 2,000, by key: each refused before anything is sent."""


def _example() -> ModuleType:
    spec = importlib.util.spec_from_file_location("bulk_import_example", EXAMPLE)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _rows(count: int) -> list[tuple[str, str, int, Any]]:
    return [(str(n), f"pet-{n}", 1 + n % 5, BAD.get(str(n), "available")) for n in range(count)]


def _inject(store: FakeAnimalStore, faults: int) -> None:
    """``faults`` failures: half refusals the SDK retries, a quarter failures after storing, a quarter lost answers."""
    store.fail_next(429, times=faults // 2, retry_after=0)
    store.fail_next(500, times=faults // 4, method="POST")
    store.fail_next_connection("reset", times=faults - faults // 2 - faults // 4, method="POST")


def _no_pet_twice(store: FakeAnimalStore) -> list[str]:
    names = [pet.name for pet in store.pets]
    assert len(names) == len(set(names)), "a pet was stored twice"
    return names


def test_two_thousand_rows_with_faults_and_bad_rows_each_end_with_an_outcome(tmp_path: Path) -> None:
    """2,000 rows, 200 injected faults, 5 bad rows (`scaled`: 500, 50 and 2 in the everyday tier): every row has an
    outcome, the bad ones refused, none stored twice; a second run sends nothing (every outcome is final but "not
    stored", which it sends again)."""
    example = _example()
    store = FakeAnimalStore(api_keys=[KEY])
    _inject(store, scaled(200, least=50))
    rows = _rows(scaled(2000, least=500))
    bad = {key for key in BAD if int(key) < len(rows)}
    assert bad
    journal_path = tmp_path / "journal.jsonl"
    with store.serve() as url, AnimalStoreClient(KEY, base_url=url, max_retries=2) as client:
        journal = example.import_rows(client, rows, journal_path)
        states: dict[str, Any] = {key: entry["state"] for key, entry in journal.states.items()}
        assert set(states) == {row[0] for row in rows}
        assert set(states.values()) <= OUTCOMES
        assert {key for key, state in states.items() if state == "refused"} == bad
        stored = _no_pet_twice(store)
        created = [key for key, state in states.items() if state == "created"]
        maybe = [key for key, state in states.items() if state == "may have been stored"]
        assert len(stored) >= len(created)
        assert len(stored) <= len(created) + len(maybe)
        again = example.import_rows(client, rows, journal_path)
    assert len(_no_pet_twice(store)) == len(stored) + sum(state == "not stored" for state in states.values())
    assert all(entry["state"] != "sending" for entry in again.states.values())


def _write_csv(path: Path, rows: list[tuple[str, str, int, Any]]) -> None:
    with path.open("w", newline="", encoding="utf-8") as file:
        writer = csv.writer(file)
        writer.writerow(["name", "categoryId", "status"])
        writer.writerows((name, category, status or "") for _, name, category, status in rows)


def _run(rows_path: Path, journal_path: Path, url: str, *, errors: bool) -> subprocess.Popen[bytes]:
    """The example on the CSV file, as a user runs it; its stderr piped when ``errors`` (else not kept)."""
    env = {**os.environ, "ANIMALSTORE_API_KEY": KEY, "ANIMALSTORE_BASE_URL": url}
    return subprocess.Popen(
        [sys.executable, str(EXAMPLE), str(rows_path), str(journal_path)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE if errors else subprocess.DEVNULL,
    )


def _lines(path: Path) -> int:
    try:
        return path.read_bytes().count(b"\n")
    except FileNotFoundError:
        return 0


def test_an_import_killed_at_a_random_row_and_run_again_stores_nothing_twice(tmp_path: Path) -> None:
    """The example, run as shown on a CSV file, is killed (SIGKILL) once a random number of journal lines are
    written, then run again to its end: every row has an outcome, and no pet is stored twice."""
    store = FakeAnimalStore(api_keys=[KEY])
    _inject(store, 40)
    rows = _rows(600)
    rows_path, journal_path = tmp_path / "rows.csv", tmp_path / "journal.jsonl"
    _write_csv(rows_path, rows)
    kill_at = random.Random(os.getpid()).randrange(50, 900)  # journal lines: two for most rows
    with store.serve() as url:
        first = _run(rows_path, journal_path, url, errors=False)
        ends = time.monotonic() + 60
        while _lines(journal_path) < kill_at and first.poll() is None and time.monotonic() < ends:
            time.sleep(0.01)  # polling a file the other process writes: bounded by `ends`
        first.send_signal(signal.SIGKILL)
        first.wait(10)
        assert first.returncode == -signal.SIGKILL, "the first run ended before it was interrupted"
        second = _run(rows_path, journal_path, url, errors=True)
        _, errors = second.communicate(timeout=120)
        assert second.returncode == 0, errors.decode()
        _no_pet_twice(store)
    example = _example()
    journal = example.Journal(journal_path)
    journal.close()
    assert set(journal.states) == {row[0] for row in example.read_rows(rows_path)}
    assert {str(entry["state"]) for entry in journal.states.values()} <= OUTCOMES


def test_a_rows_key_is_its_content_so_removing_another_row_changes_no_key(tmp_path: Path) -> None:
    """Keys come from a row's content (numbered among identical rows), not its line: fixing or removing a refused
    row between runs leaves every other row's outcome its own."""
    example = _example()
    rows = [("", "Rex", 1, "available"), ("", "Typo", 1, "availble"), ("", "Rex", 1, "available"), ("", "Max", 2, "")]
    before, after = tmp_path / "before.csv", tmp_path / "after.csv"
    _write_csv(before, rows)
    _write_csv(after, [row for row in rows if row[1] != "Typo"])
    keys_before = [row[0] for row in example.read_rows(before)]
    keys_after = [row[0] for row in example.read_rows(after)]
    assert len(set(keys_before)) == 4  # the two identical Rex rows are two rows
    assert keys_after == [keys_before[0], keys_before[2], keys_before[3]]


def test_a_line_cut_short_by_a_kill_is_not_glued_to_the_next_runs_first_entry(tmp_path: Path) -> None:
    """A journal whose last line a kill cut short: the next run's entries start on a line of their own, so none is
    lost (a lost "sending" could let a third run send that row again)."""
    example = _example()
    path = tmp_path / "journal.jsonl"
    path.write_text('{"row": "a", "state": "created", "id": 1}\n{"row": "b", "sta')
    journal = example.Journal(path)
    journal.write("c", "sending")
    journal.close()
    again = example.Journal(path)
    again.close()
    assert set(again.states) == {"a", "c"}
