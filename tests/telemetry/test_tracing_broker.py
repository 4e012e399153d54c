"""A trace started by a producer goes through a running application and into its output, on the real broker,
exported over OTLP to a real collector (Jaeger, built from its Go module) and read back from its query API.

Kafka Streams' metrics go the same way over OTLP (the collector's Prometheus exporter shows what it received).

The application is WordCount in its own process (`streamlet run`, exactly-once), `tracing.enabled` on and the
OpenTelemetry SDK set up by streamlet from the OTEL_* environment, as an operator runs it. The test is the
producer: it starts a span, writes its context into the record's `traceparent` header, and exports that span
to the same collector under a service of its own.
"""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import anyio
import pytest

pytest.importorskip("opentelemetry.exporter.otlp.proto.http")

from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.trace import SpanKind, set_span_in_context
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

from tests.helpers.app_process import AppProcess
from tests.helpers.jaeger import Jaeger
from tests.helpers.kafka import Rec, create_topics, produce_records, read_until
from tests.integration import wordcount_app

pytestmark = pytest.mark.anyio


def _producer_span(jaeger: Jaeger, topic: str) -> tuple[dict[str, str], Any, TracerProvider]:
    """A producer's span (its own provider, exported to `jaeger` as service `order-producer`) and the trace
    context headers it writes into its record."""
    provider = TracerProvider(resource=Resource.create({"service.name": "order-producer"}))
    provider.add_span_processor(SimpleSpanProcessor(OTLPSpanExporter(endpoint=f"{jaeger.otlp_endpoint}/v1/traces")))
    span = provider.get_tracer("test").start_span(f"send {topic}", kind=SpanKind.PRODUCER)
    carrier: dict[str, str] = {}
    TraceContextTextMapPropagator().inject(carrier, context=set_span_in_context(span))
    return carrier, span, provider


async def _spans(jaeger: Jaeger, trace_id: str, expected: int) -> list[dict[str, Any]]:
    """The trace's spans once the collector holds at least `expected` of them."""
    with anyio.fail_after(60):
        while len(spans := jaeger.spans(trace_id)) < expected:
            await anyio.sleep(0.5)
    return spans


async def _metric(jaeger: Jaeger, series: str, job: str) -> float:
    """The value of a series (of `job`, the exporting service) the collector holds, once it holds it."""
    with anyio.fail_after(60):
        while True:
            for line in jaeger.scrape().splitlines():
                if line.startswith(series + "{") and f'job="{job}"' in line and float(line.rsplit(" ", 1)[1]) > 0:
                    return float(line.rsplit(" ", 1)[1])
            await anyio.sleep(0.5)


def _parent(span: dict[str, Any]) -> str | None:
    refs = [ref["spanID"] for ref in span.get("references", []) if ref["refType"] == "CHILD_OF"]
    return refs[0] if refs else None


async def test_a_producers_trace_continues_through_the_topology_into_the_output(kafka_broker: Any,
                                                                              tmp_path: Path) -> None:
    bootstrap = kafka_broker.bootstrap_servers
    sfx = uuid.uuid4().hex[:8]
    inp, out, app_id = f"traced-in-{sfx}", f"traced-out-{sfx}", f"traced-{sfx}"
    await create_topics(bootstrap, {inp: 2, out: 2})
    with Jaeger(tmp_path) as jaeger:
        settings = {**wordcount_app.settings(bootstrap, app_id, tmp_path / "state"),
                    "processing.guarantee": "exactly_once_v2", "tracing.enabled": "true",
                    "metrics.otlp.enabled": "true"}
        env = {**wordcount_app.topic_env(inp, out), "OTEL_EXPORTER_OTLP_ENDPOINT": jaeger.otlp_endpoint,
               "OTEL_TRACES_SAMPLER": "parentbased_always_on", "OTEL_BSP_SCHEDULE_DELAY": "200",
               "OTEL_METRIC_EXPORT_INTERVAL": "1000"}
        app = AppProcess(wordcount_app.TARGET, settings, tmp_path / "app.log", env).start()
        try:
            carrier, producer_span, provider = _producer_span(jaeger, inp)
            headers = (*((key, value.encode()) for key, value in carrier.items()), ("order", b"o-1"))
            await produce_records(bootstrap, [Rec(inp, 0, b"o-1", b"apple banana", 1000, headers)])
            producer_span.end()
            provider.shutdown()
            records = await read_until(bootstrap, out, lambda rs: {r.key for r in rs} >= {b"apple", b"banana"},
                                       isolation_level="read_committed")
            # Another record without a context: traced in a trace of its own (the sampler takes every root).
            await produce_records(bootstrap, [Rec(inp, 1, b"o-2", b"cherry", 2000)])
            await read_until(bootstrap, out, lambda rs: b"cherry" in {r.key for r in rs},
                             isolation_level="read_committed")
            # Kafka Streams' metrics reached the collector over OTLP, under the application's service.
            processed = await _metric(jaeger, "kafka_streams_stream_thread_metrics_process_total", app_id)
            assert processed >= 2
        finally:
            assert app.stop() == 0, app.log_text()[-3000:]
        trace_id = carrier["traceparent"].split("-")[1]
        producer_id = carrier["traceparent"].split("-")[2]
        spans = await _spans(jaeger, trace_id, expected=4)
        services, commits = jaeger.services(), jaeger.operation_traces(app_id, "commit")
    by_id = {span["spanID"]: span for span in spans}
    names = sorted((span["serviceName"], span["operationName"]) for span in spans)
    repartition = f"process {app_id}-counts-store-repartition"
    assert names == sorted([("order-producer", f"send {inp}"), (app_id, f"process {inp}"),
                            (app_id, repartition), (app_id, repartition)]), names
    (first,) = [s for s in spans if s["operationName"] == f"process {inp}"]
    assert _parent(first) == producer_id
    second = [s for s in spans if s["operationName"] == repartition]
    assert {_parent(s) for s in second} == {first["spanID"]}
    tags = {tag["key"]: tag["value"] for tag in first["tags"]}
    assert tags["messaging.destination.name"] == inp and tags["messaging.kafka.offset"] == 0
    # Each output record carries the context of the span that counted its word, in the producer's trace.
    for record in records:
        if record.key in (b"apple", b"banana"):
            header = dict(record.headers)["traceparent"].decode().split("-")
            assert header[1] == trace_id and header[2] in by_id and by_id[header[2]] in second
            assert dict(record.headers)["order"] == b"o-1"
    # The commits are spans too (roots: the sampler takes them), under the application's service.
    assert app_id in services
    assert commits, "no commit span reached the collector"
