"""Kafka Streams' built-in metrics for streamlet: counted per batch, read by Kafka's names, exposed
in Prometheus' text format (`streamlet.http` serves them at `/metrics`)."""

from streamlet.metrics.prometheus import prometheus_name, render
from streamlet.metrics.streams_metrics import Metric, MetricName, StreamsMetrics

__all__ = ["Metric", "MetricName", "StreamsMetrics", "prometheus_name", "render"]
