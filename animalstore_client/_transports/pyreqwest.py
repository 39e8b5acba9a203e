"""What both clients' transports over pyreqwest (``backend="pyreqwest"``) share, through pyreqwest's public API.

Imported only for that backend. The library client is always the SDK's own (`refusal`): no decoder, redirect, cookie
store or proxy but the SDK's; one per proxy and set of per-phase timeouts, the deadline being each request's total
timeout. Built on first use (`_built`: a fork cannot use a started pyreqwest), let go of at exit (`_Releases`).
"""

# pyreqwest's stubs leave some types unknown to pyright; mypy reads them and checks every call here strictly.
# pyright: reportUnknownMemberType=false, reportUnknownVariableType=false, reportUnknownArgumentType=false
from __future__ import annotations

import atexit
import os
import socket
import ssl
import threading
import time
import weakref
from collections.abc import Callable
from datetime import timedelta
from http import HTTPStatus
from typing import TYPE_CHECKING, Any, TypeVar

import httpx
import pyreqwest
import pyreqwest.exceptions as errors
from pyreqwest.client import BaseClientBuilder, SyncClient
from pyreqwest.proxy import ProxyBuilder
from pyreqwest.request import BaseRequestBuilder

from animalstore_client._core.deadline import remembered, within
from animalstore_client._core.exceptions import AnimalStoreError
from animalstore_client._core.exchange import Exchange
from animalstore_client._core.httpx_private import headers_from_library
from animalstore_client._core.log import logger
from animalstore_client._transports.proxies import Origins, proxy_for
from animalstore_client._transports.shared import CLOSED_MID_CALL, StreamHead, Translations, translated

if TYPE_CHECKING:
    from pyreqwest.response import Response, SyncResponse

__all__ = [
    "FAILURES",
    "LIBRARY",
    "MAX_CONNECTIONS",
    "PyreqwestHead",
    "Settings",
    "forked_error",
    "library_failure",
    "refusal",
    "released",
    "request_builder",
]

# Headers the library writes itself from the URL and the body.
_LEFT_TO_LIBRARY_BYTES = frozenset({b"host", b"content-length", b"transfer-encoding"})
_ONE_DAY = 86_400.0
_CA_VARIABLES = ("SSL_CERT_FILE", "SSL_CERT_DIR")  # what verify=True reads first, as on the other backends
_MOST_CLIENTS = 16  # library clients kept per transport (one per proxy and set of timeouts), past which the oldest goes
_REMEMBERED = 64  # distinct request header sets (and URLs) whose library form a transport keeps: the SDK's repeat

LIBRARY = f"pyreqwest/{pyreqwest.__version__}"
"""The library that sends, as the User-Agent names it."""
MAX_CONNECTIONS = 100
"""The most connections one of the SDK's pyreqwest clients holds: its failures unwind in more CPU than others'."""
FAILURES = (errors.PyreqwestError,)
# pyreqwest's classes do not say whether the request left (ConnectError covers a reset after writing); reqwest's
# chain does: only connector failures carry this cause (else "sent"; tests/test_pyreqwest.py pins the wording).
CONNECT_CAUSE = "client error (Connect)"
DNS_CAUSE = "dns error"
"""reqwest's cause for a host name that did not resolve (tests/test_pyreqwest.py pins the wording)."""


def _cause_messages(exc: BaseException) -> list[str]:
    details = getattr(exc, "details", None)
    causes = details.get("causes") if isinstance(details, dict) else None
    if not isinstance(causes, list):
        return []
    return [str(cause.get("message", "")) for cause in causes if isinstance(cause, dict)]


# pyreqwest's failures when reqwest's connector failed (CONNECT_CAUSE): nothing was sent.
_CONNECTING: Translations = (
    (errors.PoolTimeoutError, httpx.PoolTimeout),  # no connection slot came free
    (errors.RequestTimeoutError, httpx.ConnectTimeout),  # a connect timeout, or the call's deadline meanwhile
    (errors.BodyDecodeError, httpx.ReadError),
    (errors.DecodeError, httpx.RemoteProtocolError),
)
"""Anything else is an `httpx.ConnectError`: refused, DNS, TLS, the proxy."""
# Otherwise the request (maybe) left.
_SENT: Translations = (
    (errors.PoolTimeoutError, httpx.PoolTimeout),
    (errors.RequestTimeoutError, httpx.ReadTimeout),  # waiting for the answer, or reading it
    (errors.BodyDecodeError, httpx.ReadError),  # the body was cut short, or its framing broken
    (errors.DecodeError, httpx.RemoteProtocolError),  # a malformed answer
    (errors.WriteError, httpx.WriteError),
    (errors.TransportError, httpx.ReadError),  # the connection failed once the request had (maybe) left
)
"""Anything else is an `httpx.RemoteProtocolError`."""


def _translated(exc: BaseException, request: httpx.Request, exchange: Exchange | None) -> httpx.TransportError:
    """The library's failure as the httpx class the retry policy knows; a connector failure (or no pool slot) is
    reported to ``exchange`` as nothing written: no code of the caller's runs in the SDK's own library client."""
    causes = _cause_messages(exc)
    if exchange is not None and (CONNECT_CAUSE in causes or isinstance(exc, errors.PoolTimeoutError)):
        exchange.not_written()
    # str() of pyreqwest's exceptions is the tuple of their arguments; .message is the text. A cause
    # naming the URL is left out: the SDK's own message has the URL, without any credentials.
    text = str(getattr(exc, "message", "") or type(exc).__name__)
    shown = "; ".join(cause for cause in causes if "://" not in cause and cause != CONNECT_CAUSE)
    message = f"{text}: {shown}" if shown else text
    connecting = CONNECT_CAUSE in causes
    table, otherwise = (_CONNECTING, httpx.ConnectError) if connecting else (_SENT, httpx.RemoteProtocolError)
    failure = translated(exc, request, table, otherwise, message)
    connect_error = type(failure) is httpx.ConnectError
    refused = next((cause for cause in causes if cause.startswith("invalid peer certificate")), None)
    if connect_error and refused is not None:
        # As the ssl module reports a refused certificate, whatever the library (`certificate_failure` finds it).
        verification = ssl.SSLCertVerificationError(refused)
        verification.verify_message = refused.split(": ", 1)[-1]
        verification.__cause__ = exc
        failure.__cause__ = verification
    elif connect_error and DNS_CAUSE in causes:
        # As the socket module reports a name not resolved, whatever the library (`name_not_resolved` finds it).
        unresolved = socket.gaierror(next((cause for cause in reversed(causes) if "://" not in cause), DNS_CAUSE))
        unresolved.__cause__ = exc
        failure.__cause__ = unresolved
    else:
        failure.__cause__ = exc
    return failure


def library_failure(exc: BaseException, request: httpx.Request, exchange: Exchange | None = None) -> Exception:
    """What a library failure becomes: the SDK's error for a client closed mid-call, else `_translated`'s."""
    if not isinstance(exc, errors.ClientClosedError):
        return _translated(exc, request, exchange)
    closed = AnimalStoreError(CLOSED_MID_CALL)
    closed.__cause__ = exc
    return closed


_started_in: int | None = None  # the process in which the SDK first built a pyreqwest client (a fork inherits it)


def forked_error(cause: object) -> AnimalStoreError:
    """The SDK's error for pyreqwest in a child forked after its parent started pyreqwest."""
    return AnimalStoreError(
        'backend="pyreqwest" cannot be used in this process: it was forked after pyreqwest had started '
        "in its parent, and pyreqwest's runtime cannot be restarted in a forked child. Make the parent's "
        "first pyreqwest call after forking (a client may be created before), start workers with the "
        f"'spawn' method, or use another backend in forked workers. ({cause})"
    )


def _built(new: Any, proxy: str | None, key: tuple[float | None, ...]) -> Any:
    """A library client from ``new``, unless this is a child forked after its parent started pyreqwest: one forked
    during pyreqwest's start-up inherits its lock held and would hang in it, so the child does not call it at all."""
    global _started_in  # noqa: PLW0603  # one fact per process, inherited across fork on purpose
    pid = os.getpid()
    if _started_in is not None and _started_in != pid:
        raise forked_error(f"the SDK started pyreqwest in process {_started_in}")
    _started_in = pid
    try:
        return new(proxy, key)
    except RuntimeError as exc:
        if "fork" not in str(exc):
            raise
        raise forked_error(f"pyreqwest: {exc}") from exc


_EXIT_GRACE = 0.1  # seconds a process waits at exit after the SDK let go of its last pyreqwest client


class _Releases:
    """The pyreqwest clients the SDK holds in this process, let go of before the interpreter finalizes: pyreqwest's
    runtime thread calls into Python shortly after a client is let go, which aborts a finalizing process
    (tests/test_pyreqwest.py); so at exit the SDK closes them and waits out `_EXIT_GRACE` since the last."""

    def __init__(
        self, clock: Callable[[], float], register: Callable[[Callable[[], None]], object] = atexit.register
    ) -> None:
        self._clock = clock
        self._register = register
        # Re-entrant: a transport collected while this thread holds the lock reports its release from inside it.
        self._lock = threading.RLock()
        self._held: set[weakref.ref[Settings]] = set()
        self._last: float | None = None
        self._registered = False

    def hold(self, settings: Settings) -> None:
        """Track ``settings``, which has just built a library client (its first, or another)."""
        with self._lock:
            self._held.add(weakref.ref(settings, self._collected))
            if not self._registered:
                self._registered = True
                self._register(self.at_exit)

    def _collected(self, ref: weakref.ref[Settings]) -> None:
        # A transport dropped without being closed: its library clients went with it.
        with self._lock:
            self._held.discard(ref)
            self._last = self._clock()

    def released(self) -> None:
        """Note that the SDK has just let go of library clients."""
        with self._lock:
            self._last = self._clock()

    def at_exit(self, sleep: Callable[[float], object] = time.sleep) -> None:
        """Close every library client still held, then wait out the rest of `_EXIT_GRACE`; nothing in a forked child
        (`_built`). The SDK clients stay open: a later exit handler's call builds a library client again."""
        if _started_in != os.getpid():
            return
        with self._lock:
            # A copy first (made in C, running no Python): a transport collected meanwhile would
            # change the set from `_collected`, in this thread, through the re-entrant lock.
            refs = list(self._held)
            self._held.clear()
        if _close_all([client for held in (ref() for ref in refs) if held is not None for client in held.let_go()]):
            self.released()
        with self._lock:
            last = self._last
        wait = 0.0 if last is None else _EXIT_GRACE - (self._clock() - last)
        if wait > 0:
            sleep(min(wait, _EXIT_GRACE))


def _close_all(clients: list[Any]) -> int:
    """Close ``clients`` (dropped, so let go of, when this returns); how many there were."""
    for client in clients:
        # An async library client's close() only cancels its calls under way (none at exit): dropped, it goes.
        if isinstance(client, SyncClient):
            client.close()
    return len(clients)


_releases = _Releases(time.monotonic)


def released(clients: list[Any]) -> None:
    """Note that a transport has just closed ``clients``, the library clients it built (see `_Releases`)."""
    if clients:
        _releases.released()


def _timeout_key(request: httpx.Request) -> tuple[float | None, float | None, float | None]:
    # The client's own per-phase timeouts (not this attempt's, shortened to the deadline).
    timeouts = request.extensions.get("timeout") or {}
    return (timeouts.get("connect"), timeouts.get("read"), timeouts.get("pool"))


def _seconds(value: float) -> timedelta:
    return timedelta(seconds=min(max(value, 0.001), _ONE_DAY))


def _trust(builder: BaseClientBuilder, verify: bool | str) -> None:
    """Apply ``verify`` to a library client: rustls has no `ssl.SSLContext`, so CA files are handed over."""
    if verify is False:
        builder.danger_accept_invalid_certs(True)
        return
    paths = [verify] if verify is not True else [os.environ[v] for v in _CA_VARIABLES if os.environ.get(v)]
    if not paths:
        import certifi  # the bundle the other backends trust by default

        paths = [certifi.where()]
    for path in paths:
        files = [os.path.join(path, name) for name in sorted(os.listdir(path))] if os.path.isdir(path) else [path]
        for name in files:
            try:
                with open(name, "rb") as file:
                    pem = file.read()
            except OSError:
                continue  # a directory's unreadable entry; the file itself was checked when the client was made
            if b"-----BEGIN CERTIFICATE-----" in pem:
                builder.add_root_certificate_pem(pem)


class Settings:
    """How the SDK builds its library clients: trust, and one client per proxy and set of timeouts."""

    __slots__ = ("__weakref__", "_clients", "_closed", "_headers", "_lock", "_proxies", "_urls", "_verify")

    def __init__(self, verify: bool | str) -> None:
        self._verify = verify
        self._lock = threading.Lock()
        self._proxies: Origins = {}
        self._clients: dict[tuple[object, ...], Any] = {}
        # The library's form of each URL (by the URL object, which the entry holds: the requests built from one
        # template share it) with its proxy, and of each set of headers (by their raw pairs).
        self._urls: dict[int, tuple[httpx.URL, str, str | None]] = {}
        self._headers: dict[tuple[tuple[bytes, bytes], ...], list[tuple[str, str]]] = {}
        self._closed = False

    def configure(self, builder: BaseClientBuilder, proxy: str | None, key: tuple[float | None, ...]) -> None:
        """Set ``builder`` up for a library client through ``proxy`` with the timeouts ``key``."""
        connect, read, pool = key
        builder.gzip(False).deflate(False).brotli(False).zstd(False)  # the SDK decodes, under its cap
        builder.follow_redirects(False).default_cookie_store(False).referer(False)
        builder.no_proxy()  # the library would read the environment by its own rules: the SDK's apply
        if proxy is not None:
            builder.proxy(ProxyBuilder.all(proxy))
        # `pool` is the wait for one of its connections.
        builder.max_connections(MAX_CONNECTIONS)
        builder.pool_idle_timeout(timedelta(seconds=15))
        for seconds, set_timeout in ((connect, builder.connect_timeout), (read, builder.read_timeout)):
            if seconds is not None:
                set_timeout(_seconds(seconds))
        if pool is not None:
            builder.pool_timeout(_seconds(pool))
        _trust(builder, self._verify)

    def prepare(self, request: httpx.Request, new: Any) -> tuple[Any, str, list[tuple[str, str]]]:
        """The library client for the request's proxy and timeouts (``new(proxy, key)``), its URL and headers."""
        url = request.url
        raw = tuple(request.headers.raw)
        with self._lock:
            if self._closed:
                raise AnimalStoreError(CLOSED_MID_CALL)
            _, text, proxy = remembered(
                self._urls, id(url), lambda: (url, str(url), proxy_for(url, self._proxies)), _REMEMBERED
            )
            headers = remembered(self._headers, raw, lambda: _library_headers(raw), _REMEMBERED)
            client = self._client(proxy, _timeout_key(request), new)
        return client, text, headers

    def _client(self, proxy: str | None, key: tuple[float | None, ...], new: Any) -> Any:
        """`prepare`'s library client; called under the lock."""
        entry = (proxy, *key)
        client = self._clients.get(entry)
        if client is None:
            if len(self._clients) >= _MOST_CLIENTS:
                # Many timeout settings: the oldest is dropped (calls under way keep it; it closes when collected).
                del self._clients[next(iter(self._clients))]
                _releases.released()
            client = self._clients[entry] = _built(new, proxy, key)
            _releases.hold(self)
        return client

    def close(self) -> list[Any]:
        """Refuse any further call; the library clients built so far, taken out of the table (`let_go`)."""
        with self._lock:
            self._closed = True
        return self.let_go()

    def let_go(self) -> list[Any]:
        """The library clients built so far, taken out of the table (the next call builds one again)."""
        with self._lock:
            clients = list(self._clients.values())
            self._clients.clear()
        return clients

    @property
    def closed(self) -> bool:
        """Whether `close` was called; read without the lock, which a fork may have left held (as `PoolsByProxy`'s)."""
        return self._closed


def _raw_pairs(response: Any) -> list[tuple[bytes, bytes]]:
    """The response's header fields as pairs of bytes, as they came (pyreqwest gives them as text)."""
    headers = response.headers
    try:
        pairs = [(name.encode(), value.encode()) for name, value in headers.items()]
    except ValueError:
        # A value not UTF-8 (Latin-1 from an old server) pyreqwest cannot hand over: such headers are left out.
        pairs = []
        for name in headers:
            try:
                values = headers.getall(name)
            except ValueError:
                logger.debug("Left out the response header %r: pyreqwest cannot read its value", name)
                continue
            pairs.extend((name.encode(), value.encode()) for value in values)
    return pairs


def _text(value: bytes) -> str:
    # pyreqwest sends a text value as its UTF-8 bytes: those are the bytes the request holds.
    try:
        return value.decode()
    except UnicodeDecodeError:
        return value.decode("latin-1")


def _library_headers(raw: tuple[tuple[bytes, bytes], ...]) -> list[tuple[str, str]]:
    # The ones the library writes itself, from the URL and the body, are left to it.
    return [(_text(name), _text(value)) for name, value in raw if name.lower() not in _LEFT_TO_LIBRARY_BYTES]


def _total(deadline: float | None) -> timedelta | None:
    """The request's own total timeout: the time left until ``deadline``, never rounded up (none left: nothing sent)."""
    if deadline is None:
        return None
    return timedelta(seconds=min(within(None, httpx.ConnectTimeout, deadline) or 0.0, _ONE_DAY))


# What pyreqwest reads of a body before handing the response over (its default). Turned off, a task cancelled
# mid-body could close its connection at once, for an extra trip to the library's thread a call (a sixth more);
# a cancelled request runs on to its answer or its deadline instead (docs/usage.md).
_READ_AHEAD = BaseRequestBuilder.default_streamed_read_buffer_limit()


def refusal(client: object) -> tuple[str, str]:
    """Why a caller's pyreqwest ``client`` is refused as ``http_client`` (always), and the rule; nor does its answer
    say where it came from (no final URL): the SDK would take another host's for the store's."""
    return (
        "http_client cannot be a pyreqwest client: a built pyreqwest client follows redirects unless its builder "
        "was told follow_redirects(False), and it can neither be asked which nor told otherwise per request, so a "
        'redirect could carry a request, body and all, to another host. Use backend="pyreqwest" without '
        "http_client: the SDK builds its own pyreqwest client, which follows no redirect (verify= for a CA bundle, "
        "middleware= for headers of your own)",
        'not a pyreqwest client (backend="pyreqwest" builds one)',
    )


def request_builder(settings: Settings, new: Any, request: httpx.Request, deadline: float | None) -> Any:
    """The library's request for ``request``, on the SDK's own library client (made by ``new`` on first use)."""
    client, url, headers = settings.prepare(request, new)
    builder = client.request(request.method, url).headers(headers)
    content = request.content
    if content:
        builder.body_bytes(content)
    total = _total(deadline)
    if total is not None:
        builder.timeout(total)
    return builder


PyreqwestResponse = TypeVar("PyreqwestResponse", "Response", "SyncResponse")
"""The library's response: an async or a sync client's."""


class PyreqwestHead(StreamHead[PyreqwestResponse]):
    """What both clients' streams share: how the headers, the codings and the reason phrase are read."""

    __slots__ = ("_raw",)
    _raw: list[tuple[bytes, bytes]] | None
    """The header pairs once read; each stream sets it to ``None`` as it is made (no ``__init__`` of its own here)."""

    def _library_headers(self) -> httpx.Headers:
        # Made from the pairs already read: a typed call that succeeds never makes it (it reads no headers).
        return headers_from_library(self.raw_headers())

    def raw_headers(self) -> list[tuple[bytes, bytes]]:
        # Read on every answer: the pairs alone, made once, not the base class's httpx.Headers, costly to make.
        raw = self._raw
        if raw is None:
            raw = self._raw = _raw_pairs(self._response)
        return raw

    def content_codings(self) -> list[bytes]:
        try:
            values = self._response.get_header_all("content-encoding")
        except ValueError:  # not UTF-8: left out, as `_raw_pairs` leaves it out
            return []
        return [value.encode() for value in values]

    def _reason(self) -> str | None:
        # pyreqwest does not hand over the reason phrase the server sent: the standard one stands in.
        try:
            return HTTPStatus(self.status_code).phrase
        except ValueError:
            return None

    def _read_ahead_whole(self) -> bool:
        """Whether the declared body length is within pyreqwest's read-ahead: then it is taken in one call, no loop."""
        length = self._response.get_header("content-length")
        return length is not None and length.isdigit() and int(length) <= _READ_AHEAD
