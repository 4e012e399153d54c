"""Windowed readings from cumulative counters, and the Prometheus text they become (pure, no broker)."""

from __future__ import annotations

from streamlet.metrics.prometheus import prometheus_name, render
from streamlet.metrics.sampler import Sampler
from streamlet.metrics.streams_metrics import Metric, MetricName


def test_rates_averages_and_maxima_come_from_the_window_only() -> None:
    now = [0.0]
    state = {"n": 0.0, "ns": 0.0, "max": 0.0}
    sampler = Sampler(lambda: ({"n": state["n"], "ns": state["ns"]}, {"max": state["max"]}, {}),
                      window_s=10, clock=lambda: now[0])
    for second in range(1, 31):
        now[0] = float(second)
        state["n"] += 100 if second <= 20 else 10  # 100/s for 20 s, then 10/s
        state["ns"] += 1000
        state["max"] = 50.0 if second == 5 else 7.0
        sampler.sample()
    assert sampler.rate("n") == 10.0  # the last 10 s only
    assert sampler.ratio("ns", "n") == 100.0  # 10,000 ns over 100 records
    assert sampler.maximum("max") == 7.0  # second 5's spike left the window
    assert sampler.interval_ratios("n", "ns") == [0.01] * 10  # one per second of the window


def test_the_exposition_uses_kafka_streams_names_labels_and_types() -> None:
    rate = MetricName("process-rate", "stream-thread-metrics", (("thread-id", 'app-"1"'),), "records per second")
    total = MetricName("process-total", "stream-thread-metrics", (("thread-id", "app-1"),))
    lag = MetricName("records-lag", "consumer-fetch-manager-metrics", (("partition", "0"), ("topic", "t")))
    assert prometheus_name(rate) == "kafka_streams_stream_thread_metrics_process_rate"
    assert prometheus_name(lag) == "kafka_consumer_consumer_fetch_manager_metrics_records_lag"
    text = render([Metric(rate, 2.5), Metric(total, 7, counter=True), Metric(lag, 3)])
    assert text.splitlines() == [
        "# HELP kafka_consumer_consumer_fetch_manager_metrics_records_lag records-lag",
        "# TYPE kafka_consumer_consumer_fetch_manager_metrics_records_lag gauge",
        'kafka_consumer_consumer_fetch_manager_metrics_records_lag{partition="0",topic="t"} 3.0',
        "# HELP kafka_streams_stream_thread_metrics_process_rate records per second",
        "# TYPE kafka_streams_stream_thread_metrics_process_rate gauge",
        'kafka_streams_stream_thread_metrics_process_rate{thread_id="app-\\"1\\""} 2.5',
        "# HELP kafka_streams_stream_thread_metrics_process_total process-total",
        "# TYPE kafka_streams_stream_thread_metrics_process_total counter",
        'kafka_streams_stream_thread_metrics_process_total{thread_id="app-1"} 7.0',
    ]
