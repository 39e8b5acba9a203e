"""Each option and each operation is declared once, and every place that shows one agrees with its declaration.

The options: `_clients.options.OPTIONS` against the constructors, `with_options`, the
kit's factories, the docstring's Args, `Settings` and pickling. The operations:
`_core.operations.OPERATIONS` against the client methods and raw views, what each
build function sends, the span each call makes, and the fake store serving it.
A piece forgotten when adding one fails here, naming it.
"""

from __future__ import annotations

import importlib
import inspect
import pickle
import re
import typing
import warnings
from collections.abc import Callable
from typing import Any

import attrs
import httpx
import pytest
import typing_extensions
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from animalstore_client import AnimalStoreClient, AsyncAnimalStoreClient, AsyncHTTPClient, HTTPClient
from animalstore_client._clients import client_async
from animalstore_client._clients._generated import client_sync
from animalstore_client._clients._generated.client_sync import AnimalStoreClientWithRawResponse
from animalstore_client._clients.backends import (  # pyright: ignore[reportPrivateUsage]
    _ASYNC_CLASSES,  # pyright: ignore[reportPrivateUsage]
    _SYNC_CLASSES,  # pyright: ignore[reportPrivateUsage]
    REFUSED_CLIENTS,
)
from animalstore_client._clients.client_async import AsyncAnimalStoreClientWithRawResponse
from animalstore_client._clients.options import OPTIONS, Settings
from animalstore_client._core.failures import HTTP_STACK_PACKAGES
from animalstore_client._core.operations import OPERATIONS, ROUTES, Operation, RequestConfig
from animalstore_client.testing import FakeAnimalStore

SYNC_WORDS = [
    ("AsyncMiddleware", "Middleware"),
    ("AsyncBackendName", "BackendName"),
    ("AsyncHTTPClient", "HTTPClient"),
    ("httpx.AsyncClient", "httpx.Client"),
    ("pyreqwest.client.Client", "pyreqwest.client.SyncClient"),
]


def _sync(text: str) -> str:
    for old, new in SYNC_WORDS:
        text = text.replace(old, new)
    return text


def _parameters(function: Callable[..., Any]) -> list[inspect.Parameter]:
    return [p for p in inspect.signature(function).parameters.values() if p.name != "self"]


@pytest.mark.parametrize(("cls", "module"), [(AsyncAnimalStoreClient, client_async), (AnimalStoreClient, client_sync)])
def test_each_constructor_takes_every_option_as_declared(cls: type, module: Any) -> None:
    """Names in order, the key positional and the rest keyword-only, each annotation and default as declared."""
    parameters = _parameters(vars(cls)["__init__"])
    assert [p.name for p in parameters] == [option.name for option in OPTIONS]
    assert parameters[0].kind is inspect.Parameter.POSITIONAL_OR_KEYWORD
    assert {p.kind for p in parameters[1:]} == {inspect.Parameter.KEYWORD_ONLY}
    for parameter, option in zip(parameters, OPTIONS, strict=True):
        annotation = option.annotation if cls is AsyncAnimalStoreClient else _sync(option.annotation)
        assert parameter.annotation == annotation, option.name
        default = eval(option.default, vars(module))  # the declared default's source text, in the module's names
        assert parameter.default is default or parameter.default == default, option.name


def test_with_options_takes_each_changeable_option_as_declared() -> None:
    """Every option with a ``changes`` annotation, in order, defaulting to NOT_GIVEN; the others not at all."""
    parameters = _parameters(AnimalStoreClient.with_options)
    changeable = [option for option in OPTIONS if option.changes is not None]
    assert [p.name for p in parameters] == [option.name for option in changeable]
    for parameter, option in zip(parameters, changeable, strict=True):
        assert parameter.annotation == option.changes, option.name
        assert repr(parameter.default) == "NOT_GIVEN"


@pytest.mark.parametrize("cls", [AsyncAnimalStoreClient, AnimalStoreClient])
def test_the_docstring_describes_each_option_in_order(cls: type) -> None:
    """The class docstring's Args: one entry per option, in the constructor's order, with its description."""
    doc = inspect.getdoc(cls) or ""
    args = doc.split("Args:\n", 1)[1]
    names = re.findall(r"^    (\w+): ", args, re.MULTILINE)
    assert names == [option.name for option in OPTIONS]
    if cls is AsyncAnimalStoreClient:  # the sync docstring is made from this one (test_public_api compares them)
        flat = " ".join(args.split())
        for option in OPTIONS:
            assert " ".join(option.doc.split()) in flat, option.name


def test_settings_keep_every_option_but_those_that_only_steer_construction() -> None:
    """`Settings` has a field per option except environment (it sets base_url) and http_client (the pool)."""
    assert {field.name for field in attrs.fields(Settings)} == {option.name for option in OPTIONS} - {
        "environment",
        "http_client",
    }


def test_a_pickled_client_carries_every_pickled_option() -> None:
    """Loaded, a client has the same value of each option marked ``pickled``."""
    client = AnimalStoreClient(
        "key-1", base_url="http://127.0.0.1:9/v1", timeout=3.0, max_retries=5, default_headers={"X-Team": "a"}
    )
    loaded = pickle.loads(pickle.dumps(client))
    try:
        for option in OPTIONS:
            if option.pickled and option.name != "retry_budget":  # a budget is its own object, copied
                mine, theirs = getattr(client._settings, option.name), getattr(loaded._settings, option.name)  # pyright: ignore[reportPrivateUsage]
                assert mine == theirs, option.name
    finally:
        client.close()
        loaded.close()


def test_the_kit_factories_take_the_options_marked_for_the_kit() -> None:
    """FakeAnimalStore.client and .async_client: each option marked ``kit``, annotated as the constructors."""
    for factory, asynchronous in ((FakeAnimalStore.async_client, True), (FakeAnimalStore.client, False)):
        parameters = {p.name: p for p in _parameters(factory)}
        kit = [option for option in OPTIONS if option.kit]
        assert set(parameters) == {option.name for option in kit}, factory.__name__
        for option in kit:
            annotation = option.annotation if asynchronous else _sync(option.annotation)
            assert parameters[option.name].annotation == annotation, (factory.__name__, option.name)


@pytest.mark.parametrize(
    ("alias", "httpx_class", "classes"),
    [(AsyncHTTPClient, httpx.AsyncClient, _ASYNC_CLASSES), (HTTPClient, httpx.Client, _SYNC_CLASSES)],
    ids=["async", "sync"],
)
def test_the_http_client_type_covers_each_class_the_client_takes(
    alias: object, httpx_class: type, classes: dict[str, tuple[str, str]]
) -> None:
    """http_client's type (_optional_types) has, for each library class _backends accepts, a Protocol whose
    members that class has: a library added to one and not the other fails here (tests/typing checks the types)."""
    members = typing.get_args(alias)
    assert httpx_class in members
    protocols = [member for member in members if typing_extensions.is_protocol(member)]
    for library, (module_name, class_name) in classes.items():
        try:
            cls = getattr(importlib.import_module(module_name), class_name)
        except ImportError:  # a library not installed here
            continue
        shaped = [p for p in protocols if all(hasattr(cls, m) for m in typing_extensions.get_protocol_members(p))]
        if library in REFUSED_CLIENTS:
            # Detected only to be refused with its reason: the type does not take it.
            assert not shaped, f"{module_name}.{class_name} is refused as http_client, yet {alias} takes it"
            continue
        assert shaped, f"no Protocol in {alias} fits {module_name}.{class_name} ({library})"


# --- operations ------------------------------------------------------------------------------------------------


def _public_operations(cls: type) -> set[str]:
    hand_written = {"request", "close", "aclose", "with_options"}
    return {
        name
        for name, member in vars(cls).items()
        if not name.startswith("_") and inspect.isfunction(member) and name not in hand_written
    }


@pytest.mark.parametrize(
    "cls",
    [
        AnimalStoreClient,
        AsyncAnimalStoreClient,
        AnimalStoreClientWithRawResponse,
        AsyncAnimalStoreClientWithRawResponse,
    ],
)
def test_the_clients_offer_exactly_the_declared_operations(cls: type) -> None:
    """Each client and raw view has one method per declared operation, and no other operation."""
    assert _public_operations(cls) == {operation.name for operation in OPERATIONS}


@pytest.mark.parametrize("operation", OPERATIONS, ids=lambda operation: operation.name)
def test_each_build_sends_the_declared_method_and_route(operation: Operation) -> None:
    """What the build function sends matches the declaration's method and route template."""
    config = RequestConfig(base_url="https://x.example/v1", headers={}, timeout=httpx.Timeout(5.0))
    request = operation.build(config, **operation.example)
    assert request.method == operation.method
    pattern = "^/v1" + re.sub(r"\\\{\w+\\\}", "[^/]+", re.escape(operation.route)) + "$"
    assert re.match(pattern, request.url.path), (request.url.path, operation.route)
    assert ROUTES[operation.name] == operation.route


@pytest.mark.parametrize("operation", OPERATIONS, ids=lambda operation: operation.name)
def test_each_operation_is_served_by_the_fake_store_and_traced_by_its_route(operation: Operation) -> None:
    """Called through the kit with a tracer: the fake store answers it, and its span is named METHOD route."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    store = FakeAnimalStore()
    store.add_pets([{"id": 1, "name": "Rex", "categoryId": 1}])
    with store.client(tracer_provider=provider) as client, warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        getattr(client, operation.name)(**operation.example)
    names = [span.name for span in exporter.get_finished_spans() if span.kind.name == "CLIENT"]
    assert f"{operation.method} {operation.route}" in names, names
    provider.shutdown()


def test_a_deprecated_operation_warns_with_its_declared_message() -> None:
    """Each operation declared deprecated warns its own message, at the caller's line."""
    store = FakeAnimalStore()
    store.add_pets([{"id": 1, "name": "Rex", "categoryId": 1}])
    with store.client() as client:
        for operation in OPERATIONS:
            if operation.deprecated is None:
                continue
            with pytest.warns(DeprecationWarning, match=re.escape(operation.deprecated)) as caught:
                getattr(client, operation.name)(**operation.example)
            assert str(caught[0].message) == operation.deprecated
            assert caught[0].filename == __file__


def test_every_library_a_client_can_choose_is_part_of_the_http_stack() -> None:
    """A failure raised inside a library the SDK sends through is the exchange's, never blamed on the caller."""
    libraries = {"httpx", "httpcore", "httpcore2"} | {
        module.split(".")[0] for classes in (_ASYNC_CLASSES, _SYNC_CLASSES) for module, _ in classes.values()
    }
    assert libraries - HTTP_STACK_PACKAGES == set()
