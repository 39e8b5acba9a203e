"""Public classes and functions report the public module they are imported from."""

from __future__ import annotations

import types
from collections.abc import Mapping
from typing import cast


def show_public_module(namespace: Mapping[str, object]) -> None:
    """Set ``__module__`` of each class and function in the namespace's ``__all__`` to the namespace's module.

    Tracebacks, reprs and the docs then show ``animalstore_client.NotFoundError``
    rather than the private module that defines it (httpx does the same);
    pickle finds each class and function there too, whichever private folder
    defines it (``_core``, ``_clients``...), so moving one is no change to users.
    """
    module = str(namespace["__name__"])
    names = cast("list[str]", namespace["__all__"])
    for name in names:
        value = namespace[name]
        if isinstance(value, (type, types.FunctionType)):
            value.__module__ = module
