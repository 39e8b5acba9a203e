"""with_raw_response: the same operations returning APIResponse.

Each test taking ``make_client`` runs against the sync and the async client.
"""

from __future__ import annotations

import httpx
import pytest
import respx

from animalstore_client import (
    APIResponse,
    APIResponseValidationError,
    NotFoundError,
    Pet,
)

from .conftest import PRODUCTION, ClientFactory

PET = {"id": 7, "name": "Rex", "categoryId": 3, "status": "available"}
ERROR_503 = {"code": "unavailable", "message": "try later", "status": 503}


def test_raw_response_exposes_http_details(make_client: ClientFactory, router: respx.MockRouter) -> None:
    """with_raw_response gives status, headers, the httpx response, attempts and parse()."""
    router.post(f"{PRODUCTION}/pets").respond(201, json=PET, headers={"x-request-id": "r-9"})
    raw = make_client().with_raw_response.create_pet(name="Rex", category_id=3)
    assert isinstance(raw, APIResponse)
    assert raw.status_code == 201
    assert raw.headers["x-request-id"] == "r-9"
    assert isinstance(raw.http_response, httpx.Response)
    assert raw.attempts == 1
    assert raw.parse() == Pet(id=7, name="Rex", category_id=3, status="available")
    assert raw.parse() is raw.parse()


def test_raw_response_raises_errors_the_same_way(make_client: ClientFactory, router: respx.MockRouter) -> None:
    """A non-2xx raises from the raw call; a bad body raises from parse()."""
    router.get(f"{PRODUCTION}/pets/1").respond(404, json={"code": "nf", "message": "none", "status": 404})
    router.get(f"{PRODUCTION}/pets").respond(200, json={"not": "a list"})
    client = make_client()
    with pytest.raises(NotFoundError), pytest.warns(DeprecationWarning, match="2030-12-05"):
        client.with_raw_response.get_pet(1)  # type: ignore[deprecated]  # the deprecated call is the point
    raw = client.with_raw_response.list_pets()
    with pytest.raises(APIResponseValidationError):
        raw.parse()
