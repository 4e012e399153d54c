"""Spans and trace context through a topology, on the TopologyTestDriver (the same task core the runtime and
Spark engines drive): OpenTelemetry's SDK with an in-memory exporter, as a user's unit test would set it up.

The sampler follows the parent, and starts no trace but a punctuation's: a record that carries a sampled context
is traced, one that carries none is not, so one process-wide provider shows both paths.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

pytest.importorskip("opentelemetry.sdk")

from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.sdk.trace.sampling import ALWAYS_OFF, ALWAYS_ON, ParentBased, Sampler, SamplingResult

from streamlet import Consumed, Grouped, Materialized, Produced, Serdes, StreamsBuilder
from streamlet.processor import Processor, ProcessorContext, PunctuationType
from streamlet.record import Record
from streamlet.testing import TopologyTestDriver

S = Serdes.String()
TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736"
PRODUCER_SPAN = "00f067aa0ba902b7"
TRACEPARENT = f"00-{TRACE_ID}-{PRODUCER_SPAN}-01".encode()


class _PunctuationsAndChildren(Sampler):
    """Samples what its parent sampled, and starts traces at punctuations only."""

    def __init__(self) -> None:
        self._children = ParentBased(ALWAYS_OFF)

    def should_sample(self, parent_context: Any, trace_id: int, name: str, *args: Any, **kwargs: Any
                      ) -> SamplingResult:
        chosen = ALWAYS_ON if name.startswith("punctuate") else self._children
        return chosen.should_sample(parent_context, trace_id, name, *args, **kwargs)

    def get_description(self) -> str:
        return "punctuations and sampled parents' children"


@pytest.fixture(scope="module")
def exporter() -> InMemorySpanExporter:
    exporter = InMemorySpanExporter()
    provider = TracerProvider(sampler=_PunctuationsAndChildren())
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    trace.set_tracer_provider(provider)
    if trace.get_tracer_provider() is not provider:
        pytest.skip("another test of this process set OpenTelemetry's tracer provider first")
    return exporter


@pytest.fixture
def spans(exporter: InMemorySpanExporter) -> Iterator[InMemorySpanExporter]:
    exporter.clear()
    yield exporter
    exporter.clear()


def _counts() -> Any:
    builder = StreamsBuilder()
    (builder.stream("orders", Consumed(S, S))
     .map_values(str.upper)
     .group_by(lambda _k, v: v, Grouped(S, S))
     .count(Materialized.as_("counts"))
     .to_stream().map_values(str).to("out", Produced(S, S)))
    return builder.build()


def _config(**extra: Any) -> dict[str, Any]:
    return {"application.id": "traced", "tracing.enabled": True, "statestore.cache.max.bytes": 0, **extra}


def _traceparent(headers: Any) -> str | None:
    found = [value.decode() for key, value in headers if key == "traceparent"]
    assert len(found) <= 1, headers
    return found[0] if found else None


def test_a_producers_trace_goes_through_the_repartition_into_the_output(spans: InMemorySpanExporter) -> None:
    with TopologyTestDriver(_counts(), _config()) as driver:
        orders = driver.create_input_topic("orders", S, S)
        out = driver.create_output_topic("out", S, S)
        orders.pipe_input("o1", "apple", 1000, headers=(("traceparent", TRACEPARENT), ("app", b"x")))
        records = out.read_records_to_list()
    assert [(r.key, r.value) for r in records] == [("APPLE", "1")]
    finished: list[ReadableSpan] = list(spans.get_finished_spans())
    by_name = {span.name: span for span in finished}
    assert sorted(by_name) == ["process orders", "process traced-counts-repartition"]
    first, second = by_name["process orders"], by_name[
        "process traced-counts-repartition"]
    assert {f"{s.context.trace_id:032x}" for s in finished} == {TRACE_ID}
    assert first.parent is not None and f"{first.parent.span_id:016x}" == PRODUCER_SPAN
    assert second.parent is not None and second.parent.span_id == first.context.span_id
    assert first.attributes is not None and first.attributes["messaging.destination.name"] == "orders"
    assert first.attributes["messaging.kafka.offset"] == 0
    assert first.kind is trace.SpanKind.CONSUMER
    # The output carries the context of the span that produced it, and the record's other headers.
    assert _traceparent(records[0].headers) == f"00-{TRACE_ID}-{second.context.span_id:016x}-01"
    assert ("app", b"x") in records[0].headers


def test_a_record_without_context_is_not_traced_when_the_sampler_says_no(spans: InMemorySpanExporter) -> None:
    with TopologyTestDriver(_counts(), _config()) as driver:
        orders = driver.create_input_topic("orders", S, S)
        out = driver.create_output_topic("out", S, S)
        orders.pipe_input("o1", "apple", 1000, headers=(("app", b"x"),))
        records = out.read_records_to_list()
    assert [(r.key, r.value, r.headers) for r in records] == [("APPLE", "1", (("app", b"x"),))]
    assert spans.get_finished_spans() == ()


def test_tracing_off_changes_nothing(spans: InMemorySpanExporter) -> None:
    with TopologyTestDriver(_counts(), _config(**{"tracing.enabled": False})) as driver:
        orders = driver.create_input_topic("orders", S, S)
        out = driver.create_output_topic("out", S, S)
        orders.pipe_input("o1", "apple", 1000, headers=(("traceparent", TRACEPARENT),))
        records = out.read_records_to_list()
    assert _traceparent(records[0].headers) == TRACEPARENT.decode()
    assert spans.get_finished_spans() == ()


class _Failing(Processor):
    def process(self, record: Record) -> None:
        raise ValueError("bad order")


def test_a_failing_record_ends_its_span_with_the_error(spans: InMemorySpanExporter) -> None:
    builder = StreamsBuilder()
    builder.stream("orders", Consumed(S, S)).process(_Failing)
    config = _config(**{"processing.exception.handler": "log_and_continue"})
    with TopologyTestDriver(builder.build(), config) as driver:
        driver.create_input_topic("orders", S, S).pipe_input("o1", "x", 1, headers=(("traceparent", TRACEPARENT),))
    (span,) = spans.get_finished_spans()
    assert span.name == "process orders" and span.end_time is not None


class _Ticker(Processor):
    def init(self, context: ProcessorContext) -> None:
        super().init(context)
        context.schedule(1000, PunctuationType.STREAM_TIME, lambda ts: context.forward(Record("tick", str(ts), ts)))

    def process(self, record: Record) -> None:
        pass


def test_a_punctuation_runs_under_a_span_of_its_own_and_its_output_carries_it(spans: InMemorySpanExporter) -> None:
    builder = StreamsBuilder()
    builder.stream("orders", Consumed(S, S)).process(_Ticker).to("out", Produced(S, S))
    with TopologyTestDriver(builder.build(), _config()) as driver:
        orders = driver.create_input_topic("orders", S, S)
        out = driver.create_output_topic("out", S, S)
        orders.pipe_input("o1", "x", 1000, headers=(("traceparent", TRACEPARENT),))
        records = out.read_records_to_list()
    finished = spans.get_finished_spans()
    assert sorted(span.name for span in finished) == ["process orders", "punctuate KSTREAM-PROCESSOR-0000000001"]
    (punctuation,) = [s for s in finished if s.name.startswith("punctuate")]
    # Stream time reached 1000 through the record, but the punctuation runs after it, in no record's context.
    assert punctuation.parent is None and f"{punctuation.context.trace_id:032x}" != TRACE_ID
    assert punctuation.attributes is not None and punctuation.attributes["streamlet.punctuation.time"] == 1000
    assert [r.key for r in records] == ["tick"]
    assert _traceparent(records[0].headers) == (
        f"00-{punctuation.context.trace_id:032x}-{punctuation.context.span_id:016x}-"
        f"{int(punctuation.context.trace_flags):02x}")
