"""The send loop: one call's attempts, each through the middleware, the transport seam and the body reader.

It performs only the I/O: every decision between its steps is ``_core.attempts.Attempts``'s.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import TYPE_CHECKING, Self, TypeVar

import httpx

from animalstore_client._clients.middleware_runner_async import run_middleware_async
from animalstore_client._clients.shells import AsyncIOStrategy, Pool, observe
from animalstore_client._core.attempts import Answer, Attempts, Finished, full_response
from animalstore_client._core.body import HEAD_TOO_LARGE, head_too_large
from animalstore_client._core.deadline import Timeouts
from animalstore_client._core.exceptions import AnimalStoreError
from animalstore_client._core.failures import cause_of, contradicts_the_exchange, unknown_failure
from animalstore_client._core.middleware import AsyncMiddleware
from animalstore_client._core.secrets import forget_locals
from animalstore_client._transports.seam_async import AsyncResponseStream, AsyncTransport

if TYPE_CHECKING:
    from animalstore_client._clients.backends import AsyncBackendName
    from animalstore_client._clients.options import Settings
    from animalstore_client._clients.telemetry import CallObserver, Telemetry

__all__ = ["AsyncSender"]

T = TypeVar("T")


class AsyncSender:
    """What a client does between building a request and parsing the answer: attempts until one is final.

    ``name`` is the client's class, for its errors; ``closed`` is set when the client is closed (a copy made by
    `with_options` has its own flag over the same pool).
    """

    __slots__ = ("closed", "io", "name", "pool", "settings", "telemetry")

    def __init__(
        self,
        name: str,
        settings: Settings[AsyncBackendName, AsyncMiddleware],
        pool: Pool,
        io: AsyncIOStrategy,
        telemetry: Telemetry | None,
    ) -> None:
        self.name = name
        self.settings = settings
        self.pool = pool
        self.io = io
        self.telemetry = telemetry
        self.closed = False

    def derived(
        self,
        settings: Settings[AsyncBackendName, AsyncMiddleware],
        pool: Pool,
        telemetry: Telemetry | None,
    ) -> Self:
        """The sender of a `with_options` copy: ``settings``, over ``pool``, with this one's I/O strategy, open."""
        return type(self)(self.name, settings, pool, self.io, telemetry)

    def transport(self) -> AsyncTransport:
        """The transport to send through, once the client is known to be open."""
        pool = self.pool
        if self.closed or pool.transport.is_closed:
            if not self.closed and not pool.owned:
                # The SDK never closes a caller's client: its owner did, and should hear that, not "this client".
                raise AnimalStoreError(
                    f"The http_client of this {self.name} was closed (the SDK never closes a client "
                    "it was given); create the client with an open one."
                )
            raise AnimalStoreError(f"This {self.name} is closed; create a new client.")
        return self.io.transport(pool, self.name)

    async def call(self, operation: str, request: httpx.Request, parse: Callable[[Finished, int], T]) -> T:
        """Send ``request`` with retries and parse the final response: one call, one span when tracing.

        The retry loop is here, not in a coroutine of its own, for the reason docs/architecture.md gives."""
        observer = observe(self.telemetry, operation, request)
        io = self.io
        attempts: Attempts | None = None
        try:
            transport = self.transport()
            # No local holds the settings: this frame reaches a crash reporter, and they hold headers.
            attempts = Attempts(
                request,
                max_retries=self.settings.max_retries,
                jitter=io.jitter,
                total_timeout=self.settings.total_timeout,
                max_response_bytes=self.settings.max_response_bytes,
                budget=self.settings.retry_budget,
                budget_clock=io.clock,
                observer=observer,
            )
            middleware = self.settings.middleware
            plain = not middleware and observer is None
            # Code of the caller's (a middleware, a hook of http_client) may wait past the deadline: it runs in it.
            # The testing kit's in-process transport runs none of the caller's code but middleware (`io.guards`).
            guarded = attempts.deadline is not None and (
                bool(middleware) or (io.guards and transport.callers_part(None) is not None)
            )
            if observer is not None:
                observer.attempts = attempts
            while True:
                timeouts = attempts.start()
                response: Finished
                try:
                    attempt = (
                        self._attempt(transport, attempts, timeouts, request)
                        if plain
                        else self._observed(transport, attempts, timeouts, operation, middleware, observer)
                    )
                    response = await io.within_deadline(attempts, attempt) if guarded else await attempt
                except httpx.RequestError as exc:
                    delay = attempts.after_error(exc)
                else:
                    retry_delay = attempts.after_response(response)
                    if retry_delay is None:
                        break
                    delay = retry_delay
                await io.sleep(delay)
            self.pool.heed(operation, request, response)
            result = parse(response, attempts.count)
        except BaseException as exc:
            if observer is not None:
                observer.finish(exc)
            # What a crash reporter reads of the frames below: the library's hold the key.
            forget_locals(exc, (self.settings.api_key,))
            raise
        if observer is not None:
            observer.finish(None)
        return result

    async def _observed(
        self,
        transport: AsyncTransport,
        attempts: Attempts,
        timeouts: Timeouts,
        operation: str,
        middleware: tuple[AsyncMiddleware, ...],
        observer: CallObserver | None,
    ) -> Finished:
        """One attempt through the middleware and in its span.

        Each attempt starts from the request the SDK built: what a middleware
        changed, or the trace context of the attempt before, is not carried over.
        """
        traced = observer is not None and observer.tracer is not None
        # A copy only when something writes to it: the middleware, or the trace context.
        sent = attempts.attempt_request(operation) if middleware or traced else attempts.request
        span = None if observer is None else observer.attempt(sent, attempts.count)
        response: Finished
        try:
            if middleware:
                send = functools.partial(self._attempt_shown, transport, attempts, timeouts)
                response = await run_middleware_async(middleware, sent, send, attempts)
            else:
                response = await self._attempt(transport, attempts, timeouts, sent)
        except BaseException as exc:
            if span is not None:
                span.end(None, exc)
            raise
        if span is not None:
            span.end(full_response(response), None)
        return response

    async def _attempt_shown(
        self, transport: AsyncTransport, attempts: Attempts, timeouts: Timeouts, request: httpx.Request
    ) -> httpx.Response:
        """`_attempt` as an `httpx.Response`, for middleware, which is handed one."""
        answer = await self._attempt(transport, attempts, timeouts, request)
        return answer.http_response()

    async def _attempt(
        self,
        transport: AsyncTransport,
        attempts: Attempts,
        timeouts: Timeouts,
        request: httpx.Request,
    ) -> Answer:
        """One attempt's exchange: send, read the body, the finished response; fails only with SDK or httpx errors."""
        stream = None
        try:
            # Made here, after any middleware: a request never leaves past the call's deadline.
            exchange = attempts.exchange_for(request, timeouts)
            stream = await transport.send(exchange)
            exchange.answered()
            if head_too_large(stream.raw_headers()):  # one limit on every backend: the SDK's
                await stream.aclose()  # its body unread: the connection is dropped, not pooled
                raise httpx.RemoteProtocolError(HEAD_TOO_LARGE, request=request)
            content = stream.content  # set when served from memory: nothing to read
            if content is None:
                content = await self._read(stream, attempts)
            return attempts.complete(stream, content)
        except (httpx.RequestError, AnimalStoreError) as exc:  # an SDK error here came with an answer: sent
            attempts.failed()
            if (
                stream is None
                and isinstance(exc, httpx.RequestError)
                and contradicts_the_exchange(attempts.exchange, exc)
            ):
                # An httpx error no I/O of the library's gives at this point came from code of the caller's (a
                # hook's own call to a service that is down): it says who failed, never that nothing was sent.
                failure = unknown_failure(exc, attempts, transport.callers_part)
                if failure is not exc:
                    raise failure from exc
            raise
        except Exception as exc:  # a library's own, or the caller's code: only SDK exceptions leave a call
            attempts.failed()
            failure = unknown_failure(exc, attempts, transport.callers_part)
            if cause_of(exc) is None:
                raise failure from None  # the SDK's own rule, whose text is the whole message: no private class
            raise failure from exc

    @staticmethod
    async def _read(stream: AsyncResponseStream, attempts: Attempts) -> bytes:
        """The body, decoded, until it ends or the reader wants no more; the connection is released either way.

        Everything that can fail once the stream is open (a refused coding,
        the cap, a deadline, a cancellation) happens inside the ``try``, so
        every exit gives the connection back or closes it.
        """
        chunks: object = None
        try:
            codings = stream.content_codings()
            # A small body the library has read ahead already comes in one piece, without a chunk loop;
            # with no coding to undo, it is the body itself (`Attempts.complete` applies the cap).
            whole = await stream.whole_body()
            if whole is not None and not codings:
                return attempts.body_in_time(whole)
            reader = attempts.body_reader(codings)
            if whole is not None:
                reader.feed(whole)
            else:
                chunks = stream.aiter_raw()
                async for chunk in chunks:
                    if not reader.feed(chunk):
                        break  # past max_response_bytes: closing unread drops the connection
        finally:
            try:
                # Left early (the cap, a decoding error), a generator is otherwise closed
                # whenever it is collected: on Python 3.13 that may be after its loop closed.
                close = getattr(chunks, "aclose", None)
                if close is not None:
                    await close()
            finally:
                await stream.aclose()
        return reader.finish()
