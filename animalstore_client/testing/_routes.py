"""Routing by a table of operations: the handler a request's method and path name, or the 404 or 405 when none does.

It knows no operation: ``_service`` declares them, each a `Route`, and
everything a request's routing answers (which handler, the path parameters,
the ``Allow`` of a 405, the headers of a path) is derived from that table.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Generic, TypeVar

import attrs

from ._messages import BadRequest, FakeResponse, error_response

__all__ = ["PREFIX", "Call", "Route", "Routes"]

PREFIX = "/v1"
"""The interface's base path: every operation's path follows it."""

StateT = TypeVar("StateT")
_PARAMETER = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)\}")


@attrs.frozen
class Call:
    """A request as an operation's handler sees it."""

    params: dict[str, str]
    """The path parameters by name, as sent: ``{"petId": "7"}`` for ``/pets/7``."""
    query: dict[str, list[str]]
    headers: Mapping[str, str]
    """Lower-case names."""
    body: bytes


@attrs.frozen
class Route(Generic[StateT]):
    """One operation: its method, its path after `PREFIX` (``{name}`` is a parameter) and its handler.

    A handler raises `BadRequest` for an answer that is an Error body.
    """

    method: str
    path: str
    handler: Callable[[StateT, Call], FakeResponse]
    headers: Mapping[str, str] = attrs.field(factory=dict[str, str])
    """Added to every answer on the path whatever the method, even a 401 or a 405 (a deprecation, say)."""


@attrs.frozen
class _OnePath(Generic[StateT]):
    """The routes of one path, its pattern and the headers every answer on it gets."""

    pattern: re.Pattern[str]
    routes: tuple[Route[StateT], ...]
    headers: dict[str, str]


def _pattern(path: str) -> re.Pattern[str]:
    parts = _PARAMETER.split(path)
    # split() alternates literal text and parameter names: even items are literal.
    return re.compile("".join(re.escape(part) if i % 2 == 0 else f"(?P<{part}>[^/]+)" for i, part in enumerate(parts)))


class Routes(Generic[StateT]):
    """The operations of a service, answered by path and method; paths match in the order first declared."""

    def __init__(self, *routes: Route[StateT]) -> None:
        grouped: dict[str, list[Route[StateT]]] = {}
        for route in routes:
            grouped.setdefault(route.path, []).append(route)
        self._paths = [
            _OnePath(_pattern(path), tuple(same), {k: v for route in same for k, v in route.headers.items()})
            for path, same in grouped.items()
        ]

    def answer(
        self,
        state: StateT,
        method: str,
        path: str,
        call: Call,
        *,
        refusal: FakeResponse | None = None,
    ) -> FakeResponse:
        """The answer of the operation ``method`` and ``path`` name, called with ``state`` and ``call``.

        ``refusal`` (a 401, say) answers instead of any operation; the
        path's headers are still added. ``call.params`` is filled in from the path.
        """
        found = self._find(path)
        if found is None:
            return refusal if refusal is not None else error_response(404, "not_found", f"No resource at {path}.")
        declared, params = found
        if refusal is not None:
            response = refusal
        else:
            response = self._call(declared.routes, state, method, attrs.evolve(call, params=params))
        response.headers.update(declared.headers)
        return response

    def _find(self, path: str) -> tuple[_OnePath[StateT], dict[str, str]] | None:
        if not path.startswith(PREFIX + "/"):
            return None
        local = path.removeprefix(PREFIX)
        for declared in self._paths:
            match = declared.pattern.fullmatch(local)
            if match is not None:
                return declared, match.groupdict()
        return None

    @staticmethod
    def _call(routes: tuple[Route[StateT], ...], state: StateT, method: str, call: Call) -> FakeResponse:
        for route in routes:
            if route.method == method:
                try:
                    return route.handler(state, call)
                except BadRequest as exc:
                    return error_response(exc.status, exc.code, exc.message, exc.headers)
        allowed = ", ".join(route.method for route in routes)
        return error_response(
            405, "method_not_allowed", f"{method} is not allowed here; use {allowed}.", {"Allow": allowed}
        )
