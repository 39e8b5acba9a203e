"""What both clients share: configuration, `with_options`, pickling, the properties; no I/O."""

from __future__ import annotations

import copy
import functools
import os
import ssl
import sys
from collections.abc import Callable, Mapping, Sequence
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any, Generic, Protocol, Self, TypeVar

import httpx

from animalstore_client._clients.backends import callers_base_url
from animalstore_client._clients.insecure import warn_if_insecure, warn_if_unverified
from animalstore_client._clients.options import Arguments, Settings, new_settings
from animalstore_client._clients.shells import Pool, Wiring, telemetry_unavailable
from animalstore_client._core.body import ACCEPT_ENCODING
from animalstore_client._core.budget import RetryBudget
from animalstore_client._core.deprecation import warn_at_callers_line
from animalstore_client._core.environments import Environment
from animalstore_client._core.exceptions import AnimalStoreError, ClientValidationError
from animalstore_client._core.libraries import by_name
from animalstore_client._core.log import configure_from_env
from animalstore_client._core.middleware import AsyncMiddleware, Middleware
from animalstore_client._core.operations import RequestConfig
from animalstore_client._core.secrets import forget_locals, redact_url
from animalstore_client._core.tls import ssl_context
from animalstore_client._core.validation import NOT_GIVEN, NotGiven
from animalstore_client._version import __version__

if TYPE_CHECKING:
    from animalstore_client._clients.optional_types import MeterProvider, TracerProvider
    from animalstore_client._clients.telemetry import Telemetry

__all__ = ["BaseClient", "telemetry_for"]


T = TypeVar("T")


def _user_agent(library: str) -> str:
    """``animalstore-client-python/<v> <library>/<v> Python/<v>``: the library that sends, as ``transport.library``."""
    python = "{}.{}.{}".format(*sys.version_info[:3])
    return f"animalstore-client-python/{__version__} {library} Python/{python}"


class _Sender(Protocol):
    """What `BaseClient` reads of its client's sender (`AsyncSender` or `Sender`)."""

    settings: Settings[Any, Any]
    pool: Pool
    telemetry: Telemetry | None
    closed: bool

    def derived(self, settings: Any, pool: Pool, telemetry: Telemetry | None) -> Self: ...


S = TypeVar("S", bound=_Sender)
B = TypeVar("B", bound=str)
M = TypeVar("M")


class BaseClient(Generic[S]):
    """Configuration shared by both clients; no I/O. ``S`` is the client's sender, which holds its settings."""

    _sender: S
    _owns_pool: bool
    _config: RequestConfig
    _wiring: Wiring | None = None
    _new_transport: Callable[..., Any]
    """The client's `new_transport_async` (or sync): a transport of the SDK's own for a new pool."""
    _check_middleware: Callable[[object], tuple[Any, ...]]
    """The client's `check_middleware_async` (or sync), for `with_options`."""

    def _checked(
        self,
        given: Arguments,
        choose_backend: Callable[[object, object], B],
        check_middleware: Callable[[object], tuple[M, ...]],
    ) -> Settings[B, M]:
        """The constructor's arguments checked and kept, as the client's `Settings`."""
        # A module a call imports first holds its import lock in that thread while it loads, and a child forked
        # then waits on the lock for ever: socket.getaddrinfo looks up the idna codec on a process's first connect.
        # Imported here rather than with the SDK (2.5 % of `import animalstore_client`): once, by the first client.
        import encodings.idna  # noqa: F401  # pyright: ignore[reportUnusedImport]

        configure_from_env(os.environ)
        settings = new_settings(given, choose_backend=choose_backend, check_middleware=check_middleware)
        http_client = given.http_client
        # Built now, so a CA file that is not one fails here rather than inside a call.
        self._ssl_context = ssl_context(settings.verify) if http_client is None else None
        # The environment's proxies apply unless the caller's own client ignores them.
        self._env_proxies = http_client is None or bool(getattr(http_client, "trust_env", False))
        # Frames: here, the client's __init__, the caller.
        warn_if_insecure(settings.base_url, stacklevel=3, env_proxies=self._env_proxies)
        warn_if_unverified(settings.base_url, settings.verify, stacklevel=3)
        return settings

    def _pool_for(self, settings: Settings[Any, Any], http_client: object) -> Pool:
        """The pool of a new client: over ``http_client``, or over a transport of the SDK's own."""
        # A library that takes no `ssl.SSLContext` (pyreqwest's rustls) gets ``verify`` itself.
        verify = (self._ssl_context or True) if by_name(settings.backend).takes_ssl_context else settings.verify
        transport = self._new_transport(settings.backend, http_client, verify=verify)
        remake = functools.partial(self._new_transport, settings.backend, None, verify=verify)
        self._owns_pool = http_client is None
        return Pool(transport, owned=self._owns_pool, remake=remake)

    @property
    def _settings(self) -> Settings[Any, Any]:
        return self._sender.settings

    def _warn_once_made(self, http_client: object) -> None:
        """Warn at the caller's line of a ``base_url`` of the caller's own client, which the SDK does not use (its
        requests would otherwise be silently redirected); a client loaded from a pickle does not warn again."""
        if _REMAKING.get():
            return
        theirs = callers_base_url(http_client)
        ours = self._settings.base_url
        if theirs is not None and theirs.rstrip("/") != ours.rstrip("/"):
            warn_at_callers_line(
                f"http_client's base_url ({redact_url(theirs)}) is not used: the SDK sends every request to its own "
                f"base_url ({redact_url(ours)}). Pass base_url= (or environment=) to the SDK's client instead, or "
                "make http_client without a base_url",
                UserWarning,
            )

    def _request_config(self) -> RequestConfig:
        """What every request of this client is built with: its base URL, headers and timeout."""
        settings, transport = self._settings, self._sender.pool.transport
        # The httpx client's own headers (Accept-Encoding, a caller's tracing
        # headers) come first, so that headers the SDK needs always win.
        headers = httpx.Headers(transport.default_headers)
        headers["Accept"] = "application/json"
        headers["Accept-Encoding"] = ACCEPT_ENCODING  # only the codings the send loop can undo itself
        headers["User-Agent"] = _user_agent(transport.library)
        for name, value in settings.default_headers.items():
            headers[name] = value
        headers["Authorization"] = f"Bearer {settings.api_key}"
        return RequestConfig(base_url=settings.base_url, headers=dict(headers.items()), timeout=settings.timeout)

    def _derive(self, given: Arguments) -> Self:
        """A copy of this client with `with_options`'s arguments applied."""
        verify_given = given.verify is not NOT_GIVEN
        sender = self._sender

        def refuse_unowned(verify: object) -> None:
            if not sender.pool.owned:
                raise ClientValidationError(
                    "verify applies to the SDK's own connection pool; this client sends through a caller's "
                    "http_client, which keeps its own trust settings",
                    argument="verify",
                    rule="only for a client without http_client",
                    value=verify,
                )

        def warn_plain_http(base_url: str) -> None:
            # Frames: here, base_url() in Settings.changed, Settings.changed, _derive, with_options, the caller.
            warn_if_insecure(base_url, stacklevel=6, env_proxies=self._env_proxies)

        settings = sender.settings.changed(
            given, check_middleware=self._check_middleware, on_verify=refuse_unowned, on_base_url=warn_plain_http
        )
        clone = copy.copy(self)
        state = vars(clone)
        state.pop("with_raw_response", None)  # the cached view is bound to this client's config
        state["_owns_pool"] = False  # only the client that created the pool closes it
        telemetry = sender.telemetry
        if given.tracer_provider is not NOT_GIVEN or given.meter_provider is not NOT_GIVEN:
            telemetry = telemetry_for(settings.tracer_provider, settings.meter_provider)
        pool = sender.pool
        if verify_given:
            state["_ssl_context"] = ssl_context(settings.verify)
            # Other trust needs other connections: a pool of the new client's own, which it closes.
            wiring = self._wiring
            if wiring is not None and wiring.new_transport is not None:
                pool = Pool(wiring.new_transport(), owned=True, remake=wiring.new_transport)
            else:
                pool = clone._pool_for(settings, None)  # noqa: SLF001  # the same class
            state["_owns_pool"] = True
        state["_sender"] = sender.derived(settings, pool, telemetry)
        if verify_given or given.base_url is not NOT_GIVEN or given.environment is not NOT_GIVEN:
            warn_if_unverified(settings.base_url, settings.verify, stacklevel=3)
        state["_config"] = clone._request_config()  # noqa: SLF001  # the same class
        return clone

    def with_options(
        self,
        *,
        # <options: with_options> written by scripts/codegen.py from _clients.options.OPTIONS
        api_key: str | NotGiven = NOT_GIVEN,
        environment: Environment | str | NotGiven = NOT_GIVEN,
        base_url: str | NotGiven = NOT_GIVEN,
        timeout: float | httpx.Timeout | NotGiven | None = NOT_GIVEN,
        max_retries: int | NotGiven = NOT_GIVEN,
        default_headers: Mapping[str, str] | NotGiven = NOT_GIVEN,
        total_timeout: float | NotGiven | None = NOT_GIVEN,
        max_response_bytes: int | NotGiven | None = NOT_GIVEN,
        verify: bool | str | os.PathLike[str] | ssl.SSLContext | NotGiven = NOT_GIVEN,
        middleware: Sequence[Middleware] | Sequence[AsyncMiddleware] | NotGiven | None = NOT_GIVEN,
        retry_budget: RetryBudget | NotGiven | None = NOT_GIVEN,
        tracer_provider: TracerProvider | NotGiven | None = NOT_GIVEN,
        meter_provider: MeterProvider | NotGiven | None = NOT_GIVEN,
        # </options>
    ) -> Self:
        """A new client with some options changed, sharing this one's connection pool and retry budget.

        ``default_headers`` are merged into the current ones; ``base_url``
        wins over ``environment``; ``middleware`` replaces the list (extend it
        with ``[*client.middleware, more]``); ``retry_budget`` replaces the
        shared budget (``None`` turns it off for the copy). Closing the new
        client leaves the pool open. ``verify`` is the exception: other trust
        settings need other connections, so the new client gets a pool of its
        own and closes it.

        ```python
        patient = client.with_options(timeout=120, max_retries=5, total_timeout=600)
        ```
        """
        # <options: given changes> written by scripts/codegen.py from _clients.options.OPTIONS
        given = Arguments(
            api_key=api_key,
            environment=environment,
            base_url=base_url,
            timeout=timeout,
            max_retries=max_retries,
            default_headers=default_headers,
            total_timeout=total_timeout,
            max_response_bytes=max_response_bytes,
            verify=verify,
            middleware=middleware,
            retry_budget=retry_budget,
            tracer_provider=tracer_provider,
            meter_provider=meter_provider,
        )
        # </options>
        try:
            return self._derive(given)
        except BaseException as exc:
            # The traceback keeps this frame, and those below it, for a crash reporter to read: no secret.
            kept = self._settings.api_key
            forget_locals(exc, (api_key, kept) if isinstance(api_key, str) else (kept,))
            # This frame is still running, so it cannot be cleared: its secrets go by hand.
            del api_key, base_url, default_headers, kept, given
            raise

    @property
    def retry_budget(self) -> RetryBudget | None:
        """The `RetryBudget` this client's retries draw on, shared with its `with_options` copies; or ``None``."""
        return self._settings.retry_budget

    @property
    def base_url(self) -> str:
        """The base URL requests go to, without a trailing slash."""
        return self._settings.base_url

    @property
    def timeout(self) -> httpx.Timeout:
        """The timeout applied to each request unless a call passes its own."""
        return self._settings.timeout

    @property
    def max_retries(self) -> int:
        """How many times a failed request may be retried."""
        return self._settings.max_retries

    @property
    def total_timeout(self) -> float | None:
        """Seconds one call may take in all, retries and sleeps included; ``None`` for no deadline."""
        return self._settings.total_timeout

    @property
    def max_response_bytes(self) -> int | None:
        """The largest response body read, after decoding; ``None`` for no cap."""
        return self._settings.max_response_bytes

    @property
    def is_closed(self) -> bool:
        """Whether this client was closed (or shares a pool that was)."""
        sender = self._sender
        return sender.closed or bool(sender.pool.transport.is_closed)

    def __copy__(self) -> Self:
        # A shallow copy shares the pool (what with_options builds on); pickling and
        # deepcopy go through __reduce__ and make a client with a pool of its own.
        clone = object.__new__(type(self))
        clone.__dict__.update(self.__dict__)
        return clone

    def __reduce__(self) -> tuple[Any, ...]:
        """Pickle as the client's settings: loaded, in any process, it is an equivalent client with a new pool.

        The settings include the API key: the loaded client must act with
        it. What cannot cross a process is refused with the reason and what
        to do instead.
        """
        name = type(self).__name__
        if self._wiring is not None and self._wiring.in_memory:
            raise AnimalStoreError(
                f"This {name} is bound to an in-memory FakeAnimalStore, which stays in this process: to ship a "
                "client to other processes, serve the store (with store.serve() as url: ...) and pickle "
                f"{name}(store.api_key, base_url=url) (loaded, it sleeps between retries "
                "as any client does: the kit's instant retries stay with the store)."
            )
        if not self._sender.pool.owned:
            raise AnimalStoreError(
                f"This {name} sends through your http_client, whose connections belong to this process: "
                f"pickle an {name} made without http_client (it opens its own pool where it is loaded), or make "
                "the client and its http client in the process that uses them."
            )
        if self.is_closed:
            raise AnimalStoreError(f"This {name} is closed; pickle an open client.")
        if isinstance(self._settings.verify, ssl.SSLContext):
            raise AnimalStoreError(
                f"This {name} was given verify=<ssl.SSLContext>, which cannot be pickled: give verify the path "
                "of the CA bundle instead (verify='/path/to/ca.pem'), which the loaded client loads again."
            )
        if self._sender.telemetry is not None:
            raise AnimalStoreError(
                f"This {name} was given a tracer_provider or meter_provider, which hold locks and threads of "
                "this process: pickle client.with_options(tracer_provider=None, meter_provider=None), whose "
                "loaded copy uses the global providers the worker sets up."
            )
        return (_load_client, (type(self), self._settings.pickled()))

    def __repr__(self) -> str:
        # The key is deliberately absent: reprs end up in logs and tracebacks.
        sender = getattr(self, "_sender", None)
        if sender is None:
            # A constructor that refused its arguments leaves ``self`` in the traceback's frame locals, and a
            # crash reporter calls repr on it: that must not raise.
            return f"<{type(self).__name__}, not created>"
        settings = sender.settings
        return f"{type(self).__name__}(base_url={settings.base_url!r}, max_retries={settings.max_retries})"

    def _closed_by_owner(self) -> None:
        """After the pool's owner closed it: whatever the kit set up for this client goes too."""
        wiring = self._wiring
        if wiring is not None and wiring.on_close is not None and self._owns_pool:
            wiring.on_close()


_REMAKING: ContextVar[bool] = ContextVar("_REMAKING", default=False)
"""True while `_load_client` makes a client again: the caller's construction warned already, where it was written."""


def _load_client(cls: Callable[..., T], settings: dict[str, Any]) -> T:
    """A client pickled by `BaseClient.__reduce__`, made again from its settings (its pool opens on first use)."""
    token = _REMAKING.set(True)
    try:
        return cls(settings.pop("api_key"), **settings)
    finally:
        _REMAKING.reset(token)


def telemetry_for(tracer_provider: object, meter_provider: object) -> Telemetry | None:
    """The telemetry of a client given these providers; ``None`` means the global providers, looked up per call."""
    if tracer_provider is None and meter_provider is None:
        return None
    try:
        from animalstore_client._clients.telemetry import Telemetry
    except ImportError as exc:
        from animalstore_client._clients.backends import REQUIREMENTS

        raise AnimalStoreError(
            "tracer_provider and meter_provider need the OpenTelemetry API: pip install "
            f'"{REQUIREMENTS["opentelemetry-api"]}" (what the [otel] extra installs)'
        ) from exc
    except Exception as exc:  # noqa: BLE001  # installed but failing to import: telemetry never stops a client
        telemetry_unavailable(exc)
        return None
    return Telemetry(tracer_provider, meter_provider)  # type: ignore[arg-type]
