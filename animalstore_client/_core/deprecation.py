"""What is deprecated: ``get_pet`` and the urllib3 backend, each message written once, and the run-time warnings.

Type checkers read the message only from a string literal in the
``@deprecated(...)`` decorator, so each decorator holds a copy that
``scripts/codegen.py`` writes from `GET_PET_DEPRECATION` (and checks in CI).
"""

from __future__ import annotations

import functools
import inspect
import warnings
from collections.abc import Callable
from typing import Any, TypeVar, cast

__all__ = [
    "GET_PET_DEPRECATION",
    "URLLIB3_DEPRECATION",
    "warn_at_callers_line",
    "warns_deprecated",
]

GET_PET_DEPRECATION = (
    "get_pet() is deprecated: GET /pets/{petId} will be removed from the animal store "
    "on 2030-12-05. Use list_pets(status=..., limit=100) and pick the pet by id (only the "
    "first 100 pets can be seen), or keep the Pet that create_pet returned; "
    "help(AnimalStoreClient.get_pet) lists the recipes."
)

URLLIB3_DEPRECATION = (
    'The urllib3 backend (backend="urllib3", or a urllib3.PoolManager as http_client) is deprecated and will be '
    "removed in animalstore-client 2.0. Use the default backend instead (leave backend out, or pass "
    'backend="httpx"); its own connection pool is as fast with threads and has the same verify= and fork behaviour.'
)
"""No colon in it: pytest's ``filterwarnings`` mark (tests/conftest.py's ``urllib3_deprecated``) splits on colons."""

F = TypeVar("F", bound=Callable[..., Any])
_PACKAGE = "animalstore_client."  # the frames of its modules are the SDK's, not the caller's


def warns_deprecated(message: str) -> Callable[[F], F]:
    """A decorator: warn ``message`` at the caller's line on every call of the function, sync or async.

    ``typing_extensions.deprecated`` does this too, but for a coroutine
    function on Python < 3.12 it imports asyncio, which would double the cost
    of importing this package; it is kept (with ``category=None``) for the
    static marker type checkers read, and the message is the same. Typed as
    returning ``function``'s own type (not a bare ``Callable``), so checkers
    keep its name: pyright then says ``The method "get_pet" ... is deprecated``.
    """

    def decorate(function: F) -> F:
        @functools.wraps(function)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            # Warned when called, not when awaited: the caller's line is then on the stack.
            warnings.warn(message, DeprecationWarning, stacklevel=2)
            return function(*args, **kwargs)

        mark = getattr(inspect, "markcoroutinefunction", None)  # Python 3.12+
        if mark is not None and inspect.iscoroutinefunction(function):
            return cast("F", mark(wrapper))
        return cast("F", wrapper)

    return decorate


def warn_at_callers_line(message: str, category: type[Warning] = DeprecationWarning) -> None:
    """Warn ``message`` (a `DeprecationWarning` unless told) at the first line outside this package: the caller's.

    A fixed ``stacklevel`` would be right for one path only: the same
    construction is reached from ``AnimalStoreClient(...)`` (through the
    shared base) and from the testing kit's ``store.client(...)``, which adds
    frames of its own.
    """
    here = inspect.currentframe()
    frame = here.f_back if here is not None else None  # stacklevel 2: where this was called from
    level = 2
    while frame is not None and frame.f_back is not None and frame.f_globals.get("__name__", "").startswith(_PACKAGE):
        frame = frame.f_back
        level += 1
    del here, frame  # frames hold their locals: a reference kept here would keep the caller's alive
    warnings.warn(message, category, stacklevel=level)
