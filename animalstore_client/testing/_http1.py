"""HTTP/1.1 as the fake store's server speaks it: a request read off a connection in time, and an answer's bytes.

A request that cannot be served raises `Refused`, with the status and Error
code to answer before the connection closes. The connection itself is a
``_peer.Peer``.
"""

from __future__ import annotations

import re
import time
from email.utils import formatdate
from typing import TYPE_CHECKING, NamedTuple
from urllib.parse import urlsplit

from ._messages import MAX_BODY_BYTES, FakeResponse, reason_phrase

if TYPE_CHECKING:
    from ._peer import Peer

__all__ = ["HEAD_LIMIT", "Refused", "Request", "RequestReader", "answer_bytes", "split_target", "wants_close"]

HEAD_LIMIT = 64 * 1024
"""Bytes of request line and header fields (and of trailer fields) a request may have; more is 431."""
_READ_LIMIT = 8 * MAX_BODY_BYTES
"""Bodies declared larger than this are not read at all: the answer is 413 and the connection closes."""
_MAX_FIELDS = 100
"""Header fields (and trailer fields) a request may have; more is 431."""
_LENGTH = re.compile(rb"[0-9]{1,19}")
_CHUNK_SIZE = re.compile(rb"[0-9A-Fa-f]{1,16}")
_TOKEN = re.compile(rb"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")
_VERSION = re.compile(rb"HTTP/([0-9])\.([0-9])")
_ANY_VERSION = re.compile(rb"HTTP/[0-9]+(?:\.[0-9]+)?")
_HEAD_END = re.compile(rb"\r?\n\r?\n")
_FORBIDDEN_IN_FIELDS = re.compile(rb"[\r\x00]")
_UNSAFE_IN_HEADER = re.compile(r"[\x00-\x08\x0a-\x1f\x7f]")


class Refused(Exception):
    """The request cannot be served: answer ``status`` and close the connection."""

    def __init__(self, status: int, code: str, message: str, line: str = "-") -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message
        self.line = line
        """The request line, for the log, when no request could be parsed."""


class Request(NamedTuple):
    method: str
    target: str
    version: tuple[int, int]
    fields: list[tuple[str, str]]
    """Header fields with lower-case names, in the order received."""

    def values(self, name: str) -> list[str]:
        return [value for field, value in self.fields if field == name]

    def tokens(self, name: str) -> set[str]:
        return {token.strip().lower() for value in self.values(name) for token in value.split(",")}


class RequestReader:
    """Reads one request off ``peer``; all of it must arrive before ``deadline``, ``timeout`` seconds after it began."""

    def __init__(self, peer: Peer, deadline: float, timeout: float) -> None:
        self.peer = peer
        self.deadline = deadline
        self.timeout = timeout

    async def head(self) -> Request:
        """The request line and header fields, parsed and checked."""
        peer = self.peer
        scanned = 0
        while True:
            end = _HEAD_END.search(peer.buffer, max(0, scanned - 3))
            if end is not None and end.end() <= HEAD_LIMIT:
                return _parse_head(peer.take(end.end()))
            scanned = len(peer.buffer)
            if scanned > HEAD_LIMIT:
                line_end = peer.buffer.find(b"\n", 0, HEAD_LIMIT)
                if line_end == -1:
                    raise Refused(414, "uri_too_long", f"The request line is longer than {HEAD_LIMIT} bytes.")
                raise Refused(
                    431,
                    "request_header_fields_too_large",
                    f"The request line and header fields are larger than {HEAD_LIMIT} bytes.",
                )
            if peer.eof:
                raise Refused(400, "incomplete_request", "The connection closed before the request was complete.")
            await self._wait()

    async def body(self, request: Request, *, keep: bool = True) -> bytes:
        """The request's body, framed by Content-Length or chunked; ``keep=False`` reads it and returns ``b""``."""
        codings = request.values("transfer-encoding")
        lengths = request.values("content-length")
        if codings and lengths:
            raise Refused(400, "invalid_framing", "Content-Length and Transfer-Encoding must not both be sent.")
        if codings:
            if [c.strip().lower() for c in ",".join(codings).split(",")] != ["chunked"]:
                raise Refused(400, "invalid_framing", "The only transfer coding accepted is chunked.")
            await self._continue(request)
            return await self._chunked(keep=keep)
        if not lengths:
            return b""
        if len(lengths) > 1 or not _LENGTH.fullmatch(lengths[0].strip().encode("latin-1")):
            shown = ", ".join(lengths)[:40]
            raise Refused(400, "invalid_content_length", f"Content-Length must be one decimal number, got {shown!r}.")
        length = int(lengths[0])
        if length > _READ_LIMIT:
            raise Refused(413, "payload_too_large", f"The body is {length} bytes; the limit is {MAX_BODY_BYTES}.")
        if length:
            await self._continue(request)
        if not keep:
            await self._skip(length)
            return b""
        return await self._exact(length)

    async def _wait(self, room: int = 0) -> None:
        """Wait for more bytes; refuse the request if the deadline passes or the connection had to give way."""
        arrived = await self.peer.more(self.deadline, room=room)
        if self.peer.evicted:
            raise Refused(503, "too_many_connections", "The fake store holds too many connections; retry.")
        if not arrived:
            raise Refused(408, "request_timeout", f"The request took longer than {self.timeout:g} s to arrive.")

    async def _wait_for_body(self, room: int = 0) -> None:
        if self.peer.eof:
            raise Refused(400, "incomplete_body", "The connection closed before the body was complete.")
        await self._wait(room)

    async def _continue(self, request: Request) -> None:
        """Send ``100 Continue`` to a client that waits for it before its body."""
        if request.version >= (1, 1) and "100-continue" in request.tokens("expect") and not self.peer.buffer:
            await self.peer.send(b"HTTP/1.1 100 Continue\r\n\r\n", self.deadline)

    async def _exact(self, length: int) -> bytes:
        while len(self.peer.buffer) < length:
            await self._wait_for_body(room=length)
        return self.peer.take(length)

    async def _skip(self, length: int) -> None:
        """Read ``length`` bytes and drop them as they arrive: at most a buffer's worth is held at once."""
        while True:
            taken = min(length, len(self.peer.buffer))
            del self.peer.buffer[:taken]
            length -= taken
            if not length:
                return
            await self._wait_for_body()

    async def _line(self, limit: int) -> bytes:
        while True:
            end = self.peer.buffer.find(b"\n", 0, limit + 1)
            if end != -1:
                return self.peer.take(end + 1).rstrip(b"\r\n")
            if len(self.peer.buffer) > limit:
                raise Refused(400, "invalid_chunk", f"A chunk-size or trailer line is longer than {limit} bytes.")
            await self._wait_for_body()

    async def _chunked(self, *, keep: bool = True) -> bytes:
        parts: list[bytes] = []
        total = 0
        while True:
            size_text = (await self._line(1024)).split(b";", 1)[0].strip()
            if not _CHUNK_SIZE.fullmatch(size_text):
                shown = size_text[:20].decode("latin-1")
                raise Refused(400, "invalid_chunk", f"A chunk size must be hexadecimal, got {shown!r}.")
            size = int(size_text, 16)
            if size == 0:
                trailer = 0
                for _ in range(_MAX_FIELDS + 1):  # trailer fields, ignored, bounded as header fields are
                    line = await self._line(HEAD_LIMIT)
                    if not line:
                        return b"".join(parts)
                    trailer += len(line)
                    if trailer > HEAD_LIMIT:
                        break
                raise Refused(431, "request_header_fields_too_large", "The trailer fields are too large.")
            total += size
            if total > _READ_LIMIT:
                raise Refused(413, "payload_too_large", f"The body exceeds the limit of {MAX_BODY_BYTES} bytes.")
            if keep:
                parts.append(await self._exact(size))
            else:
                await self._skip(size)
            if await self._line(1024):
                raise Refused(400, "invalid_chunk", "A chunk's data must end with CRLF.")


def _parse_head(head: bytes) -> Request:
    try:
        return _parse_lines([line.removesuffix(b"\r") for line in head.split(b"\n")])
    except Refused as exc:
        exc.line = repr(head.split(b"\n", 1)[0].rstrip(b"\r")[:200].decode("latin-1"))[1:-1]
        raise


def _parse_lines(lines: list[bytes]) -> Request:
    while lines and not lines[-1]:
        lines.pop()
    parts = lines[0].split()
    if len(parts) != 3:
        shown = lines[0][:60].decode("latin-1")
        raise Refused(400, "invalid_request_line", f"A request line is 'METHOD target HTTP/1.1', got {shown!r}.")
    raw_method, raw_target, raw_version = parts
    version = _VERSION.fullmatch(raw_version)
    if version is None or version.group(1) != b"1":
        shown = raw_version[:20].decode("latin-1")
        if version is not None or _ANY_VERSION.fullmatch(raw_version):
            raise Refused(505, "http_version_not_supported", f"Only HTTP/1.0 and HTTP/1.1 are served, got {shown!r}.")
        raise Refused(400, "invalid_request_line", f"The HTTP version must be HTTP/1.1, got {shown!r}.")
    if not _TOKEN.fullmatch(raw_method):
        shown = raw_method[:20].decode("latin-1")
        raise Refused(400, "invalid_request_line", f"The method must be a token, got {shown!r}.")
    fields: list[tuple[str, str]] = []
    for line in lines[1:]:
        if len(fields) >= _MAX_FIELDS:
            raise Refused(
                431, "request_header_fields_too_large", f"A request may have at most {_MAX_FIELDS} header fields."
            )
        name, colon, value = line.partition(b":")
        if not colon or not _TOKEN.fullmatch(name) or _FORBIDDEN_IN_FIELDS.search(value):
            shown = line[:40].decode("latin-1")
            raise Refused(400, "invalid_header", f"A header field must be 'Name: value', got {shown!r}.")
        fields.append((name.decode("ascii").lower(), value.strip(b" \t").decode("latin-1")))
    minor = 1 if version.group(2) != b"0" else 0
    return Request(raw_method.decode("ascii"), raw_target.decode("latin-1"), (1, minor), fields)


def split_target(request: Request) -> tuple[str, str]:
    """The path and query of the request target (origin-form, absolute-form, or ``*`` for OPTIONS)."""
    target = request.target
    if target.startswith("/"):
        path, _, query = target.partition("#")[0].partition("?")
        return path, query
    if target.lower().startswith(("http://", "https://")):
        try:
            url = urlsplit(target)
            url.port  # noqa: B018 (raises ValueError for a port that is no port)
        except ValueError as exc:
            raise Refused(400, "invalid_target", f"The request target is not a valid URL: {exc}.") from None
        return url.path or "/", url.query
    if target == "*" and request.method == "OPTIONS":
        return target, ""
    raise Refused(400, "invalid_target", f"The request target must start with '/', got {target[:40]!r}.")


def wants_close(request: Request) -> bool:
    tokens = request.tokens("connection")
    if request.version == (1, 0):
        return "keep-alive" not in tokens
    return "close" in tokens


def answer_bytes(answer: FakeResponse, method: str, *, close: bool, keep_alive: bool = False) -> bytes:
    """The status line, header fields and (but for HEAD) body of ``answer``."""
    lines = [
        f"HTTP/1.1 {answer.status} {reason_phrase(answer.status, 'Unknown')}",
        "Server: FakeAnimalStore",
        f"Date: {formatdate(time.time(), usegmt=True)}",
    ]
    named = {name.lower() for name in answer.headers}
    for name, value in answer.headers.items():
        # Values come from the store and checked fault arguments; this is the last guard against a split header.
        lines.append(f"{name}: {_UNSAFE_IN_HEADER.sub(' ', value)}")
    lines.append(f"Content-Length: {len(answer.content)}")
    if "connection" not in named:
        if close:
            lines.append("Connection: close")
        elif keep_alive:
            lines.append("Connection: keep-alive")
    head = ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1", "replace")
    return head if method == "HEAD" else head + answer.content
