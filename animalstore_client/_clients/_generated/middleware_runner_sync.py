# Generated from _clients/middleware_runner_async.py by scripts/unasync.py: do not edit; regenerate with `python scripts/unasync.py`.
"""One attempt through the middleware chain; the rules (``_core.middleware``) are checked at each ``call_next``."""

from __future__ import annotations

from typing import TYPE_CHECKING

import httpx

from animalstore_client._core import middleware as rules  # pyright: ignore[reportPrivateUsage]  # this package's own rules
from animalstore_client._core.exceptions import AnimalStoreError

if TYPE_CHECKING:
    from animalstore_client._core.attempts import Attempts

__all__ = ["run_middleware_sync"]


def run_middleware_sync(
    middleware: tuple[rules.Middleware, ...], request: httpx.Request, send: rules.Send, attempts: Attempts
) -> httpx.Response:
    """One attempt through ``middleware``, the first outermost and ``send`` innermost."""
    state = rules.AttemptState(request)

    def step(index: int, current: httpx.Request) -> httpx.Response:
        if index == len(middleware):
            try:
                return send(current)
            except BaseException as exc:
                state.error = exc
                raise
        handler = middleware[index]
        # One ticket: list.pop() is atomic, so of two threads racing into call_next only one sends.
        ticket = [True]

        def call_next(given: httpx.Request, /) -> httpx.Response:
            given = rules.checked_request(state, given, handler, attempts)
            try:
                ticket.pop()
            except IndexError:
                raise rules.called_twice(handler, attempts) from None
            return step(index + 1, given)

        try:
            result = rules.awaited_sync(handler(current, call_next), handler, attempts)
        except AnimalStoreError:
            raise
        except Exception as exc:
            if exc is state.error:
                raise  # the send's own failure, passed on: the retry policy decides
            raise rules.wrapped_error(exc, handler, attempts) from exc
        finally:
            ticket.clear()  # a call_next kept past its attempt sends nothing later
        return rules.checked_response(result, handler, attempts, current)

    return step(0, request)
