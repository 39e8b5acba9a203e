"""Every client option, declared once: its name, type, default, check and description.

`OPTIONS` is the one list. The client constructors, `with_options` and the
testing kit's client factories have explicit, typed signatures, written into
their modules from this list by ``scripts/codegen.py`` (``--check`` in CI), and
their bodies pass the arguments on by name; `Settings` holds the checked
values a client keeps, and pickling sends those of the options marked
``pickled``. A test compares every signature with this list.

Adding an option: an `Option` here (with its check, for a plain value), a
`Settings` field beside it, and the code that uses it; then run
``python scripts/codegen.py``.
"""

from __future__ import annotations

import dataclasses
import os
import ssl
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import httpx

from ._budget import RetryBudget
from ._defaults import DEFAULT_TIMEOUT, HTTPX_DEFAULT_TIMEOUT
from ._environments import API_KEY_VARIABLE, normalize_base_url, parse_environment, resolve_base_url
from ._exceptions import AnimalStoreError, ClientValidationError
from ._middleware import check_middleware
from ._tls import check_verify
from ._validation import (
    NOT_GIVEN,
    check_api_key,
    check_headers,
    check_max_response_bytes,
    check_max_retries,
    check_timeout,
    check_total_timeout,
)

__all__ = ["OPTIONS", "Option", "Settings"]


@dataclass(frozen=True)
class Option:
    """One client option, as every signature that takes it spells it.

    ``annotation`` and ``default`` are source text, in the async client's
    spelling (``scripts/unasync.py`` spells the sync one); ``changes`` is
    `with_options`'s annotation, or ``None`` where the option cannot change
    on a copy; ``kit`` says whether the testing kit's client factories take it.
    """

    name: str
    annotation: str
    default: str
    doc: str
    check: Callable[[object], object] | None = None
    """For an option whose value is kept as checked, with no other option involved: the check."""
    changes: str | None = None
    kit: bool = True
    pickled: bool = True


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
        check=check_max_retries,
        changes="int | NotGiven",
    ),
    Option(
        "default_headers",
        "Mapping[str, str] | None",
        "None",
        "Headers sent with every request.",
        changes="Mapping[str, str] | NotGiven",
    ),
    Option(
        "http_client",
        "httpx.AsyncClient | aiohttp.ClientSession | pyreqwest.client.Client | None",
        "None",
        "An `httpx.AsyncClient`, `aiohttp.ClientSession` or\n"
        "`pyreqwest.client.Client` to send through; the SDK does not close it.",
        kit=False,
        pickled=False,
    ),
    Option(
        "total_timeout",
        "float | None",
        "DEFAULT_TOTAL_TIMEOUT",
        "Seconds one call may take in all (attempts, sleeps, bodies);\n``None`` for no deadline.",
        check=check_total_timeout,
        changes="float | NotGiven | None",
    ),
    Option(
        "max_response_bytes",
        "int | None",
        "DEFAULT_MAX_RESPONSE_BYTES",
        "The largest response body read, after decoding;\n``None`` for no cap (unsafe with servers you do not trust).",
        check=check_max_response_bytes,
        changes="int | NotGiven | None",
    ),
    Option(
        "backend",
        "AsyncBackendName | None",
        "None",
        'The HTTP library to send through: ``"httpx"`` (the default),\n'
        '``"aiohttp"`` (installed by the ``[aiohttp]`` extra) or ``"pyreqwest"``\n'
        "(the ``[pyreqwest]`` extra, Python 3.11+; the fastest). Left out, it\n"
        "follows from ``http_client``.",
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
        check=_check_budget,
        changes="RetryBudget | NotGiven | None",
    ),
    Option(
        "tracer_provider",
        "TracerProvider | None",
        "None",
        "The OpenTelemetry tracer provider for spans (installed by the\n"
        "``[otel]`` extra); by default the global one, if set.",
        check=_provider_check("tracer_provider", "get_tracer", "TracerProvider"),
        changes="TracerProvider | NotGiven | None",
        pickled=False,
    ),
    Option(
        "meter_provider",
        "MeterProvider | None",
        "None",
        "The OpenTelemetry meter provider for metrics; by default the\nglobal one.",
        check=_provider_check("meter_provider", "get_meter", "MeterProvider"),
        changes="MeterProvider | NotGiven | None",
        pickled=False,
    ),
)

OPTION_NAMES = frozenset(option.name for option in OPTIONS)
_PLAIN = tuple(option for option in OPTIONS if option.check is not None)


@dataclass(frozen=True)
class Settings:
    """The checked options a client keeps; `with_options` copies share what they do not change.

    One field per option but ``environment`` (which sets ``base_url``) and
    ``http_client`` (which becomes the client's pool). ``api_key`` is left
    out of the ``repr``: reprs end up in logs and tracebacks.
    """

    api_key: str = dataclasses.field(repr=False)
    base_url: str
    timeout: httpx.Timeout
    max_retries: int
    default_headers: Mapping[str, str]
    total_timeout: float | None
    max_response_bytes: int | None
    backend: str
    verify: bool | str | ssl.SSLContext
    middleware: tuple[Any, ...]
    retry_budget: RetryBudget | None
    tracer_provider: Any
    meter_provider: Any

    @classmethod
    def from_arguments(
        cls, given: Mapping[str, Any], *, is_async: bool, choose_backend: Callable[[object, object], str]
    ) -> Settings:
        """The settings of a new client from its constructor's arguments (`OPTIONS` by name); raises on a bad one."""
        env = os.environ
        http_client = given["http_client"]
        api_key = given["api_key"]
        if api_key is None:
            api_key = env.get(API_KEY_VARIABLE, "").strip() or None
            if api_key is None:
                raise AnimalStoreError(
                    "No API key given: pass api_key=... to the client or set the "
                    f"{API_KEY_VARIABLE} environment variable."
                )
        timeout = given["timeout"]
        if timeout is NOT_GIVEN:
            # A caller's own httpx client keeps its timeout unless it is
            # httpx's stock 5 s, which is shorter than this API needs.
            timeout = (
                http_client.timeout
                if isinstance(http_client, (httpx.Client, httpx.AsyncClient))
                and http_client.timeout != HTTPX_DEFAULT_TIMEOUT
                else DEFAULT_TIMEOUT
            )
        verify = given["verify"]
        if http_client is not None and verify is not True:
            raise ClientValidationError(
                "verify applies to the SDK's own connection pool; a caller's http_client keeps its own "
                "trust settings: configure them on it, or leave http_client out",
                argument="verify",
                rule="left out (True) when http_client is given",
                value=verify,
            )
        plain: dict[str, Any] = {option.name: option.check(given[option.name]) for option in _PLAIN}  # type: ignore[misc]
        return cls(
            backend=choose_backend(given["backend"], http_client),
            api_key=check_api_key(api_key),
            base_url=resolve_base_url(base_url=given["base_url"], environment=given["environment"], env=env),
            timeout=check_timeout(timeout),
            default_headers=check_headers(given["default_headers"], "default_headers"),
            verify=check_verify(verify),
            middleware=check_middleware(given["middleware"], is_async=is_async),
            **plain,
        )

    def changed(self, given: Mapping[str, Any], *, is_async: bool) -> Settings:
        """These settings with `with_options`'s arguments applied: only those given (not `NOT_GIVEN`)."""
        changes: dict[str, Any] = {
            option.name: option.check(given[option.name])  # type: ignore[misc]
            for option in _PLAIN
            if given.get(option.name, NOT_GIVEN) is not NOT_GIVEN
        }
        if given["api_key"] is not NOT_GIVEN:
            changes["api_key"] = check_api_key(given["api_key"])
        # base_url wins over environment.
        if given["base_url"] is not NOT_GIVEN:
            changes["base_url"] = normalize_base_url(given["base_url"], argument="base_url")
        elif given["environment"] is not NOT_GIVEN:
            changes["base_url"] = parse_environment(given["environment"], argument="environment").base_url
        if given["timeout"] is not NOT_GIVEN:
            changes["timeout"] = check_timeout(given["timeout"])
        if given["default_headers"] is not NOT_GIVEN:
            changes["default_headers"] = {
                **self.default_headers,
                **check_headers(given["default_headers"], "default_headers"),
            }
        if given["verify"] is not NOT_GIVEN:
            changes["verify"] = check_verify(given["verify"])
        if given["middleware"] is not NOT_GIVEN:
            changes["middleware"] = check_middleware(given["middleware"], is_async=is_async)
        return dataclasses.replace(self, **changes)

    def pickled(self) -> dict[str, object]:
        """The constructor arguments that make these settings again, in another process: the API key too."""
        values = {option.name: getattr(self, option.name) for option in OPTIONS if option.pickled}
        values["middleware"] = list(self.middleware)
        return values
