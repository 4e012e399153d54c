"""Kafka Streams' metrics of one instance over OTLP, beside Prometheus' `/metrics` (`metrics.otlp.enabled`).

The same readings `/metrics` serves (`StreamsMetrics.metrics()`), under the same names (Prometheus' series names:
a dashboard reads both alike), their tags as attributes: a counter as an OpenTelemetry observable counter, the
rest as observable gauges; text gauges (the client's state, its version) have no number and are left out, as in
Prometheus. The application's meter provider is used when it set one; otherwise the SDK's is set up for the
instance, exporting over OTLP/HTTP to `OTEL_EXPORTER_OTLP_ENDPOINT` (or `..._METRICS_ENDPOINT`) every
`OTEL_METRIC_EXPORT_INTERVAL` ms (60 s by default).

Why a snapshot: the SDK asks its callbacks from its own export thread, while the readings belong to the event loop
that updates them. The loop takes a snapshot every `SNAPSHOT_INTERVAL_S` (a check per loop iteration, as the
metrics' own sampler does) and the callbacks read only that.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from typing import Any

from streamlet.errors import ConfigError
from streamlet.metrics.prometheus import prometheus_name
from streamlet.metrics.streams_metrics import Metric

SNAPSHOT_INTERVAL_S = 5.0


class OtlpMetrics:
    """Exports one instance's Kafka Streams metrics through OpenTelemetry (see the module docstring)."""

    def __init__(self, read: Callable[[], list[Metric]], service_name: str) -> None:
        try:
            from opentelemetry import metrics
        except ImportError as exc:
            raise ConfigError("metrics.otlp.enabled=true needs OpenTelemetry: pip install 'streamlet[otel]'") from exc
        self._read = read
        self._own_provider: Any = None
        provider = metrics.get_meter_provider()
        if type(provider).__name__ in ("_ProxyMeterProvider", "NoOpMeterProvider"):
            provider = self._own_provider = _sdk_provider(service_name)
        self._meter = provider.get_meter("streamlet")
        self._instruments: set[str] = set()
        self._snapshot: dict[str, list[tuple[float, dict[str, str]]]] = {}
        self._taken = 0.0

    def maybe_snapshot(self) -> None:
        """Take a snapshot when the last one is `SNAPSHOT_INTERVAL_S` old (the event loop calls it often)."""
        now = time.monotonic()
        if now - self._taken >= SNAPSHOT_INTERVAL_S:
            self.snapshot(now)

    def snapshot(self, now: float | None = None) -> None:
        """Read the metrics now; an instrument is made for each name seen for the first time."""
        self._taken = time.monotonic() if now is None else now
        readings: dict[str, list[tuple[float, dict[str, str]]]] = {}
        counters: set[str] = set()
        for metric in self._read():
            if metric.text is not None:
                continue
            name = prometheus_name(metric.name)
            readings.setdefault(name, []).append((metric.value, dict(metric.name.tags)))
            if metric.counter:
                counters.add(name)
            if name not in self._instruments:
                self._instruments.add(name)
                make = self._meter.create_observable_counter if metric.counter else \
                    self._meter.create_observable_gauge
                make(name, callbacks=[self._callback(name)], description=metric.name.description)
        self._snapshot = readings

    def _callback(self, name: str) -> Callable[[Any], Iterable[Any]]:
        from opentelemetry.metrics import Observation

        def observe(_options: Any) -> Iterable[Any]:
            return [Observation(value, attributes) for value, attributes in self._snapshot.get(name, ())]

        return observe

    def close(self) -> None:
        """A last snapshot, exported before the instance stops (its own provider shut down)."""
        self.snapshot()
        if self._own_provider is not None:
            self._own_provider.force_flush()
            self._own_provider.shutdown()


def _sdk_provider(service_name: str) -> Any:
    try:
        from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter
        from opentelemetry.sdk.metrics import MeterProvider
        from opentelemetry.sdk.metrics.export import PeriodicExportingMetricReader
        from opentelemetry.sdk.resources import OTELResourceDetector, Resource
    except ImportError as exc:
        raise ConfigError("metrics.otlp.enabled=true without a meter provider of the application's needs the "
                          "OpenTelemetry SDK and its OTLP exporter: pip install 'streamlet[otel]'") from exc
    resource = Resource.create({"service.name": service_name}).merge(OTELResourceDetector().detect())
    return MeterProvider(metric_readers=[PeriodicExportingMetricReader(OTLPMetricExporter())], resource=resource)
