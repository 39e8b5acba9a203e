"""The clients end to end over respx: request shape, errors, validation, configuration.

Each test taking ``make_client`` runs against the sync and the async client.
"""

from __future__ import annotations

import json
import logging
import warnings
from typing import Any

import httpx
import pytest
import respx

from animalstore_client import (
    DEFAULT_MAX_RETRIES,
    DEFAULT_TIMEOUT,
    AnimalStoreClient,
    AnimalStoreError,
    APIConnectionError,
    APIError,
    APIResponseValidationError,
    APIStatusError,
    APITimeoutError,
    AsyncAnimalStoreClient,
    AuthenticationError,
    BadRequestError,
    ClientValidationError,
    ConflictError,
    Environment,
    InternalServerError,
    NotFoundError,
    PermissionDeniedError,
    Pet,
    PetStatus,
    RateLimitError,
    UnprocessableEntityError,
    __version__,
)

from .conftest import API_KEY, PRODUCTION, STAGING, ClientFactory

PET = {"id": 7, "name": "Rex", "categoryId": 3, "status": "available"}


def call_get_pet(client: Any, pet_id: Any) -> Any:
    """get_pet, with its (separately tested) DeprecationWarning absorbed."""
    with pytest.warns(DeprecationWarning, match="2030-12-05"):
        return client.get_pet(pet_id)


# --- request shape -----------------------------------------------------------


def test_list_pets_sends_get_with_auth_and_accept(make_client: ClientFactory, router: respx.MockRouter) -> None:
    """list_pets sends GET /pets with the bearer key, JSON Accept and the SDK's User-Agent."""
    route = router.get(f"{PRODUCTION}/pets").respond(200, json=[PET])
    pets = make_client().list_pets()
    assert pets == [Pet(id=7, name="Rex", category_id=3, status=PetStatus.AVAILABLE)]
    request = route.calls.last.request
    assert request.method == "GET"
    assert str(request.url) == f"{PRODUCTION}/pets"
    assert request.url.params.multi_items() == []
    assert request.headers["Authorization"] == f"Bearer {API_KEY}"
    assert request.headers["Accept"] == "application/json"
    assert request.headers["User-Agent"].startswith(f"animalstore-client-python/{__version__} httpx/")
    assert request.headers.get_list("Authorization") == [f"Bearer {API_KEY}"]


@pytest.mark.parametrize(
    ("kwargs", "query"),
    [
        ({"limit": 1}, [("limit", "1")]),
        ({"limit": 100}, [("limit", "100")]),
        ({"status": PetStatus.SOLD}, [("status", "sold")]),
        ({"status": "pending"}, [("status", "pending")]),
        ({"limit": 5, "status": "available"}, [("limit", "5"), ("status", "available")]),
    ],
)
def test_list_pets_sends_only_given_query_parameters(
    make_client: ClientFactory, router: respx.MockRouter, kwargs: dict[str, Any], query: list[tuple[str, str]]
) -> None:
    """limit and status appear in the query exactly when given, with wire values."""
    route = router.get(f"{PRODUCTION}/pets").respond(200, json=[])
    assert make_client().list_pets(**kwargs) == []
    assert route.calls.last.request.url.params.multi_items() == query


def test_create_pet_posts_camel_case_json(make_client: ClientFactory, router: respx.MockRouter) -> None:
    """create_pet POSTs a camelCase NewPet with a JSON content type and returns the Pet."""
    route = router.post(f"{PRODUCTION}/pets").respond(201, json=PET)
    pet = make_client().create_pet(name="Rex", category_id=3, status="available")
    assert pet == Pet(id=7, name="Rex", category_id=3, status=PetStatus.AVAILABLE)
    request = route.calls.last.request
    assert request.headers["Content-Type"] == "application/json"
    assert request.headers["Authorization"] == f"Bearer {API_KEY}"
    assert json.loads(request.content) == {"name": "Rex", "categoryId": 3, "status": "available"}


def test_create_pet_omits_status_when_none(make_client: ClientFactory, router: respx.MockRouter) -> None:
    """A status of None is left out of the body, not sent as null."""
    route = router.post(f"{PRODUCTION}/pets").respond(201, json={"id": 1, "name": "Ash", "categoryId": 0})
    pet = make_client().create_pet(name="Ash", category_id=0)
    assert pet.status is None
    assert json.loads(route.calls.last.request.content) == {"name": "Ash", "categoryId": 0}


def test_get_pet_fetches_by_id(make_client: ClientFactory, router: respx.MockRouter) -> None:
    """get_pet sends GET /pets/{petId} and returns the Pet."""
    route = router.get(f"{PRODUCTION}/pets/7").respond(200, json=PET)
    assert call_get_pet(make_client(), 7).id == 7
    assert route.calls.last.request.headers["Authorization"] == f"Bearer {API_KEY}"


# --- the deprecation of get_pet -------------------------------------------------


def test_get_pet_warns_at_the_callers_line(router: respx.MockRouter) -> None:
    """The sync get_pet warning is a DeprecationWarning naming the date and the replacement, at this line."""
    router.get(f"{PRODUCTION}/pets/7").respond(200, json=PET)
    with AnimalStoreClient(API_KEY) as client, warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        client.get_pet(7)  # type: ignore[deprecated]  # the warning under test
    [warning] = caught
    assert warning.category is DeprecationWarning
    assert "2030-12-05" in str(warning.message)
    assert "list_pets(status=..., limit=100)" in str(warning.message)
    assert "help(AnimalStoreClient.get_pet)" in str(warning.message)
    assert warning.filename == __file__


@pytest.mark.anyio
async def test_async_get_pet_warns_at_the_callers_line(router: respx.MockRouter) -> None:
    """The async get_pet warns when called, attributed to the caller's line."""
    router.get(f"{PRODUCTION}/pets/7").respond(200, json=PET)
    async with AsyncAnimalStoreClient(API_KEY) as client:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            pet = await client.get_pet(7)  # type: ignore[deprecated]  # the warning under test
    assert pet.id == 7
    [warning] = caught
    assert warning.category is DeprecationWarning
    assert "2030-12-05" in str(warning.message)
    assert warning.filename == __file__


def test_get_pet_is_marked_deprecated_for_type_checkers() -> None:
    """Both get_pet methods carry PEP 702's __deprecated__ with the same message."""
    sync_message = AnimalStoreClient.get_pet.__deprecated__  # type: ignore[attr-defined,deprecated]
    async_message = AsyncAnimalStoreClient.get_pet.__deprecated__  # type: ignore[attr-defined,deprecated]
    assert sync_message == async_message
    assert "2030-12-05" in sync_message
    with respx.mock:
        respx.get(f"{PRODUCTION}/pets/1").respond(200, json=PET)
        client = AnimalStoreClient(API_KEY)
        with pytest.warns(DeprecationWarning, match="2030-12-05") as record:
            client.get_pet(1)  # type: ignore[deprecated]
    assert str(record[0].message) == sync_message


# --- argument validation: nothing is sent --------------------------------------------


@pytest.mark.parametrize(
    ("kwargs", "argument", "fragment"),
    [
        ({"limit": 0}, "limit", "from 1 to 100, got 0"),
        ({"limit": 101}, "limit", "from 1 to 100, got 101"),
        ({"limit": 500}, "limit", "got 500"),
        ({"limit": -1}, "limit", "got -1"),
        ({"limit": True}, "limit", "got True"),
        ({"limit": "5"}, "limit", "got '5'"),
        ({"limit": 5.0}, "limit", "got 5.0"),
        ({"status": "adopted"}, "status", "got 'adopted'"),
        ({"status": "AVAILABLE"}, "status", "got 'AVAILABLE'"),
        ({"status": 1}, "status", "got 1"),
    ],
)
def test_list_pets_rejects_bad_arguments_before_sending(
    make_client: ClientFactory, router: respx.MockRouter, kwargs: dict[str, Any], argument: str, fragment: str
) -> None:
    """A bad limit or status raises ClientValidationError naming it, and no request leaves."""
    route = router.get(f"{PRODUCTION}/pets").respond(200, json=[])
    with pytest.raises(ClientValidationError) as info:
        make_client().list_pets(**kwargs)
    assert info.value.argument == argument
    assert str(info.value).startswith(f"{argument} must be ")
    assert fragment in str(info.value)
    assert isinstance(info.value, ValueError)
    assert not route.called


@pytest.mark.parametrize(
    ("kwargs", "argument"),
    [
        ({"name": 5, "category_id": 1}, "name"),
        ({"name": None, "category_id": 1}, "name"),
        ({"name": "Rex", "category_id": True}, "category_id"),
        ({"name": "Rex", "category_id": "1"}, "category_id"),
        ({"name": "Rex", "category_id": 1.0}, "category_id"),
        ({"name": "Rex", "category_id": 2**63}, "category_id"),
        ({"name": "Rex", "category_id": -(2**63) - 1}, "category_id"),
        ({"name": "Rex", "category_id": 1, "status": "lost"}, "status"),
    ],
)
def test_create_pet_rejects_bad_arguments_before_sending(
    make_client: ClientFactory, router: respx.MockRouter, kwargs: dict[str, Any], argument: str
) -> None:
    """A bad name, category_id or status raises ClientValidationError and no request leaves."""
    route = router.post(f"{PRODUCTION}/pets").respond(201, json=PET)
    with pytest.raises(ClientValidationError) as info:
        make_client().create_pet(**kwargs)
    assert info.value.argument == argument
    assert repr(kwargs[argument]) in str(info.value)
    assert not route.called


def test_create_pet_accepts_int64_bounds(make_client: ClientFactory, router: respx.MockRouter) -> None:
    """category_id at either end of int64 is sent unchanged."""
    route = router.post(f"{PRODUCTION}/pets").respond(201, json=PET)
    client = make_client()
    for category_id in (2**63 - 1, -(2**63)):
        client.create_pet(name="Rex", category_id=category_id)
        assert json.loads(route.calls.last.request.content)["categoryId"] == category_id


@pytest.mark.parametrize("pet_id", [True, "7", 7.0, 2**63, None])
def test_get_pet_rejects_bad_ids_before_sending(
    make_client: ClientFactory, router: respx.MockRouter, pet_id: Any
) -> None:
    """A pet_id that is not an int64 int raises ClientValidationError and no request leaves."""
    route = router.route().respond(200, json=PET)
    with pytest.raises(ClientValidationError) as info:
        call_get_pet(make_client(), pet_id)
    assert info.value.argument == "pet_id"
    assert not route.called


# --- responses: status errors --------------------------------------------------------------


@pytest.mark.parametrize(
    ("status", "cls"),
    [
        (400, BadRequestError),
        (401, AuthenticationError),
        (403, PermissionDeniedError),
        (404, NotFoundError),
        (409, ConflictError),
        (422, UnprocessableEntityError),
        (429, RateLimitError),
        (500, InternalServerError),
        (502, InternalServerError),
        (503, InternalServerError),
        (418, APIStatusError),
        (302, APIStatusError),
    ],
)
def test_error_bodies_map_to_typed_exceptions(
    make_client: ClientFactory, router: respx.MockRouter, status: int, cls: type[APIStatusError]
) -> None:
    """Each status raises its class, exposing the Error body's fields and the request id."""
    body = {"code": "some_code", "message": "Something went wrong", "status": status}
    router.get(f"{PRODUCTION}/pets").respond(
        status, json=body, headers={"x-request-id": "req-42", "Location": "https://elsewhere.example/"}
    )
    with pytest.raises(APIStatusError) as info:
        make_client(max_retries=0).list_pets()
    exc = info.value
    assert type(exc) is cls
    assert exc.status_code == status
    assert exc.code == "some_code"
    assert exc.message == "Something went wrong"
    assert exc.error is not None
    assert exc.error.status == status
    assert exc.body == body
    assert exc.request_id == "req-42"
    assert exc.request.url == f"{PRODUCTION}/pets"
    assert exc.response.status_code == status
    text = str(exc)
    assert str(status) in text
    assert "some_code" in text
    assert "Something went wrong" in text
    assert "req-42" in text


def test_redirect_is_not_followed(make_client: ClientFactory, router: respx.MockRouter) -> None:
    """A 3xx is raised as APIStatusError; the key is never sent to the Location host."""
    router.get(f"{PRODUCTION}/pets").respond(301, headers={"Location": "https://evil.example/pets"})
    elsewhere = router.get("https://evil.example/pets").respond(200, json=[])
    with pytest.raises(APIStatusError) as info:
        make_client().list_pets()
    assert info.value.status_code == 301
    assert not elsewhere.called


@pytest.mark.parametrize(("status", "cls"), [(502, InternalServerError), (403, PermissionDeniedError)])
def test_html_error_body_still_gives_the_status_class(
    make_client: ClientFactory, router: respx.MockRouter, status: int, cls: type[APIStatusError]
) -> None:
    """A proxy's HTML page gives the status's class, no Error fields, and the text as body."""
    html = "<html><body><h1>Bad Gateway</h1></body></html>"
    router.post(f"{PRODUCTION}/pets").respond(status, text=html, headers={"Content-Type": "text/html"})
    with pytest.raises(cls) as info:
        make_client(max_retries=0).create_pet(name="Rex", category_id=1)
    assert info.value.error is None
    assert info.value.code is None
    assert info.value.message is None
    assert info.value.body == html
    assert info.value.request_id is None
    assert "Bad Gateway" in str(info.value)


def test_error_with_json_that_is_not_an_error_body(make_client: ClientFactory, router: respx.MockRouter) -> None:
    """A JSON error body of another shape is kept as body, with no Error fields."""
    router.get(f"{PRODUCTION}/pets").respond(400, json={"detail": "nope"})
    with pytest.raises(BadRequestError) as info:
        make_client().list_pets()
    assert info.value.body == {"detail": "nope"}
    assert info.value.error is None


def test_empty_error_body(make_client: ClientFactory, router: respx.MockRouter) -> None:
    """An error with no body has body None and still its class."""
    router.get(f"{PRODUCTION}/pets").respond(401)
    with pytest.raises(AuthenticationError) as info:
        make_client().list_pets()
    assert info.value.body is None
    assert "401 Unauthorized" in str(info.value)


# --- responses: malformed success bodies ---------------------------------------------------


@pytest.mark.parametrize(
    ("content", "fragment"),
    [
        (b"<html>oops</html>", "not valid JSON"),
        (b'[{"id": 1, "name": "Rex"', "not valid JSON"),
        (b'[{"id": NaN, "name": "Rex", "categoryId": 1}]', "not valid JSON"),
        (b'[{"id": "abc", "name": "Rex", "categoryId": 1}]', "$[0].id: expected an integer, got 'abc'"),
        (b'[{"id": 42.5, "name": "Rex", "categoryId": 1}]', "$[0].id: expected an integer, got 42.5"),
        (b'[{"id": 1, "name": "Rex", "categoryId": true}]', "$[0].categoryId: expected an integer, got True"),
        (b'[{"id": 1, "name": 5, "categoryId": 1}]', "$[0].name: expected a string, got 5"),
        (b'[{"id": 1, "categoryId": 1}]', "$[0].name: required field missing"),
        (b'[{"id": 1, "name": "Rex", "categoryId": 1, "status": 3}]', "$[0].status: expected a string"),
        (b'{"id": 1, "name": "Rex", "categoryId": 1}', "$: expected a JSON array"),
        (b"[1]", "$[0]: expected a JSON object, got 1"),
    ],
)
def test_malformed_list_body_raises_response_validation_error(
    make_client: ClientFactory, router: respx.MockRouter, content: bytes, fragment: str
) -> None:
    """A 200 whose body is not Pets raises APIResponseValidationError naming the JSON path."""
    router.get(f"{PRODUCTION}/pets").respond(200, content=content, headers={"Content-Type": "application/json"})
    with pytest.raises(APIResponseValidationError) as info:
        make_client().list_pets()
    assert fragment in str(info.value)
    assert info.value.response.status_code == 200
    assert info.value.__cause__ is not None


def test_malformed_create_body_raises_response_validation_error(
    make_client: ClientFactory, router: respx.MockRouter
) -> None:
    """A 201 missing the assigned id raises APIResponseValidationError, not KeyError."""
    router.post(f"{PRODUCTION}/pets").respond(201, json={"name": "Rex", "categoryId": 1})
    with pytest.raises(APIResponseValidationError, match=r"\$\.id: required field missing"):
        make_client().create_pet(name="Rex", category_id=1)


def test_unknown_fields_and_statuses_are_accepted(make_client: ClientFactory, router: respx.MockRouter) -> None:
    """New fields are ignored and a new status value is kept as a PetStatus equal to it."""
    router.get(f"{PRODUCTION}/pets").respond(
        200, json=[{**PET, "status": "adopted", "tags": ["good"], "owner": {"id": 1}}]
    )
    [pet] = make_client().list_pets()
    assert pet.status == "adopted"
    assert isinstance(pet.status, PetStatus)
    assert pet.status not in list(PetStatus)
    assert pet.name == "Rex"


# --- connection failures ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("error", "cls"),
    [
        (httpx.ConnectError("refused"), APIConnectionError),
        (httpx.ReadError("reset"), APIConnectionError),
        (httpx.ConnectTimeout("slow"), APITimeoutError),
        (httpx.ReadTimeout("slow"), APITimeoutError),
    ],
)
def test_transport_errors_are_wrapped(
    make_client: ClientFactory, router: respx.MockRouter, error: Exception, cls: type[APIError]
) -> None:
    """httpx transport errors become APIConnectionError or APITimeoutError, with the cause kept."""
    router.get(f"{PRODUCTION}/pets").mock(side_effect=error)
    with pytest.raises(cls) as info:
        make_client(max_retries=0).list_pets()
    assert type(info.value) is cls
    assert info.value.__cause__ is error
    assert info.value.request.url == f"{PRODUCTION}/pets"


# --- configuration -----------------------------------------------------------------------


def test_missing_key_says_how_to_set_it(make_client: ClientFactory) -> None:
    """With no api_key and no ANIMALSTORE_API_KEY the constructor raises AnimalStoreError."""
    with pytest.raises(AnimalStoreError, match="ANIMALSTORE_API_KEY") as info:
        make_client(api_key=None)
    assert "api_key=" in str(info.value)
    assert not isinstance(info.value, ClientValidationError)


def test_key_comes_from_the_environment(
    make_client: ClientFactory, router: respx.MockRouter, monkeypatch: pytest.MonkeyPatch
) -> None:
    """ANIMALSTORE_API_KEY is used when api_key is not passed."""
    monkeypatch.setenv("ANIMALSTORE_API_KEY", "env-key")
    route = router.get(f"{PRODUCTION}/pets").respond(200, json=[])
    make_client(api_key=None).list_pets()
    assert route.calls.last.request.headers["Authorization"] == "Bearer env-key"


def test_key_argument_beats_the_environment(
    make_client: ClientFactory, router: respx.MockRouter, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An explicit api_key wins over ANIMALSTORE_API_KEY."""
    monkeypatch.setenv("ANIMALSTORE_API_KEY", "env-key")
    route = router.get(f"{PRODUCTION}/pets").respond(200, json=[])
    make_client(api_key="arg-key").list_pets()
    assert route.calls.last.request.headers["Authorization"] == "Bearer arg-key"


@pytest.mark.parametrize(
    ("key", "shown"),
    [
        ("abc def", "a space at index 3"),
        ("abc\ndef", "whitespace '\\n' at index 3"),
        ("abc\tdef", "whitespace '\\t' at index 3"),
        ("abc\x00def", "control character '\\x00' at index 3"),
        ("abcédef", "non-ASCII character U+00E9 at index 3"),
        ("", "an empty str"),
    ],
)
def test_malformed_key_is_refused_without_showing_it(make_client: ClientFactory, key: str, shown: str) -> None:
    """A key with whitespace or control characters raises ClientValidationError that hides the key."""
    with pytest.raises(ClientValidationError) as info:
        make_client(api_key=key)
    assert info.value.argument == "api_key"
    assert shown in str(info.value)
    assert info.value.value is None
    if key:
        assert "def" not in str(info.value)


def test_non_string_key_is_refused(make_client: ClientFactory) -> None:
    """An api_key that is not a str is refused, naming only its type."""
    with pytest.raises(ClientValidationError, match="api_key must be a str, got a int"):
        make_client(api_key=12345)  # type: ignore[arg-type]  # the wrong type is the point


@pytest.mark.parametrize(
    ("kwargs", "variables", "expected"),
    [
        ({}, {}, PRODUCTION),
        ({"environment": "staging"}, {}, STAGING),
        ({"environment": Environment.STAGING}, {}, STAGING),
        ({"environment": "production"}, {"ANIMALSTORE_ENVIRONMENT": "staging"}, PRODUCTION),
        ({}, {"ANIMALSTORE_ENVIRONMENT": "staging"}, STAGING),
        ({}, {"ANIMALSTORE_BASE_URL": "http://127.0.0.1:9/v1/"}, "http://127.0.0.1:9/v1"),
        (
            {},
            {"ANIMALSTORE_BASE_URL": "http://127.0.0.1:9/v1", "ANIMALSTORE_ENVIRONMENT": "staging"},
            "http://127.0.0.1:9/v1",
        ),
        ({"environment": "staging"}, {"ANIMALSTORE_BASE_URL": "http://127.0.0.1:9/v1"}, STAGING),
        (
            {"base_url": "https://proxy.example/animals/v1/", "environment": "staging"},
            {"ANIMALSTORE_BASE_URL": "http://127.0.0.1:9/v1"},
            "https://proxy.example/animals/v1",
        ),
    ],
)
def test_base_url_precedence(
    make_client: ClientFactory,
    monkeypatch: pytest.MonkeyPatch,
    kwargs: dict[str, Any],
    variables: dict[str, str],
    expected: str,
) -> None:
    """base_url, then environment, then ANIMALSTORE_BASE_URL, then ANIMALSTORE_ENVIRONMENT, then production."""
    for name, value in variables.items():
        monkeypatch.setenv(name, value)
    assert make_client(**kwargs).base_url == expected


@pytest.mark.parametrize("base_url", ["https://proxy.example/v1", "https://proxy.example/v1/"])
def test_paths_are_appended_to_the_base_url(
    make_client: ClientFactory, router: respx.MockRouter, base_url: str
) -> None:
    """With or without a trailing slash, requests go to {base_url}/pets."""
    route = router.get("https://proxy.example/v1/pets").respond(200, json=[])
    make_client(base_url=base_url).list_pets()
    assert route.called


@pytest.mark.parametrize(
    ("kwargs", "variables", "argument"),
    [
        ({"environment": "prod"}, {}, "environment"),
        ({"environment": "PRODUCTION"}, {}, "environment"),
        ({"environment": 1}, {}, "environment"),
        ({}, {"ANIMALSTORE_ENVIRONMENT": "qa"}, "ANIMALSTORE_ENVIRONMENT"),
        ({"base_url": "api.animalstore.example/v1"}, {}, "base_url"),
        ({"base_url": "ftp://api.animalstore.example/v1"}, {}, "base_url"),
        ({"base_url": "https://api.example/v1?x=1"}, {}, "base_url"),
        ({"base_url": "https://exa mple.com/v1"}, {}, "base_url"),
        ({}, {"ANIMALSTORE_BASE_URL": "not a url"}, "ANIMALSTORE_BASE_URL"),
    ],
)
def test_bad_environment_or_base_url_is_refused(
    make_client: ClientFactory,
    monkeypatch: pytest.MonkeyPatch,
    kwargs: dict[str, Any],
    variables: dict[str, str],
    argument: str,
) -> None:
    """An unknown environment or a malformed base URL raises ClientValidationError naming its source."""
    for name, value in variables.items():
        monkeypatch.setenv(name, value)
    with pytest.raises(ClientValidationError) as info:
        make_client(**kwargs)
    assert info.value.argument == argument
    if argument.lower().endswith("environment"):
        assert "'production', 'staging'" in str(info.value)
    # A variable holds text: only the argument can also be an Environment member.
    assert ("Environment member" in str(info.value)) == (argument == "environment")


@pytest.mark.parametrize(
    ("kwargs", "argument"),
    [
        ({"max_retries": -1}, "max_retries"),
        ({"max_retries": True}, "max_retries"),
        ({"max_retries": 1.5}, "max_retries"),
        ({"timeout": 0}, "timeout"),
        ({"timeout": -5}, "timeout"),
        ({"timeout": "30"}, "timeout"),
        ({"default_headers": {"Authorization": "Bearer other"}}, "default_headers"),
        ({"default_headers": {"X-Bad": "line\r\nbreak"}}, "default_headers"),
        ({"default_headers": {"X-Num": 5}}, "default_headers"),
        ({"default_headers": ["X-A"]}, "default_headers"),
        ({"http_client": object()}, "http_client"),
    ],
)
def test_bad_options_are_refused(make_client: ClientFactory, kwargs: dict[str, Any], argument: str) -> None:
    """Bad max_retries, timeout, default_headers or http_client raise ClientValidationError."""
    with pytest.raises(ClientValidationError) as info:
        make_client(**kwargs)
    assert info.value.argument == argument


def test_options_are_stored(make_client: ClientFactory) -> None:
    """timeout and max_retries read back as given, and as declared (DEFAULT_TIMEOUT, DEFAULT_MAX_RETRIES) if not."""
    client = make_client(timeout=12.5, max_retries=4)
    assert client.timeout == httpx.Timeout(12.5)
    assert client.max_retries == 4
    default = make_client()
    assert default.timeout == DEFAULT_TIMEOUT
    assert default.max_retries == DEFAULT_MAX_RETRIES
    assert make_client(timeout=None).timeout == httpx.Timeout(None)


def test_timeout_is_applied_to_each_request(make_client: ClientFactory, router: respx.MockRouter) -> None:
    """The client's timeout travels with each request to the transport."""
    route = router.get(f"{PRODUCTION}/pets").respond(200, json=[])
    make_client(timeout=httpx.Timeout(7.0, connect=2.0)).list_pets()
    timeout = route.calls.last.request.extensions["timeout"]
    assert timeout == {"connect": 2.0, "read": 7.0, "write": 7.0, "pool": 7.0}


def test_default_headers_are_sent(make_client: ClientFactory, router: respx.MockRouter) -> None:
    """default_headers go out with every request, and may replace the User-Agent."""
    route = router.get(f"{PRODUCTION}/pets").respond(200, json=[])
    make_client(default_headers={"X-Team": "pets", "User-Agent": "my-app/2"}).list_pets()
    request = route.calls.last.request
    assert request.headers["X-Team"] == "pets"
    assert request.headers.get_list("User-Agent") == ["my-app/2"]


def test_repr_never_shows_the_key(make_client: ClientFactory) -> None:
    """repr and str of a client name the base URL but not the key."""
    client = make_client(api_key="sk-very-secret-123")
    inner = getattr(client, "inner", client)
    assert "sk-very-secret-123" not in repr(inner)
    assert "sk-very-secret-123" not in str(inner)
    assert PRODUCTION in repr(inner)


def test_key_never_appears_in_errors_or_logs(
    make_client: ClientFactory, router: respx.MockRouter, caplog: pytest.LogCaptureFixture
) -> None:
    """Across success, error and validation paths the key is absent from messages and log records."""
    secret = "sk-very-secret-123"
    router.get(f"{PRODUCTION}/pets").respond(401, json={"code": "unauthorized", "message": "bad key", "status": 401})
    router.post(f"{PRODUCTION}/pets").mock(side_effect=httpx.ConnectError("refused"))
    caplog.set_level(logging.DEBUG)
    client = make_client(api_key=secret, max_retries=0)
    texts: list[str] = []
    for action in (
        client.list_pets,
        lambda: client.create_pet(name="Rex", category_id=1),
        lambda: client.list_pets(limit=0),
    ):
        with pytest.raises(AnimalStoreError) as info:
            action()
        texts += [str(info.value), repr(info.value)]
    assert all(secret not in text for text in texts)
    assert secret not in caplog.text


def test_supplied_http_client_is_used_and_left_open(make_client: ClientFactory, variant: str) -> None:
    """A caller's httpx client carries the requests (and its headers) and is not closed by the SDK."""
    seen: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(200, json=[PET])

    transport = httpx.MockTransport(handler)
    http: Any = (
        httpx.Client(transport=transport, headers={"X-Trace": "abc"})
        if variant == "sync"
        else httpx.AsyncClient(transport=transport, headers={"X-Trace": "abc"})
    )
    client = make_client(http_client=http)
    assert client.list_pets()[0].id == 7
    client.close()
    assert seen[0].headers["X-Trace"] == "abc"
    assert seen[0].headers["Authorization"] == f"Bearer {API_KEY}"
    assert not http.is_closed


def test_wrong_kind_of_http_client_is_refused(variant: str) -> None:
    """The sync client refuses an AsyncClient and the async client refuses a Client."""
    if variant == "sync":
        with pytest.raises(
            ClientValidationError,
            match=r"an httpx\.Client or an httpx2\.Client, got httpx\.AsyncClient$",
        ):
            AnimalStoreClient(API_KEY, http_client=httpx.AsyncClient())  # type: ignore[arg-type]
    else:
        with pytest.raises(
            ClientValidationError,
            match=r"an httpx\.AsyncClient, an httpx2\.AsyncClient or an aiohttp\.ClientSession, got httpx\.Client$",
        ):
            AsyncAnimalStoreClient(API_KEY, http_client=httpx.Client())  # type: ignore[arg-type]


def test_an_http_client_of_another_library_is_named_in_full(variant: str) -> None:
    """A client class of another library with the same name (httpx2's Client) is named with its module."""
    foreign: Any = type("Client", (), {"__module__": "httpx2._client"})()
    cls = AnimalStoreClient if variant == "sync" else AsyncAnimalStoreClient
    with pytest.raises(ClientValidationError, match=r", got httpx2\._client\.Client$") as info:
        cls(API_KEY, http_client=foreign)
    assert info.value.argument == "http_client"


def test_http_client_timeout_is_kept_when_not_overridden(make_client: ClientFactory, variant: str) -> None:
    """A supplied client's non-default timeout is used unless timeout= is passed."""
    cls: Any = httpx.Client if variant == "sync" else httpx.AsyncClient
    assert make_client(http_client=cls(timeout=3.0)).timeout == httpx.Timeout(3.0)
    assert make_client(http_client=cls()).timeout == DEFAULT_TIMEOUT  # httpx's stock 5 s is too short here
    assert make_client(http_client=cls(timeout=3.0), timeout=9.0).timeout == httpx.Timeout(9.0)


def test_closed_client_refuses_calls(make_client: ClientFactory, router: respx.MockRouter) -> None:
    """After close, a call raises AnimalStoreError rather than an httpx RuntimeError."""
    route = router.get(f"{PRODUCTION}/pets").respond(200, json=[])
    client = make_client()
    client.close()
    assert client.is_closed
    with pytest.raises(AnimalStoreError, match="closed"):
        client.list_pets()
    assert not route.called


def test_sync_context_manager_closes_its_pool(router: respx.MockRouter) -> None:
    """Leaving the with block closes the client's own httpx client."""
    router.get(f"{PRODUCTION}/pets").respond(200, json=[])
    with AnimalStoreClient(API_KEY) as client:
        client.list_pets()
    assert client.is_closed
    assert client._sender.pool.transport.is_closed


@pytest.mark.anyio
async def test_async_context_manager_closes_its_pool(router: respx.MockRouter) -> None:
    """Leaving the async with block closes the client's own httpx client."""
    router.get(f"{PRODUCTION}/pets").respond(200, json=[])
    async with AsyncAnimalStoreClient(API_KEY) as client:
        await client.list_pets()
    assert client.is_closed
    assert client._sender.pool.transport.is_closed


# --- odd input: only SDK exceptions --------------------------------------------------------------


@pytest.mark.parametrize(
    "timeout", [float("inf"), float("nan"), 0, -1.0, 10**400, httpx.Timeout(float("inf")), httpx.Timeout(5.0, read=-1)]
)
def test_timeouts_must_be_finite_and_positive(
    make_client: ClientFactory, router: respx.MockRouter, timeout: object
) -> None:
    """inf, nan, zero, negatives and such phases inside an httpx.Timeout are refused, per call and per client."""
    route = router.route().respond(200, json=[])
    with pytest.raises(ClientValidationError, match="timeout must be a finite number of seconds"):
        make_client(timeout=timeout)  # type: ignore[arg-type]
    with pytest.raises(ClientValidationError, match="timeout must be a finite number of seconds"):
        make_client().list_pets(timeout=timeout)  # type: ignore[arg-type]
    assert not route.called


def test_huge_integers_are_refused_without_printing_them(make_client: ClientFactory) -> None:
    """limit=10**5000 is a ClientValidationError that summarises the value instead of failing to print it."""
    with pytest.raises(ClientValidationError, match=r"limit must be an int from 1 to 100, got an int of about 5001"):
        make_client().list_pets(limit=10**5000)
    with pytest.raises(ClientValidationError, match=r"category_id must be an int within int64"):
        make_client().create_pet(name="Rex", category_id=-(10**5000))


def test_strings_that_cannot_be_utf8_are_refused(make_client: ClientFactory, router: respx.MockRouter) -> None:
    """A lone surrogate in name, in a path or in JSON is a ClientValidationError, and nothing is sent."""
    route = router.route().respond(201, json=PET)
    client = make_client()
    with pytest.raises(ClientValidationError, match="name must be a str that can be encoded as UTF-8"):
        client.create_pet(name="Rex\ud800", category_id=1)
    with pytest.raises(ClientValidationError) as info:
        client.request("GET", "/pets/\udcff")
    assert info.value.argument == "path"
    with pytest.raises(ClientValidationError) as info:
        client.request("POST", "/messages", json={"message": "\ud800"})
    assert info.value.argument == "json"
    with pytest.raises(ClientValidationError) as info:
        client.request("GET", "/pets", params={"q": "\ud800"})
    assert info.value.argument == "params"
    assert not route.called
    assert client.create_pet(name="Rex 🐕 é", category_id=1).id == 7


def test_deeply_nested_json_is_a_validation_error(make_client: ClientFactory, router: respx.MockRouter) -> None:
    """A 2xx body nested past the recursion limit raises APIResponseValidationError, on every path."""
    # Deep enough for every Python: 3.13's parser takes 5,000 levels in its stride.
    router.get(f"{PRODUCTION}/pets").respond(200, content=b"[" * 100_000 + b"]" * 100_000)
    client = make_client()
    with pytest.raises(APIResponseValidationError, match="nested too deeply"):
        client.list_pets()
    with pytest.raises(APIResponseValidationError, match="nested too deeply"):
        client.with_raw_response.list_pets().parse()
