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
    assert set(journal.states) == {row[0] for row in example.read_rows(rows_path)[0]}
    assert {str(entry["state"]) for entry in journal.states.values()} <= OUTCOMES


def test_a_rows_key_is_its_content_so_removing_another_row_changes_no_key(tmp_path: Path) -> None:
    """Keys come from a row's content (numbered among identical rows), not its line: fixing or removing a refused
    row between runs leaves every other row's outcome its own."""
    example = _example()
    rows = [("", "Rex", 1, "available"), ("", "Typo", 1, "availble"), ("", "Rex", 1, "available"), ("", "Max", 2, "")]
    before, after = tmp_path / "before.csv", tmp_path / "after.csv"
    _write_csv(before, rows)
    _write_csv(after, [row for row in rows if row[1] != "Typo"])
    keys_before = [row[0] for row in example.read_rows(before)[0]]
    keys_after = [row[0] for row in example.read_rows(after)[0]]
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


GOOD = 60
"""Good rows of the real CSV below, one pet each (and the duplicates)."""
MALFORMED = [
    b"pet-abc,abc,available",  # a categoryId that is not a number
    b"pet-decimal,1.5,sold",
    b"pet-none,,pending",
    b"pet-arabic,\xd9\xa1\xd9\xa2,sold",  # digits, but not ASCII ones: int() would take them
    b",1,available",  # an empty name
    b"   ,2,sold",
    b"x" * 5000 + b",1,available",  # a name over the reader's limit
    b"y" * 200_000 + b",1,available",  # a field over the csv module's own limit: unreadable
    b"pet-\xff\xfe,1,available",  # bytes that are not UTF-8
    b"pet-few",  # too few fields
    b"pet-many,1,sold,extra",  # too many
]
"""Rows the reader refuses, each with its reason, never sent."""
SDK_REFUSED = [
    b"pet-typo,1,availble",  # a bad status: the SDK refuses it before sending
    b"pet-shout,2,SOLD",
    b"pet-huge,9223372036854775808,sold",  # past int64
]
DUPLICATES = [b"pet-dup,4,sold", b"pet-dup,4,sold", b"pet-7,3,available"]
"""Two identical rows, and a repeat of a good row: each is a row of its own, so two pets (docs/howto.md)."""


def _real_csv(path: Path) -> None:
    good = [f"pet-{n},{1 + n % 5},available".encode() for n in range(GOOD)]
    lines = [b"\xef\xbb\xbfname,categoryId,status", *good[:20], *MALFORMED, *good[20:40], *SDK_REFUSED]
    lines += [*DUPLICATES, *good[40:]]
    path.write_bytes(b"\r\n".join(lines) + b"\r\n")  # a spreadsheet's: a byte order mark, CRLF


def _journal_lines(path: Path) -> dict[str, list[str]]:
    """Each row's states in the journal file, in the order written."""
    import json

    states: dict[str, list[str]] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        entry = json.loads(line)
        states.setdefault(entry["row"], []).append(entry["state"])
    return states


def _content(entry: dict[str, Any] | None) -> tuple[Any, ...]:
    entry = entry or {}
    return (entry.get("name"), entry.get("categoryId"), entry.get("status"))


def _each_row_has_one_outcome(journal_path: Path) -> None:
    """Each row's last state is an outcome, and no final one came before it ("not stored" is sent again)."""
    for key, states in _journal_lines(journal_path).items():
        outcomes = [state for state in states if state != "sending"]
        assert outcomes, (key[:80], states)
        assert outcomes[-1] in OUTCOMES, (key[:80], states)
        assert all(state == "not stored" for state in outcomes[:-1]), (key[:80], states)


def _the_readers_refusals_say_why(states: dict[str, dict[str, Any]], unreadable: list[tuple[str, str]]) -> None:
    """Each row the reader refused is refused in the journal with the reader's line and reason."""
    for key, why in unreadable:
        assert states[key]["state"] == "refused"
        assert states[key]["rule"] == why
    reasons = " ".join(why for _, why in unreadable)
    for expected in ("'abc' is not a whole number", "'1.5'", "''", "the name is empty", "5,000 characters"):
        assert expected in reasons, reasons
    for expected in ("not readable as CSV", "not UTF-8", "fewer fields", "4 fields, more than the header's 3"):
        assert expected in reasons, reasons


def _no_row_stored_twice(store: FakeAnimalStore, rows: list[tuple[str, str, int, Any]], final: dict[str, str]) -> None:
    """Each content's pets are at least its created rows and at most those and its unknowns: two identical rows may
    be two pets, one row never is."""
    from collections import Counter

    row_content = {row[0]: (row[1], row[2], row[3]) for row in rows}
    pets = Counter((pet.name, pet.category_id, pet.status and pet.status.value) for pet in store.pets)
    assert set(pets) <= set(row_content.values())
    for content in set(row_content.values()):
        mine = [final[key] for key, value in row_content.items() if value == content]
        assert mine.count("created") <= pets[content] <= mine.count("created") + mine.count("may have been stored")


def test_a_real_csv_with_malformed_duplicate_and_refused_rows_run_twice(tmp_path: Path) -> None:
    """The example on a CSV holding non-numeric ids, empty and overlong names, bad statuses, broken bytes and
    duplicate rows, against the fake store with faults (a 413 and a 409 refusing a row, a 401 that is the run's, a
    500 and a reset after storing, busy 429s), run twice as a user runs it: every row has exactly one outcome in the
    journal, the reader's refusals carry their reason, a refused row is never sent again, and no row is stored
    twice (two identical rows are two pets)."""
    from collections import Counter

    example = _example()
    rows_path, journal_path = tmp_path / "rows.csv", tmp_path / "journal.jsonl"
    _real_csv(rows_path)
    rows, unreadable = example.read_rows(rows_path)
    keys = {row[0] for row in rows} | {key for key, _ in unreadable}
    assert len(unreadable) == len(MALFORMED)
    assert len(rows) == GOOD + len(SDK_REFUSED) + len(DUPLICATES)
    store = FakeAnimalStore(api_keys=[KEY])
    store.fail_next(429, times=4, retry_after=0)
    store.fail_next(413, method="POST")  # the service refuses a row: never sent again
    store.fail_next(409, method="POST")
    store.fail_next(401, method="POST")  # the run's, not the row's: sent again by the next run
    store.fail_next(500, method="POST")  # maybe stored
    store.fail_next_connection("reset", method="POST")  # stored, the answer lost
    with store.serve() as url:
        first = _run(rows_path, journal_path, url, errors=True)
        _, errors = first.communicate(timeout=120)
        assert first.returncode == 0, errors.decode()
        assert store.faults == []
        after_first = example.Journal(journal_path)
        after_first.close()
        sent_first = len(store.requests)
        second = _run(rows_path, journal_path, url, errors=True)
        _, errors = second.communicate(timeout=120)
        assert second.returncode == 0, errors.decode()
    journal = example.Journal(journal_path)
    journal.close()
    assert set(journal.states) == keys
    _each_row_has_one_outcome(journal_path)
    assert len({row[0] for row in rows if row[1] == "pet-dup"}) == 2  # two identical rows: two rows, two pets
    first_states = {key: str(entry["state"]) for key, entry in after_first.states.items()}
    assert set(first_states) == keys
    _the_readers_refusals_say_why(journal.states, unreadable)
    refused = [key for key, state in first_states.items() if state == "refused"]
    assert len(refused) == len(MALFORMED) + len(SDK_REFUSED) + 2  # and the rows the 413 and the 409 refused
    assert sum(state == "not stored" for state in first_states.values()) >= 1  # the 401's row
    # The second run sends exactly the rows the first left "not stored", once each: no refused row, no other.
    row_content = {row[0]: (row[1], row[2], row[3]) for row in rows}
    sent_again = Counter(_content(request.json) for request in store.requests[sent_first:])
    expected_again = Counter(row_content[key] for key, state in first_states.items() if state == "not stored")
    assert sent_again == expected_again
    _no_row_stored_twice(store, rows, {key: str(entry["state"]) for key, entry in journal.states.items()})
