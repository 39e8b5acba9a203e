"""The deprecation of ``get_pet``: its message, written once, and the run-time warning.

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

__all__ = ["GET_PET_DEPRECATION", "warns_deprecated"]

GET_PET_DEPRECATION = (
    "get_pet() is deprecated: GET /pets/{petId} will be removed from the animal store "
    "on 2030-12-05. Use list_pets(status=..., limit=100) and pick the pet by id (only the "
    "first 100 pets can be seen), or keep the Pet that create_pet returned; "
    "help(AnimalStoreClient.get_pet) lists the recipes."
)

F = TypeVar("F", bound=Callable[..., Any])


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
