"""`APIResponse`: what ``client.with_raw_response.<operation>()`` returns."""

from __future__ import annotations

from collections.abc import Callable
from typing import Generic, TypeVar

import httpx

from animalstore_client._core.secrets import redact_url

T = TypeVar("T")

__all__ = ["APIResponse"]

_UNPARSED: object = object()


class APIResponse(Generic[T]):
    """A successful response with its HTTP details; `parse` gives what the plain call returns.

    Error statuses are raised exactly as the plain call raises them, so holding
    an `APIResponse` means the status was 2xx.

    ```python
    raw = client.with_raw_response.list_pets(limit=5)
    print(raw.status_code, raw.headers.get("x-request-id"), raw.attempts)
    pets = raw.parse()
    ```
    """

    def __init__(
        self, http_response: httpx.Response, attempts: int, parser: Callable[[httpx.Response, int], T]
    ) -> None:
        self._http_response = http_response
        self._attempts = attempts
        self._parser = parser
        self._parsed: object = _UNPARSED

    @property
    def http_response(self) -> httpx.Response:
        """The underlying `httpx.Response`."""
        return self._http_response

    @property
    def status_code(self) -> int:
        """The HTTP status code."""
        return self._http_response.status_code

    @property
    def headers(self) -> httpx.Headers:
        """The response headers."""
        return self._http_response.headers

    @property
    def attempts(self) -> int:
        """How many times the request was sent, retries included."""
        return self._attempts

    def parse(self) -> T:
        """The typed result; parsed once, then cached.

        Raises `APIResponseValidationError` when the body is not the documented shape.
        """
        if self._parsed is _UNPARSED:
            self._parsed = self._parser(self._http_response, self._attempts)
        return self._parsed  # type: ignore[return-value]  # set from the parser above

    def __repr__(self) -> str:
        request = self._http_response.request
        return f"<APIResponse [{self.status_code}] {request.method} {redact_url(request.url)}>"
