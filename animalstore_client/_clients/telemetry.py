"""OpenTelemetry traces and metrics for each call and attempt; imported only when OpenTelemetry is in use.

The clients import this module only when a ``tracer_provider`` or
``meter_provider`` was given, or the application has imported
``opentelemetry.trace`` or ``opentelemetry.metrics`` itself: nobody can have
configured a provider otherwise. What is emitted: docs/production.md's tables.
"""

# ruff: noqa: BLE001  (telemetry never changes a call's outcome: every Exception of it is caught, logged once)

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

from animalstore_client._core.failures import error_type
from animalstore_client._core.log import logger
from animalstore_client._core.operations import ROUTES
from animalstore_client._core.secrets import redact_url
from animalstore_client._core.validation import CLIENT_HEADERS
from animalstore_client._version import __version__

if TYPE_CHECKING:
    from opentelemetry.metrics import Counter, Histogram, Meter, MeterProvider
    from opentelemetry.trace import Span, Tracer, TracerProvider

    from animalstore_client._core.attempts import Attempts


try:  # the public switch the HTTP instrumentations honour, where one is installed (opentelemetry-instrumentation)
    _utils: object = importlib.import_module("opentelemetry.instrumentation.utils")
except ImportError:
    _utils = None
suppress_http_instrumentation: Callable[[], contextlib.AbstractContextManager[None]] | None = getattr(
    _utils, "suppress_http_instrumentation", None
)

__all__ = ["GLOBAL", "CallObserver", "Telemetry"]

_SCOPE = "animalstore_client"
_SCHEMA_URL = "https://opentelemetry.io/schemas/1.26.0"
_DURATION_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0)
"""The conventions' advice for ``http.client.request.duration``."""
_KNOWN_METHODS = frozenset({"CONNECT", "DELETE", "GET", "HEAD", "OPTIONS", "PATCH", "POST", "PUT", "TRACE"})


def _base(request: httpx.Request) -> dict[str, Any]:
    """The attributes of a call and of each of its attempts: the method, and the server."""
    method, url = request.method, request.url
    base: dict[str, Any] = {"http.request.method": method}
    if method not in _KNOWN_METHODS:
        base = {"http.request.method": "_OTHER", "http.request.method_original": method}
    port = url.port if url.port is not None else (443 if url.scheme == "https" else 80)
    return {**base, "server.address": url.host, "server.port": port}


# What failed, as `Telemetry.failed` names it in its warning: what the SDK called, and what usually raised in it.
_START_SPAN = "tracer.start_span (sampler or span processor on_start)"
_SPAN_ATTRIBUTES = "span.set_attribute, set_status or record_exception"
_END_SPAN = "span.end (span processor on_end)"
_SUPPRESS = "suppress_http_instrumentation"
_OWN = "animalstore_client's telemetry code"
"""A bug of the SDK's own, caught as the others are."""


class _Instruments:
    """A meter's three instruments; one the meter failed to create is ``None``, and only it goes unrecorded."""

    __slots__ = ("complete", "duration", "refusals", "retries")

    def __init__(self, telemetry: Telemetry, meter: Meter) -> None:
        def made(kind: str, name: str, **options: Any) -> Any:
            try:
                return getattr(meter, kind)(name, **options)
            except Exception as exc:
                telemetry.failed(f"meter.{kind} ({name})", exc)
                return None

        self.duration: Histogram | None = made(
            "create_histogram",
            "http.client.request.duration",
            unit="s",
            description="Duration of HTTP client requests: one per attempt.",
            explicit_bucket_boundaries_advisory=list(_DURATION_BUCKETS),
        )
        self.retries: Counter | None = made(
            "create_counter", "animalstore.client.retries", unit="{retry}", description="Retries made, by reason."
        )
        self.refusals: Counter | None = made(
            "create_counter",
            "animalstore.client.retry_budget.refusals",
            unit="{retry}",
            description="Retries the retry budget refused, by reason: the call ended with its error instead.",
        )
        self.complete = self.duration is not None and self.retries is not None and self.refusals is not None


class Telemetry:
    """Where one client's spans and metrics go: the providers it was given, else the global ones, looked up per call
    (so an application may configure OpenTelemetry after making its clients).

    No entry point the clients call raises an `Exception`: what OpenTelemetry raises goes to `failed`. A span
    that failed to start is left out for that call, and the metrics go on; an instrument that failed is left
    out, and the spans go on.
    """

    __slots__ = ("_failed", "_instruments", "_lock", "_meter_provider", "_tracer", "_tracer_provider")

    def __init__(
        self, tracer_provider: TracerProvider | None = None, meter_provider: MeterProvider | None = None
    ) -> None:
        self._tracer_provider = tracer_provider
        self._meter_provider = meter_provider
        self._lock = threading.Lock()
        self._tracer: tuple[object, Tracer] | None = None
        self._instruments: tuple[object, _Instruments] | None = None
        self._failed: set[str] = set()
        """The components whose failure was logged already."""

    def failed(self, component: str, error: Exception) -> None:
        """Log that ``component`` raised ``error``, at WARNING, the first time only; the caller ignores it.

        Never called with ``_lock`` held.
        """
        if component in self._failed:
            return
        with self._lock:
            if component in self._failed:
                return
            self._failed.add(component)
        logger.warning(
            "OpenTelemetry failed, ignored (telemetry never changes a call's outcome): %s raised %s: %s. "
            "Further failures of %s are ignored without a log.",
            component,
            error_type(error),
            error,
            component,
            exc_info=error,
        )

    def _tracer_for_call(self) -> Tracer | None:
        provider = self._tracer_provider
        try:
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
        except Exception as exc:
            # Not remembered: the next call asks again, and traces once the provider works.
            self.failed("tracer_provider.get_tracer", exc)
            return None
        return tracer

    def _instruments_for_call(self) -> _Instruments | None:
        provider = self._meter_provider
        try:
            if provider is None:
                if "opentelemetry.metrics" not in sys.modules:
                    return None  # nobody imported the metrics API: no provider can be set
                from opentelemetry import metrics

                provider = metrics.get_meter_provider()
            cached = self._instruments
            if cached is not None and cached[0] is provider:
                return cached[1]
            with self._lock:
                meter = provider.get_meter(_SCOPE, __version__, schema_url=_SCHEMA_URL)
        except Exception as exc:
            self.failed("meter_provider.get_meter", exc)
            return None
        instruments = _Instruments(self, meter)
        if instruments.complete:
            # An instrument that failed is asked for again at the next call (a meter
            # returns the one it made already for the others) until all three exist.
            self._instruments = (provider, instruments)
        return instruments

    def call(self, operation: str, request: httpx.Request) -> CallObserver | None:
        """The observer of one call, or ``None`` when nothing would be recorded; never raises an `Exception`."""
        try:
            tracer = self._tracer_for_call()
            instruments = self._instruments_for_call()
            if tracer is None and instruments is None:
                return None
            return CallObserver(self, tracer, instruments, operation, request)
        except Exception as exc:
            self.failed(_OWN, exc)
            return None


GLOBAL = Telemetry()
"""The telemetry of clients given no provider: the global ones; failures are logged once for all of them."""


class CallObserver:
    """The span and metrics of one call; `Attempts` tells it of retries and refusals.

    None of its methods raises an `Exception`: what telemetry raises goes to `Telemetry.failed`.
    """

    __slots__ = ("_span", "attempts", "base", "context", "instruments", "operation", "telemetry", "tracer")

    def __init__(
        self,
        telemetry: Telemetry,
        tracer: Tracer | None,
        instruments: _Instruments | None,
        operation: str,
        request: httpx.Request,
    ) -> None:
        self.telemetry = telemetry
        self.tracer = tracer
        """The tracer of this call's spans; ``None`` when nothing is traced, or the call's span failed to start."""
        self.instruments = instruments
        self.operation = operation
        self.base = _base(request)
        self.attempts: Attempts | None = None
        """The call's attempts, once the send loop has them."""
        self._span: Span | None = None
        self.context: otel_context.Context | None = None
        if tracer is not None:
            try:
                span = tracer.start_span(operation, kind=SpanKind.CLIENT, attributes=self.base)
            except Exception as exc:
                telemetry.failed(_START_SPAN, exc)
                self.tracer = None  # no call span: its attempts go untraced too, and the metrics go on
            else:
                self._span = span
                self.context = trace.set_span_in_context(span)

    def retried(self, reason: str) -> None:
        """Count a retry."""
        self._count("retries", "animalstore.client.retries", reason)

    def refused(self, reason: str) -> None:
        """Count a retry the budget refused."""
        self._count("refusals", "animalstore.client.retry_budget.refusals", reason)

    def _count(self, instrument: str, name: str, reason: str) -> None:
        """Add one to the counter ``name`` for ``reason``, unless it failed to be made; failures go to `failed`."""
        counter: Counter | None = getattr(self.instruments, instrument, None)
        if counter is not None:
            try:
                counter.add(1, {**self.base, "animalstore.retry.reason": reason})
            except Exception as exc:
                self.telemetry.failed(f"counter.add ({name})", exc)

    def attempt(self, request: httpx.Request, number: int) -> AttemptObserver | None:
        """Start observing attempt ``number``, whose request is about to go through middleware and out.

        ``None`` only if the observer itself failed (a bug of the SDK's, logged as the others).
        """
        try:
            return AttemptObserver(self, request, number)
        except Exception as exc:
            self.telemetry.failed(_OWN, exc)
            return None

    def finish(self, error: BaseException | None) -> None:
        """End the call's span: after the response was parsed, or with the exception that ended the call."""
        span = self._span
        if span is None:
            return
        attributes: dict[str, Any] = {}
        attempts = self.attempts
        if attempts is not None:
            attributes["animalstore.attempts"] = attempts.count
            attributes["animalstore.retry_budget.refused"] = attempts.budget_refused
        _end_span(self.telemetry, span, attributes, error)


class AttemptObserver:
    """The span and duration of one attempt; current (with HTTP instrumentation suppressed) until it ends.

    Neither ``__init__`` nor `end` raises an `Exception`; the context is attached only
    once the span started, and `end` detaches it (and ends the suppression) first.
    """

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
            route = ROUTES.get(call.operation)
            method = attributes["http.request.method"]
            name = method if route is None or method == "_OTHER" else f"{method} {route}"
            span_attributes = {**attributes, "url.full": redact_url(request.url, userinfo="")}
            if route is not None:
                span_attributes["url.template"] = route
            try:
                span = tracer.start_span(name, context=call.context, kind=SpanKind.CLIENT, attributes=span_attributes)
            except Exception as exc:
                # No span: nothing attached, nothing suppressed, no traceparent; the duration is still recorded.
                call.telemetry.failed(_START_SPAN, exc)
            else:
                context = trace.set_span_in_context(span, call.context)
                try:
                    # Sent on every backend, whatever its instrumentation: the service joins the trace here.
                    # Through a carrier of its own: a propagator may not set a header only the client sets.
                    carrier: dict[str, str] = {}
                    propagate.inject(carrier, context=context)
                    for name, value in carrier.items():
                        if name.lower() not in CLIENT_HEADERS:
                            request.headers[name] = value
                except Exception as exc:
                    call.telemetry.failed("propagator.inject", exc)
                self._token = otel_context.attach(context)
                self._span = span
                if suppress_http_instrumentation is not None:
                    try:
                        suppression = suppress_http_instrumentation()
                        suppression.__enter__()
                    except Exception as exc:
                        call.telemetry.failed(_SUPPRESS, exc)
                    else:
                        self._suppression = suppression
        self._started = time.perf_counter()

    def end(self, response: httpx.Response | None, error: BaseException | None) -> None:
        """End the attempt with its response, or the exception it failed with; record its duration."""
        duration = time.perf_counter() - self._started
        span = self._span
        if span is not None:
            # First, whatever fails after: the context as before the attempt, instrumentation no longer suppressed.
            suppression = self._suppression
            if suppression is not None:
                try:
                    suppression.__exit__(None, None, None)
                except Exception as exc:
                    self._call.telemetry.failed(_SUPPRESS, exc)
            otel_context.detach(self._token)  # type: ignore[arg-type]  # logs what fails, never raises
        attributes = self._attributes
        try:
            _outcome(attributes, response, error)
        except Exception as exc:
            self._call.telemetry.failed(_OWN, exc)
        if span is not None:
            _end_span(self._call.telemetry, span, attributes, None)
        instruments = self._call.instruments
        if instruments is not None and instruments.duration is not None:
            try:
                instruments.duration.record(duration, _metric_attributes(attributes))
            except Exception as exc:
                self._call.telemetry.failed("histogram.record (http.client.request.duration)", exc)


def _end_span(telemetry: Telemetry, span: Span, attributes: dict[str, Any], error: BaseException | None) -> None:
    """Set ``attributes`` on ``span``, with an error status (and ``error`` recorded) if it failed, and end it."""
    try:
        if error is not None:
            attributes["error.type"] = error_type(error)
        span.set_attributes(attributes)
        if error is not None:
            span.record_exception(error)
            span.set_status(Status(StatusCode.ERROR, type(error).__name__))
        elif "error.type" in attributes:
            span.set_status(Status(StatusCode.ERROR, attributes["error.type"]))
    except Exception as exc:
        telemetry.failed(_SPAN_ATTRIBUTES, exc)
    try:
        span.end()
    except Exception as exc:
        telemetry.failed(_END_SPAN, exc)


def _outcome(attributes: dict[str, Any], response: httpx.Response | None, error: BaseException | None) -> None:
    """Add what an attempt ended with to its ``attributes``."""
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


# The resend count is a span's business: as a metric attribute it would split every series.
_SPAN_ONLY = frozenset({"http.request.method_original", "http.request.resend_count"})


def _metric_attributes(attributes: Mapping[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in attributes.items() if key not in _SPAN_ONLY}
