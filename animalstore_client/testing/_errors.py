"""Exceptions as the client raises them, for tests that mock at the exception level."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping

import httpx

from animalstore_client._core.exceptions import APIStatusError, ClientValidationError
from animalstore_client._core.operations import status_error

from ._messages import FAKE_BASE_URL, reason_phrase

__all__ = ["make_status_error"]


def make_status_error(
    status: int,
    *,
    code: str | None = None,
    message: str | None = None,
    headers: Mapping[str, str] | None = None,
    request: httpx.Request | None = None,
) -> APIStatusError:
    """The `APIStatusError` the client raises for ``status``, with an Error body, built without a server.

    The class is the one the client picks (`NotFoundError` for 404,
    `InternalServerError` for any 5xx, ...); it carries a real
    `httpx.Response` whose JSON body is the interface's Error object, so
    ``exc.code``, ``exc.message``, ``exc.error``, ``exc.request_id`` (from
    ``headers``) and ``str(exc)`` are what a real failure gives. It pickles.

    ```python
    from animalstore_client import NotFoundError
    from animalstore_client.testing import make_status_error

    exc = make_status_error(404, code="not_found", message="No pet with id 7.")
    assert isinstance(exc, NotFoundError) and exc.code == "not_found"
    ```

    Args:
        status: A non-2xx HTTP status, 300 to 599.
        code: The Error body's ``code``; defaults to the status phrase in snake case (``"not_found"``).
        message: The Error body's ``message``; defaults to the status phrase.
        headers: Response headers, such as ``{"x-request-id": "req_1"}`` or ``{"Retry-After": "30"}``.
        request: The request it answers; defaults to ``GET {FAKE_BASE_URL}/pets``.
    """
    if not isinstance(status, int) or isinstance(status, bool) or not 300 <= status <= 599:  # pyright: ignore[reportUnnecessaryIsInstance]
        raise ClientValidationError(
            f"status must be an int from 300 to 599 (a status the client raises for), got {status!r}",
            argument="status",
            rule="an int from 300 to 599",
            value=status,
        )
    phrase = reason_phrase(status, "Error")
    body = {
        "code": re.sub(r"\W+", "_", phrase.lower()).strip("_") if code is None else code,
        "message": phrase if message is None else message,
        "status": status,
    }
    response = httpx.Response(
        status,
        headers={"Content-Type": "application/json", **(headers or {})},
        content=json.dumps(body).encode(),
        request=request if request is not None else httpx.Request("GET", f"{FAKE_BASE_URL}/pets"),
    )
    return status_error(response)
