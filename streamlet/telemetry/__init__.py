"""OpenTelemetry for streamlet (the `otel` extra): spans for processing, punctuation and commits, with W3C
trace context carried in record headers (`tracing.enabled`), and Kafka Streams' metrics over OTLP.

Nothing here is imported, and nothing costs anything, unless the application enables it.
"""

from streamlet.telemetry.tracing import TaskTracing, commit_span, flush_spans, tracer_for

__all__ = ["TaskTracing", "commit_span", "flush_spans", "tracer_for"]
