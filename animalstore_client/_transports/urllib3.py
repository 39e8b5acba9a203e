"""The transport seam over a `urllib3.PoolManager` (``backend="urllib3"``).

Imported only when that backend is chosen. urllib3's exceptions are mapped to
the httpx classes the retry policy tells apart; bodies arrive raw
(``decode_content=False``) so the send loop decodes and caps them itself;
redirects and urllib3's own retries are off. On the SDK's own pool managers
every socket read, of the headers and the body, is held to the call's total
deadline, and interim (1xx) answers are skipped; there is no watchdog thread,
so nothing is shared between threads but the pools (urllib3's, behind its
locks) and the transport's own proxy table (behind its lock).
"""

from __future__ import annotations

import http.client
import io
import re
import socket
import ssl
import threading
import time
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any, cast

import httpx
import urllib3
import urllib3.connection
from urllib3.exceptions import (
    ConnectTimeoutError,
    EmptyPoolError,
    HTTPError,
    NameResolutionError,
    NewConnectionError,
    ProtocolError,
    ProxyError,
    ReadTimeoutError,
    SSLError,
)

from animalstore_client._core.deadline import remembered, within
from animalstore_client._core.exchange import Exchange, running, running_deadline
from animalstore_client._core.httpx_private import headers_from_library
from animalstore_client._core.tls import ssl_context
from animalstore_client._transports.proxies import PoolsByProxy
from animalstore_client._transports.shared import LibraryStream, Translations, is_literal, looked_up, translated
from animalstore_client._transports.sockets import Sockets, opening_sync

__all__ = ["Urllib3Transport"]


_MAX_INTERIM = 16
"""Most interim (1xx) responses skipped before the final one; more ends the connection."""
_SOCKETS = Sockets()
"""The socket of every connection of the SDK's own pool managers: a forked child closes its copies at the fork."""


class _DeadlineReader(io.RawIOBase):
    """The socket as http.client reads it, each read held to the call's deadline.

    http.client applies one socket timeout to each read, so a server that
    trickles a byte at a time, or sends ``100 Continue`` for ever, is never
    cut off by it; here each read waits at most what is left of the call's
    deadline (and the per-read timeout), and none starts once it has passed.
    A read that runs out of time raises `TimeoutError`: the message is never
    taken to end there, whatever its framing.
    """

    def __init__(self, raw: io.RawIOBase, sock: socket.socket, deadline: float, timeout: float | None) -> None:
        super().__init__()
        self._raw = raw
        self._sock = sock
        self._deadline = deadline
        self._timeout = timeout
        self._set = timeout

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int | None:
        timeout = within(self._timeout, TimeoutError, self._deadline)
        if timeout != self._set:  # a system call: made only when the value changes
            self._sock.settimeout(timeout)
            self._set = timeout
        return self._raw.readinto(buffer)

    def close(self) -> None:
        # Closing the socket's file object gives back its hold on the socket.
        self._raw.close()
        super().close()


class _SDKResponse(http.client.HTTPResponse):
    """http.client's response, held to the call's deadline and skipping interim (1xx) answers."""

    def __init__(self, sock: socket.socket, debuglevel: int = 0, method: str | None = None, url: str | None = None):
        super().__init__(sock, debuglevel, method, url)
        deadline = running_deadline()
        if deadline is not None:
            # The file object http.client made holds the socket open while the
            # body is read (the connection may close its own reference first):
            # keep it, and read through it.
            fp = cast(object, self.fp)
            if not isinstance(fp, io.BufferedReader):  # fail loudly should http.client change
                raise TypeError(f"http.client's response file is a {type(fp).__name__}, not a BufferedReader")
            raw = fp.detach()
            self.fp = io.BufferedReader(_DeadlineReader(raw, sock, deadline, sock.gettimeout()))

    def begin(self) -> None:
        # http.client skips 100 Continue itself but takes any other 1xx (103
        # Early Hints) for the answer, leaving the real one to answer the next
        # request on this connection.
        for _ in range(_MAX_INTERIM):
            super().begin()
            if not 100 < self.status < 200 or self.status == 101:
                return
            self.headers = self.msg = None  # type: ignore[assignment]  # begin() reads the next status line
        raise http.client.HTTPException(f"more than {_MAX_INTERIM} interim (1xx) responses")


class _SDKHTTPConnection(urllib3.connection.HTTPConnection):
    """A connection whose request is written within the call's deadline and whose response is `_SDKResponse`."""

    response_class = _SDKResponse

    def send(self, data: Any) -> None:
        if self.sock is None:
            self.connect()  # what http.client's send does first: a connection refused here wrote nothing
        # The attempt's exchange: the first byte of the request tells a TLS failure "before the request left"
        # (the handshake) from "after", and "was it stored?" how far it got; past the deadline it is not written.
        sending = running()
        if sending is not None:
            sending.first_byte()
        super().send(data)

    def connect(self) -> None:
        with opening_sync():  # a fork waits until the socket is known (`_transports.sockets`)
            super().connect()
            # Known once connected: over TLS the socket is the `ssl.SSLSocket`, which took the plain one's descriptor.
            _SOCKETS.add(self.sock)

    def _new_conn(self) -> socket.socket:
        # urllib3 looks the name up inside its create_connection, in getaddrinfo, bounded by nothing (a dead
        # resolver holds a call 10 to 30 s): the name is looked up here first, in a thread waited for at most
        # the connect timeout and the deadline, and urllib3 connects to each address found in turn.
        host = self.host
        current: object = self.timeout
        seconds = within(current if isinstance(current, (int, float)) else None, TimeoutError, running_deadline())
        if seconds is None or is_literal(host):
            return super()._new_conn()
        ends = time.monotonic() + seconds
        try:
            addresses = looked_up(host, self.port, seconds)
        except TimeoutError:
            raise ConnectTimeoutError(self, f"Connection to {host} timed out looking its name up") from None
        except socket.gaierror as exc:
            raise NameResolutionError(host, self, exc) from exc
        except ConnectionError as exc:  # no lookup could start (the thread limit): nothing was sent
            raise NewConnectionError(self, str(exc)) from exc
        named, timeout = self._dns_host, self.timeout
        last: Exception | None = None
        try:
            for address in addresses:
                self._dns_host = address  # what urllib3 connects to; self.host (TLS's name) is restored below
                self.timeout = max(ends - time.monotonic(), 0.0)  # each address gets what is left, no more
                try:
                    return super()._new_conn()
                except NewConnectionError as exc:
                    last = exc
        finally:
            self._dns_host, self.timeout = named, timeout
        assert last is not None  # getaddrinfo gives one address at least, or raises
        raise last

    def request(self, method: str, url: str, *args: Any, **kwargs: Any) -> None:
        current: object = self.timeout
        # urllib3 sets it on the socket before writing.
        self.timeout = within(current if isinstance(current, (int, float)) else None, TimeoutError, running_deadline())
        super().request(method, url, *args, **kwargs)


class _SDKHTTPSConnection(_SDKHTTPConnection, urllib3.connection.HTTPSConnection):
    """`_SDKHTTPConnection` over TLS."""


class _SDKHTTPPool(urllib3.HTTPConnectionPool):
    ConnectionCls = _SDKHTTPConnection  # pyright: ignore[reportAssignmentType]  # a subclass; pyright disagrees


class _SDKHTTPSPool(urllib3.HTTPSConnectionPool):
    ConnectionCls = _SDKHTTPSConnection  # pyright: ignore[reportAssignmentType]


def _check_pool_classes() -> None:
    """Fail loudly, naming it, if a pool manager no longer makes its pools from ``pool_classes_by_scheme``.

    The SDK's pool classes go in there (`Urllib3Transport._new_manager`): without them urllib3's own
    connections would send, and no read would be held to the call's deadline. Making a pool opens no
    connection.
    """
    manager = urllib3.PoolManager()
    manager.pool_classes_by_scheme = {"http": _SDKHTTPPool, "https": _SDKHTTPSPool}
    if not isinstance(manager.connection_from_url("http://127.0.0.1:9/"), _SDKHTTPPool):
        from animalstore_client._core.exceptions import AnimalStoreError

        raise AnimalStoreError(
            f"urllib3 {getattr(urllib3, '__version__', '')} no longer makes its pools from "
            "PoolManager.pool_classes_by_scheme, "
            "which the SDK sets to use its own connection classes: install the urllib3 release this SDK was "
            "tested with, or a newer animalstore-client"
        )
    manager.clear()


_check_pool_classes()


def _check_name_lookup() -> None:
    """Fail loudly, naming them, if urllib3's connection no longer connects from ``_new_conn`` to ``_dns_host``.

    `_SDKHTTPConnection._new_conn` looks the name up within the connect timeout and hands urllib3 each
    address through ``_dns_host`` (its ``host`` keeps the name TLS checks): without them a lookup that
    never answers would hold a call past every timeout.
    """
    connection = urllib3.connection.HTTPConnection("lookup.invalid", 80)  # opens nothing
    if getattr(connection, "_dns_host", None) != "lookup.invalid" or not callable(
        getattr(urllib3.connection.HTTPConnection, "_new_conn", None)
    ):
        from animalstore_client._core.exceptions import AnimalStoreError

        raise AnimalStoreError(
            f"urllib3 {getattr(urllib3, '__version__', '')} no longer has HTTPConnection._new_conn and _dns_host, "
            "which the SDK uses to hold a name lookup to the connect timeout: install the urllib3 release this SDK "
            "was tested with, or a newer animalstore-client"
        )


_check_name_lookup()

# Headers urllib3 writes itself from the request.
_LEFT_TO_URLLIB3 = frozenset({"host", "content-length", "transfer-encoding"})
_CHUNK = 64 * 1024
_KEPT = 64
"""Distinct header sets, and timeout pairs, whose library form a transport keeps."""
# What retries=False becomes inside urllib3, built once rather than per call (it is immutable).
_NO_RETRIES = urllib3.Retry(total=False, redirect=False)


# urllib3's failures, most specific first (NewConnectionError is a ConnectTimeoutError),
# and the httpx class the retry policy knows each by.
_TRANSLATIONS: Translations = (
    (EmptyPoolError, httpx.PoolTimeout),
    (NewConnectionError, httpx.ConnectError),  # nothing was sent
    (ProxyError, httpx.ConnectError),
    (SSLError, httpx.ConnectError),
    (ConnectTimeoutError, httpx.ConnectTimeout),
    (ReadTimeoutError, httpx.ReadTimeout),
    (ProtocolError, httpx.RemoteProtocolError),
)
# Once the request was written: a TLS failure may have followed it, and the service acted on it.
_WRITTEN: Translations = ((SSLError, httpx.ReadError), *_TRANSLATIONS)
# Once the answer had begun: a broken one is a body cut off.
_READING: Translations = tuple(
    (urllib3_class, httpx.ReadError if httpx_class is httpx.RemoteProtocolError else httpx_class)
    for urllib3_class, httpx_class in _WRITTEN
)
_FAILURES = (HTTPError, OSError)


# How urllib3 names a pool or a connection in its messages: ``_SDKHTTPPool(host='h', port=80)``,
# or in a repr ``<_SDKHTTPConnection(host='h', port=80) at 0x7f...>``.
_NAMED_ORIGIN = re.compile(
    r"<\w+\(host='([^']*)', port=([^)]*)\) at 0x[0-9a-fA-F]+>|\b\w+\(host='([^']*)', port=([^)]*)\)"
)
# Before urllib3 2.3, a connection's repr is the plain object one, which names no host:
# ``<animalstore_client._transports.urllib3._SDKHTTPConnection object at 0x7f...>``.
_PLAIN_REPR = re.compile(r"<[\w.]+ object at 0x[0-9a-fA-F]+>")


def _origin(match: re.Match[str]) -> str:
    host, port = (match.group(1), match.group(2)) if match.group(1) is not None else (match.group(3), match.group(4))
    if ":" in host and not host.startswith("["):
        host = f"[{host}]"  # an IPv6 address
    return host if port == "None" else f"{host}:{port}"


def _message(exc: BaseException, url: httpx.URL | None = None) -> str:
    """urllib3's text for ``exc``, each pool or connection it names given as ``host:port``.

    urllib3 writes the pool's or the connection's repr into its messages, which would name the
    SDK's own classes (``_SDKHTTPPool``...): a reader learns nothing from them but the host and port.
    A repr that names no host (older urllib3) is given as the host and port of ``url``.
    """
    args = exc.args
    if len(args) == 2 and not isinstance(args[0], str) and isinstance(args[1], str):
        text = f"{args[0]}: {args[1]}"  # ConnectTimeoutError(connection, message), otherwise shown as a tuple
    else:
        text = str(exc) or type(exc).__name__
    text = _NAMED_ORIGIN.sub(_origin, text)
    if url is not None and "object at 0x" in text:
        port = url.port if url.port is not None else (443 if url.scheme == "https" else 80)
        host = f"[{url.host}]" if ":" in url.host else url.host
        text = _PLAIN_REPR.sub(f"{host}:{port}", text)
    return text


def _translated(
    exc: BaseException, request: httpx.Request, *, reading: bool = False, written: bool = False
) -> httpx.TransportError:
    """urllib3's failure as the httpx class the retry policy knows (``reading``: the answer had begun: it was sent)."""
    table = _READING if reading else _WRITTEN if written else _TRANSLATIONS
    return translated(exc, request, table, message=_message(exc, request.url))


class _Urllib3Stream(LibraryStream[urllib3.BaseHTTPResponse]):
    __slots__ = ("_deadline", "_done", "_held", "_read_timeout")

    def __init__(
        self,
        response: urllib3.BaseHTTPResponse,
        request: httpx.Request,
        started: float,
        read_timeout: float | None,
        deadline: float | None,
        *,
        held: bool,
    ) -> None:
        super().__init__(response, response.status, request, started)
        self._read_timeout = read_timeout
        self._deadline = deadline
        self._held = held
        self._done = False

    def _library_headers(self) -> httpx.Headers:
        pairs = self._response.headers.iteritems()
        # http.client decoded the raw bytes as Latin-1: encoding them back gives the bytes that came.
        return headers_from_library(
            [(name.encode("latin-1", "replace"), value.encode("latin-1", "replace")) for name, value in pairs]
        )

    def content_codings(self) -> list[bytes]:
        return [value.encode("latin-1", "replace") for value in self._response.headers.getlist("content-encoding")]

    def _reason(self) -> str | None:
        return self._response.reason

    def iter_raw(self) -> Iterator[bytes]:
        response = self._response
        # The SDK's own connections hold each read to the deadline themselves
        # (`_DeadlineReader`); a caller's are held between reads.
        sock = None if self._held else getattr(getattr(response, "connection", None), "sock", None)
        try:
            while True:
                if sock is not None:
                    # Set only when that changes it: settimeout is a system call.
                    timeout = within(self._read_timeout, httpx.ReadTimeout, self._deadline)
                    if timeout != sock.gettimeout():
                        sock.settimeout(timeout)
                chunk = response.read1(_CHUNK)
                if not chunk:
                    self._done = True
                    return
                yield chunk
        except _FAILURES as exc:
            # The answer had begun: the request was sent, whatever failed now (TLS included).
            raise _translated(exc, self._request, reading=True) from exc

    def close(self) -> None:
        response = self._response
        if not self._done:
            # Cut short (the size cap, an error): drop the connection, or the
            # unread rest would be taken for the next answer.
            response.close()
        response.release_conn()


def _proxy_manager(proxy: str, options: dict[str, Any]) -> urllib3.ProxyManager:
    """A pool manager through ``proxy``, sending its ``user:password@`` (percent-decoded) as Proxy-Authorization.

    urllib3 ignores credentials in a proxy URL, so the proxy would answer 407; they are taken out of
    the URL it keeps and sent as a header only (never in a repr, a message or a log line).
    """
    url = httpx.URL(proxy)
    if not url.username and not url.password:
        return urllib3.ProxyManager(proxy, **options)
    auth = urllib3.make_headers(proxy_basic_auth=f"{url.username}:{url.password}")
    plain = str(url.copy_with(username=None, password=None))
    return urllib3.ProxyManager(plain, proxy_headers=auth, **options)


class Urllib3Transport:
    """The seam over a `urllib3.PoolManager`: the caller's, or the SDK's own (which it closes).

    The SDK's own keeps one pool manager per proxy, chosen for each request
    URL from the environment (``HTTPS_PROXY``, ``NO_PROXY``...), so a client
    derived with another base URL goes through the proxy meant for it. Its
    connections hold every read to the call's deadline and skip interim
    responses; its TLS trust comes from ``verify``.
    """

    __slots__ = ("_headers", "_lock", "_manager", "_managers", "_owned", "_ssl_context", "_timeouts")
    library = f"urllib3/{getattr(urllib3, '__version__', '')}"  # set by urllib3, though not in its __all__

    def __init__(self, manager: object = None, *, verify: bool | str | ssl.SSLContext = True) -> None:
        assert manager is None or isinstance(manager, urllib3.PoolManager)
        self._owned = manager is None
        self._manager = manager
        self._ssl_context = ssl_context(verify) if manager is None else None
        self._managers: PoolsByProxy[urllib3.PoolManager] = PoolsByProxy(self._new_manager)
        # The library form of each distinct set of request headers, and of each (connect, read)
        # pair: the SDK repeats both from call to call. urllib3 clones a Timeout before using it,
        # so one object serves every thread; the tables themselves are behind a lock.
        self._lock = threading.Lock()
        self._headers: dict[tuple[tuple[bytes, bytes], ...], dict[str, str]] = {}
        self._timeouts: dict[tuple[float | None, float | None], urllib3.Timeout] = {}

    def _new_manager(self, proxy: str | None) -> urllib3.PoolManager:
        options: dict[str, Any] = {"num_pools": 10, "maxsize": 100, "ssl_context": self._ssl_context}
        manager = _proxy_manager(proxy, options) if proxy is not None else urllib3.PoolManager(**options)
        manager.pool_classes_by_scheme = {"http": _SDKHTTPPool, "https": _SDKHTTPSPool}
        return manager

    @property
    def default_headers(self) -> httpx.Headers:
        """The caller's pool manager's default headers (none for the SDK's own)."""
        return httpx.Headers(dict(self._manager.headers) if self._manager is not None else {})

    def callers_part(self, called_by: tuple[str, str] | None) -> str | None:
        """Code of the caller's inside their pool manager (its pool or connection classes); ``None`` for the SDK's."""
        return None if self._owned else "code of yours inside http_client"

    @property
    def is_closed(self) -> bool:
        """Whether the SDK closed this transport."""
        return self._managers.closed

    def send(self, exchange: Exchange) -> _Urllib3Stream:
        """Send through the pool manager; return once the status and headers have arrived."""
        request, timeouts, deadline = exchange.request, exchange.timeouts, exchange.deadline
        manager = self._manager if self._manager is not None else self._managers.for_url(request.url)
        raw = tuple(request.headers.raw)
        read = timeouts.get("read")
        phases = (timeouts.get("connect"), read)
        with self._lock:
            # A plain dict: the SDK's header names are unique (checked as a mapping).
            headers = remembered(
                self._headers,
                raw,
                lambda: {name: value for name, value in request.headers.multi_items() if name not in _LEFT_TO_URLLIB3},
                _KEPT,
            )
            timeout = remembered(self._timeouts, phases, lambda: urllib3.Timeout(connect=phases[0], read=read), _KEPT)
        started = time.monotonic()
        if self._owned:
            exchange.opening()  # the SDK's own connection class reports: from here the exchange is known
        try:
            # The SDK's connection and response classes, inside urllib3, read the deadline from here.
            with exchange:
                response = manager.urlopen(
                    request.method,
                    str(request.url),
                    body=request.content or None,
                    headers=headers,
                    redirect=False,
                    retries=_NO_RETRIES,
                    preload_content=False,
                    decode_content=False,
                    timeout=timeout,
                    pool_timeout=timeouts.get("pool"),
                )
        except _FAILURES as exc:
            # A caller's pool manager has urllib3's own connections, which do not say
            # whether the request left: a TLS failure there may have followed it.
            raise _translated(exc, request, written=exchange.may_have_written or not self._owned) from exc
        if 100 <= response.status < 200:
            # An interim answer taken for the final one (a caller's pool manager,
            # or a 101): the real answer would be read by the next request on
            # this connection, so the connection ends here.
            response.close()
            response.release_conn()
            raise httpx.RemoteProtocolError(
                f"the server sent an interim {response.status} response where the final one was due", request=request
            )
        return _Urllib3Stream(response, request, started, read, deadline, held=self._owned)

    def close(self) -> None:
        """Close the pool managers' connections, if the SDK made them (a caller's is left open)."""
        for manager in self._managers.close():
            manager.clear()


if TYPE_CHECKING:
    from animalstore_client._transports._generated.seam_sync import Transport

    # The type checkers hold the class to the seam: a method missing or of another type fails them.
    _SEAM: type[Transport] = Urllib3Transport
