"""The public surface: names, version, docstrings, and the two clients kept in step."""

from __future__ import annotations

import importlib.metadata
import inspect

import animalstore_client
from animalstore_client import AnimalStoreClient, AsyncAnimalStoreClient

EXPECTED = {
    "AnimalStoreClient",
    "AsyncAnimalStoreClient",
    "Environment",
    "Pet",
    "NewPet",
    "PetStatus",
    "ErrorBody",
    "AnimalStoreError",
    "ClientValidationError",
    "APIError",
    "APIConnectionError",
    "APITimeoutError",
    "APIResponseValidationError",
    "APIStatusError",
    "BadRequestError",
    "AuthenticationError",
    "PermissionDeniedError",
    "NotFoundError",
    "ConflictError",
    "UnprocessableEntityError",
    "RateLimitError",
    "InternalServerError",
    "DEFAULT_TIMEOUT",
    "DEFAULT_MAX_RETRIES",
    "NOT_GIVEN",
    "NotGiven",
    "APIResponse",
    "InsecureTransportWarning",
    "__version__",
}


def test_all_is_exactly_the_public_names_and_sorted() -> None:
    """__all__ lists the contract's names, sorted, and each one imports."""
    assert set(animalstore_client.__all__) == EXPECTED
    assert animalstore_client.__all__ == sorted(animalstore_client.__all__, key=lambda n: (not n.isupper(), n))
    for name in animalstore_client.__all__:
        assert getattr(animalstore_client, name) is not None


def test_version_is_the_distributions() -> None:
    """__version__ is single-sourced and equals the installed distribution's version."""
    assert animalstore_client.__version__ == importlib.metadata.version("animalstore-client") == "1.0.0"


def test_every_public_name_has_a_docstring() -> None:
    """Each public class, function and public method or property is documented."""
    missing: list[str] = []
    for name in animalstore_client.__all__:
        obj = getattr(animalstore_client, name)
        if not inspect.isclass(obj):
            continue
        if not (obj.__doc__ or "").strip():
            missing.append(name)
        for attr, member in vars(obj).items():
            if attr.startswith("_") or not (callable(member) or isinstance(member, property)):
                continue
            if not (getattr(member, "__doc__", "") or "").strip():
                missing.append(f"{name}.{attr}")
    assert missing == []


def _public_methods(cls: type) -> dict[str, inspect.Signature]:
    return {
        name: inspect.signature(member)
        for name, member in inspect.getmembers(cls)
        if not name.startswith("_") and callable(member)
    }


def test_sync_and_async_clients_have_the_same_api() -> None:
    """The two clients offer the same methods with the same signatures (close vs aclose aside)."""
    sync = _public_methods(AnimalStoreClient)
    asynchronous = _public_methods(AsyncAnimalStoreClient)
    assert sync.pop("close") == asynchronous.pop("aclose")
    assert set(sync) == set(asynchronous)
    for name, signature in sync.items():
        assert signature.parameters == asynchronous[name].parameters, name
        assert signature.return_annotation == asynchronous[name].return_annotation, name
    assert inspect.signature(AnimalStoreClient.__init__).parameters.keys() == (
        inspect.signature(AsyncAnimalStoreClient.__init__).parameters.keys()
    )


def test_async_operations_are_coroutine_functions() -> None:
    """Every async operation is awaitable; every sync one is not."""
    for name in ("list_pets", "create_pet"):
        assert inspect.iscoroutinefunction(getattr(AsyncAnimalStoreClient, name))
        assert not inspect.iscoroutinefunction(getattr(AnimalStoreClient, name))
