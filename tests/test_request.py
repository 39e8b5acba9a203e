"""client.request: any path under the base URL, with the operations' auth, errors and retry rules.

Each test taking ``make_client`` runs against the sync and the async client.
"""

from __future__ import annotations

import decimal
import json
import uuid
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
    client = make_client(max_retries=2)
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


def _nested(depth: int, kind: str = "list") -> object:
    """A value ``depth`` containers deep, built without recursion."""
    value: object = 1
    for _ in range(depth):
        value = [value] if kind == "list" else {"k": value}
    return value


def _cycle() -> list[object]:
    """A list that holds itself."""
    items: list[object] = []
    items.append(items)
    return items


@pytest.mark.parametrize(
    "params",
    [
        pytest.param(1, id="int"),
        pytest.param(1.5, id="float"),
        pytest.param(True, id="bool"),
        pytest.param({"a", "b"}, id="set"),
        pytest.param("page=1", id="query-string"),
        pytest.param(_nested(5000, "dict"), id="dict-nested-5000-deep"),
        pytest.param(["\ud800"], id="list-holding-a-lone-surrogate"),
        pytest.param([("a", "b", "c")], id="triple-not-pair"),
        pytest.param({"q": "\ud800"}, id="lone-surrogate-value"),
        pytest.param({"\ud800": "x"}, id="lone-surrogate-name"),
        pytest.param({1: "x"}, id="int-name"),
        pytest.param({"q": float("nan")}, id="nan"),
        pytest.param({"q": float("inf")}, id="inf"),
        pytest.param({"q": 10**5000}, id="int-of-5001-digits"),
        pytest.param({"q": [[1]]}, id="nested-list-value"),
        pytest.param({"q": b"x"}, id="bytes-value"),
        pytest.param({"q": decimal.Decimal("NaN")}, id="decimal-nan"),
        pytest.param({"q": decimal.Decimal("-Infinity")}, id="decimal-infinity"),
        pytest.param({"q": "x" * 70_000}, id="query-longer-than-httpx-accepts"),
    ],
)
def test_request_refuses_bad_params(make_client: ClientFactory, router: respx.MockRouter, params: object) -> None:
    """Each params shape outside the rule raises ClientValidationError naming params, and nothing is sent."""
    route = router.route().respond(200)
    with pytest.raises(ClientValidationError, match=r"^params must ") as info:
        make_client().request("GET", "/store/orders", params=params)  # type: ignore[arg-type]
    assert info.value.argument == "params"
    assert info.value.rule
    assert len(str(info.value)) < 1000
    assert not route.called


def test_request_sends_params_as_httpx_spells_them(make_client: ClientFactory, router: respx.MockRouter) -> None:
    """Lists repeat the name, bools are true/false, None is an empty value; pairs work like a mapping."""
    route = router.get(f"{PRODUCTION}/store/orders").respond(200)
    client = make_client()
    client.request("GET", "/store/orders", params={"a": [1, 2], "b": True, "c": None, "d": 1.5, "é": "ü"})
    assert route.calls.last.request.url.query == b"a=1&a=2&b=true&c=&d=1.5&%C3%A9=%C3%BC"
    client.request("GET", "/store/orders", params=[("a", 1), ("b", False)])
    assert route.calls.last.request.url.query == b"a=1&b=false"


def test_request_sends_a_decimal_and_a_uuid_as_1_1_did(make_client: ClientFactory, router: respx.MockRouter) -> None:
    """A finite Decimal and a UUID are sent as str() writes them, as 1.1.0 sent them through httpx."""
    route = router.get(f"{PRODUCTION}/store/orders").respond(200)
    make_client().request(
        "GET",
        "/store/orders",
        params={"limit": decimal.Decimal("5"), "id": uuid.UUID(int=1), "p": decimal.Decimal("1.50")},
    )
    assert route.calls.last.request.url.query == b"limit=5&id=00000000-0000-0000-0000-000000000001&p=1.50"


@pytest.mark.parametrize(
    ("data", "rule"),
    [
        pytest.param(_cycle(), "JSON data without cycles", id="cycle"),
        pytest.param({"n": float("nan")}, "numbers are finite", id="nan"),
        pytest.param([float("-inf")], "numbers are finite", id="minus-infinity"),
        pytest.param({"tags": {"a"}}, "JSON data: dicts", id="set"),
        pytest.param({"raw": b"x"}, "JSON data: dicts", id="bytes"),
        pytest.param(_nested(100_000), "at most 500 levels deep", id="list-nested-100000-deep"),
        pytest.param(_nested(501, "dict"), "at most 500 levels deep", id="dict-nested-501-deep"),
        pytest.param({1: "a", "1": "b"}, "dict keys are str", id="int-key"),
        pytest.param({"s": "\udc80"}, "encodable as UTF-8", id="lone-surrogate"),
        pytest.param([10**5000], "ints Python can write", id="int-of-5001-digits"),
    ],
)
def test_request_refuses_bad_json(
    make_client: ClientFactory, router: respx.MockRouter, data: object, rule: str
) -> None:
    """Each json body outside the rule raises ClientValidationError naming json and the rule, and nothing is sent."""
    route = router.route().respond(200)
    with pytest.raises(ClientValidationError, match=r"^json must ") as info:
        make_client().request("POST", "/messages", json=data)
    assert info.value.argument == "json"
    assert rule in str(info.value)
    assert len(str(info.value)) < 1000
    assert not route.called


def test_request_json_error_names_where_the_fault_is(make_client: ClientFactory, router: respx.MockRouter) -> None:
    """The message gives the JSONPath of the offending value."""
    router.route().respond(200)
    with pytest.raises(ClientValidationError, match=r"got nan at \$\.pets\[1\]\.weight$"):
        make_client().request("POST", "/messages", json={"pets": [{}, {"weight": float("nan")}]})


def test_request_json_at_the_depth_limit_and_shared_values_are_sent(
    make_client: ClientFactory, router: respx.MockRouter
) -> None:
    """500 levels of nesting are accepted, and one list used twice is not mistaken for a cycle."""
    route = router.post(f"{PRODUCTION}/messages").respond(201)
    client = make_client()
    client.request("POST", "/messages", json=_nested(500))
    assert route.calls.last.request.content == b"[" * 500 + b"1" + b"]" * 500
    shared = [1, 2]
    client.request("POST", "/messages", json={"a": shared, "b": (shared, shared)})
    assert json.loads(route.calls.last.request.content) == {"a": [1, 2], "b": [[1, 2], [1, 2]]}


@pytest.mark.parametrize(
    "headers",
    [
        pytest.param(1, id="int"),
        pytest.param({"X-A": _nested(100_000)}, id="value-nested-100000-deep"),
        pytest.param({"X-A": 10**5000}, id="value-int-of-5001-digits"),
        pytest.param({"X-A": "\ud800"}, id="lone-surrogate"),
    ],
)
def test_request_refuses_bad_headers(make_client: ClientFactory, router: respx.MockRouter, headers: object) -> None:
    """headers= is checked like extra_headers: a ClientValidationError naming headers, nothing sent."""
    route = router.route().respond(200)
    with pytest.raises(ClientValidationError, match=r"^headers must ") as info:
        make_client().request("GET", "/x", headers=headers)  # type: ignore[arg-type]
    assert info.value.argument == "headers"
    assert not route.called


def test_request_refuses_a_path_longer_than_httpx_accepts(make_client: ClientFactory, router: respx.MockRouter) -> None:
    """A path that makes a URL past httpx's length limit is blamed on path, not on params."""
    route = router.route().respond(200)
    with pytest.raises(ClientValidationError, match=r"^path must ") as info:
        make_client().request("GET", "/" + "x" * 70_000)
    assert info.value.argument == "path"
    assert not route.called
