"""The sans-IO core, shared by both clients (so they cannot drift apart): ``build_<operation>`` checks the arguments
and returns the `httpx.Request`; ``parse_<operation>`` turns the response into a model or the matching exception."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any, NamedTuple, TypeVar, cast

import httpx

from animalstore_client._core.attempts import BUDGET_NOTE, BUDGET_REFUSED, CUT_AT, PROCESSED, Finished, full_response
from animalstore_client._core.deprecation import GET_PET_DEPRECATION
from animalstore_client._core.exceptions import (
    APIResponseValidationError,
    APIStatusError,
    ClientValidationError,
    status_error_class,
)
from animalstore_client._core.httpx_private import copy_request
from animalstore_client._core.models import ErrorBody, NewPet, Pet, PetStatus, PetStatusLiteral
from animalstore_client._core.secrets import redact_url
from animalstore_client._core.serde import StructureError, dumps, loads, structure, unstructure
from animalstore_client._core.show import show
from animalstore_client._core.validation import (
    LIMIT_MAX,
    NOT_GIVEN,
    NotGiven,
    check_headers,
    check_int64,
    check_json,
    check_limit,
    check_params,
    check_status,
    check_str,
    check_timeout,
    encodable,
    is_token,
)

T = TypeVar("T")

_LIMIT = "animalstore_client.limit"
_MAX_QUOTED = 500
"""Characters of the server's ``code`` and ``message`` shown in an exception's text."""


class RequestConfig:
    """What every request of one client shares, prepared once; a plain slotted class: attrs costs import time."""

    __slots__ = (
        "base_url",
        "headers",
        "json_headers",
        "list_urls",
        "prepared_headers",
        "templates",
        "timeout",
        "timeout_extension",
        "urls",
    )

    def __init__(self, *, base_url: str, headers: Mapping[str, str], timeout: httpx.Timeout) -> None:
        self.base_url = base_url
        """The base URL without a trailing slash; paths are appended to it."""
        # Holds the Authorization header, so __repr__ below leaves it out.
        self.headers = headers
        self.timeout = timeout
        # Parsed and encoded once rather than on every request.
        self.prepared_headers = httpx.Headers(headers)
        self.json_headers = self.prepared_headers.copy()
        self.json_headers["content-type"] = "application/json"
        self.timeout_extension = timeout.as_dict()
        self.urls = {"/pets": httpx.URL(base_url + "/pets")}
        # GET /pets URLs by (limit, status), at most 101 x 4: parsing a URL with its query is costly.
        self.list_urls: dict[tuple[int | None, str | None], httpx.URL] = {}
        # Finished requests to copy (`copy_request`) for GETs with no per-call headers.
        self.templates: dict[httpx.URL, httpx.Request] = {}

    def __repr__(self) -> str:
        return f"RequestConfig(base_url={self.base_url!r}, timeout={self.timeout!r})"


def _request(
    config: RequestConfig,
    method: str,
    path: str,
    *,
    url: httpx.URL | None = None,
    content: bytes | None = None,
    timeout: object = NOT_GIVEN,
    extra_headers: object = None,
    headers_argument: str = "extra_headers",
    reuse: bool = True,
) -> httpx.Request:
    # Every argument is checked before a local holds the headers: a crash reporter reads the
    # locals of the frames a ClientValidationError passes through, and these hold the key.
    extension = config.timeout_extension if timeout is NOT_GIVEN else check_timeout(timeout).as_dict()
    # request() URLs are the caller's: a template kept for each would grow without bound.
    if reuse and url is not None and content is None and extra_headers is None:
        template = config.templates.get(url)
        if template is None:
            template = config.templates[url] = httpx.Request(method, url, headers=config.prepared_headers)
        return copy_request(template, {"timeout": extension})  # headers of its own: httpx may add a Cookie
    extra = None if extra_headers is None else check_headers(extra_headers, headers_argument)
    headers = config.json_headers if content is not None else config.prepared_headers
    if extra is not None:
        headers = headers.copy()
        headers.update({name.lower(): value for name, value in extra.items()})
    return httpx.Request(
        method,
        url or config.urls.get(path) or config.base_url + path,
        headers=headers,
        content=content,
        # httpx applies the client's own timeout only when this is absent.
        extensions={"timeout": extension},
    )


def build_list_pets(
    config: RequestConfig,
    *,
    limit: int | None = None,
    status: PetStatus | PetStatusLiteral | None = None,
    timeout: float | httpx.Timeout | NotGiven | None = NOT_GIVEN,
    extra_headers: Mapping[str, str] | None = None,
) -> httpx.Request:
    """List animals (``GET /pets``): at most ``limit`` (1 to 100; the service defaults to 20)."""
    checked_limit = check_limit(limit)
    checked_status = check_status(status)
    key = (checked_limit, None if checked_status is None else checked_status.value)
    url = config.list_urls.get(key)
    if url is None:
        params: dict[str, str] = {}
        if checked_limit is not None:
            params["limit"] = str(checked_limit)
        if checked_status is not None:
            params["status"] = checked_status.value
        url = config.urls["/pets"].copy_merge_params(params) if params else config.urls["/pets"]
        config.list_urls[key] = url
    request = _request(config, "GET", "/pets", url=url, timeout=timeout, extra_headers=extra_headers)
    # For parse_list_pets: more pets than asked for is a broken response.
    request.extensions[_LIMIT] = LIMIT_MAX if checked_limit is None else checked_limit
    return request


def build_create_pet(
    config: RequestConfig,
    *,
    name: str,
    category_id: int,
    status: PetStatus | PetStatusLiteral | None = None,
    timeout: float | httpx.Timeout | NotGiven | None = NOT_GIVEN,
    extra_headers: Mapping[str, str] | None = None,
) -> httpx.Request:
    """Add an animal (``POST /pets``) and return it with the id the service assigned.

    Retries: only where the service cannot have stored the pet (a failure
    to connect, 429, 503); never after a read timeout, 500, 502 or 504,
    so a retry never creates a duplicate.
    """
    new_pet = NewPet(
        name=check_str(name, "name"),
        category_id=check_int64(category_id, "category_id"),
        status=check_status(status),
    )
    body = dumps(unstructure(new_pet))
    return _request(config, "POST", "/pets", content=body, timeout=timeout, extra_headers=extra_headers)


def build_get_pet(
    config: RequestConfig,
    pet_id: int,
    *,
    timeout: float | httpx.Timeout | NotGiven | None = NOT_GIVEN,
    extra_headers: Mapping[str, str] | None = None,
) -> httpx.Request:
    """Fetch one animal by id (``GET /pets/{petId}``).

    Deprecated: the service removes this operation on 2030-12-05. The
    replacement it names, `list_pets` with ``status=``, is not a lookup
    by id: there is no id filter, and a page holds at most 100 pets
    (lowest ids first). Instead of ``get_pet(pet_id)``:

    - status known: take the pet with that id from
      ``list_pets(status=..., limit=100)``; found only among the first
      100 pets with that status;
    - status unknown: the same without ``status``; found only among the
      first 100 pets of the store;
    - a pet you just created: keep the `Pet` that `create_pet` returned;
    - after an ambiguous `create_pet` failure: list and match name and
      category; "not found" does not prove it was not stored.
    """
    path = f"/pets/{check_int64(pet_id, 'pet_id')}"
    return _request(config, "GET", path, timeout=timeout, extra_headers=extra_headers)


def _refused_by_httpx(
    argument: str, made: str, kind: str, exc: httpx.InvalidURL, value: object
) -> ClientValidationError:
    return ClientValidationError(
        f"{argument} must make {made} httpx accepts ({exc}), got {show(value)}",
        argument=argument,
        rule=f"{kind} that makes a valid URL",
        value=value,
    )


def build_request(
    config: RequestConfig,
    method: object,
    path: object,
    *,
    params: object = None,
    json: object = None,
    headers: object = None,
    timeout: object = NOT_GIVEN,
) -> httpx.Request:
    """Any request under the base URL, for paths the SDK has no method for."""
    if not isinstance(method, str) or not is_token(method):
        raise ClientValidationError(
            f"method must be an HTTP method name such as 'GET', got {show(method)}",
            argument="method",
            rule="an HTTP method name",
            value=method,
        )
    # A path that is a full or scheme-relative URL would send the key elsewhere.
    if (
        not isinstance(path, str)
        or not path.startswith("/")
        or path.startswith("//")
        or "#" in path
        or not path.isprintable()
        or not encodable(path)
    ):
        raise ClientValidationError(
            f"path must be a path under the base URL starting with '/', such as '/store/orders', got {show(path)}",
            argument="path",
            rule="a path starting with a single '/'",
            value=path,
        )
    query = check_params(params)
    content = None
    if json is not None:
        check_json(json)
        try:
            content = dumps(json)
        except Exception as exc:
            # check_json passed, so either a dict or list subclass's own method
            # failed, or the caller's stack is already too deep for json.dumps.
            raise ClientValidationError(
                f"json must be JSON-serializable data, got {show(json)}, which json.dumps refused "
                f"({type(exc).__name__})",
                argument="json",
                rule="JSON-serializable data",
                value=json,
            ) from exc
    try:
        url = httpx.URL(config.base_url + path)
    except httpx.InvalidURL as exc:  # a path longer than httpx accepts
        raise _refused_by_httpx("path", "a URL", "a path", exc, path) from None
    if query:
        try:
            url = url.copy_merge_params(tuple(query))
        except httpx.InvalidURL as exc:  # a query longer than httpx accepts
            raise _refused_by_httpx("params", "a query", "a query", exc, params) from None
    return _request(
        config,
        method.upper(),
        path,
        url=url,
        content=content,
        timeout=timeout,
        extra_headers=headers,
        headers_argument="headers",
        reuse=False,
    )


def parse_list_pets(response: Finished, attempts: int = 1) -> list[Pet]:
    """The 200 body of ``GET /pets``, or the matching exception; a list longer than the ``limit`` sent (100 when
    none was) is refused by its length before any `Pet` is built, so a huge body costs only its JSON decoding."""
    data = _decode(response, attempts)
    limit = response.request.extensions.get(_LIMIT, LIMIT_MAX)
    count = len(cast("list[object]", data)) if data.__class__ is list else 0  # no narrowing: data stays object
    if count > limit:
        raise _invalid(response, f"{count} pets in the body, more than the limit of {limit} asked for", data, attempts)
    return _structure(response, data, list[Pet], "Pets (an array of Pet)", attempts)


def parse_create_pet(response: Finished, attempts: int = 1) -> Pet:
    """The 201 body of ``POST /pets``, or the matching exception."""
    return _structure(response, _decode(response, attempts), Pet, "Pet", attempts)


def parse_get_pet(response: Finished, attempts: int = 1) -> Pet:
    """The 200 body of ``GET /pets/{petId}``, or the matching exception."""
    return _structure(response, _decode(response, attempts), Pet, "Pet", attempts)


def parse_raw(response: Finished, attempts: int = 1) -> httpx.Response:
    """The response itself when it is 2xx (and whole), else the matching exception."""
    _check_whole_2xx(response, attempts)
    return full_response(response)


def _check_whole_2xx(response: Finished, attempts: int) -> None:
    if not 200 <= response.status_code < 300:  # is_success, without two calls
        raise status_error(full_response(response), attempts=attempts)
    if CUT_AT in response.extensions:
        problem = (
            f"the body is larger than max_response_bytes ({response.extensions[CUT_AT]} bytes after decoding); "
            "reading stopped there. Raise max_response_bytes (or set it to None) if this server's answers are "
            "that large."
        )
        raise _invalid(response, problem, None, attempts)


def _decode(response: Finished, attempts: int) -> object:
    """The JSON of a 2xx, whole body; else the exception that explains why there is none."""
    _check_whole_2xx(response, attempts)
    try:
        return loads(response.content)
    except ValueError as exc:
        text = full_response(response).text
        raise _invalid(response, f"the body is not valid JSON ({exc}): {_snippet(text)}", text, attempts) from exc
    except RecursionError:
        raise _invalid(response, "the body's JSON is nested too deeply to parse", None, attempts) from None


def _structure(response: Finished, data: object, cls: type[T], what: str, attempts: int) -> T:
    try:
        return structure(data, cls)
    except StructureError as exc:
        problems = _quote("; ".join(exc.problems), 1000)
        raise _invalid(response, f"the body is not a valid {what}: {problems}", data, attempts) from exc.__cause__


def _invalid(response: Finished, problem: str, body: object, attempts: int) -> APIResponseValidationError:
    """The exception for a 2xx response whose body is not what the operation returns."""
    shown = full_response(response)
    return APIResponseValidationError(
        f"{_origin(shown)}: {problem}",
        response=shown,
        body=body,
        attempts=attempts,
        may_have_been_processed=_processed(shown),
    )


def _processed(response: httpx.Response) -> bool:
    """What the send loop found of the call (`PROCESSED`); "may have been" for a response it did not mark."""
    return response.extensions.get(PROCESSED) is not False


def status_error(response: httpx.Response, *, attempts: int = 1) -> APIStatusError:
    """The exception for a non-2xx response, of the class its status names; the server's ``code`` and ``message``
    are quoted (500 characters, control characters escaped) so one response cannot flood or forge a log line."""
    body = _error_payload(response)
    try:
        error: ErrorBody | None = structure(body, ErrorBody)
    except StructureError:
        error = None
    message = _origin(response)
    if error is not None:
        message += f": {_quote(error.code, _MAX_QUOTED)}: {_quote(error.message, _MAX_QUOTED)}"
    elif isinstance(body, str) and body.strip():
        message += f": {_snippet(body)}"
    elif body is not None:
        message += f": {_snippet(show(body))}"
    cap = response.extensions.get(CUT_AT)
    if cap is not None:
        message += f" (body cut at max_response_bytes={cap})"
    if response.status_code == 404 and "/v1/" not in f"{response.request.url.path}/":
        message += f" ({NO_VERSION_HINT})"
    if BUDGET_REFUSED in response.extensions:
        message += f" ({BUDGET_NOTE})"
    request_id = response.headers.get("x-request-id")
    if request_id:
        message += f" (request id {_quote(request_id, 200)})"
    if attempts > 1:
        message += f" after {attempts} attempts"
    exception = status_error_class(response.status_code)(
        message,
        response=response,
        body=body,
        error=error,
        attempts=attempts,
        may_have_been_processed=_processed(response),
    )
    if BUDGET_REFUSED in response.extensions:
        exception.retry_budget_exhausted = True
    return exception


NO_VERSION_HINT = "the URL has no /v1, which every path of the service follows: does base_url end in /v1?"
"""What a 404 adds when its URL lacks the version: a base URL without it gives a bare 404 for every call."""


def _error_payload(response: httpx.Response) -> object:
    if not response.content:
        return None
    try:
        return loads(response.content)
    except (ValueError, RecursionError):
        return response.text


def _origin(response: httpx.Response) -> str:
    request = response.request
    # A mock (or a server) may give no reason phrase: the status's standard one then.
    reason = response.reason_phrase or httpx.codes.get_reason_phrase(response.status_code)
    return f"{response.status_code} {_quote(reason, 100)} from {request.method} {redact_url(request.url)}"


_SPACE = re.compile(r"\s+")


def _quote(text: str, limit: int) -> str:
    """``text`` safe for one log line: control characters escaped, cut to ``limit`` characters."""
    if len(text) > limit:
        text = text[:limit] + "..."
    if text.isprintable():
        return text
    return "".join(char if char.isprintable() else char.encode("unicode_escape").decode("ascii") for char in text)


def _snippet(text: str, limit: int = 200) -> str:
    return _quote(_SPACE.sub(" ", text[: limit * 4]).strip(), limit)


class Operation(NamedTuple):
    """One operation of the service, declared once, in `OPERATIONS` (docs/architecture.md says what follows from it).

    ``route`` is the specification's path template (``/pets/{petId}``); ``example`` holds arguments a call may take
    (the tests run every operation with them, against a store holding pet 1); ``deprecated``, the methods' warning.
    """

    name: str
    """The client method's name; also the operation name telemetry and logs use."""
    method: str
    route: str
    build: Callable[..., httpx.Request]
    parse: Callable[[Finished, int], Any]
    example: Mapping[str, object] = {}
    deprecated: str | None = None


OPERATIONS: tuple[Operation, ...] = (
    Operation("list_pets", "GET", "/pets", build_list_pets, parse_list_pets, example={"limit": 5}),
    Operation(
        "create_pet", "POST", "/pets", build_create_pet, parse_create_pet, example={"name": "Rex", "category_id": 1}
    ),
    Operation(
        "get_pet",
        "GET",
        "/pets/{petId}",
        build_get_pet,
        parse_get_pet,
        example={"pet_id": 1},
        deprecated=GET_PET_DEPRECATION,
    ),
)

ROUTES: dict[str, str] = {operation.name: operation.route for operation in OPERATIONS}
"""Each operation's route template, by operation name: telemetry names spans ``GET /pets/{petId}`` with it."""

_ROUTE_PATTERNS = tuple(
    (operation.name, operation.method, re.compile(re.sub(r"\\\{\w+\\\}", "[^/]+", re.escape(operation.route)) + "$"))
    for operation in OPERATIONS
)


def operation_of(method: str, path: str) -> str | None:
    """The operation a ``request()`` of ``method`` to ``path`` (under the base URL) is, by its route; else ``None``."""
    for name, operation_method, pattern in _ROUTE_PATTERNS:
        if method == operation_method and pattern.search(path):
            return name
    return None
