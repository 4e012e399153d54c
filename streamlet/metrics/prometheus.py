"""Kafka Streams' metrics in the Prometheus text format, named as the JMX exporter names them.

`stream-thread-metrics` `process-rate` {thread-id} becomes
`kafka_streams_stream_thread_metrics_process_rate{thread_id="..."}`, consumer metrics get the
`kafka_consumer_` prefix, so dashboards built on Kafka Streams' JMX metrics find the same series.
Counters (`*-total`) are typed `counter`, everything else `gauge`. A gauge whose name ends in a suffix
Prometheus reserves for histograms and summaries (`-count`, `-sum`, `-bucket`; e.g. Kafka Streams'
`active-buffer-count`) or for counters (`-total`: Kafka Streams' `cache-size-bytes-total` goes down as well
as up) gets `_value` appended, so that scrapers and `promtool check metrics` do not take it for part of a
histogram or for a counter.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable

from streamlet.metrics.streams_metrics import Metric, MetricName

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
_INVALID = re.compile(r"[^a-zA-Z0-9_]")


def prometheus_name(name: MetricName) -> str:
    """The series name of a Kafka metric name."""
    domain = "kafka_consumer" if name.group.startswith("consumer") else "kafka_streams"
    return _INVALID.sub("_", f"{domain}_{name.group}_{name.name}")


_RESERVED_SUFFIXES = ("_count", "_sum", "_bucket", "_total")


def _series_name(metric: Metric) -> str:
    series = prometheus_name(metric.name)
    return series + "_value" if not metric.counter and series.endswith(_RESERVED_SUFFIXES) else series


def _label_value(value: str) -> str:
    return value.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def _number(value: float) -> str:
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    return repr(float(value))


def render(metrics: Iterable[Metric], extra_labels: dict[str, str] | None = None) -> str:
    """The text exposition of `metrics`: one HELP and TYPE line per series name, then its samples."""
    by_series: dict[str, list[Metric]] = {}
    for metric in metrics:
        if metric.text is None:  # text gauges have no Prometheus sample (see `Metric`)
            by_series.setdefault(_series_name(metric), []).append(metric)
    lines: list[str] = []
    for series in sorted(by_series):
        group = by_series[series]
        first = group[0]
        help_text = (first.name.description or first.name.name).replace("\\", "\\\\").replace("\n", " ")
        lines.append(f"# HELP {series} {help_text}")
        lines.append(f"# TYPE {series} {'counter' if first.counter else 'gauge'}")
        for metric in group:
            labels = {_INVALID.sub("_", k): v for k, v in metric.name.tags} | (extra_labels or {})
            text = ",".join(f'{k}="{_label_value(v)}"' for k, v in sorted(labels.items()))
            lines.append(f"{series}{{{text}}} {_number(metric.value)}" if text else f"{series} {_number(metric.value)}")
    return "\n".join(lines) + "\n"
