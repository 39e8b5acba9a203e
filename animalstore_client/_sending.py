"""One call's attempts and one response's body, written once for both clients.

The shells (``_client_async`` and the ``_client_sync`` generated from it) only
send, read, sleep and close; every decision between those steps is made here,
without I/O:

- `Attempts` is the bookkeeping of one call: the timeouts each attempt may
  use, whether a failure or a status is retried and after how long (the pure
  policy of ``_retry``), the log lines, the attempt count, and the final
  exception when it gives up. A total deadline belongs in `Attempts.start`
  (shorter timeouts for a late attempt) and `Attempts._retry` (no sleep past it).
- `BodyReader` turns the raw chunks a transport reads into the decoded body,
  undoing ``Content-Encoding`` as they arrive. A size cap belongs in
  `BodyReader.feed`.
"""

from __future__ import annotations

import time
import zlib
from collections.abc import Callable

import httpx

from ._exceptions import APIConnectionError, APITimeoutError
from ._logging import logger
from ._retry import delay_after_error, delay_after_response

__all__ = ["ACCEPT_ENCODING", "Attempts", "BodyReader", "Timeouts"]

Timeouts = dict[str, float | None]
"""Per-phase timeouts as httpx spells them: ``connect``, ``read``, ``write``, ``pool``."""

_DEBUG = 10


def connection_error(exc: httpx.RequestError, request: httpx.Request, attempts: int) -> APIConnectionError:
    """The SDK exception for a transport failure that ends a call."""
    after = f" after {attempts} attempts" if attempts > 1 else ""
    where = f"{request.method} {request.url}"
    if isinstance(exc, httpx.TimeoutException):
        return APITimeoutError(f"Request timed out: {where}{after} ({exc!r})", request=request, attempts=attempts)
    return APIConnectionError(f"Connection error: {where}{after} ({exc!r})", request=request, attempts=attempts)


class Attempts:
    """The attempts of one call: timeouts, retry decisions, logging and the count.

    A shell drives it: ``start()`` before each attempt, then
    ``after_response()`` or ``after_error()``, which return the seconds to
    sleep before the next attempt (``None`` from ``after_response`` means the
    response is final) or raise the exception that ends the call.
    """

    __slots__ = ("_jitter", "_max_retries", "_started", "count", "request", "retries")

    def __init__(self, request: httpx.Request, *, max_retries: int, jitter: Callable[[], float]) -> None:
        self.request = request
        self.retries = 0
        """Retries decided so far."""
        self.count = 1
        """Attempts made so far, the current one included."""
        self._max_retries = max_retries
        self._jitter = jitter
        self._started = 0.0

    def start(self) -> Timeouts:
        """Begin an attempt; return the per-phase timeouts it may use."""
        self._started = time.perf_counter()
        timeouts: Timeouts = self.request.extensions["timeout"]
        return timeouts

    def after_error(self, exc: httpx.RequestError) -> float:
        """Log a failed attempt; return the delay before retrying, or raise the final error."""
        request = self.request
        logger.debug(
            "%s %s failed after %.1f ms (attempt %d): %r",
            request.method,
            request.url,
            self._elapsed_ms(),
            self.count,
            exc,
        )
        delay = delay_after_error(
            request.method, exc, retries_done=self.retries, max_retries=self._max_retries, jitter=self._jitter()
        )
        if delay is None:
            raise connection_error(exc, request, self.count) from exc
        return self._retry(delay, type(exc).__name__)

    def after_response(self, response: httpx.Response) -> float | None:
        """Log a response; return the delay before retrying, or ``None`` when it is final."""
        request = self.request
        if logger.isEnabledFor(_DEBUG):  # skip the formatting work otherwise
            logger.debug(
                "%s %s -> %d %s in %.1f ms (attempt %d)",
                request.method,
                request.url,
                response.status_code,
                response.reason_phrase,
                self._elapsed_ms(),
                self.count,
            )
        if 200 <= response.status_code < 300:  # is_success, without two calls
            return None
        delay = delay_after_response(
            request.method,
            response.status_code,
            response.headers,
            retries_done=self.retries,
            max_retries=self._max_retries,
            jitter=self._jitter(),
        )
        if delay is None:
            return None
        return self._retry(delay, f"{response.status_code} {response.reason_phrase}")

    def _retry(self, delay: float, cause: str) -> float:
        self.retries += 1
        self.count += 1
        logger.info(
            "Retrying %s %s in %.2f s (retry %d of %d) after %s",
            self.request.method,
            self.request.url,
            delay,
            self.retries,
            self._max_retries,
            cause,
        )
        return delay

    def _elapsed_ms(self) -> float:
        return (time.perf_counter() - self._started) * 1000


ACCEPT_ENCODING = "gzip, deflate"
"""The content codings `BodyReader` undoes, and so the only ones the SDK asks for."""

_Decoder = Callable[[bytes], bytes]


def _zlib_decoder(wbits: int) -> tuple[_Decoder, Callable[[], bytes]]:
    decompressor = zlib.decompressobj(wbits)
    return decompressor.decompress, decompressor.flush


class _Deflate:
    """``deflate`` as servers send it: zlib-wrapped per the RFC, or raw as some do.

    Which one is decided on the first two bytes (a zlib header), however the
    body is split into chunks; a bad header means raw, as httpx does it.
    """

    __slots__ = ("_decoder", "_head")

    def __init__(self) -> None:
        self._head = b""
        self._decoder: tuple[_Decoder, Callable[[], bytes]] | None = None

    def decode(self, data: bytes) -> bytes:
        if self._decoder is None:
            self._head += data
            if len(self._head) < 2:
                return b""
            data, self._head = self._head, b""
            self._decoder = _zlib_decoder(zlib.MAX_WBITS)
            try:
                return self._decoder[0](data)
            except zlib.error:
                self._decoder = _zlib_decoder(-zlib.MAX_WBITS)
        return self._decoder[0](data)

    def flush(self) -> bytes:
        if self._decoder is None:  # fewer than two bytes in all: only raw deflate can be that short
            self._decoder = _zlib_decoder(-zlib.MAX_WBITS)
            return self._decoder[0](self._head) + self._decoder[1]()
        return self._decoder[1]()


class BodyReader:
    """Collects one response body from the raw chunks a transport reads.

    ``Content-Encoding`` is undone chunk by chunk (``gzip`` and ``deflate``,
    several in a row included); an encoding it does not know is left as it is,
    as httpx does.
    """

    __slots__ = ("_chunks", "_decoders", "_request")

    def __init__(self, request: httpx.Request, headers: httpx.Headers) -> None:
        self._request = request
        self._chunks: list[bytes] = []
        self._decoders: list[tuple[_Decoder, Callable[[], bytes]]] = []
        # Codings are listed in the order they were applied: undo them backwards.
        for value in reversed(headers.get_list("content-encoding", split_commas=True)):
            coding = value.strip().lower()
            if coding == "gzip":
                self._decoders.append(_zlib_decoder(zlib.MAX_WBITS | 16))
            elif coding == "deflate":
                deflate = _Deflate()
                self._decoders.append((deflate.decode, deflate.flush))

    def feed(self, data: bytes) -> None:
        """Take the next raw chunk."""
        if self._decoders:
            data = self._decode(data, 0)
        if data:
            self._chunks.append(data)

    def finish(self) -> bytes:
        """The whole decoded body, once the last chunk was fed."""
        for index, (_, flush) in enumerate(self._decoders):
            try:
                tail = flush()
            except zlib.error as exc:
                raise httpx.DecodingError(f"Content-Encoding: {exc}", request=self._request) from exc
            tail = self._decode(tail, index + 1) if tail else tail
            if tail:
                self._chunks.append(tail)
        chunks = self._chunks
        return chunks[0] if len(chunks) == 1 else b"".join(chunks)

    def _decode(self, data: bytes, first: int) -> bytes:
        try:
            for decode, _ in self._decoders[first:]:
                data = decode(data)
        except zlib.error as exc:
            # httpx's own class for a body it cannot decode, so the policy treats it alike.
            raise httpx.DecodingError(f"Content-Encoding: {exc}", request=self._request) from exc
        return data
