"""Which HTTP library a client sends through: choosing it, and importing it only when chosen.

An optional library's modules are imported only when a client asks for them, so ``import animalstore_client``
never loads them.
"""

from __future__ import annotations

import importlib
import ssl
import sys
from types import ModuleType
from typing import TYPE_CHECKING, Any, Literal, cast

import httpx

from animalstore_client._core.exceptions import AnimalStoreError, ClientValidationError
from animalstore_client._core.libraries import (
    LIBRARIES,
    OTHER_EXTRAS,
    REMOVED,
    AsyncBackendName,
    BackendName,
    by_name,
    distribution_of,
    for_client,
)
from animalstore_client._core.show import show
from animalstore_client._core.tls import ssl_context

if TYPE_CHECKING:
    from animalstore_client._transports._generated.seam_sync import Transport
    from animalstore_client._transports.seam_async import AsyncTransport

__all__ = [
    "REFUSED_CLIENTS",
    "AsyncBackendName",
    "BackendName",
    "callers_base_url",
    "choose_backend_async",
    "choose_backend_sync",
    "new_transport_async",
    "new_transport_sync",
]


_Table = dict[str, tuple[str, str]]


def _tables(client: Literal["sync", "async"]) -> tuple[_Table, _Table, _Table]:
    """``client``'s tables, by backend: the library client class it tells apart as ``http_client``; its transport
    over a caller's http_client, or over a library client the SDK makes and owns; and its transport over the SDK's
    own pool, where the backend has one (used when no http_client is given)."""
    return (
        {library.name: library.client_classes[client] for library in for_client(client)},
        {library.name: library.transports[client] for library in for_client(client)},
        {library.name: library.own_pools[client] for library in LIBRARIES if client in library.own_pools},
    )


_ASYNC = _tables("async")
_SYNC = _tables("sync")
_ASYNC_CLASSES, _SYNC_CLASSES = _ASYNC[0], _SYNC[0]
REFUSED_CLIENTS = frozenset(library.name for library in LIBRARIES if library.callers_clients_refused)
"""The libraries whose client is told apart as ``http_client`` only to be refused, whatever its settings (a
pyreqwest client may follow redirects, and cannot be told otherwise per request: `_transports.pyreqwest.refusal`)."""
# The libraries whose client may carry credentials it adds to every request, in its public `auth` property.
_CLIENT_AUTH = frozenset(library.name for library in LIBRARIES if library.client_auth)
# The error names the library's own requirement: "animalstore-client[x]" works only from an index that
# has this package, and reinstalls it.
REQUIREMENTS = {
    distribution_of(requirement): requirement
    for requirement in (
        *(r for library in LIBRARIES if library.requirement for r in (library.requirement, *library.also_installs)),
        *(r for extra in OTHER_EXTRAS for r in extra.requirements),
    )
}
"""What each extra installs, by distribution: the install advice of a missing library quotes it."""


def _instead(library: str, classes: _Table) -> str:
    """The other backends of the client whose libraries' classes are ``classes``: ``"httpx" or "pyreqwest"``."""
    names = [f'"{name}"' for name in classes if name != library]
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + f" or {names[-1]}"


def require(library: str) -> ModuleType:
    """Import an optional library, or say exactly how to install it."""
    try:
        return importlib.import_module(library)
    except ImportError:
        raise AnimalStoreError(
            f'backend="{library}" needs the {library} library, which is not installed: '
            f'pip install "{by_name(library).requirement}" (what the [{library}] extra installs)'
        ) from None


def _imported(place: tuple[str, str]) -> Any:
    """The class ``place`` names, ``(module of this package, class)``: imported now, when chosen."""
    module_name, class_name = place
    try:
        module = importlib.import_module(module_name)
    # A library installed in part: its package there, a module of it (ImportError) or a name (AttributeError,
    # from `from library import name` or `library.name` at the transport's import) missing.
    except (ImportError, AttributeError) as error:
        problem = f"{module_name} could not be imported, a library it needs is incomplete: {error}"
        raise AnimalStoreError(problem) from error
    return getattr(module, class_name)


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
    if _is_httpx2_client(http_client):
        theirs: Any = cast("Any", http_client).timeout
        return httpx.Timeout(connect=theirs.connect, read=theirs.read, write=theirs.write, pool=theirs.pool)
    return None


def _is_httpx2_client(http_client: object) -> bool:
    return _is_instance_of(http_client, "httpx2", "Client") or _is_instance_of(http_client, "httpx2", "AsyncClient")


def callers_base_url(http_client: object) -> str | None:
    """The ``base_url`` a caller's httpx or httpx2 client was made with; ``None`` for none, or another library's."""
    if not isinstance(http_client, (httpx.Client, httpx.AsyncClient)) and not _is_httpx2_client(http_client):
        return None
    url = str(cast("Any", http_client).base_url)
    return url or None


def _full_name(cls: type) -> str:
    """``module.Class`` for a class of a library (``httpx2._client.Client``), plain ``str`` for a builtin.

    The class name alone reads as a contradiction when another library has one of the same name.
    """
    module = getattr(cls, "__module__", None)
    return cls.__qualname__ if module in (None, "builtins") else f"{module}.{cls.__qualname__}"


def _article(library: str) -> str:
    """The article before a library's name as it is read aloud: "an httpx2", "an aiohttp", "a pyreqwest"."""
    return "an" if library[0] in "aehio" else "a"


def _choose(backend: object, http_client: object, classes: _Table, transports: _Table) -> str:
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
    names = tuple(classes)
    allowed = ", ".join(repr(name) for name in names[:-1]) + f" or {names[-1]!r}"
    # isinstance first: `in` would call a foreign object's __eq__, which may raise.
    if backend is not None and (not isinstance(backend, str) or backend not in names):
        removed = REMOVED.get(backend) if isinstance(backend, str) else None
        said = f"got {show(backend)}" if removed is None else f"got {show(backend)}, which {removed}"
        raise ClientValidationError(
            f"backend must be {allowed}, {said}", argument="backend", rule=allowed, value=backend
        )
    library_of_client = type(http_client).__module__.partition(".")[0]
    if library_of_client in REMOVED:
        raise ClientValidationError(
            f"http_client is {_article(library_of_client)} {_full_name(type(http_client))}: the {library_of_client} "
            f"backend {REMOVED[library_of_client]}; the backends are {allowed}",
            argument="http_client",
            rule=f"a client of {allowed}",
            value=_full_name(type(http_client)),
        )
    if http_client is None:
        return str(backend or LIBRARIES[0].name)
    detected = next(
        (name for name, (module, cls) in classes.items() if _is_instance_of(http_client, module, cls)), None
    )
    if detected is None:
        kinds = [
            f"{_article(module_name)} {module_name}.{class_name}"
            for library, (module_name, class_name) in classes.items()
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
    return _choose(backend, http_client, *_ASYNC[:2])  # type: ignore[return-value]


def choose_backend_sync(backend: object, http_client: object) -> BackendName:
    """The sync client's library: ``backend``, else what ``http_client`` is, else httpx."""
    return _choose(backend, http_client, *_SYNC[:2])  # type: ignore[return-value]


def _new_transport(
    backend: str,
    http_client: object,
    verify: bool | str | ssl.SSLContext,
    classes: _Table,
    transports: _Table,
    own_pools: _Table,
) -> object:
    """The seam over ``http_client``, or over a new client of ``backend`` that the SDK owns: the client's tables'."""
    declared = by_name(backend)
    if declared.requirement is not None:
        require(backend)
    if backend in own_pools:
        if http_client is None:
            return _imported(own_pools[backend])(ssl_context(verify))
        return _imported(transports[backend])(http_client)
    # A library with a TLS stack of its own (pyreqwest's rustls) takes CA files, no `ssl.SSLContext`.
    if not declared.takes_ssl_context and isinstance(verify, ssl.SSLContext):
        raise ClientValidationError(
            f'backend="{backend}" cannot use verify=<ssl.SSLContext>: its TLS is not the ssl module\'s, and has no '
            "ssl module context. Give verify the path of the CA bundle instead (verify='/path/to/ca.pem'), or use "
            f"another backend (backend={_instead(backend, classes)})",
            argument="verify",
            rule=f"True, False or a CA bundle path with {backend}",
            value=verify,
        )
    return _imported(transports[backend])(http_client, verify=verify)


def new_transport_async(
    backend: AsyncBackendName, http_client: object, *, verify: bool | str | ssl.SSLContext = True
) -> AsyncTransport:
    """The seam over ``http_client``, or over a new client of ``backend`` that the SDK owns."""
    return cast("AsyncTransport", _new_transport(backend, http_client, verify, *_ASYNC))


def new_transport_sync(
    backend: BackendName, http_client: object, *, verify: bool | str | ssl.SSLContext = True
) -> Transport:
    """The seam over ``http_client``, or over a new client of ``backend`` that the SDK owns."""
    return cast("Transport", _new_transport(backend, http_client, verify, *_SYNC))
