"""Every example script runs offline as a user would run it: exit status 0 and the expected output."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
EXPECTED = {
    "quickstart.py": ["available: #1 Biscuit", "created:   #3 Pepper (pending)", "fetched:   #3 Pepper", "2030-12-05"],
    "async_concurrency.py": ["created 300 pets with at most 50 in flight", "distinct ids: 300"],
    "error_handling.py": [
        "ClientValidationError: limit must be an int from 1 to 100, got 500",
        "AuthenticationError: status=401",
        "NotFoundError: No pet with id 12345.",
        "BadRequestError: categoryId: required",
        "Retrying GET",
        "after two injected 503s: 1 pets listed",
        "InternalServerError after 1 attempt(s)",
        "InternalServerError after 3 attempts",
        "APIConnectionError",
    ],
    "environments.py": [
        "production: https://api.animalstore.example/v1",
        "staging: https://staging.api.animalstore.example/v1",
        "bad name: environment must be one of",
        "override: http://127.0.0.1:",
    ],
    "migrate_from_get_pet.py": ["[DeprecationWarning]", "find_pet(1, available) -> Biscuit", "same pet: True"],
    "messages_quickstart.py": ["HTTP 202", "status: queued", "message: Hello from the SDK"],
    "test_my_app.py": ["6 passed"],
    "fastapi_app.py": [
        "POST /pets -> {'id': 2, 'name': 'Rex', 'categoryId': 2, 'status': 'available'}",
        "GET /pets -> [{'id': 1, 'name': 'Biscuit'",
        "GET /pets?limit=500 -> 422",
        "during an outage -> the animal store answered 500 (request id req_",
    ],
    "worker_pool.py": ["imported 20 pets through", "distinct ids: 20", "the store holds 20 pets"],
}


def test_every_example_is_covered() -> None:
    """Each script in examples/ has expectations here, and each expectation has a script."""
    assert sorted(p.name for p in EXAMPLES.glob("*.py")) == sorted(EXPECTED)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_example_runs_offline(name: str) -> None:
    """With no API key the example says it is offline on its first line, succeeds, and prints its results."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANIMALSTORE_")}
    result = subprocess.run(
        # Warnings as errors, except the DeprecationWarnings the examples show on purpose.
        [sys.executable, "-W", "error", "-W", "always::DeprecationWarning", str(EXAMPLES / name)],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
        cwd=EXAMPLES.parent,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    first_line = result.stdout.splitlines()[0]
    assert "No ANIMALSTORE_API_KEY" in first_line
    assert "offline" in first_line
    for expected in EXPECTED[name]:
        assert expected in result.stdout, f"{expected!r} missing from:\n{result.stdout}"
