"""One response's body: `BodyReader` turns the raw chunks a transport reads into the decoded body.

A size cap belongs in `BodyReader.feed`; the text of a body is only ever decoded with a text encoding.
"""

from __future__ import annotations

import codecs
import functools
import time
import zlib
from collections.abc import Callable, Iterable, Sequence
from typing import Protocol

import httpx

from animalstore_client._core.defaults import MAX_RESPONSE_HEADER_BYTES, MAX_RESPONSE_HEADERS

__all__ = ["ACCEPT_ENCODING", "MAX_CODINGS", "BodyReader", "codings_in", "late_body", "text_encoding"]


def codings_in(pairs: Iterable[tuple[bytes, bytes]]) -> list[bytes]:
    """The values of the Content-Encoding fields among a library's raw header pairs, in order."""
    return [value for name, value in pairs if name.lower() == b"content-encoding"]


def late_body(request: httpx.Request) -> httpx.ReadTimeout:
    """The failure of a body that was still arriving when the call's deadline passed."""
    return httpx.ReadTimeout("the call's total_timeout passed while the body arrived", request=request)


@functools.cache
def _text_encodings() -> frozenset[str]:
    """The codecs a body may be decoded with: the standard library's text encodings.

    Left out: codecs that are not text encodings (``bz2``, ``zlib``, ``base64``, ``hex``, ``quopri``, ``uu``,
    ``rot-13``: a server naming one would have httpx inflate or transform the body past any cap), and
    ``utf-16``/``utf-32`` with byte-order sniffing, whose decoders raise even when told to replace.
    """
    import encodings.aliases

    names: set[str] = set()
    for alias in set(encodings.aliases.aliases.values()):
        try:
            name = codecs.lookup(alias).name
            b"x".decode(name, "replace")  # a codec that is not a text encoding raises LookupError here
        # LookupError: that, or a platform's codec missing here (mbcs); ValueError: a text encoding that fails
        # even so, not one to trust with a body.
        except (LookupError, ValueError):
            continue
        names.add(name)
    return frozenset(names - {"utf-16", "utf-32"})


def text_encoding(headers: httpx.Headers) -> str:
    """The encoding a body's text is decoded with (bytes that do not fit are replaced).

    JSON is UTF-8 (RFC 8259), whatever ``charset`` says; another body takes
    its ``charset`` when that names a text encoding, and UTF-8 otherwise.
    """
    media, _, parameters = headers.get("content-type", "").partition(";")
    media = media.strip().lower()
    if media == "application/json" or media.endswith("+json"):
        return "utf-8"
    for parameter in parameters.split(";"):
        key, _, value = parameter.partition("=")
        if key.strip().lower() == "charset":
            charset = value.strip().strip("'\"")
            try:
                name = codecs.lookup(charset).name
            except (LookupError, ValueError, TypeError):  # unknown, or a name with a NUL in it
                return "utf-8"
            return name if name in _text_encodings() else "utf-8"
    return "utf-8"


HEAD_TOO_LARGE = (
    f"the answer's headers are over the SDK's limit ({MAX_RESPONSE_HEADERS} fields, "
    f"{MAX_RESPONSE_HEADER_BYTES // 1024} KiB in all): the answer was not read"
)
"""The one error text for an answer whose head is over the limit, whichever library or check found it."""


def head_too_large(raw: Sequence[tuple[bytes, bytes]]) -> bool:
    """Whether an answer's header fields are over `MAX_RESPONSE_HEADERS` or `MAX_RESPONSE_HEADER_BYTES`.

    Read on every answer: a loop, no generator (a call per field), and the count first.
    """
    if len(raw) > MAX_RESPONSE_HEADERS:
        return True
    size = 0
    for name, value in raw:
        size += len(name) + len(value)
    return size > MAX_RESPONSE_HEADER_BYTES


ACCEPT_ENCODING = "gzip, deflate"
"""The content codings `BodyReader` undoes, and so the only ones the SDK asks for."""

_STEP = 64 * 1024
"""Most bytes one decoding step may produce: a compressed bomb inflates in steps this big, not at once."""
MAX_CODINGS = 3
"""Most content codings undone in a row; each holds a decompression window."""


class _Stage(Protocol):
    """A decoding step: zlib's decompress objects, and `_Deflate`."""

    @property
    def unconsumed_tail(self) -> bytes: ...

    def decompress(self, data: bytes, max_length: int = ..., /) -> bytes: ...

    def flush(self, length: int = ..., /) -> bytes: ...


class _Deflate:
    """``deflate`` as servers send it: zlib-wrapped per the RFC, or raw as some do.

    Which one is decided on the first two bytes (a zlib header), however the
    body is split into chunks; a bad header means raw, as httpx does it.
    """

    __slots__ = ("_head", "_zlib")

    def __init__(self) -> None:
        self._head = b""
        self._zlib: _Stage | None = None

    @property
    def unconsumed_tail(self) -> bytes:
        return b"" if self._zlib is None else self._zlib.unconsumed_tail

    def decompress(self, data: bytes, max_length: int = 0, /) -> bytes:
        if self._zlib is None:
            self._head += data
            if len(self._head) < 2:
                return b""
            data, self._head = self._head, b""
            self._zlib = zlib.decompressobj(zlib.MAX_WBITS)
            try:
                return self._zlib.decompress(data, max_length)
            except zlib.error:
                self._zlib = zlib.decompressobj(-zlib.MAX_WBITS)
        return self._zlib.decompress(data, max_length)

    def flush(self, length: int = _STEP, /) -> bytes:
        if self._zlib is None:  # fewer than two bytes in all: only raw deflate can be that short
            self._zlib = zlib.decompressobj(-zlib.MAX_WBITS)
            return self._zlib.decompress(self._head, _STEP) + self._zlib.flush()
        return self._zlib.flush(length)


class BodyReader:
    """Collects one response body from the raw chunks a transport reads.

    ``Content-Encoding`` is undone chunk by chunk (``gzip`` and ``deflate``, up to `MAX_CODINGS` in a row; another
    is left as it is, as httpx does). With a ``limit`` it keeps at most that many decoded bytes, then `feed` returns
    ``False``; each decoding step produces at most `_STEP` bytes, so a decompression bomb costs memory in proportion
    to the limit. A chunk that arrives after ``deadline`` (on ``clock``'s scale) raises `httpx.ReadTimeout`.
    """

    __slots__ = ("_chunks", "_clock", "_deadline", "_limit", "_request", "_stages", "_total", "full")

    def __init__(
        self,
        request: httpx.Request,
        encodings: Sequence[bytes],
        *,
        limit: int | None = None,
        deadline: float | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._request = request
        self._limit = limit
        self._deadline = deadline
        self._clock = clock
        self._chunks: list[bytes] = []
        self._total = 0
        self.full = False
        """Whether ``limit`` bytes are in: the rest of the body is not wanted."""
        self._stages: list[_Stage] = []
        # ``encodings`` are the Content-Encoding values, listing codings in the order applied: undone backwards.
        codings = [part for value in encodings for part in value.split(b",")] if encodings else ()
        for value in reversed(codings):
            coding = value.strip().lower()
            if coding in (b"gzip", b"deflate"):
                if len(self._stages) == MAX_CODINGS:
                    raise httpx.DecodingError(
                        f"Content-Encoding: more than {MAX_CODINGS} codings in a row", request=request
                    )
                self._stages.append(zlib.decompressobj(zlib.MAX_WBITS | 16) if coding == b"gzip" else _Deflate())

    def feed(self, data: bytes) -> bool:
        """Take the next raw chunk; return whether more are wanted."""
        if self._deadline is not None and self._clock() >= self._deadline:
            raise late_body(self._request)
        if self._stages:
            self._push(0, data)
        elif data:
            self._keep(data)
        return not self.full

    def finish(self) -> bytes:
        """The decoded body (at most ``limit`` bytes), once the last wanted chunk was fed."""
        for index, stage in enumerate(self._stages):
            if self.full:
                break  # what a flush would inflate is not wanted
            try:
                tail = stage.flush()
            except zlib.error as exc:
                raise self._error(exc) from exc
            if tail:
                self._push(index + 1, tail)
        chunks = self._chunks
        return chunks[0] if len(chunks) == 1 else b"".join(chunks)

    def _push(self, index: int, data: bytes) -> None:
        """Pass ``data`` through the stages from ``index`` on, a bounded step at a time."""
        if index == len(self._stages):
            self._keep(data)
            return
        stage = self._stages[index]
        try:
            while data and not self.full:
                out = stage.decompress(data, _STEP)
                data = stage.unconsumed_tail
                if not out:
                    break
                self._push(index + 1, out)
        except zlib.error as exc:
            raise self._error(exc) from exc

    def _keep(self, data: bytes) -> None:
        limit = self._limit
        if limit is not None and self._total + len(data) >= limit:
            data = data[: limit - self._total]
            self.full = True
        self._total += len(data)
        self._chunks.append(data)

    def _error(self, exc: zlib.error) -> httpx.DecodingError:
        # httpx's own class for a body it cannot decode, so the policy treats it alike.
        return httpx.DecodingError(f"Content-Encoding: {exc}", request=self._request)
