"""Every client option, declared once (`OPTIONS`), and `Settings`, the checked values a client keeps. Adding one:
docs/architecture.md (a name new to annotations needs its import where ``scripts/codegen.py`` writes regions)."""

from __future__ import annotations

import os
import ssl
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Generic, NamedTuple, TypeVar, cast

import attrs
import httpx

from animalstore_client._clients.backends import caller_timeout
from animalstore_client._core.budget import RetryBudget
from animalstore_client._core.defaults import DEFAULT_TIMEOUT, HTTPX_DEFAULT_TIMEOUT
from animalstore_client._core.environments import (
    API_KEY_VARIABLE,
    normalize_base_url,
    parse_environment,
    resolve_base_url,
)
from animalstore_client._core.exceptions import AnimalStoreError, ClientValidationError
from animalstore_client._core.secrets import redact_url
from animalstore_client._core.tls import check_verify
from animalstore_client._core.validation import (
    NOT_GIVEN,
    check_api_key,
    check_headers,
    check_max_response_bytes,
    check_max_retries,
    check_timeout,
    check_total_timeout,
)

if TYPE_CHECKING:
    from animalstore_client._core.environments import Environment

T = TypeVar("T")
B = TypeVar("B", bound=str)
M = TypeVar("M")

__all__ = ["OPTIONS", "Arguments", "Option", "Settings", "new_settings"]


class Option(NamedTuple):
    """One client option, as every signature that takes it spells it.

    ``annotation`` and ``default`` are source text, in the async client's spelling; ``changes`` is `with_options`'s
    annotation (``None``: fixed on a copy); ``kit``: the testing kit's factories take it; ``pickled``: a pickle
    carries it. Not a dataclass: one would cost ``import animalstore_client`` about a millisecond more.
    """

    name: str
    annotation: str
    default: str
    doc: str
    changes: str | None = None
    kit: bool = True
    pickled: bool = True

    def __repr__(self) -> str:
        return f"Option({self.name!r})"


def _check_budget(value: object) -> RetryBudget | None:
    if value is NOT_GIVEN:
        return RetryBudget()
    if value is None or isinstance(value, RetryBudget):
        return value
    raise ClientValidationError(
        f"retry_budget must be a RetryBudget or None (no budget), got {value!r}",
        argument="retry_budget",
        rule="a RetryBudget, or None",
        value=value,
    )


def _provider_check(argument: str, method: str, kind: str) -> Callable[[object], object]:
    def check(value: object) -> object:
        if value is not None and not callable(getattr(value, method, None)):
            raise ClientValidationError(
                f"{argument} must be an OpenTelemetry {kind} (with .{method}()), or None for the global one; "
                f"got {type(value).__name__}",
                argument=argument,
                rule=f"an object with .{method}(), or None",
                value=value,
            )
        return value

    return check


_TIMEOUT = "float | httpx.Timeout | NotGiven | None"

OPTIONS: tuple[Option, ...] = (
    Option(
        "api_key",
        "str | None",
        "None",
        "The bearer API key; defaults to ``ANIMALSTORE_API_KEY``.",
        changes="str | NotGiven",
    ),
    Option(
        "environment",
        "Environment | str | None",
        "None",
        '``"production"``, ``"staging"`` or an `Environment`.',
        changes="Environment | str | NotGiven",
        kit=False,
        pickled=False,
    ),
    Option(
        "base_url",
        "str | None",
        "None",
        "A full base URL replacing the environment's.",
        changes="str | NotGiven",
        kit=False,
    ),
    Option(
        "timeout",
        _TIMEOUT,
        "NOT_GIVEN",
        "Seconds, an `httpx.Timeout`, or ``None`` for no timeout at all.",
        changes=_TIMEOUT,
    ),
    Option(
        "max_retries",
        "int",
        "DEFAULT_MAX_RETRIES",
        "Retries after the first attempt; ``0`` disables them.",
        changes="int | NotGiven",
    ),
    Option(
        "default_headers",
        "Mapping[str, str] | None",
        "None",
        "Headers sent with every request.",
        changes="Mapping[str, str] | NotGiven",
    ),
    # Neither this text nor backend's names a library: `AsyncHTTPClient`'s and `AsyncBackendName`'s docs, written
    # from _core.libraries, do, so a new library changes no text here.
    Option(
        "http_client",
        "AsyncHTTPClient | None",
        "None",
        "A client of one of the libraries `AsyncHTTPClient` names, to send\n"
        "through; the SDK does not close it. Typed by the members of the\n"
        "optional libraries' classes (Protocols), so the type is complete\n"
        "without them installed; the class itself is checked when the client\n"
        "is made.",
        kit=False,
        pickled=False,
    ),
    Option(
        "total_timeout",
        "float | None",
        "DEFAULT_TOTAL_TIMEOUT",
        "Seconds one call may take in all (attempts, sleeps, bodies);\n``None`` for no deadline.",
        changes="float | NotGiven | None",
    ),
    Option(
        "max_response_bytes",
        "int | None",
        "DEFAULT_MAX_RESPONSE_BYTES",
        "The largest response body read, after decoding;\n``None`` for no cap (unsafe with servers you do not trust).",
        changes="int | NotGiven | None",
    ),
    Option(
        "backend",
        "AsyncBackendName | None",
        "None",
        "The HTTP library to send through, by name: one of `AsyncBackendName`,\n"
        "whose docs say the extra and Python each needs. Left out, the library\n"
        'of ``http_client``, else ``"httpx"``.',
    ),
    Option(
        "verify",
        "bool | str | os.PathLike[str] | ssl.SSLContext",
        "True",
        "Which TLS certificates the SDK's own connection pool trusts: ``True``\n"
        "(certifi's bundle, or ``SSL_CERT_FILE``/``SSL_CERT_DIR``), the path of a CA\n"
        "bundle, an `ssl.SSLContext`, or ``False`` (no check; warns unless the host\n"
        "is loopback). A caller's ``http_client`` keeps its own trust settings.",
        changes="bool | str | os.PathLike[str] | ssl.SSLContext | NotGiven",
        kit=False,
    ),
    Option(
        "middleware",
        "Sequence[AsyncMiddleware] | None",
        "None",
        "`AsyncMiddleware` run around each attempt, the first outermost.",
        changes="Sequence[Middleware] | Sequence[AsyncMiddleware] | NotGiven | None",
    ),
    Option(
        "retry_budget",
        "RetryBudget | NotGiven | None",
        "NOT_GIVEN",
        "The `RetryBudget` bounding this client's retries (by default a\n"
        "new ``RetryBudget()``: 20 % of recent calls, at least 10 a second);\n``None`` for none.",
        changes="RetryBudget | NotGiven | None",
    ),
    Option(
        "tracer_provider",
        "TracerProvider | None",
        "None",
        "The OpenTelemetry tracer provider for spans (installed by the\n"
        "``[otel]`` extra); by default the global one, if set.",
        changes="TracerProvider | NotGiven | None",
        pickled=False,
    ),
    Option(
        "meter_provider",
        "MeterProvider | None",
        "None",
        "The OpenTelemetry meter provider for metrics; by default the\nglobal one.",
        changes="MeterProvider | NotGiven | None",
        pickled=False,
    ),
)

_check_tracer_provider = _provider_check("tracer_provider", "get_tracer", "TracerProvider")
_check_meter_provider = _provider_check("meter_provider", "get_meter", "MeterProvider")


@attrs.define(kw_only=True, repr=False, eq=False)
class Arguments:
    """The options one constructor, `with_options` or kit factory call was given, unchecked, by name (to follow one
    from signature to use); one a call does not take stays `NOT_GIVEN`. No ``repr``: it holds the API key."""

    # <options: arguments> written by scripts/codegen.py from _clients.options.OPTIONS
    api_key: object = NOT_GIVEN
    environment: object = NOT_GIVEN
    base_url: object = NOT_GIVEN
    timeout: object = NOT_GIVEN
    max_retries: object = NOT_GIVEN
    default_headers: object = NOT_GIVEN
    http_client: object = NOT_GIVEN
    total_timeout: object = NOT_GIVEN
    max_response_bytes: object = NOT_GIVEN
    backend: object = NOT_GIVEN
    verify: object = NOT_GIVEN
    middleware: object = NOT_GIVEN
    retry_budget: object = NOT_GIVEN
    tracer_provider: object = NOT_GIVEN
    meter_provider: object = NOT_GIVEN
    # </options>

    def __repr__(self) -> str:
        return "Arguments(...)"


def _kept_or(given: object, kept: T, check: Callable[[Any], T]) -> T:
    """What `Settings.changed` keeps of one option: the current value if not given, else the given one checked."""
    return kept if given is NOT_GIVEN else check(given)


@attrs.frozen(repr=False)
class Settings(Generic[B, M]):
    """The checked options a client keeps (`with_options` copies share the rest): one field per option but
    ``environment`` (sets ``base_url``) and ``http_client`` (the pool); ``B``: ``backend=`` names, ``M``: middleware."""

    api_key: str
    base_url: str
    timeout: httpx.Timeout
    max_retries: int
    default_headers: Mapping[str, str]
    total_timeout: float | None
    max_response_bytes: int | None
    backend: B
    verify: bool | str | ssl.SSLContext
    middleware: tuple[M, ...]
    retry_budget: RetryBudget | None
    tracer_provider: object
    meter_provider: object

    def __repr__(self) -> str:
        # No secret: not the key, and no header value (default headers may carry tokens of their own).
        return f"Settings(base_url={redact_url(self.base_url)!r}, backend={self.backend!r}, ...)"

    def changed(
        self,
        given: Arguments,
        *,
        check_middleware: Callable[[object], tuple[M, ...]],
        on_verify: Callable[[object], None],
        on_base_url: Callable[[str], None],
    ) -> Settings[B, M]:
        """These settings with `with_options`'s given arguments applied, checked in one order so that of several bad
        ones the same is named: ``on_verify`` before ``verify`` is checked, ``on_base_url`` once a new one is."""

        def verify(value: object) -> bool | str | ssl.SSLContext:
            on_verify(value)
            return check_verify(value)

        def base_url() -> str:
            if given.base_url is not NOT_GIVEN:  # base_url wins over environment
                url = normalize_base_url(given.base_url, argument="base_url")
                on_base_url(url)
                return url
            if given.environment is not NOT_GIVEN:
                return parse_environment(given.environment, argument="environment").base_url
            return self.base_url

        return attrs.evolve(  # the keywords are evaluated, so checked, in this order
            self,
            middleware=_kept_or(given.middleware, self.middleware, check_middleware),
            retry_budget=_kept_or(given.retry_budget, self.retry_budget, _check_budget),
            tracer_provider=_kept_or(given.tracer_provider, self.tracer_provider, _check_tracer_provider),
            meter_provider=_kept_or(given.meter_provider, self.meter_provider, _check_meter_provider),
            verify=_kept_or(given.verify, self.verify, verify),
            api_key=_kept_or(given.api_key, self.api_key, check_api_key),
            base_url=base_url(),
            timeout=_kept_or(given.timeout, self.timeout, check_timeout),
            max_retries=_kept_or(given.max_retries, self.max_retries, check_max_retries),
            default_headers=_kept_or(
                given.default_headers,
                self.default_headers,
                lambda v: {**self.default_headers, **check_headers(v, "default_headers")},
            ),
            total_timeout=_kept_or(given.total_timeout, self.total_timeout, check_total_timeout),
            max_response_bytes=_kept_or(given.max_response_bytes, self.max_response_bytes, check_max_response_bytes),
        )

    def pickled(self) -> dict[str, object]:
        """The constructor arguments that make these settings again, in another process: the API key too."""
        values = {option.name: getattr(self, option.name) for option in OPTIONS if option.pickled}
        values["middleware"] = list(self.middleware)
        return values


def new_settings(
    given: Arguments,
    *,
    choose_backend: Callable[[object, object], B],
    check_middleware: Callable[[object], tuple[M, ...]],
) -> Settings[B, M]:
    """The settings of a new client from its constructor's arguments, checked in `OPTIONS`' order (the
    ``verify``/``http_client`` conflict last) so that of several bad ones the same is named; raises on a bad one."""
    env = os.environ
    http_client = given.http_client
    backend = choose_backend(given.backend, http_client)
    api_key = given.api_key
    if api_key is None:
        api_key = env.get(API_KEY_VARIABLE, "").strip() or None
        if api_key is None:
            raise AnimalStoreError(
                f"No API key given: pass api_key=... to the client or set the {API_KEY_VARIABLE} environment variable."
            )
    api_key = check_api_key(api_key)
    # The constructor's own types (Arguments holds them as object): resolve_base_url checks them anyway.
    base_url = resolve_base_url(
        base_url=cast("str | None", given.base_url),
        environment=cast("Environment | str | None", given.environment),
        env=env,
    )
    timeout = given.timeout
    if timeout is NOT_GIVEN:
        # A caller's httpx (or httpx2) client keeps its timeout unless it is the stock 5 s, too short for this API.
        theirs = caller_timeout(http_client)
        timeout = theirs if theirs is not None and theirs != HTTPX_DEFAULT_TIMEOUT else DEFAULT_TIMEOUT
    settings = Settings(
        api_key=api_key,
        base_url=base_url,
        timeout=check_timeout(timeout),
        max_retries=check_max_retries(given.max_retries),
        default_headers=check_headers(given.default_headers, "default_headers"),
        total_timeout=check_total_timeout(given.total_timeout),
        max_response_bytes=check_max_response_bytes(given.max_response_bytes),
        backend=backend,
        verify=check_verify(given.verify),
        middleware=check_middleware(given.middleware),
        retry_budget=_check_budget(given.retry_budget),
        tracer_provider=_check_tracer_provider(given.tracer_provider),
        meter_provider=_check_meter_provider(given.meter_provider),
    )
    if http_client is not None and given.verify is not True:
        raise ClientValidationError(
            "verify applies to the SDK's own connection pool; a caller's http_client keeps its own "
            "trust settings: configure them on it, or leave http_client out",
            argument="verify",
            rule="left out (True) when http_client is given",
            value=given.verify,
        )
    return settings
