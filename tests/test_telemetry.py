"""OpenTelemetry: a span per call, a span per attempt after the HTTP conventions, metrics, on every library.

Spans and metrics are read back with the OpenTelemetry SDK's in-memory span
exporter and metric reader. What touches the global providers or patches
httpx (the httpx instrumentation) runs in a subprocess, so no other test
sees it.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import httpx
import pytest
from opentelemetry import trace
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode

from animalstore_client import (
    AnimalStoreClient,
    APIConnectionError,
    BadRequestError,
    CallNext,
    ClientValidationError,
    RetryBudget,
)
from animalstore_client.testing import FakeAnimalStore

from .conftest import ALL_VARIANTS, API_KEY, ClientFactory
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
