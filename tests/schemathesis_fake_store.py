"""The fake store checked against docs/openapi.yaml by an independent tool: schemathesis (run by test_fidelity.py).

pytest runs this module in a process of its own, with schemathesis' plugin, which the suite's own processes leave
out (loading it cost each of them 1.7 CPU-seconds, for this one test). Every operation of the document is exercised
over the fake store's HTTP server with schemathesis' default checks (no server errors; status codes, content types
and bodies that the document allows; invalid data rejected, valid data accepted), positive and negative examples
alike, with a fixed seed and a bounded number of examples so the run stays short.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import schemathesis
from hypothesis import HealthCheck, settings

from animalstore_client.testing import FakeAnimalStore

from .conftest import scaled

DOCUMENT = Path(__file__).parent.parent / "docs" / "openapi.yaml"
KEY = "test-key"

schema = schemathesis.openapi.from_path(DOCUMENT)


@schema.auth()
class _BearerKey:
    """The store's key on every case, except those that test a missing or wrong one."""

    def get(self, case: Any, context: Any) -> str:
        return KEY

    def set(self, case: Any, data: str, context: Any) -> None:
        case.headers = {**(case.headers or {}), "Authorization": f"Bearer {data}"}


@pytest.fixture(scope="module")
def base_url() -> Iterator[str]:
    store = FakeAnimalStore(
        api_keys=[KEY], pets=[{"id": i, "name": f"pet-{i}", "categoryId": i, "status": "available"} for i in (1, 2)]
    )
    with store.serve() as url:
        yield url


@schema.parametrize()
@settings(
    max_examples=scaled(40, least=4),
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
def test_the_fake_store_follows_the_interface_document(case: Any, base_url: str) -> None:
    """schemathesis finds no response of the fake that the document does not allow."""
    case.call_and_validate(base_url=base_url, timeout=10)
