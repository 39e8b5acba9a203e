"""One attempt through the middleware chain; the rules (``_core.middleware``) are checked at each ``call_next``."""

from __future__ import annotations

from typing import TYPE_CHECKING

import httpx

from animalstore_client._core import middleware as rules  # pyright: ignore[reportPrivateUsage]  # this package's own rules
from animalstore_client._core.exceptions import AnimalStoreError

if TYPE_CHECKING:
    from animalstore_client._core.attempts import Attempts

__all__ = ["run_middleware_async"]


async def run_middleware_async(
    middleware: tuple[rules.AsyncMiddleware, ...], request: httpx.Request, send: rules.AsyncSend, attempts: Attempts
) -> httpx.Response:
    """One attempt through ``middleware``, the first outermost and ``send`` innermost."""
    state = rules.AttemptState(request)

    async def step(index: int, current: httpx.Request) -> httpx.Response:
        if index == len(middleware):
            try:
                return await send(current)
            except BaseException as exc:
                state.error = exc
                raise
        handler = middleware[index]
        # One ticket: list.pop() is atomic, so of two threads racing into call_next only one sends.
        ticket = [True]

        async def call_next(given: httpx.Request, /) -> httpx.Response:
            given = rules.checked_request(state, given, handler, attempts)
            try:
                ticket.pop()
            except IndexError:
                raise rules.called_twice(handler, attempts) from None
            return await step(index + 1, given)

        try:
            result = await rules.awaited_async(handler(current, call_next), handler, attempts)
        except AnimalStoreError:
            raise
        except Exception as exc:
            if exc is state.error:
                raise  # the send's own failure, passed on: the retry policy decides
            raise rules.wrapped_error(exc, handler, attempts) from exc
        finally:
            ticket.clear()  # a call_next kept past its attempt sends nothing later
        return rules.checked_response(result, handler, attempts, current)

    return await step(0, request)
