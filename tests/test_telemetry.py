"""OpenTelemetry: a span per call, a span per attempt after the HTTP conventions, metrics, on every library.

Spans and metrics are read back with the OpenTelemetry SDK's in-memory span
exporter and metric reader. What touches the global providers or patches
httpx (the httpx instrumentation) runs in a subprocess, so no other test
sees it.
"""

from __future__ import annotations

import logging
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, cast

import httpx
import pytest
from opentelemetry import context as otel_context
from opentelemetry import metrics, propagate, trace
from opentelemetry.instrumentation.utils import is_http_instrumentation_enabled
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import ReadableSpan, Span, SpanProcessor, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode, Tracer
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

from animalstore_client import (
    AnimalStoreClient,
    APIConnectionError,
    BadRequestError,
    CallNext,
    ClientValidationError,
    InternalServerError,
    NotFoundError,
    RetryBudget,
)
from animalstore_client.testing import FakeAnimalStore

from .conftest import ALL_VARIANTS, API_KEY, GET_PET_NOTICE, ClientFactory
from .servers import refused_url
from .tls import ca_file, serve_tls


@dataclass
class Otel:
    """Providers recording in memory, and what they recorded."""

    tracer_provider: TracerProvider
    exporter: InMemorySpanExporter
    meter_provider: MeterProvider
    reader: InMemoryMetricReader

    def spans(self) -> list[ReadableSpan]:
        return list(self.exporter.get_finished_spans())

    def points(self, name: str) -> list[Any]:
        """The data points of metric ``name``."""
        data = self.reader.get_metrics_data()
        found: list[Any] = []
        if data is None:
            return found
        for resource in data.resource_metrics:
            for scope in resource.scope_metrics:
                for metric in scope.metrics:
                    if metric.name == name:
                        found.extend(metric.data.data_points)
        return found


@pytest.fixture
def otel() -> Iterator[Otel]:
    """A tracer and a meter provider of the OpenTelemetry SDK, recording in memory."""
    exporter = InMemorySpanExporter()
    tracer_provider = TracerProvider()
    tracer_provider.add_span_processor(SimpleSpanProcessor(exporter))
    reader = InMemoryMetricReader()
    meter_provider = MeterProvider(metric_readers=[reader])
    yield Otel(tracer_provider, exporter, meter_provider, reader)
    tracer_provider.shutdown()
    meter_provider.shutdown()


@pytest.fixture
def store() -> FakeAnimalStore:
    """An empty fake store with the test key."""
    return FakeAnimalStore(api_keys=[API_KEY])


def _traceparent(span: ReadableSpan) -> str:
    context = span.get_span_context()
    assert context is not None
    return f"00-{context.trace_id:032x}-{context.span_id:016x}-{context.trace_flags:02x}"


def _parent_id(span: ReadableSpan) -> int | None:
    return span.parent.span_id if span.parent is not None else None


@pytest.mark.parametrize("variant", ALL_VARIANTS, indirect=True)
def test_a_retried_call_is_one_span_with_a_child_per_attempt_over_https(
    make_client: ClientFactory, variant: str, store: FakeAnimalStore, otel: Otel
) -> None:
    """Every client and library: list_pets meeting a 503 gives the call span, two attempt spans and their metrics."""
    store.fail_next(503)
    with serve_tls(store) as url:
        client = make_client(
            base_url=url,
            verify=ca_file(),
            tracer_provider=otel.tracer_provider,
            meter_provider=otel.meter_provider,
        )
        assert client.list_pets(limit=5) == []
    port = httpx.URL(url).port
    first, second, call = otel.spans()
    assert call.name == "list_pets"
    assert call.kind is SpanKind.CLIENT
    assert call.attributes is not None
    assert call.attributes["animalstore.attempts"] == 2
    assert call.attributes["animalstore.retry_budget.refused"] is False
    assert call.status.status_code is StatusCode.UNSET
    call_context = call.get_span_context()
    assert call_context is not None
    for attempt in (first, second):
        context = attempt.get_span_context()
        assert context is not None
        assert attempt.name == "GET /pets"
        assert attempt.kind is SpanKind.CLIENT
        assert _parent_id(attempt) == call_context.span_id
        assert context.trace_id == call_context.trace_id
        assert attempt.attributes is not None
        assert attempt.attributes["http.request.method"] == "GET"
        assert attempt.attributes["url.full"] == f"{url}/pets?limit=5"
        assert attempt.attributes["server.address"] == "127.0.0.1"
        assert attempt.attributes["server.port"] == port
        assert attempt.attributes["network.protocol.version"] == "1.1"
    assert first.attributes is not None
    assert second.attributes is not None
    assert first.attributes["http.response.status_code"] == 503
    assert first.attributes["error.type"] == "503"
    assert first.status.status_code is StatusCode.ERROR
    assert "http.request.resend_count" not in first.attributes
    assert second.attributes["http.response.status_code"] == 200
    assert second.attributes["http.request.resend_count"] == 1
    assert "error.type" not in second.attributes
    # The service can join the trace: each attempt carried its own span's context.
    assert [sent.headers["traceparent"] for sent in store.requests] == [_traceparent(first), _traceparent(second)]
    durations = otel.points("http.client.request.duration")
    assert sorted(point.attributes["http.response.status_code"] for point in durations) == [200, 503]
    assert all(point.count == 1 and point.sum > 0 for point in durations)
    assert all(point.attributes["server.port"] == port for point in durations)
    retries = otel.points("animalstore.client.retries")
    assert [(point.value, point.attributes["animalstore.retry.reason"]) for point in retries] == [(1, "503")]


@pytest.mark.parametrize("variant", ["sync", "async"], indirect=True)
def test_a_failed_call_records_its_exception(
    make_client: ClientFactory, variant: str, store: FakeAnimalStore, otel: Otel
) -> None:
    """A 400 ends the call: its span has error.type the exception's class, an exception event, status ERROR."""
    store.fail_next(400)
    with store.serve() as url:
        client = make_client(base_url=url, tracer_provider=otel.tracer_provider)
        with pytest.raises(BadRequestError):
            client.create_pet(name="Rex", category_id=1)
    attempt, call = otel.spans()
    assert call.name == "create_pet"
    assert attempt.name == "POST /pets"
    assert call.attributes is not None
    assert call.attributes["error.type"] == "animalstore_client.BadRequestError"
    assert call.status.status_code is StatusCode.ERROR
    assert [event.name for event in call.events] == ["exception"]
    assert attempt.attributes is not None
    assert attempt.attributes["error.type"] == "400"


@pytest.mark.parametrize("variant", ALL_VARIANTS, indirect=True)
def test_transport_failures_are_typed_per_attempt(make_client: ClientFactory, variant: str, otel: Otel) -> None:
    """Every client and library: a refused connection is error.type httpx.ConnectError on each attempt, and a retry."""
    client = make_client(
        base_url=refused_url(),
        max_retries=1,
        tracer_provider=otel.tracer_provider,
        meter_provider=otel.meter_provider,
    )
    with pytest.raises(APIConnectionError):
        client.list_pets()
    *attempts, call = otel.spans()
    assert [span.attributes["error.type"] for span in attempts if span.attributes] == ["httpx.ConnectError"] * 2
    assert call.attributes is not None
    assert call.attributes["error.type"] == "animalstore_client.APIConnectionError"
    retries = otel.points("animalstore.client.retries")
    assert [point.attributes["animalstore.retry.reason"] for point in retries] == ["httpx.ConnectError"]


def test_a_refused_retry_is_on_the_call_span_and_counted(store: FakeAnimalStore, otel: Otel) -> None:
    """The budget's refusal: animalstore.retry_budget.refused on the call span, one refusal counted by reason."""
    store.fail_next(503, times=5)
    client = store.client(
        retry_budget=RetryBudget(percent=0, min_per_second=0, window=10),
        tracer_provider=otel.tracer_provider,
        meter_provider=otel.meter_provider,
    )
    with pytest.raises(Exception, match="retry budget is exhausted"):
        client.list_pets()
    _attempt, call = otel.spans()
    assert call.attributes is not None
    assert call.attributes["animalstore.retry_budget.refused"] is True
    assert call.attributes["animalstore.attempts"] == 1
    refusals = otel.points("animalstore.client.retry_budget.refusals")
    assert [(point.value, point.attributes["animalstore.retry.reason"]) for point in refusals] == [(1, "503")]


def test_secrets_never_reach_url_full(store: FakeAnimalStore, otel: Otel) -> None:
    """A token in a request()'s query is REDACTED in url.full; the API key is in no span."""
    client = store.client(tracer_provider=otel.tracer_provider)
    with pytest.raises(BadRequestError):  # the store knows no token parameter
        client.request("GET", "/pets", params={"limit": 2, "token": "s3cret"})
    attempt, call = otel.spans()
    assert attempt.attributes is not None
    assert attempt.attributes["url.full"] == "https://fake.animalstore.invalid/v1/pets?limit=2&token=REDACTED"
    assert call.name == "request"
    assert attempt.name == "GET"
    assert "s3cret" not in repr(attempt.to_json())
    for span in (attempt, call):
        assert API_KEY not in repr(span.to_json())


def test_middleware_runs_inside_the_attempt_span(store: FakeAnimalStore, otel: Otel) -> None:
    """The attempt span is current while middleware runs, and its traceparent is already on the request."""
    seen: list[tuple[str, str]] = []

    def look(request: httpx.Request, call_next: CallNext) -> httpx.Response:
        span = trace.get_current_span()
        context = span.get_span_context()
        flags = f"{context.trace_flags:02x}"
        seen.append((request.headers["traceparent"], f"00-{context.trace_id:032x}-{context.span_id:016x}-{flags}"))
        return call_next(request)

    store.client(tracer_provider=otel.tracer_provider, middleware=[look]).list_pets()
    attempt, _call = otel.spans()
    assert seen == [(_traceparent(attempt), _traceparent(attempt))]


def test_with_options_changes_the_providers(store: FakeAnimalStore, otel: Otel) -> None:
    """with_options(tracer_provider=...) sends the copy's spans there; the original records nowhere new."""
    client = store.client()
    client.list_pets()
    assert otel.spans() == []
    client.with_options(tracer_provider=otel.tracer_provider).list_pets()
    assert [span.name for span in otel.spans()] == ["GET /pets", "list_pets"]


@pytest.mark.parametrize("argument", ["tracer_provider", "meter_provider"])
def test_a_provider_that_is_not_one_is_refused(argument: str) -> None:
    """Something without get_tracer / get_meter is refused when the client is made, naming the argument."""
    with pytest.raises(ClientValidationError, match=argument) as caught:
        AnimalStoreClient(API_KEY, **{argument: "console"})  # type: ignore[arg-type]
    assert caught.value.argument == argument


def _run(code: str) -> str:
    result = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, timeout=120, check=False
    )
    assert result.returncode == 0, result.stderr
    return result.stdout.strip()


def test_without_opentelemetry_imported_nothing_of_it_is_loaded() -> None:
    """import animalstore_client and calls with middleware import no OpenTelemetry module."""
    out = _run(
        """
        import sys
        from animalstore_client.testing import FakeAnimalStore
        store = FakeAnimalStore()
        store.fail_next(503)
        store.client(middleware=[lambda request, call_next: call_next(request)]).list_pets()
        print(sorted(name for name in sys.modules if name.startswith("opentelemetry")))
        """
    )
    assert out == "[]"


def test_the_global_providers_are_used_even_when_set_after_the_client_was_made() -> None:
    """No provider configured: nothing recorded; once the application sets the global ones, calls are traced."""
    out = _run(
        """
        from opentelemetry import metrics, trace
        from opentelemetry.sdk.metrics import MeterProvider
        from opentelemetry.sdk.metrics.export import InMemoryMetricReader
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import SimpleSpanProcessor
        from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
        from animalstore_client.testing import FakeAnimalStore

        store = FakeAnimalStore()
        client = store.client()
        client.list_pets()
        exporter = InMemorySpanExporter()
        provider = TracerProvider()
        provider.add_span_processor(SimpleSpanProcessor(exporter))
        trace.set_tracer_provider(provider)
        reader = InMemoryMetricReader()
        metrics.set_meter_provider(MeterProvider(metric_readers=[reader]))
        client.list_pets()
        print([span.name for span in exporter.get_finished_spans()])
        names = [m.name for r in reader.get_metrics_data().resource_metrics for s in r.scope_metrics for m in s.metrics]
        print(names)
        print("traceparent" in store.requests[0].headers, "traceparent" in store.requests[1].headers)
        """
    )
    assert out.splitlines() == ["['GET /pets', 'list_pets']", "['http.client.request.duration']", "False True"]


def test_httpx_instrumentation_does_not_trace_an_attempt_twice() -> None:
    """With opentelemetry-instrumentation-httpx on, an SDK call gives our spans only; plain httpx is still traced."""
    out = _run(
        """
        import httpx
        from opentelemetry import trace
        from opentelemetry.instrumentation.httpx import HTTPXClientInstrumentor
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import SimpleSpanProcessor
        from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
        from animalstore_client import AnimalStoreClient
        from animalstore_client.testing import FakeAnimalStore

        exporter = InMemorySpanExporter()
        provider = TracerProvider()
        provider.add_span_processor(SimpleSpanProcessor(exporter))
        trace.set_tracer_provider(provider)
        HTTPXClientInstrumentor().instrument()
        store = FakeAnimalStore()
        with store.serve() as url:
            httpx.get(url + "/pets", headers={"Authorization": "Bearer test-key"})
            print([span.name for span in exporter.get_finished_spans()])
            exporter.clear()
            with AnimalStoreClient("test-key", base_url=url) as client:
                client.list_pets()
            spans = exporter.get_finished_spans()
            print([span.name for span in spans])
            context = spans[0].get_span_context()
            sent = store.requests[-1].headers["traceparent"]
            print(sent == f"00-{context.trace_id:032x}-{context.span_id:016x}-{context.trace_flags:02x}")
        """
    )
    assert out.splitlines() == ["['GET']", "['GET /pets', 'list_pets']", "True"]


# Telemetry never changes an outcome: what a provider, processor, propagator or instrument raises.


def _broken(what: str) -> RuntimeError:
    return RuntimeError(f"{what} is broken")


class _RaisingProcessor(SpanProcessor):
    """A span processor whose ``on_start`` or ``on_end`` raises."""

    def __init__(self, method: str) -> None:
        self.method = method

    def on_start(self, span: Span, parent_context: otel_context.Context | None = None) -> None:
        if self.method == "on_start":
            raise _broken("on_start")

    def on_end(self, span: ReadableSpan) -> None:
        if self.method == "on_end":
            raise _broken("on_end")


class _NoTracerProvider(TracerProvider):
    """The SDK's tracer provider, whose ``get_tracer`` raises."""

    def get_tracer(self, *args: Any, **kwargs: Any) -> Tracer:
        raise _broken("get_tracer")


class _Breaking:
    """``target``, whose method ``method`` raises, as do those of what its ``create_...`` methods make."""

    def __init__(self, target: object, method: str) -> None:
        self._target = target
        self._method = method

    def __getattr__(self, name: str) -> Any:
        if name == self._method:

            def fail(*args: Any, **kwargs: Any) -> Any:
                raise _broken(name)

            return fail
        value = getattr(self._target, name)
        if not name.startswith("create_"):
            return value

        def create(*args: Any, **kwargs: Any) -> Any:
            return _Breaking(value(*args, **kwargs), self._method)

        return create


class _BreakingMeterProvider(metrics.MeterProvider):
    """``provider``, recording as usual, but ``method`` (of it, its meter or its instruments) raises."""

    def __init__(self, method: str, provider: MeterProvider) -> None:
        self.method = method
        self.provider = provider

    def get_meter(self, *args: Any, **kwargs: Any) -> metrics.Meter:
        if self.method == "get_meter":
            raise _broken("get_meter")
        return cast(metrics.Meter, _Breaking(self.provider.get_meter(*args, **kwargs), self.method))


class _RaisingPropagator(TraceContextTextMapPropagator):
    """The W3C propagator, whose ``inject`` raises."""

    def inject(self, *args: Any, **kwargs: Any) -> None:
        raise _broken("inject")


@dataclass
class Broken:
    """Providers for a client of which one component raises; what still works records into ``otel``."""

    tracer_provider: TracerProvider
    meter_provider: metrics.MeterProvider
    component: str
    """What the warning names."""
    traced: bool
    """Whether spans are still recorded."""
    timed: bool
    """Whether http.client.request.duration is still recorded."""
    counted: bool
    """Whether animalstore.client.retries is still recorded."""


_FAILURES = ["get_tracer", "on_start", "on_end", "inject", "get_meter", "create_histogram", "record", "add"]


@pytest.fixture
def restore_propagator() -> Iterator[None]:
    """The global propagator, as it was before the test."""
    before = propagate.get_global_textmap()
    yield
    propagate.set_global_textmap(before)


def _broken_at(failure: str, otel: Otel) -> Broken:
    tracer: TracerProvider = otel.tracer_provider
    meter: metrics.MeterProvider = otel.meter_provider
    traced = timed = counted = True
    if failure == "get_tracer":
        tracer, component, traced = _NoTracerProvider(), "tracer_provider.get_tracer", False
    elif failure == "on_start":
        otel.tracer_provider.add_span_processor(_RaisingProcessor("on_start"))
        component, traced = "tracer.start_span (sampler or span processor on_start)", False
    elif failure == "on_end":
        # After the exporter's processor, which still sees every span end.
        otel.tracer_provider.add_span_processor(_RaisingProcessor("on_end"))
        component = "span.end (span processor on_end)"
    elif failure == "inject":
        propagate.set_global_textmap(_RaisingPropagator())
        component = "propagator.inject"
    else:
        meter = _BreakingMeterProvider(failure, otel.meter_provider)
        component = {
            "get_meter": "meter_provider.get_meter",
            "create_histogram": "meter.create_histogram (http.client.request.duration)",
            "record": "histogram.record (http.client.request.duration)",
            "add": "counter.add (animalstore.client.retries)",
        }[failure]
        timed = failure in {"add"}
        counted = failure in {"create_histogram", "record"}
    return Broken(tracer, meter, component, traced, timed, counted)


def _warnings(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [
        record.getMessage()
        for record in caplog.records
        if record.name == "animalstore_client" and record.levelno >= logging.WARNING
    ]


@GET_PET_NOTICE
@pytest.mark.usefixtures("restore_propagator")
@pytest.mark.parametrize("failure", _FAILURES)
@pytest.mark.parametrize("variant", ALL_VARIANTS, indirect=True)
def test_a_failing_telemetry_component_changes_no_outcome(
    make_client: ClientFactory,
    variant: str,
    failure: str,
    store: FakeAnimalStore,
    otel: Otel,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Every client and library, each component raising: same results and errors, each pet stored once, one warning."""
    caplog.set_level(logging.WARNING, logger="animalstore_client")
    broken = _broken_at(failure, otel)
    with store.serve() as url:
        client = make_client(base_url=url, tracer_provider=broken.tracer_provider, meter_provider=broken.meter_provider)
        rex = client.create_pet(name="Rex", category_id=1)
        assert rex.name == "Rex"
        store.fail_next(503, retry_after=0)
        assert client.list_pets() == [rex]
        store.fail_next(400)
        with pytest.raises(BadRequestError):
            client.create_pet(name="Tom", category_id=1)
        with pytest.raises(NotFoundError):
            client.request("GET", f"/pets/{rex.id + 1000}")
        tom = client.create_pet(name="Tom", category_id=1)
    assert store.pets == [rex, tom]
    assert [request.method for request in store.requests].count("POST") == 3
    warnings = _warnings(caplog)
    assert len(warnings) == 1, warnings
    assert broken.component in warnings[0]
    assert f"RuntimeError: {failure} is broken" in warnings[0]
    # The rest of the telemetry goes on.
    names = [span.name for span in otel.spans()]
    if broken.traced:
        assert names.count("create_pet") == 3
        assert names.count("GET /pets") == 2
    else:
        assert names == []
        assert not any("traceparent" in request.headers for request in store.requests)
    assert sum(point.count for point in otel.points("http.client.request.duration")) == (6 if broken.timed else 0)
    assert sum(point.value for point in otel.points("animalstore.client.retries")) == (1 if broken.counted else 0)


@GET_PET_NOTICE
@pytest.mark.parametrize("failure", ["on_start", "on_end"])
def test_a_failing_span_leaves_the_context_as_it_was(failure: str, otel: Otel) -> None:
    """A span whose start or end raises: nothing stays attached or suppressed after the call; inside, only a span."""
    otel.tracer_provider.add_span_processor(_RaisingProcessor(failure))
    inside: list[tuple[bool, bool]] = []

    def look(request: httpx.Request, call_next: CallNext) -> httpx.Response:
        inside.append((trace.get_current_span().is_recording(), is_http_instrumentation_enabled()))
        return call_next(request)

    store = FakeAnimalStore(api_keys=[API_KEY])
    client = store.client(tracer_provider=otel.tracer_provider, middleware=[look])
    before = otel_context.get_current()
    client.list_pets()
    with pytest.raises(NotFoundError):
        client.request("GET", "/pets/1")
    assert otel_context.get_current() == before
    assert is_http_instrumentation_enabled()
    # No attempt span when its start failed: nothing is suppressed for it either.
    assert inside == ([(False, True)] * 2 if failure == "on_start" else [(True, False)] * 2)


def test_a_failing_refusal_counter_changes_no_outcome(
    store: FakeAnimalStore, otel: Otel, caplog: pytest.LogCaptureFixture
) -> None:
    """The retry budget's refusal counter raising: the call ends with the same error, budget exhausted; one warning."""
    caplog.set_level(logging.WARNING, logger="animalstore_client")
    store.fail_next(503, times=10)
    client = store.client(
        retry_budget=RetryBudget(percent=0, min_per_second=0, window=10),
        meter_provider=_BreakingMeterProvider("add", otel.meter_provider),
    )
    for _ in range(2):
        with pytest.raises(InternalServerError) as caught:
            client.list_pets()
        assert caught.value.retry_budget_exhausted
    warnings = _warnings(caplog)
    assert len(warnings) == 1, warnings
    assert "counter.add (animalstore.client.retry_budget.refusals)" in warnings[0]


def test_a_failing_global_provider_is_logged_once_for_all_clients() -> None:
    """Clients given no provider share the global telemetry: a failing global processor is one warning for all."""
    out = _run(
        """
        import logging
        from opentelemetry import trace
        from opentelemetry.sdk.trace import SpanProcessor, TracerProvider
        from animalstore_client.testing import FakeAnimalStore

        class Raising(SpanProcessor):
            def on_end(self, span):
                raise RuntimeError("on_end is broken")

        provider = TracerProvider()
        provider.add_span_processor(Raising())
        trace.set_tracer_provider(provider)
        records = []
        handler = logging.Handler()
        handler.emit = records.append
        logging.getLogger("animalstore_client").addHandler(handler)
        store = FakeAnimalStore()
        first, second = store.client(), store.client()
        print(first.create_pet(name="Rex", category_id=1).name, second.create_pet(name="Tom", category_id=1).name)
        print([pet.name for pet in store.pets], [record.levelname for record in records])
        """
    )
    assert out.splitlines() == ["Rex Tom", "['Rex', 'Tom'] ['WARNING']"]
