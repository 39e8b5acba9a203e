"""Per-call options (extra_headers, timeout), with_options, and the headers every request carries.

Each test taking ``make_client`` runs against the sync and the async client.
"""

from __future__ import annotations

import importlib
import re
import sys
from typing import Any, cast

import httpx
import pytest
import respx

import animalstore_client
from animalstore_client import (
    DEFAULT_MAX_RETRIES,
    AnimalStoreError,
    APITimeoutError,
    ClientValidationError,
)

from .conftest import PRODUCTION, ClientFactory
from .servers import LoopbackServer

PET = {"id": 7, "name": "Rex", "categoryId": 3, "status": "available"}
ERROR_503 = {"code": "unavailable", "message": "try later", "status": 503}


def test_extra_headers_are_sent(make_client: ClientFactory, router: respx.MockRouter) -> None:
    """extra_headers add to (and may replace) the client's headers for one call."""
    route = router.post(f"{PRODUCTION}/pets").respond(201, json=PET)
    make_client(default_headers={"X-Team": "a"}).create_pet(
        name="Rex", category_id=3, extra_headers={"X-Team": "b", "Idempotency-Key": "k1"}
    )
    headers = route.calls.last.request.headers
    assert headers.get_list("X-Team") == ["b"]
    assert headers["Idempotency-Key"] == "k1"
    assert headers["Content-Type"] == "application/json"


@pytest.mark.parametrize("name", ["Authorization", "authorization", "AUTHORIZATION"])
def test_extra_headers_cannot_replace_authorization(
    make_client: ClientFactory, router: respx.MockRouter, name: str
) -> None:
    """Setting Authorization through extra_headers raises ClientValidationError and sends nothing."""
    route = router.route().respond(200, json=[])
    with pytest.raises(ClientValidationError, match="must not set Authorization") as info:
        make_client().list_pets(extra_headers={name: "Bearer other"})
    assert info.value.argument == "extra_headers"
    assert not route.called


def test_per_call_timeout_travels_with_the_request(make_client: ClientFactory, router: respx.MockRouter) -> None:
    """A per-call timeout replaces the client's in the request; None means no timeout (with no deadline)."""
    route = router.get(f"{PRODUCTION}/pets").respond(200, json=[])
    client = make_client(timeout=10.0, total_timeout=None)
    client.list_pets(timeout=httpx.Timeout(2.0, connect=1.0))
    assert route.calls.last.request.extensions["timeout"] == {"connect": 1.0, "read": 2.0, "write": 2.0, "pool": 2.0}
    client.list_pets(timeout=None)
    assert route.calls.last.request.extensions["timeout"] == {
        "connect": None,
        "read": None,
        "write": None,
        "pool": None,
    }
    client.list_pets()
    assert route.calls.last.request.extensions["timeout"]["read"] == 10.0


def test_no_phase_may_outlast_the_total_timeout(make_client: ClientFactory, router: respx.MockRouter) -> None:
    """With total_timeout=5, each phase's timeout is at most what is left of the 5 s."""
    route = router.get(f"{PRODUCTION}/pets").respond(200, json=[])
    make_client(timeout=None, total_timeout=5.0).list_pets()
    phases = route.calls.last.request.extensions["timeout"]
    assert set(phases) == {"connect", "read", "write", "pool"}
    assert all(4.0 < value <= 5.0 for value in phases.values())


def test_bad_per_call_timeout_is_refused(make_client: ClientFactory, router: respx.MockRouter) -> None:
    """A negative per-call timeout raises ClientValidationError and sends nothing."""
    route = router.route().respond(200, json=[])
    with pytest.raises(ClientValidationError, match="timeout must be"):
        make_client().list_pets(timeout=-1)
    assert not route.called


def test_per_call_timeout_overrides_the_clients(make_client: ClientFactory) -> None:
    """timeout= on a call replaces the client's timeout for that call only."""
    with LoopbackServer() as server:
        server.script = [server.hang()]
        client = make_client(base_url=server.base_url, timeout=30.0, max_retries=0)
        with pytest.raises(APITimeoutError):
            client.list_pets(timeout=0.2)


def test_with_options_changes_options_and_shares_the_pool(make_client: ClientFactory, router: respx.MockRouter) -> None:
    """with_options returns a client with new options on the same pool; closing it keeps the pool open."""
    route = router.get("https://staging.api.animalstore.example/v1/pets").respond(200, json=[])
    client = make_client(default_headers={"X-A": "1"})
    derived = client.with_options(
        environment="staging", api_key="other-key", timeout=3.0, max_retries=5, default_headers={"X-B": "2"}
    )
    inner: Any = getattr(client, "inner", client)
    derived_inner: Any = getattr(derived, "inner", derived)
    assert derived_inner._sender.pool is inner._sender.pool
    assert derived.base_url == "https://staging.api.animalstore.example/v1"
    assert derived.timeout == httpx.Timeout(3.0)
    assert derived.max_retries == 5
    assert client.base_url == PRODUCTION
    assert client.max_retries == DEFAULT_MAX_RETRIES
    derived.list_pets()
    headers = route.calls.last.request.headers
    assert headers["Authorization"] == "Bearer other-key"
    assert (headers["X-A"], headers["X-B"]) == ("1", "2")
    derived.close()
    assert not client.is_closed
    router.get(f"{PRODUCTION}/pets").respond(200, json=[])
    assert client.list_pets() == []


def test_with_options_validates(make_client: ClientFactory) -> None:
    """Bad options given to with_options raise ClientValidationError."""
    client = make_client()
    with pytest.raises(ClientValidationError):
        client.with_options(max_retries=-1)
    with pytest.raises(ClientValidationError):
        client.with_options(environment="qa")
    with pytest.raises(ClientValidationError):
        client.with_options(api_key="has space")


def test_closing_the_original_closes_derived_clients(make_client: ClientFactory) -> None:
    """A derived client shares the pool, so it reports closed once the original closes it."""
    client = make_client()
    derived = client.with_options(max_retries=0)
    client.close()
    assert derived.is_closed
    with pytest.raises(AnimalStoreError, match="closed"):
        derived.list_pets()


def test_user_agent_names_sdk_httpx_and_python(make_client: ClientFactory, router: respx.MockRouter) -> None:
    """User-Agent is animalstore-client-python/<v> httpx/<v> Python/<v>."""
    route = router.get(f"{PRODUCTION}/pets").respond(200, json=[])
    make_client().list_pets()
    agent = route.calls.last.request.headers["User-Agent"]
    assert re.fullmatch(r"animalstore-client-python/\S+ httpx/[\w.]+ Python/\d+\.\d+\.\d+\S*", agent)
    assert agent.startswith(f"animalstore-client-python/{animalstore_client.__version__} ")
    assert f"httpx/{httpx.__version__}" in agent


def test_user_agent_names_the_library_that_sends(make_client: ClientFactory) -> None:
    """On every client and library, the User-Agent a server receives names that library and its version."""
    with LoopbackServer() as server:
        client = make_client(base_url=server.base_url)
        client.list_pets()
        agent = server.received[0].headers["user-agent"]
    library = client.backend
    version = importlib.import_module(library).__version__
    python = "{}.{}.{}".format(*sys.version_info[:3])
    assert agent == f"animalstore-client-python/{animalstore_client.__version__} {library}/{version} Python/{python}"


def _nested_list(depth: int) -> object:
    """A list ``depth`` levels deep, built without recursion: repr() of it raises RecursionError."""
    value: object = None
    for _ in range(depth):
        value = [value]
    return value


HUGE = 10**5000
"""An int whose repr() raises ValueError (past the 4300-digit limit)."""
DEEP = _nested_list(100_000)

CONSTRUCTOR_ARGUMENTS = [
    "base_url",
    "environment",
    "backend",
    "api_key",
    "timeout",
    "max_retries",
    "default_headers",
    "http_client",
    "total_timeout",
    "max_response_bytes",
    "verify",
]


@pytest.mark.parametrize("cls", [animalstore_client.AnimalStoreClient, animalstore_client.AsyncAnimalStoreClient])
@pytest.mark.parametrize("value", [HUGE, DEEP], ids=["int-of-5001-digits", "list-nested-100000-deep"])
@pytest.mark.parametrize("argument", CONSTRUCTOR_ARGUMENTS)
def test_constructor_refuses_huge_and_deep_values(cls: type[Any], value: object, argument: str) -> None:
    """base_url=10**5000, environment=[[[...]]] and the like raise ClientValidationError naming the argument."""
    kwargs: dict[str, Any] = {argument: value}
    if argument != "api_key":
        kwargs["api_key"] = "test-key"
    with pytest.raises(ClientValidationError, match=rf"^{argument} must ") as info:
        cls(**kwargs)
    assert info.value.argument == argument
    assert len(str(info.value)) < 1000


@pytest.mark.parametrize("value", [HUGE, DEEP], ids=["int-of-5001-digits", "list-nested-100000-deep"])
@pytest.mark.parametrize(
    "argument",
    [name for name in CONSTRUCTOR_ARGUMENTS if name not in ("backend", "http_client")],
)
def test_with_options_refuses_huge_and_deep_values(make_client: ClientFactory, value: object, argument: str) -> None:
    """with_options(environment=10**5000) and the like raise ClientValidationError naming the argument."""
    client = make_client()
    with pytest.raises(ClientValidationError, match=rf"^{argument} must ") as info:
        client.with_options(**cast("dict[str, Any]", {argument: value}))
    assert info.value.argument == argument


def test_every_option_is_read_by_name_where_settings_are_made_and_changed() -> None:
    """`new_settings` reads every option of `OPTIONS` as ``given.<name>``, and `Settings.changed`
    every option `with_options` takes: an option added to the declaration and forgotten there fails here
    (it would otherwise be taken by the signatures and silently dropped)."""
    import ast
    import inspect
    import textwrap

    from animalstore_client._clients.options import OPTIONS, Settings, new_settings

    def read(function: Any) -> set[str]:
        tree = ast.parse(textwrap.dedent(inspect.getsource(function)))
        return {
            node.attr
            for node in ast.walk(tree)
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "given"
        }

    assert read(new_settings) == {option.name for option in OPTIONS}
    assert read(Settings.changed) == {option.name for option in OPTIONS if option.changes is not None}
