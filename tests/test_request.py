"""client.request: any path under the base URL, with the operations' auth, errors and retry rules.

Each test taking ``make_client`` runs against the sync and the async client.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
import respx

from animalstore_client import (
    ClientValidationError,
    InternalServerError,
)

from .conftest import API_KEY, PRODUCTION, ClientFactory

PET = {"id": 7, "name": "Rex", "categoryId": 3, "status": "available"}
ERROR_503 = {"code": "unavailable", "message": "try later", "status": 503}


def test_request_reaches_undocumented_paths(make_client: ClientFactory, router: respx.MockRouter) -> None:
    """client.request sends any method and path under the base URL with the same auth."""
    route = router.post(f"{PRODUCTION}/messages").respond(
        201, json={"id": "m1", "message": "hi", "status": "queued", "createdAt": "2026-11-21T12:00:00Z"}
    )
    response = make_client().request("post", "/messages", json={"message": "hi"}, headers={"X-Trace": "t"})
    assert response.json()["status"] == "queued"
    sent = route.calls.last.request
    assert sent.method == "POST"
    assert sent.headers["Authorization"] == f"Bearer {API_KEY}"
    assert sent.headers["X-Trace"] == "t"
    assert json.loads(sent.content) == {"message": "hi"}


def test_request_maps_errors_and_follows_method_retry_rules(
    make_client: ClientFactory, router: respx.MockRouter
) -> None:
    """GET is retried like a read, POST like create_pet; errors raise their status class."""
    get_route = router.get(f"{PRODUCTION}/store/orders").respond(500)
    post_route = router.post(f"{PRODUCTION}/messages").respond(500)
    client = make_client()
    with pytest.raises(InternalServerError):
        client.request("GET", "/store/orders", params={"page": 1})
    with pytest.raises(InternalServerError):
        client.request("POST", "/messages", json={"message": "hi"})
    assert get_route.call_count == 3
    assert post_route.call_count == 1
    assert get_route.calls.last.request.url.params["page"] == "1"


@pytest.mark.parametrize(
    ("method", "path", "kwargs", "argument"),
    [
        ("GET", "store/orders", {}, "path"),
        ("GET", "//evil.example/x", {}, "path"),
        ("GET", "https://evil.example/x", {}, "path"),
        ("GE T", "/x", {}, "method"),
        ("POST", "/messages", {"json": {"n": float("nan")}}, "json"),
        ("POST", "/messages", {"json": {"when": object()}}, "json"),
        ("GET", "/x", {"headers": {"Authorization": "Basic x"}}, "headers"),
    ],
)
def test_request_validates_before_sending(
    make_client: ClientFactory,
    router: respx.MockRouter,
    method: str,
    path: str,
    kwargs: dict[str, Any],
    argument: str,
) -> None:
    """A bad method, path, JSON body or header raises ClientValidationError and sends nothing."""
    route = router.route().respond(200)
    with pytest.raises(ClientValidationError) as info:
        make_client().request(method, path, **kwargs)
    assert info.value.argument == argument
    assert not route.called
