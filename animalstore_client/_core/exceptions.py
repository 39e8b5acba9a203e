"""Everything the SDK raises, rooted at `AnimalStoreError` (docs/errors.md draws the tree).

Misuse (`ClientValidationError`) is kept apart from failures of the exchange (`APIError`), so ``except APIError``
never hides a bug in the calling code. Every exception pickles with its attributes, a request's secrets masked
(``_core.secrets.SECRET_NAMES``); an attribute that cannot be pickled arrives as its short description (`show`).
"""

from __future__ import annotations

import contextlib
import copy
from typing import TYPE_CHECKING, Any

import httpx

from animalstore_client._core.retry import is_idempotent
from animalstore_client._core.secrets import is_secret_name, redact_url
from animalstore_client._core.show import show

if TYPE_CHECKING:
    from animalstore_client._core.models import ErrorBody

__all__ = [
    "APIConnectionError",
    "APIError",
    "APIResponseValidationError",
    "APIStatusError",
    "APITimeoutError",
    "AnimalStoreError",
    "AuthenticationError",
    "BadRequestError",
    "ClientValidationError",
    "ConflictError",
    "InternalServerError",
    "MiddlewareError",
    "NotFoundError",
    "PermissionDeniedError",
    "RateLimitError",
    "UnprocessableEntityError",
]

_REDACTED = "[redacted]"


def _redact_request(request: httpx.Request) -> httpx.Request:
    headers = [(name, _REDACTED if is_secret_name(name) else value) for name, value in request.headers.items()]
    try:
        content = request.content
    except httpx.RequestNotRead:
        content = b""
    return httpx.Request(request.method, redact_url(request.url), headers=headers, content=content)


def _picklable(value: object) -> object:
    if isinstance(value, httpx.Request):
        return _redact_request(value)
    if isinstance(value, httpx.Response):
        clone = copy.copy(value)
        # httpx raises RuntimeError when a response has no request attached.
        with contextlib.suppress(RuntimeError):
            clone.request = _redact_request(value.request)
        return clone
    import pickle  # only when an exception is pickled

    try:
        pickle.dumps(value)
    except Exception:  # noqa: BLE001 (any failure means "not picklable", RecursionError included)
        # Not repr(): it fails on the very values pickle fails on for depth.
        return show(value)
    return value


def _restore(cls: type[AnimalStoreError], args: tuple[Any, ...], state: dict[str, Any]) -> AnimalStoreError:
    exc = cls.__new__(cls)
    Exception.__init__(exc, *args)
    exc.__dict__.update(state)
    return exc


class AnimalStoreError(Exception):
    """Base class of every exception the SDK raises.

    ```python
    try:
        client.list_pets()
    except AnimalStoreError as exc:
        log.warning("animal store unavailable: %s", exc)
    ```
    """

    def __reduce__(self) -> tuple[Any, ...]:
        # The default reduce calls cls(*args), which the keyword-only constructors refuse.
        state = {name: _picklable(value) for name, value in self.__dict__.items()}
        return (_restore, (type(self), self.args, state))


class ClientValidationError(AnimalStoreError, ValueError):
    """An argument broke a rule; raised before anything is sent.

    The message names the argument, the rule and the value (except for the
    API key, whose value is never shown). The same facts are attributes.

    ```python
    try:
        client.list_pets(limit=500)
    except ClientValidationError as exc:
        assert exc.argument == "limit"
    ```

    Your own test doubles can raise it with a message alone:
    ``ClientValidationError("limit must be 1..100")``.
    """

    argument: str | None
    """The name of the offending argument (or environment variable); ``None`` when not given."""
    rule: str | None
    """The rule it broke, in words; ``None`` when not given."""
    value: object
    """The value given (``None`` when the value is a secret, or not given).

    After pickling, a value that could not be pickled (a lambda, or a list
    nested past the recursion limit) is its short description, a str such as
    ``'<function <lambda> at 0x...>'`` or ``'a list nested too deeply to show'``.
    """

    def __init__(
        self, message: str, *, argument: str | None = None, rule: str | None = None, value: object = None
    ) -> None:
        super().__init__(message)
        self.argument = argument
        self.rule = rule
        self.value = value


def stored_note(exc: _CallFailure) -> str:
    """What ``str(exc)`` adds for a call that changes the store (reads add nothing): ``may_have_been_processed`` in
    words, so a log line written with ``%s`` keeps it."""
    request = exc.__dict__.get("request")
    if not isinstance(request, httpx.Request) or is_idempotent(request.method):
        return ""
    pet = request.method == "POST" and request.url.path.endswith("/pets")
    status = getattr(exc, "status_code", None)
    if getattr(exc, "may_have_been_processed", True):
        # Why it was not sent again: a gateway answers 5xx after it passed the request on, so a 5xx proves nothing.
        why = f" (a {status} is no proof that it was not, so it was not sent again)" if status is not None else ""
        if pet:
            return f"; the pet may have been stored{why}: check before sending it again"
        return f"; the service may have acted on it{why}: check before sending it again"
    if isinstance(status, int) and 400 <= status <= 499 and status != 429:  # a refusal: the same request fails alike
        return (
            "; nothing was stored: the service refused it, fix what it says before sending it again"
            if pet
            else "; the service did not act on it"
        )
    return "; nothing was stored: safe to send again" if pet else "; the service did not act on it"


class _CallFailure(AnimalStoreError):
    """What `MiddlewareError` and `APIError` share: the call's request and attempts, and what ``str()`` adds."""

    def __init__(
        self, message: str, *, request: httpx.Request, attempts: int = 1, may_have_been_processed: bool = True
    ) -> None:
        super().__init__(message)
        self.request = request
        self.attempts = attempts
        # Set here once, from `_core.exchange.may_have_acted` over the call's attempts; "yes" without evidence.
        self.may_have_been_processed = may_have_been_processed

    def __str__(self) -> str:
        return super().__str__() + stored_note(self)

    def __repr__(self) -> str:
        return f"{super().__repr__()[:-1]}, may_have_been_processed={self.may_have_been_processed})"


class MiddlewareError(_CallFailure):
    """A middleware raised an exception that is not an `AnimalStoreError`; it is the ``__cause__``.

    So does code of yours that your own ``http_client`` runs and that raises
    (an event hook, a transport such as a ``MockTransport`` handler, an
    aiohttp session's middleware) or a respx route, the message naming what
    raised and its function; and a rule of the SDK's your client broke on a
    send (an aiohttp middleware sending the request a second time).

    The call ends there: it is not retried, since the same middleware would
    most likely fail again. It is not an `APIError`, so ``except APIError``
    does not hide a bug in your own middleware.

    ```python
    try:
        client.list_pets()
    except MiddlewareError as exc:
        log.error("middleware failed on attempt %d: %r", exc.attempts, exc.__cause__)
    ```
    """

    request: httpx.Request
    """The request the SDK built for the call."""
    attempts: int
    """The attempt the middleware failed in (1 for the first)."""
    may_have_been_processed: bool
    """Whether the service may have acted on the request in any attempt of the call, as for `APIError`.

    ``False`` when no attempt reached the service or each was turned away
    (a middleware that raised before sending or after a 404, say, or a hook
    of your ``http_client`` that set ``request.url`` or ``Host`` was stopped
    before the first byte); ``True`` once any attempt may have been acted on
    (your code raised after a 500, a 503 or a 201, a hook of your
    ``http_client`` raised once the request was written).
    """


class APIError(_CallFailure):
    """A request was sent (or attempted) and the exchange failed.

    `may_have_been_processed` answers "was it stored?": ``False`` means the
    service certainly did not act on the request, so sending it again cannot
    make a duplicate.

    ```python
    try:
        client.create_pet(name="Rex", category_id=1)
    except APIError as exc:
        if exc.may_have_been_processed:
            log.warning("Rex may have been stored: check before sending again")
        else:
            queue_again("Rex")  # certainly not stored
    ```
    """

    request: httpx.Request
    """The last request sent."""
    attempts: int
    """How many times the request was sent, retries included."""
    may_have_been_processed: bool
    """Whether the service may have acted on the request, in any attempt of the call.

    ``False`` when it certainly did not: what the SDK saw on the connection
    shows that no byte of the request was written (the connection was
    refused, not made in time, no pooled connection came free, or the call's
    ``total_timeout`` passed before the first byte), or each answer turned
    the request away (400, 401, 403, 404, 409, 422, 429, any other 4xx but
    408). ``True`` when it may have: a request written with no complete
    answer (a read timeout, a reset or a close after sending), a 408, any
    5xx (a gateway answers in the service's own format after it passed the
    request on), a 2xx whose body failed validation, any failure of code
    outside the SDK once the request was written, and any failure where
    nothing below your own code reported on the connection (an
    ``http_client`` whose transport is not its library's own, such as
    httpx-aiohttp or a ``MockTransport``). It comes from one rule
    (``docs/errors.md``): a `create_pet` is retried exactly when its
    failure is transient and this would be ``False``.
    """
    retry_budget_exhausted: bool = False
    """Whether the retry policy would have tried again but the client's `RetryBudget` refused.

    The call then ended at once, with this error: a sign that many recent
    calls failed, so backing off (or shedding load) beats calling again.
    """


class APIConnectionError(APIError):
    """No response came back: the connection failed or broke."""


class APITimeoutError(APIConnectionError):
    """No response came back before a timeout expired."""


class APIResponseValidationError(APIError):
    """A 2xx response whose body is not the documented shape.

    The message lists each problem with its JSON path, e.g.
    ``$[3].categoryId: expected an integer, got '7'``.
    """

    response: httpx.Response
    """The response whose body was rejected."""
    body: object
    """The parsed JSON body, or the text when it is not JSON."""

    def __init__(
        self,
        message: str,
        *,
        response: httpx.Response,
        body: object,
        attempts: int = 1,
        may_have_been_processed: bool = True,
    ) -> None:
        super().__init__(
            message, request=response.request, attempts=attempts, may_have_been_processed=may_have_been_processed
        )
        self.response = response
        self.body = body


class APIStatusError(APIError):
    """The service answered with a non-2xx status.

    Subclasses name the common statuses; any other status raises this class
    itself. When the body is the service's Error object, `error`, `code` and
    `message` hold its fields; otherwise (an HTML page from a proxy, say)
    they are ``None`` and `body` holds the text.

    ```python
    try:
        client.create_pet(name="Rex", category_id=1)
    except APIStatusError as exc:
        print(exc.status_code, exc.code, exc.request_id)
    ```
    """

    response: httpx.Response
    """The response."""
    status_code: int
    """The HTTP status code of the response."""
    body: object
    """The parsed JSON body, the text when it is not JSON, or ``None`` when empty."""
    error: ErrorBody | None
    """The Error body when the response carries one, else ``None``."""

    def __init__(
        self,
        message: str,
        *,
        response: httpx.Response,
        body: object,
        error: ErrorBody | None,
        attempts: int = 1,
        may_have_been_processed: bool = True,
    ) -> None:
        super().__init__(
            message, request=response.request, attempts=attempts, may_have_been_processed=may_have_been_processed
        )
        self.response = response
        self.status_code = response.status_code
        self.body = body
        self.error = error

    @property
    def code(self) -> str | None:
        """The Error body's machine-readable ``code``, else ``None``."""
        return None if self.error is None else self.error.code

    @property
    def message(self) -> str | None:
        """The Error body's human-readable ``message``, else ``None``."""
        return None if self.error is None else self.error.message

    @property
    def request_id(self) -> str | None:
        """The ``x-request-id`` response header, to quote to support; else ``None``."""
        request_id: str | None = self.response.headers.get("x-request-id")
        return request_id


class BadRequestError(APIStatusError):
    """400: the request body is missing fields or holds invalid values."""


class AuthenticationError(APIStatusError):
    """401: the API key is missing or invalid."""


class PermissionDeniedError(APIStatusError):
    """403: the API key may not do this."""


class NotFoundError(APIStatusError):
    """404: the resource does not exist."""


class ConflictError(APIStatusError):
    """409: the request conflicts with the resource's state."""


class UnprocessableEntityError(APIStatusError):
    """422: the request was well-formed but semantically wrong."""


class RateLimitError(APIStatusError):
    """429: too many requests."""


class InternalServerError(APIStatusError):
    """Any 5xx status: the service failed."""


STATUS_ERRORS: dict[int, type[APIStatusError]] = {
    400: BadRequestError,
    401: AuthenticationError,
    403: PermissionDeniedError,
    404: NotFoundError,
    409: ConflictError,
    422: UnprocessableEntityError,
    429: RateLimitError,
}


def status_error_class(status_code: int) -> type[APIStatusError]:
    """The exception class for a non-2xx status code."""
    if 500 <= status_code <= 599:
        return InternalServerError
    return STATUS_ERRORS.get(status_code, APIStatusError)
