"""Spans for a task's work, through OpenTelemetry, with W3C trace context carried in record headers.

Why spans per record and not per batch: a trace follows one record (an order, a payment) from the
producer that wrote it, through every topology that reads it, into the output; a batch span would cut that
chain. So each record a task takes from a source topic is processed under a span ("process <topic>", kind
CONSUMER, OpenTelemetry's messaging conventions) whose parent is the trace context the record carries in
its `traceparent` / `tracestate` headers, when it carries one. Before the record goes down the topology,
those headers are replaced by the new span's context. Records keep their headers through the topology (as
in Kafka Streams), so what a sink writes, to an output topic or to a repartition topic read by the next
sub-topology, carries the context of the span that produced it: the next reader's span is its child, and
the trace goes on. A cached store forwards an update with the headers of the record that wrote it last, so
a trace survives aggregations too; a punctuation runs under a span of its own ("punctuate <processor>"),
and what it forwards carries that span's context.

A record that arrives without a context starts a trace only when `tracing.root.sample.ratio` draws it and the
SDK's sampler (`OTEL_TRACES_SAMPLER`) picks it; one that is not picked leaves its headers as they were, so
output stays byte for byte what it is without tracing. Why a ratio of streamlet's own: the SDK's sampler can
only say no to a span it is asked to start, and starting one costs more than processing a WordCount record;
a draw costs nothing. A record whose context says its producer did not sample it is passed on untraced too.

With `tracing.enabled` false (the default) none of this exists: a task has no `TaskTracing`, and the loop
it runs per record is the untraced one (the check is once per run of records, not per record).
"""

from __future__ import annotations

import logging
import random
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from streamlet.config import StreamsConfig
from streamlet.errors import ConfigError
from streamlet.record import Headers, Record

log = logging.getLogger(__name__)

TRACEPARENT = "traceparent"
TRACESTATE = "tracestate"
_CONTEXT_HEADERS = (TRACEPARENT, TRACESTATE)
INSTRUMENTATION_NAME = "streamlet"

_provider_set_up = False


def _otel() -> Any:
    """The OpenTelemetry API, or a ConfigError that names the extra to install."""
    try:
        from opentelemetry import trace
    except ImportError as exc:
        raise ConfigError("tracing.enabled=true needs OpenTelemetry: pip install 'streamlet[otel]'") from exc
    return trace


def _ensure_provider(config: StreamsConfig) -> None:
    """When the application set no tracer provider of its own (OpenTelemetry's global one is the no-op
    proxy), set the SDK's up once per process: its sampler from `OTEL_TRACES_SAMPLER`/`_ARG`, spans exported
    over OTLP/HTTP to `OTEL_EXPORTER_OTLP_ENDPOINT` (or `..._TRACES_ENDPOINT`), the service named after
    `application.id` unless `OTEL_SERVICE_NAME` says otherwise."""
    global _provider_set_up
    trace = _otel()
    if _provider_set_up or not isinstance(trace.get_tracer_provider(), trace.ProxyTracerProvider):
        return
    try:
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
        from opentelemetry.sdk.resources import OTELResourceDetector, Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor
    except ImportError as exc:
        raise ConfigError("tracing.enabled=true without a tracer provider of the application's needs the "
                          "OpenTelemetry SDK and its OTLP exporter: pip install 'streamlet[otel]'") from exc
    resource = Resource.create({"service.name": str(config.application_id)}).merge(OTELResourceDetector().detect())
    provider = TracerProvider(resource=resource)
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
    trace.set_tracer_provider(provider)
    _provider_set_up = True


def flush_spans(timeout_ms: int = 5000) -> None:
    """Export the spans ended so far (a clean close calls it; a kill -9 loses what was not exported)."""
    try:
        from opentelemetry import trace
    except ImportError:
        return
    force_flush = getattr(trace.get_tracer_provider(), "force_flush", None)
    if force_flush is not None:
        force_flush(timeout_ms)


def tracer_for(config: StreamsConfig) -> Any | None:
    """The OpenTelemetry tracer of an application with `tracing.enabled`, else None."""
    if not config["tracing.enabled"]:
        return None
    _ensure_provider(config)
    return _otel().get_tracer(INSTRUMENTATION_NAME)


def _carrier(headers: Headers) -> dict[str, str] | None:
    """The trace-context headers of a record, as the propagator reads them; None when it has none."""
    carrier: dict[str, str] | None = None
    for key, value in headers:
        if key in _CONTEXT_HEADERS and value is not None:
            if carrier is None:
                carrier = {}
            carrier[key] = value.decode("latin-1") if isinstance(value, bytes | bytearray) else str(value)
    return carrier


def _with_context(headers: Headers, carrier: dict[str, str]) -> Headers:
    """`headers` with the trace-context ones replaced by `carrier`'s."""
    kept = tuple(h for h in headers if h[0] not in _CONTEXT_HEADERS)
    return kept + tuple((key, carrier[key].encode("latin-1")) for key in _CONTEXT_HEADERS if key in carrier)


class TaskTracing:
    """One task's spans: around each record from a source topic, each punctuation and (by the runtime)
    each commit. See the module docstring for how trace context travels in headers."""

    def __init__(self, tracer: Any, task_id: str, application_id: str, root_ratio: float = 1.0) -> None:
        from opentelemetry import context, propagate, trace
        from opentelemetry.trace import SpanKind, Status, StatusCode

        self._tracer = tracer
        self._trace = trace
        self._context = context
        self._propagator = propagate.get_global_textmap()
        self._consumer = SpanKind.CONSUMER
        self._error = Status(StatusCode.ERROR)
        self.task_id = task_id
        self.root_ratio = root_ratio
        """The share of records without a trace context that start a trace (`tracing.root.sample.ratio`)."""
        self._attributes = {"messaging.system": "kafka", "messaging.consumer.group.name": application_id,
                            "streamlet.task.id": task_id}

    def delivery(self, task: Any, topic: str, partition: int, deliver: Callable[[Record], Any]
                 ) -> Callable[[Record], None]:
        """`deliver` (a source node's) wrapped: each record under its own span (see the module docstring).
        `task.record_ctx` is the record's context, set by the task before the call."""
        tracer, trace = self._tracer, self._trace
        extract, inject, run_in = self._propagator.extract, self._propagator.inject, self._run_in
        name, kind = f"process {topic}", self._consumer
        base = {**self._attributes, "messaging.destination.name": topic,
                "messaging.destination.partition.id": str(partition)}

        ratio, draw = self.root_ratio, random.random

        def traced(record: Record) -> None:
            carrier = _carrier(record.headers)
            if carrier is None:
                if ratio < 1.0 and draw() >= ratio:  # no trace starts here: nothing to continue, nothing to write
                    deliver(record)
                    return
                span = tracer.start_span(name, kind=kind)  # a new trace, if the SDK's sampler picks it too
                if not span.is_recording():
                    deliver(record)
                    return
            elif carrier.get(TRACEPARENT, "").endswith("-00"):  # its producer did not sample it: passed on as is
                deliver(record)
                return
            else:
                span = tracer.start_span(name, context=extract(carrier), kind=kind)
            if span.is_recording():
                span.set_attributes(base)
                span.set_attribute("messaging.kafka.offset", task.record_ctx.offset)
            out: dict[str, str] = {}
            inject(out, context=trace.set_span_in_context(span))
            headers = _with_context(record.headers, out)
            record = record._replace(headers=headers)
            task.record_ctx = task.record_ctx._replace(headers=headers)
            run_in(span, deliver, record)

        return traced

    def _run_in(self, span: Any, call: Callable[[Any], Any], arg: Any) -> None:
        """`call(arg)` with `span` as the current span (so that spans a user's code starts are its children);
        the span ends with it, recording what escaped."""
        context = self._context
        token = context.attach(self._trace.set_span_in_context(span))
        try:
            call(arg)
        except BaseException as exc:
            span.record_exception(exc)
            span.set_status(self._error)
            raise
        finally:
            context.detach(token)
            span.end()

    def punctuate(self, task: Any, processor: str, now: int, callback: Callable[[int], Any]) -> None:
        """`callback(now)`, a punctuation, under a span of its own. A punctuator forwards records it builds
        itself, without the context of any record; what reaches the task's sinks during the punctuation without
        a trace context gets the span's (when it is sampled), as a producer's instrumentation adds it."""
        span = self._tracer.start_span(f"punctuate {processor}", attributes={
            **self._attributes, "streamlet.processor": processor, "streamlet.punctuation.time": now})
        if not span.get_span_context().trace_flags.sampled:
            self._run_in(span, callback, now)
            return
        marks = task.collector.buffer_marks()
        try:
            self._run_in(span, callback, now)
        finally:
            out: dict[str, str] = {}
            self._propagator.inject(out, context=self._trace.set_span_in_context(span))
            task.collector.rewrite_headers_since(
                marks, lambda headers: headers if _carrier(headers) else _with_context(headers, out))


@contextmanager
def commit_span(tracer: Any | None, tasks: list[str], exactly_once: bool) -> Iterator[None]:
    """A commit's span (the runtime's: flush, produce, offsets and, under exactly-once, the transaction);
    nothing at all without a tracer."""
    if tracer is None:
        yield
        return
    with tracer.start_as_current_span("commit", attributes={
            "streamlet.tasks": tasks, "streamlet.exactly_once": exactly_once}):
        yield
