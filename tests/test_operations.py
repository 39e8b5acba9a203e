"""The sans-IO core on its own: requests built and responses parsed with no transport at all."""

from __future__ import annotations

import json

import httpx
import pytest

from animalstore_client import APIResponseValidationError, NotFoundError, Pet, PetStatus
from animalstore_client._core import operations
from animalstore_client._core.operations import (
    RequestConfig,
    build_create_pet,
    build_get_pet,
    build_list_pets,
    parse_create_pet,
    parse_get_pet,
    parse_list_pets,
)

CONFIG = RequestConfig(
    base_url="https://api.animalstore.example/v1",
    headers={"authorization": "Bearer k", "accept": "application/json"},
    timeout=httpx.Timeout(3.0),
)


def test_build_list_pets() -> None:
    """The list request carries the query, the shared headers and the timeout."""
    request = build_list_pets(CONFIG, limit=10, status=PetStatus.PENDING)
    assert request.method == "GET"
    assert str(request.url) == "https://api.animalstore.example/v1/pets?limit=10&status=pending"
    assert request.headers["authorization"] == "Bearer k"
    assert request.extensions["timeout"] == httpx.Timeout(3.0).as_dict()


def test_build_create_pet() -> None:
    """The create request has a compact JSON body and a JSON content type."""
    request = build_create_pet(CONFIG, name="Ünsal", category_id=2, status="sold")
    assert request.headers["content-type"] == "application/json"
    assert request.content == '{"name":"Ünsal","categoryId":2,"status":"sold"}'.encode()
    assert json.loads(request.content)["name"] == "Ünsal"


def test_build_get_pet() -> None:
    """The get request puts the id in the path."""
    assert str(build_get_pet(CONFIG, 9_007_199_254_740_993).url).endswith("/pets/9007199254740993")


def test_config_repr_hides_headers() -> None:
    """The shared configuration, which holds the key, does not show it in repr."""
    assert "Bearer" not in repr(CONFIG)


def _response(status: int, body: object, method: str = "GET") -> httpx.Response:
    return httpx.Response(status, json=body, request=httpx.Request(method, "https://x.example/v1/pets"))


def test_parse_list_pets() -> None:
    """A 200 array becomes a list of Pets."""
    assert parse_list_pets(_response(200, [{"id": 1, "name": "A", "categoryId": 1}])) == [
        Pet(id=1, name="A", category_id=1)
    ]


def test_parse_list_pets_refuses_a_long_array_before_building_pets(monkeypatch: pytest.MonkeyPatch) -> None:
    """More items than the limit are refused by the array's length: no Pet is built, faulty items or not."""

    def no_structuring(*args: object) -> object:
        raise AssertionError("a Pet was built")

    monkeypatch.setattr(operations, "structure", no_structuring)
    request = build_list_pets(CONFIG, limit=5)
    body = [{"id": index} for index in range(3000)]  # not even valid pets
    response = httpx.Response(200, json=body, request=request)
    with pytest.raises(
        APIResponseValidationError, match=r": 3000 pets in the body, more than the limit of 5 asked for$"
    ):
        parse_list_pets(response)


def test_parse_list_pets_too_long_keeps_the_decoded_body() -> None:
    """The exception's body is the decoded JSON, as APIResponseValidationError.body documents."""
    request = build_list_pets(CONFIG, limit=1)
    body = [{"id": 1, "name": "A", "categoryId": 1}, {"id": 2, "name": "B", "categoryId": 1}]
    with pytest.raises(APIResponseValidationError) as info:
        parse_list_pets(httpx.Response(200, json=body, request=request))
    assert info.value.body == body


def test_parse_create_pet_accepts_201() -> None:
    """A 201 Pet is returned."""
    assert parse_create_pet(_response(201, {"id": 2, "name": "B", "categoryId": 1}, "POST")).id == 2


def test_parse_get_pet_404() -> None:
    """A 404 Error body raises NotFoundError."""
    with pytest.raises(NotFoundError):
        parse_get_pet(_response(404, {"code": "not_found", "message": "none", "status": 404}))


def test_parse_rejects_large_float_disguised_as_int() -> None:
    """1e3 is a JSON number but not an integer, so it is refused."""
    response = httpx.Response(
        200,
        content=b'{"id": 1e3, "name": "A", "categoryId": 1}',
        request=httpx.Request("GET", "https://x.example"),
    )
    with pytest.raises(APIResponseValidationError, match=r"expected an integer, got 1000\.0"):
        parse_get_pet(response)
