"""The exception hierarchy, its messages, and pickling."""

from __future__ import annotations

import json
import pickle

import httpx
import pytest

import animalstore_client as sdk
from animalstore_client._core.attempts import PROCESSED
from animalstore_client._core.exceptions import stored_note
from animalstore_client._core.exchange import Exchange, may_have_acted
from animalstore_client._core.operations import NO_VERSION_HINT, status_error
from animalstore_client._core.show import show
from animalstore_client.testing import FakeAnimalStore

REQUEST = httpx.Request(
    "POST",
    "https://api.animalstore.example/v1/pets",
    headers={"Authorization": "Bearer sk-secret-999"},
    content=b'{"name":"Rex","categoryId":1}',
)


def _status_error(status: int, **kwargs: object) -> sdk.APIStatusError:
    response = httpx.Response(status, request=REQUEST, **kwargs)  # type: ignore[arg-type]
    # As the send loop marks a final answer: what the one rule says of it.
    response.extensions[PROCESSED] = may_have_acted(Exchange(REQUEST, {}, None), status)
    return status_error(response)


def test_hierarchy() -> None:
    """Validation errors are ValueErrors apart from APIError; timeouts are connection errors."""
    assert issubclass(sdk.ClientValidationError, sdk.AnimalStoreError)
    assert issubclass(sdk.ClientValidationError, ValueError)
    assert not issubclass(sdk.ClientValidationError, sdk.APIError)
    assert issubclass(sdk.APITimeoutError, sdk.APIConnectionError)
    assert issubclass(sdk.APIConnectionError, sdk.APIError)
    assert issubclass(sdk.APIResponseValidationError, sdk.APIError)
    for name in (
        "BadRequestError",
        "AuthenticationError",
        "PermissionDeniedError",
        "NotFoundError",
        "ConflictError",
        "UnprocessableEntityError",
        "RateLimitError",
        "InternalServerError",
    ):
        assert issubclass(getattr(sdk, name), sdk.APIStatusError)
    assert issubclass(sdk.APIStatusError, sdk.APIError)


@pytest.mark.parametrize(
    "exc",
    [
        _status_error(
            404,
            json={"code": "not_found", "message": "No pet", "status": 404},
            headers={"x-request-id": "r-1"},
        ),
        _status_error(502, text="<html>Bad Gateway</html>"),
        _status_error(418),
        sdk.APIConnectionError("Connection error", request=REQUEST, attempts=3),
        sdk.APITimeoutError("Request timed out", request=REQUEST),
        sdk.APIResponseValidationError("bad body", response=httpx.Response(200, json=[1], request=REQUEST), body=[1]),
        sdk.ClientValidationError("limit must be ...", argument="limit", rule="an int", value=500),
        sdk.AnimalStoreError("No API key"),
    ],
    ids=lambda exc: type(exc).__name__,
)
def test_exceptions_pickle_with_class_message_and_status(exc: sdk.AnimalStoreError) -> None:
    """Every exception survives pickle with its class, message and attributes."""
    clone = pickle.loads(pickle.dumps(exc))
    assert type(clone) is type(exc)
    assert str(clone) == str(exc)
    if isinstance(exc, sdk.APIStatusError):
        assert isinstance(clone, sdk.APIStatusError)
        assert clone.status_code == exc.status_code
        assert clone.code == exc.code
        assert clone.message == exc.message
        assert clone.body == exc.body
        assert clone.request_id == exc.request_id
        assert clone.response.status_code == exc.status_code
    if isinstance(exc, sdk.APIError):
        assert isinstance(clone, sdk.APIError)
        assert clone.attempts == exc.attempts
        assert clone.request.url == exc.request.url
    if isinstance(exc, sdk.ClientValidationError):
        assert isinstance(clone, sdk.ClientValidationError)
        assert (clone.argument, clone.rule, clone.value) == ("limit", "an int", 500)


def test_pickled_exception_carries_no_key() -> None:
    """Pickling redacts the Authorization header of the request and of the response's request."""
    exc = _status_error(401, json={"code": "unauthorized", "message": "bad key", "status": 401})
    data = pickle.dumps(exc)
    assert b"sk-secret-999" not in data
    clone = pickle.loads(data)
    assert clone.request.headers["Authorization"] == "[redacted]"
    assert clone.response.request.headers["Authorization"] == "[redacted]"
    assert clone.request.content == REQUEST.content
    # The live exception keeps the real request for the caller's own debugging.
    assert exc.request.headers["Authorization"] == "Bearer sk-secret-999"


def test_unpicklable_validation_value_is_kept_as_repr() -> None:
    """A value that cannot be pickled is carried as its repr rather than breaking pickle."""
    exc = sdk.ClientValidationError("bad", argument="status", rule="a PetStatus", value=lambda: 1)
    clone = pickle.loads(pickle.dumps(exc))
    assert isinstance(clone.value, str)
    assert "lambda" in clone.value


def _nested_list(depth: int) -> object:
    """A list ``depth`` levels deep, built without recursion."""
    value: object = None
    for _ in range(depth):
        value = [value]
    return value


def test_exception_holding_a_deeply_nested_value_pickles() -> None:
    """A value that pickle and repr() both fail on for depth arrives as its short description."""
    exc = sdk.ClientValidationError("json must be ...", argument="json", rule="a rule", value=_nested_list(100_000))
    clone = pickle.loads(pickle.dumps(exc))
    assert type(clone) is sdk.ClientValidationError
    assert str(clone) == "json must be ..."
    assert (clone.argument, clone.rule) == ("json", "a rule")
    assert clone.value == "a list nested too deeply to show"


@pytest.mark.parametrize(
    ("value", "shown"),
    [
        pytest.param(_nested_list(100_000), "a list nested too deeply to show", id="list-nested-100000-deep"),
        pytest.param(10**5000, "an int of about 5001 digits", id="int-of-5001-digits"),
        pytest.param("x" * 10_000_000, "'" + "x" * 196 + "...", id="str-of-10-million-chars"),
        pytest.param(type("Broken", (), {"__repr__": lambda self: 1 / 0})(), "a Broken", id="broken-repr"),
    ],
)
def test_show_never_raises_and_stays_short(value: object, shown: str) -> None:
    """The repr used in every error message summarises values whose repr fails or is huge."""
    assert show(value) == shown


def test_status_error_message_includes_status_code_message_and_request_id() -> None:
    """str() shows the status, the method and URL, the code, the message and the request id, then (a POST's)
    whether the pet may have been stored."""
    exc = _status_error(
        404, json={"code": "not_found", "message": "No pet 7", "status": 404}, headers={"x-request-id": "r-1"}
    )
    assert str(exc) == (
        "404 Not Found from POST https://api.animalstore.example/v1/pets: not_found: No pet 7 (request id r-1)"
        "; nothing was stored: the service refused it, fix what it says before sending it again"
    )


def test_long_html_error_is_shortened_in_the_message() -> None:
    """A long non-JSON body is flattened and cut in the message but kept whole in body."""
    html = "<html>\n" + "x" * 5000 + "\n</html>"
    exc = _status_error(503, text=html)
    assert len(str(exc)) < 300 + len(stored_note(exc))  # the note on storing is the same length whatever the body
    assert exc.body == html
    assert isinstance(exc, sdk.InternalServerError)


@pytest.mark.parametrize(("status", "cls"), [(599, sdk.InternalServerError), (600, sdk.APIStatusError)])
def test_5xx_boundaries(status: int, cls: type[sdk.APIStatusError]) -> None:
    """InternalServerError covers exactly 500 to 599."""
    assert type(_status_error(status)) is cls


def _error_response(body: bytes, status: int = 500, headers: dict[str, str] | None = None) -> httpx.Response:
    request = httpx.Request("GET", "https://api.animalstore.example/v1/pets")
    return httpx.Response(status, content=body, headers=headers, request=request)


def test_server_text_is_quoted_not_pasted() -> None:
    """Control characters are escaped and code/message are cut to 500 characters in str(exc) only."""
    message = "line one\nFAKE LOG LINE \x1b[31mred\x1b[0m \u202eevil" + "m" * 20_000
    body = json.dumps({"code": "c\r\nX", "message": message, "status": 500}).encode()
    exc = status_error(_error_response(body))
    text = str(exc)
    assert "\n" not in text
    assert "\r" not in text
    assert "\x1b" not in text
    assert "\u202e" not in text
    assert "c\\r\\nX: line one\\nFAKE LOG LINE \\x1b[31mred" in text
    assert len(text) < 1200
    assert exc.message == message
    assert exc.code == "c\r\nX"


def test_a_non_error_body_is_quoted_too() -> None:
    """An HTML or text body is flattened, escaped and cut to 200 characters."""
    exc = status_error(_error_response(b"<html>\x1b[2J" + b"x" * 5000 + b"</html>", 502))
    assert "\x1b" not in str(exc)
    assert len(str(exc)) < 400


def test_deeply_nested_error_bodies_are_kept_as_text() -> None:
    """JSON nested past the recursion limit is not parsed: the body is kept as text."""
    exc = status_error(_error_response(b"[" * 5000, 503))
    assert isinstance(exc, sdk.InternalServerError)
    assert exc.body == "[" * 5000
    assert exc.error is None


# --- str(exc) says whether the pet may have been stored ------------------------------------------------------------


def _failed_create(fault: int) -> sdk.APIError:
    store = FakeAnimalStore()
    store.fail_next(fault, times=3)
    with store.client() as client, pytest.raises(sdk.APIError) as info:
        client.create_pet(name="Rex", category_id=1)
    return info.value


@pytest.mark.parametrize(
    ("fault", "said"),
    [
        (500, "the pet may have been stored (a 500 is no proof that it was not, so it was not sent again): check"),
        (503, "the pet may have been stored (a 503 is no proof that it was not, so it was not sent again): check"),
        (400, "nothing was stored: the service refused it, fix what it says before sending it again"),
        (413, "nothing was stored: the service refused it, fix what it says before sending it again"),
        (429, "nothing was stored: safe to send again"),
    ],
)
def test_str_of_a_failed_create_pet_says_whether_the_pet_may_have_been_stored(fault: int, said: str) -> None:
    """A log line written with %s keeps what may_have_been_processed says, in words, and keeps it when pickled."""
    exc = _failed_create(fault)
    assert f"; {said}" in str(exc)
    assert (said.startswith("the pet may")) is exc.may_have_been_processed
    assert str(pickle.loads(pickle.dumps(exc))) == str(exc)
    assert said not in repr(exc)  # the repr says it as may_have_been_processed=...


def test_str_of_a_read_or_a_middleware_error_before_sending_says_it_plainly() -> None:
    """A read changes nothing and says nothing of storing; a POST's MiddlewareError says what may_have_been_processed
    says."""
    store = FakeAnimalStore()
    store.fail_next(500, times=1 + sdk.DEFAULT_MAX_RETRIES)  # every attempt
    with store.client() as client, pytest.raises(sdk.APIError) as info:
        client.list_pets()
    assert "stored" not in str(info.value)
    post = httpx.Request("POST", "https://api.example/v1/pets")
    error = sdk.MiddlewareError("middleware m raised ValueError: no", request=post)
    error.may_have_been_processed = False
    assert str(error) == "middleware m raised ValueError: no; nothing was stored: safe to send again"


@pytest.mark.parametrize("base", ["", "/api"])
def test_a_404_for_a_url_without_v1_hints_at_base_url(base: str) -> None:
    """A base URL without /v1 gets a 404 for every call: the error says what is likely wrong."""
    store = FakeAnimalStore()
    with (
        store.serve() as url,
        sdk.AnimalStoreClient(store.api_key, base_url=url.removesuffix("/v1") + base) as client,
        pytest.raises(sdk.NotFoundError) as info,
    ):
        client.list_pets()
    assert f"({NO_VERSION_HINT})" in str(info.value)
    assert NO_VERSION_HINT == "the URL has no /v1, which every path of the service follows: does base_url end in /v1?"


def test_a_404_under_v1_gives_no_hint() -> None:
    """A pet that does not exist, under the right base URL, is a plain 404."""
    store = FakeAnimalStore()
    with store.client() as client, pytest.raises(sdk.NotFoundError) as info:
        client.request("GET", "/pets/999")
    assert "/v1" not in str(info.value).split("/v1/pets/999", 1)[1]
