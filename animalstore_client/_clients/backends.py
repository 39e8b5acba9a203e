"""Which HTTP library a client sends through: choosing it, and importing it only when chosen.

httpx is the default for both clients. httpx2 (both, Python 3.11+), aiohttp
(async), urllib3 (sync) and pyreqwest (both, Python 3.11+) are optional
extras; their modules are imported only when a client asks for them, so
``import animalstore_client`` never loads them. Under ``"httpx"`` and
``"httpx2"`` a client given no ``http_client`` sends through the SDK's own
pool (over httpcore or httpcore2: the same code, generated).
"""

from __future__ import annotations

import importlib
import ssl
import sys
from types import ModuleType
from typing import TYPE_CHECKING, Any, Literal, cast

import httpx

from animalstore_client._core.exceptions import AnimalStoreError, ClientValidationError
from animalstore_client._core.show import show
from animalstore_client._core.tls import ssl_context

if TYPE_CHECKING:
    from animalstore_client._transports._generated.httpx2_sync import Httpx2Transport
    from animalstore_client._transports._generated.httpx_sync import HttpxTransport
    from animalstore_client._transports._generated.pyreqwest_sync import PyreqwestTransport
    from animalstore_client._transports._generated.seam_sync import Transport
    from animalstore_client._transports.aiohttp import AiohttpTransport
    from animalstore_client._transports.httpx2_async import AsyncHttpx2Transport
    from animalstore_client._transports.httpx_async import AsyncHttpxTransport
    from animalstore_client._transports.pool._generated.httpcore2.httpcore2_async import AsyncHttpcore2Transport
    from animalstore_client._transports.pool._generated.httpcore2.httpcore2_sync import Httpcore2Transport
    from animalstore_client._transports.pool._generated.httpcore_sync import HttpcoreTransport
    from animalstore_client._transports.pool.httpcore_async import AsyncHttpcoreTransport
    from animalstore_client._transports.pyreqwest_async import AsyncPyreqwestTransport
    from animalstore_client._transports.seam_async import AsyncTransport
    from animalstore_client._transports.urllib3 import Urllib3Transport

    # The classes `_ASYNC_TRANSPORTS` and `_SYNC_TRANSPORTS` name, held to the seam by the type checkers.
    _ASYNC_SEAM: tuple[type[AsyncTransport], ...] = (
        AsyncHttpxTransport,
        AsyncHttpcoreTransport,
        AsyncHttpx2Transport,
        AsyncHttpcore2Transport,
        AiohttpTransport,
        AsyncPyreqwestTransport,
    )
    _SYNC_SEAM: tuple[type[Transport], ...] = (
        HttpxTransport,
        HttpcoreTransport,
        Httpx2Transport,
        Httpcore2Transport,
        Urllib3Transport,
        PyreqwestTransport,
    )

__all__ = [
    "REFUSED_CLIENTS",
    "AsyncBackendName",
    "BackendName",
    "choose_backend_async",
    "choose_backend_sync",
    "new_transport_async",
    "new_transport_sync",
]

AsyncBackendName = Literal["httpx", "httpx2", "aiohttp", "pyreqwest"]
"""The libraries `AsyncAnimalStoreClient` can send through: its ``backend=`` argument's type."""
BackendName = Literal["httpx", "httpx2", "urllib3", "pyreqwest"]
"""The libraries `AnimalStoreClient` can send through: its ``backend=`` argument's type."""

# The one class of each library a caller may pass as http_client, by client: (module, class).
_ASYNC_CLASSES = {
    "httpx2": ("httpx2", "AsyncClient"),
    "aiohttp": ("aiohttp", "ClientSession"),
    "pyreqwest": ("pyreqwest.client", "Client"),
}
_SYNC_CLASSES = {
    "httpx2": ("httpx2", "Client"),
    "urllib3": ("urllib3", "PoolManager"),
    "pyreqwest": ("pyreqwest.client", "SyncClient"),
}
REFUSED_CLIENTS = frozenset({"pyreqwest"})
"""The libraries whose client is told apart as ``http_client`` only to be refused, whatever its settings.

A built pyreqwest client may follow redirects, and can neither be asked nor
told otherwise per request (`_transports.pyreqwest.refusal` says so to the
caller); ``backend="pyreqwest"`` builds the SDK's own. ``http_client``'s type
(`AsyncHTTPClient`, `HTTPClient`) leaves them out.
"""
# The libraries whose client may carry credentials it adds to every request, in its public `auth` property.
_CLIENT_AUTH = frozenset({"httpx", "httpx2", "aiohttp"})
# Each client's transport for each backend, by client: (module of this package, class), imported
# only when chosen: over a caller's http_client, or over a library client the SDK makes and owns.
_ASYNC_TRANSPORTS = {
    "httpx": ("animalstore_client._transports.httpx_async", "AsyncHttpxTransport"),
    "httpx2": ("animalstore_client._transports.httpx2_async", "AsyncHttpx2Transport"),
    "aiohttp": ("animalstore_client._transports.aiohttp", "AiohttpTransport"),
    "pyreqwest": ("animalstore_client._transports.pyreqwest_async", "AsyncPyreqwestTransport"),
}
_SYNC_TRANSPORTS = {
    "httpx": ("animalstore_client._transports._generated.httpx_sync", "HttpxTransport"),
    "httpx2": ("animalstore_client._transports._generated.httpx2_sync", "Httpx2Transport"),
    "urllib3": ("animalstore_client._transports.urllib3", "Urllib3Transport"),
    "pyreqwest": ("animalstore_client._transports._generated.pyreqwest_sync", "PyreqwestTransport"),
}
# The backends whose client given no http_client sends through the SDK's own pool instead.
_ASYNC_OWN_POOLS = {
    "httpx": ("animalstore_client._transports.pool.httpcore_async", "AsyncHttpcoreTransport"),
    "httpx2": ("animalstore_client._transports.pool._generated.httpcore2.httpcore2_async", "AsyncHttpcore2Transport"),
}
_SYNC_OWN_POOLS = {
    "httpx": ("animalstore_client._transports.pool._generated.httpcore_sync", "HttpcoreTransport"),
    "httpx2": ("animalstore_client._transports.pool._generated.httpcore2.httpcore2_sync", "Httpcore2Transport"),
}
NEEDS_PYTHON = {"httpx2": (3, 11), "pyreqwest": (3, 11)}
"""The oldest Python each optional library runs on, where it is newer than the package's own floor."""
# What each extra installs (pyproject.toml's optional-dependencies; a test keeps them equal). The
# error names the library's own requirement: "animalstore-client[x]" works only from an index
# that has this package, and reinstalls it.
REQUIREMENTS = {
    "aiohttp": "aiohttp>=3.12.4",
    "urllib3": "urllib3>=2.2",
    "pyreqwest": "pyreqwest>=0.15",
    "httpx2": "httpx2>=2.0",
    "httpcore2": "httpcore2>=2.0",
    "opentelemetry-api": "opentelemetry-api>=1.30",
}
"""What each extra installs, by distribution: the install advice of a missing library quotes it."""


def _instead(library: str, classes: dict[str, tuple[str, str]]) -> str:
    """The other backends of the client whose libraries' classes are ``classes``: ``"httpx" or "urllib3"``.

    A suggestion of another backend names only the ones that client has (aiohttp is async only,
    urllib3 sync only) and this Python runs: the names come from the client's own table.
    """
    names = [
        f'"{name}"'
        for name in ("httpx", *classes)
        if name != library and sys.version_info >= NEEDS_PYTHON.get(name, sys.version_info)
    ]
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + f" or {names[-1]}"


def require(library: str, classes: dict[str, tuple[str, str]]) -> ModuleType:
    """Import an optional library, or say exactly how to install it (or which Python it needs).

    ``classes`` are the client's (`_ASYNC_CLASSES` or `_SYNC_CLASSES`), whose other backends are suggested.
    """
    needed = NEEDS_PYTHON.get(library)
    if needed is not None and sys.version_info < needed:
        raise AnimalStoreError(
            f'backend="{library}" needs Python {needed[0]}.{needed[1]} or later ({library} supports no older one); '
            f"this is Python {sys.version_info[0]}.{sys.version_info[1]}: use backend={_instead(library, classes)} here"
        )
    try:
        return importlib.import_module(library)
    except ImportError:
        raise AnimalStoreError(
            f'backend="{library}" needs the {library} library, which is not installed: '
            f'pip install "{REQUIREMENTS[library]}" (what the [{library}] extra installs)'
        ) from None


def _imported(place: tuple[str, str]) -> Any:
    """The class ``place`` names, ``(module of this package, class)``: imported now, when chosen."""
    module_name, class_name = place
    return getattr(importlib.import_module(module_name), class_name)


def _is_instance_of(http_client: object, module_name: str, class_name: str) -> bool:
    # Only a library already imported can have made this object: no import here.
    cls = getattr(sys.modules.get(module_name), class_name, None)
    return isinstance(cls, type) and isinstance(http_client, cls)


def caller_timeout(http_client: object) -> httpx.Timeout | None:
    """The timeout a caller's httpx or httpx2 client was made with, as httpx's; ``None`` for another library's.

    httpx2's `Timeout` is another class with the same four phases, so an
    httpx2 client's is read as httpx's and compared with httpx's stock one.
    """
    if isinstance(http_client, (httpx.Client, httpx.AsyncClient)):
        return http_client.timeout
    if _is_instance_of(http_client, "httpx2", "Client") or _is_instance_of(http_client, "httpx2", "AsyncClient"):
        theirs: Any = cast("Any", http_client).timeout
        return httpx.Timeout(connect=theirs.connect, read=theirs.read, write=theirs.write, pool=theirs.pool)
    return None


def _full_name(cls: type) -> str:
    """``module.Class`` for a class of a library (``httpx2._client.Client``), plain ``str`` for a builtin.

    The class name alone reads as a contradiction when another library has one of the same name.
    """
    module = getattr(cls, "__module__", None)
    return cls.__qualname__ if module in (None, "builtins") else f"{module}.{cls.__qualname__}"


def _article(library: str) -> str:
    """The article before a library's name as it is read aloud: "an httpx2", "an aiohttp", "a urllib3"."""
    return "an" if library[0] in "aehio" else "a"


def _choose(
    backend: object,
    http_client: object,
    others: dict[str, tuple[str, str]],
    httpx_class: type,
    transports: dict[str, tuple[str, str]],
) -> str:
    """The library of ``http_client`` (or ``backend``), once the client is one the SDK can hold to its rules.

    A caller's client is used as it is, but on every send it may not make the SDK
    follow a redirect, send credentials other than the Bearer key, or send one
    attempt's request twice. What each library lets the SDK turn off per request,
    its adapter turns off on each send; what cannot be turned off is refused here,
    before any request: a client with ``auth`` of its own (also turned off per
    send where the library allows, should it be set later), and what the
    adapter's ``refusal(client)`` names (an aiohttp session's auth middleware, any
    pyreqwest client).
    """
    names = ("httpx", *others)
    # isinstance first: `in` would call a foreign object's __eq__, which may raise.
    if backend is not None and (not isinstance(backend, str) or backend not in names):
        allowed = ", ".join(repr(name) for name in names[:-1]) + f" or {names[-1]!r}"
        raise ClientValidationError(
            f"backend must be {allowed}, got {show(backend)}", argument="backend", rule=allowed, value=backend
        )
    if http_client is None:
        return str(backend or "httpx")
    detected = "httpx" if isinstance(http_client, httpx_class) else None
    for library, (module_name, class_name) in others.items():
        if detected is None and _is_instance_of(http_client, module_name, class_name):
            detected = library
    if detected is None:
        kinds = [f"an httpx.{httpx_class.__name__}"] + [
            f"{_article(module_name)} {module_name}.{class_name}"
            for library, (module_name, class_name) in others.items()
            if library not in REFUSED_CLIENTS
        ]
        accepted = ", ".join(kinds[:-1]) + f" or {kinds[-1]}"
        raise ClientValidationError(
            f"http_client must be {accepted}, got {_full_name(type(http_client))}",
            argument="http_client",
            rule=accepted,
            value=http_client,
        )
    own_auth: object = getattr(http_client, "auth", None) if detected in _CLIENT_AUTH else None
    if own_auth is not None:
        # Its auth would replace the Bearer header that carries api_key (httpx's and httpx2's auth flows
        # set Authorization last; aiohttp refuses every request that has both), and would hand the store
        # credentials meant for another service: refused before any request.
        raise ClientValidationError(
            f"http_client must have no auth of its own: the SDK authenticates with api_key (Authorization: "
            f"Bearer), which the client's auth would replace; got {_article(detected)} {detected} client with "
            f"auth={_full_name(type(own_auth))}. Pass a client made without auth= (headers of your own per request "
            "go in middleware=)",
            argument="http_client",
            rule="a client without auth",
            value=f"auth={_full_name(type(own_auth))}",  # not the auth itself: it holds another credential
        )
    refusal = getattr(_imported(transports[detected]), "refusal", None)
    refused: tuple[str, str] | None = None if refusal is None else refusal(http_client)
    if refused is not None:
        message, rule = refused
        raise ClientValidationError(message, argument="http_client", rule=rule, value=_full_name(type(http_client)))
    if backend is not None and backend != detected:
        raise ClientValidationError(
            f"backend={show(backend)} contradicts http_client, which is {_article(detected)} {detected} client: "
            "leave backend out, or pass a client of that library",
            argument="backend",
            rule="the library of http_client",
            value=backend,
        )
    return detected


def choose_backend_async(backend: object, http_client: object) -> AsyncBackendName:
    """The async client's library: ``backend``, else what ``http_client`` is, else httpx."""
    return _choose(backend, http_client, _ASYNC_CLASSES, httpx.AsyncClient, _ASYNC_TRANSPORTS)  # type: ignore[return-value]


def choose_backend_sync(backend: object, http_client: object) -> BackendName:
    """The sync client's library: ``backend``, else what ``http_client`` is, else httpx."""
    return _choose(backend, http_client, _SYNC_CLASSES, httpx.Client, _SYNC_TRANSPORTS)  # type: ignore[return-value]


def _rustls_verify(verify: bool | str | ssl.SSLContext, classes: dict[str, tuple[str, str]]) -> bool | str:
    """``verify`` as pyreqwest can take it: rustls trusts CA files, and has no `ssl.SSLContext`."""
    if isinstance(verify, ssl.SSLContext):
        raise ClientValidationError(
            'backend="pyreqwest" cannot use verify=<ssl.SSLContext>: its TLS (rustls) has no ssl module context. '
            "Give verify the path of the CA bundle instead (verify='/path/to/ca.pem'), or use another backend "
            f"(backend={_instead('pyreqwest', classes)})",
            argument="verify",
            rule="True, False or a CA bundle path with pyreqwest",
            value=verify,
        )
    return verify


def _new_transport(
    backend: str,
    http_client: object,
    verify: bool | str | ssl.SSLContext,
    classes: dict[str, tuple[str, str]],
    transports: dict[str, tuple[str, str]],
    own_pools: dict[str, tuple[str, str]],
) -> object:
    """The seam over ``http_client``, or over a new client of ``backend`` that the SDK owns.

    ``classes``, ``transports`` and ``own_pools`` are the client's own tables (`_ASYNC_CLASSES`...).
    """
    if backend != "httpx":
        require(backend, classes)
    if backend in own_pools:
        if http_client is None:
            return _imported(own_pools[backend])(ssl_context(verify))
        return _imported(transports[backend])(http_client)
    if backend == "pyreqwest":
        verify = _rustls_verify(verify, classes)
    return _imported(transports[backend])(http_client, verify=verify)


def new_transport_async(
    backend: AsyncBackendName, http_client: object, *, verify: bool | str | ssl.SSLContext = True
) -> AsyncTransport:
    """The seam over ``http_client``, or over a new client of ``backend`` that the SDK owns."""
    return cast(
        "AsyncTransport",
        _new_transport(backend, http_client, verify, _ASYNC_CLASSES, _ASYNC_TRANSPORTS, _ASYNC_OWN_POOLS),
    )


def new_transport_sync(
    backend: BackendName, http_client: object, *, verify: bool | str | ssl.SSLContext = True
) -> Transport:
    """The seam over ``http_client``, or over a new client of ``backend`` that the SDK owns."""
    return cast(
        "Transport", _new_transport(backend, http_client, verify, _SYNC_CLASSES, _SYNC_TRANSPORTS, _SYNC_OWN_POOLS)
    )
