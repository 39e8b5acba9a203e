"""OpenTelemetry traces and metrics for each call and attempt; imported only when OpenTelemetry is in use.

The clients import this module only when a ``tracer_provider`` or
``meter_provider`` was given, or the application has imported
``opentelemetry.trace`` or ``opentelemetry.metrics`` itself: nobody can have
configured a provider otherwise, so ``import animalstore_client`` and every
call of an application without OpenTelemetry stay free of it.

What is emitted follows OpenTelemetry's stable HTTP client conventions:

- a span per call, named after the operation (``list_pets``...), kind
  CLIENT, with ``animalstore.attempts`` and ``animalstore.retry_budget.refused``;
- a child span per attempt, kind CLIENT, named after the method and route
  (``GET /pets``), with ``http.request.method``, ``url.full`` (no
  credentials; secret-looking query values redacted), ``server.address``,
  ``server.port``, ``network.protocol.version``, ``http.response.status_code``,
  ``http.request.resend_count`` on a retry, and ``error.type`` on failure.
  Its ``traceparent`` (and ``tracestate``, through the global propagator) is
  sent with the attempt, and HTTP instrumentation of the library below
  (opentelemetry-instrumentation-httpx, -aiohttp-client, -urllib3) is
  suppressed for it, so the attempt is not traced twice;
- ``http.client.request.duration`` (histogram, seconds, per attempt),
  ``animalstore.client.retries`` and ``animalstore.client.retry_budget.refusals``
  (counters, by ``animalstore.retry.reason``).
"""

from __future__ import annotations

import contextlib
import importlib
import sys
import threading
import time
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

import httpx
from opentelemetry import context as otel_context
from opentelemetry import propagate, trace
from opentelemetry.trace import SpanKind, Status, StatusCode

from ._sending import error_type
from ._version import __version__

if TYPE_CHECKING:
    from opentelemetry.metrics import Counter, Histogram, MeterProvider
    from opentelemetry.trace import Span, Tracer, TracerProvider

    from ._sending import Attempts


def _http_suppressor() -> Callable[[], contextlib.AbstractContextManager[None]] | None:
    """The public switch the HTTP instrumentations honour, where one is installed (opentelemetry-instrumentation)."""
    try:
        utils = importlib.import_module("opentelemetry.instrumentation.utils")
    except ImportError:
        return None
    return getattr(utils, "suppress_http_instrumentation", None)


suppress_http_instrumentation = _http_suppressor()

__all__ = ["CallObserver", "Telemetry", "global_telemetry"]

_SCOPE = "animalstore_client"
_SCHEMA_URL = "https://opentelemetry.io/schemas/1.26.0"
_DURATION_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0)
"""The conventions' advice for ``http.client.request.duration``."""
_KNOWN_METHODS = frozenset({"CONNECT", "DELETE", "GET", "HEAD", "OPTIONS", "PATCH", "POST", "PUT", "TRACE"})
_ROUTES = {"list_pets": "/pets", "create_pet": "/pets", "get_pet": "/pets/{petId}"}
_SECRET_QUERY_KEYS = frozenset(
    {
        # The conventions' list...
        "awsaccesskeyid",
        "signature",
        "sig",
        "x-goog-signature",
        # ...and names that carry a credential as often.
        "access_token",
        "api_key",
        "apikey",
        "key",
        "password",
        "secret",
        "token",
    }
)
_REDACTED = "REDACTED"


def full_url(url: httpx.URL) -> str:
    """``url`` for ``url.full``: no user or password, and secret-looking query values replaced."""
    if url.userinfo:
        url = url.copy_with(username=None, password=None)
    if url.query and any(key.lower() in _SECRET_QUERY_KEYS for key in url.params):
        url = url.copy_with(
            params=[
                (key, _REDACTED if key.lower() in _SECRET_QUERY_KEYS else value)
                for key, value in url.params.multi_items()
            ]
        )
    return str(url)


def _server(url: httpx.URL) -> dict[str, Any]:
    port = url.port if url.port is not None else (443 if url.scheme == "https" else 80)
    return {"server.address": url.host, "server.port": port}


def _method(method: str) -> dict[str, Any]:
    if method in _KNOWN_METHODS:
        return {"http.request.method": method}
    return {"http.request.method": "_OTHER", "http.request.method_original": method}


class _Instruments:
    __slots__ = ("duration", "refusals", "retries")

    def __init__(self, provider: MeterProvider) -> None:
        meter = provider.get_meter(_SCOPE, __version__, schema_url=_SCHEMA_URL)
        self.duration: Histogram = meter.create_histogram(
            "http.client.request.duration",
            unit="s",
            description="Duration of HTTP client requests: one per attempt.",
            explicit_bucket_boundaries_advisory=list(_DURATION_BUCKETS),
        )
        self.retries: Counter = meter.create_counter(
            "animalstore.client.retries", unit="{retry}", description="Retries made, by reason."
        )
        self.refusals: Counter = meter.create_counter(
            "animalstore.client.retry_budget.refusals",
            unit="{retry}",
            description="Retries the retry budget refused, by reason: the call ended with its error instead.",
        )


class Telemetry:
    """Where one client's spans and metrics go: the providers it was given, else the global ones, looked up per call.

    Looking the global providers up at each call lets an application
    configure OpenTelemetry after making its clients.
    """

    __slots__ = ("_instruments", "_lock", "_meter_provider", "_tracer", "_tracer_provider")

    def __init__(
        self, tracer_provider: TracerProvider | None = None, meter_provider: MeterProvider | None = None
    ) -> None:
        self._tracer_provider = tracer_provider
        self._meter_provider = meter_provider
        self._lock = threading.Lock()
        self._tracer: tuple[object, Tracer] | None = None
        self._instruments: tuple[object, _Instruments] | None = None

    @property
    def tracer_provider(self) -> TracerProvider | None:
        """The tracer provider given, or ``None`` for the global one."""
        return self._tracer_provider

    @property
    def meter_provider(self) -> MeterProvider | None:
        """The meter provider given, or ``None`` for the global one."""
        return self._meter_provider

    def _tracer_for_call(self) -> Tracer | None:
        provider = self._tracer_provider
        if provider is None:
            provider = trace.get_tracer_provider()
            if isinstance(provider, trace.ProxyTracerProvider):
                return None  # nobody set a global provider: nothing would be recorded
        cached = self._tracer
        if cached is not None and cached[0] is provider:
            return cached[1]
        with self._lock:
            tracer = provider.get_tracer(_SCOPE, __version__, schema_url=_SCHEMA_URL)
            self._tracer = (provider, tracer)
        return tracer

    def _instruments_for_call(self) -> _Instruments | None:
        provider = self._meter_provider
        if provider is None:
            if "opentelemetry.metrics" not in sys.modules:
                return None  # nobody imported the metrics API: no provider can be set
            from opentelemetry import metrics

            provider = metrics.get_meter_provider()
        cached = self._instruments
        if cached is not None and cached[0] is provider:
            return cached[1]
        with self._lock:
            instruments = _Instruments(provider)
            self._instruments = (provider, instruments)
        return instruments

    def call(self, operation: str, request: httpx.Request) -> CallObserver | None:
        """The observer of one call, or ``None`` when nothing would be recorded."""
        tracer = self._tracer_for_call()
        instruments = self._instruments_for_call()
        if tracer is None and instruments is None:
            return None
        return CallObserver(tracer, instruments, operation, request)


_global = Telemetry()


def global_telemetry() -> Telemetry:
    """The telemetry of clients given no provider: the global ones."""
    return _global


class CallObserver:
    """The span and metrics of one call; `Attempts` tells it of retries and refusals."""

    __slots__ = ("_span", "attempts", "base", "context", "instruments", "operation", "tracer")

    def __init__(
        self, tracer: Tracer | None, instruments: _Instruments | None, operation: str, request: httpx.Request
    ) -> None:
        self.tracer = tracer
        self.instruments = instruments
        self.operation = operation
        self.base = {**_method(request.method), **_server(request.url)}
        self.attempts: Attempts | None = None
        """The call's attempts, once the send loop has them."""
        self._span: Span | None = None
        self.context: otel_context.Context | None = None
        if tracer is not None:
            self._span = tracer.start_span(operation, kind=SpanKind.CLIENT, attributes=self.base)
            self.context = trace.set_span_in_context(self._span)

    def retried(self, reason: str) -> None:
        """Count a retry."""
        if self.instruments is not None:
            self.instruments.retries.add(1, {**self.base, "animalstore.retry.reason": reason})

    def refused(self, reason: str) -> None:
        """Count a retry the budget refused."""
        if self.instruments is not None:
            self.instruments.refusals.add(1, {**self.base, "animalstore.retry.reason": reason})

    def attempt(self, request: httpx.Request, number: int) -> AttemptObserver:
        """Start observing attempt ``number``, whose request is about to go through middleware and out."""
        return AttemptObserver(self, request, number)

    def finish(self, error: BaseException | None) -> None:
        """End the call's span: after the response was parsed, or with the exception that ended the call."""
        span = self._span
        if span is None:
            return
        attempts = self.attempts
        if attempts is not None:
            span.set_attribute("animalstore.attempts", attempts.count)
            span.set_attribute("animalstore.retry_budget.refused", attempts.budget_refused)
        if error is not None:
            span.set_attribute("error.type", error_type(error))
            span.record_exception(error)
            span.set_status(Status(StatusCode.ERROR, f"{type(error).__name__}"))
        span.end()


class AttemptObserver:
    """The span and duration of one attempt; current (with HTTP instrumentation suppressed) until it ends."""

    __slots__ = ("_attributes", "_call", "_span", "_started", "_suppression", "_token")

    def __init__(self, call: CallObserver, request: httpx.Request, number: int) -> None:
        self._call = call
        attributes: dict[str, Any] = dict(call.base)
        if number > 1:
            attributes["http.request.resend_count"] = number - 1
        self._attributes = attributes
        self._span: Span | None = None
        self._token: object = None
        self._suppression: contextlib.AbstractContextManager[None] | None = None
        tracer = call.tracer
        if tracer is not None:
            route = _ROUTES.get(call.operation)
            method = attributes["http.request.method"]
            name = method if route is None or method == "_OTHER" else f"{method} {route}"
            span_attributes = {**attributes, "url.full": full_url(request.url)}
            if route is not None:
                span_attributes["url.template"] = route
            span = self._span = tracer.start_span(
                name,
                context=call.context,
                kind=SpanKind.CLIENT,
                attributes=span_attributes,
            )
            context = trace.set_span_in_context(span, call.context)
            # Sent on every backend, whatever its instrumentation: the service joins the trace here.
            propagate.inject(request.headers, context=context)
            self._token = otel_context.attach(context)
            if suppress_http_instrumentation is not None:
                self._suppression = suppress_http_instrumentation()
                self._suppression.__enter__()
        self._started = time.perf_counter()

    def end(self, response: httpx.Response | None, error: BaseException | None) -> None:
        """End the attempt with its response, or the exception it failed with; record its duration."""
        duration = time.perf_counter() - self._started
        attributes = self._attributes
        if response is not None:
            status = response.status_code
            attributes["http.response.status_code"] = status
            version = response.http_version
            if version.startswith("HTTP/"):
                attributes["network.protocol.version"] = version[5:]
            if status >= 400:
                attributes["error.type"] = str(status)
        elif error is not None:
            attributes["error.type"] = error_type(error)
        span = self._span
        if span is not None:
            try:
                if self._suppression is not None:
                    self._suppression.__exit__(None, None, None)
            finally:
                otel_context.detach(self._token)  # type: ignore[arg-type]
            span.set_attributes(attributes)
            if "error.type" in attributes:
                span.set_status(Status(StatusCode.ERROR, attributes["error.type"]))
            span.end()
        instruments = self._call.instruments
        if instruments is not None:
            instruments.duration.record(duration, _metric_attributes(attributes))


_METRIC_KEYS = (
    "http.request.method",
    "server.address",
    "server.port",
    "http.response.status_code",
    "network.protocol.version",
    "error.type",
)


def _metric_attributes(attributes: Mapping[str, Any]) -> dict[str, Any]:
    # The resend count is a span's business: as a metric attribute it would split every series.
    return {key: attributes[key] for key in _METRIC_KEYS if key in attributes}
