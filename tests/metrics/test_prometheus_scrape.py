"""A real Prometheus server (Debian's package, `make prometheus`) scrapes a running `streamlet run --http`
WordCount: its query API sees process-rate > 0 and the lag of every input partition, under Kafka
Streams' metric names; `promtool check metrics` finds nothing to complain about in `/metrics`."""

from __future__ import annotations

import asyncio
import json
import shutil
import subprocess
import time
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from tests.helpers.kafka import produce
from tests.http.served_apps import free_ports, served_wordcount
from tests.metrics.promtool_check import promtool_complaints

pytestmark = [pytest.mark.anyio, pytest.mark.broker]


def _require(tool: str) -> str:
    path = shutil.which(tool)
    if path is None:
        pytest.fail(f"{tool} is not installed: run `make prometheus` (Debian's prometheus package)")
    return path


def _get(url: str) -> bytes:
    with urllib.request.urlopen(url, timeout=10) as response:
        return bytes(response.read())


async def _query(port: int, promql: str) -> list[dict[str, Any]]:
    url = f"http://127.0.0.1:{port}/api/v1/query?{urllib.parse.urlencode({'query': promql})}"
    body = json.loads(await asyncio.to_thread(_get, url))
    assert body["status"] == "success", body
    return list(body["data"]["result"])


async def test_prometheus_scrapes_process_rate_and_partition_lag(kafka_broker: Any, tmp_path: Path) -> None:
    prometheus, promtool = _require("prometheus"), _require("promtool")
    bootstrap = kafka_broker.bootstrap_servers
    app_port, prom_port = free_ports(2)
    served = await served_wordcount(bootstrap, tmp_path, "prom", 3, ["--http", f"127.0.0.1:{app_port}"],
                                    {"commit.interval.ms": 500, "metrics.recording.level": "DEBUG"})
    app, inp, sfx = served.app, served.input_topic, served.application_id
    config = tmp_path / "prometheus.yml"
    config.write_text("global:\n  scrape_interval: 1s\nscrape_configs:\n  - job_name: streamlet\n"
                      f"    static_configs:\n      - targets: ['127.0.0.1:{app_port}']\n")
    server = subprocess.Popen([prometheus, f"--config.file={config}", f"--storage.tsdb.path={tmp_path / 'tsdb'}",
                               f"--web.listen-address=127.0.0.1:{prom_port}"],
                              stdout=subprocess.DEVNULL, stderr=open(tmp_path / "prometheus.log", "wb"))  # noqa: SIM115
    try:
        app.start()
        await app.wait_for_log("to RUNNING")
        rate: list[dict[str, Any]] = []
        lag: list[dict[str, Any]] = []
        hits: list[dict[str, Any]] = []
        deadline = time.monotonic() + 120
        batch = 0
        while time.monotonic() < deadline:
            # Keep input flowing (bounded: at most 120 s of 500 lines a round) so the rate stays above 0.
            await produce(bootstrap, inp, [(None, f"round {batch} word{i % 50} other".encode()) for i in range(500)])
            batch += 1
            try:
                rate = await _query(prom_port, "kafka_streams_stream_thread_metrics_process_rate > 0")
                # WordCount reads its input and its repartition topic: every partition of both has a series.
                lag = await _query(prom_port, "kafka_consumer_consumer_fetch_manager_metrics_records_lag")
                # A cache's hit ratio exists once a get went through it, which can be a scrape after the rest.
                hits = await _query(prom_port, "kafka_streams_stream_record_cache_metrics_hit_ratio_avg")
            except OSError:  # Prometheus still starting
                rate, lag, hits = [], [], []
            if rate and len(lag) == 6 and hits:
                break
            await asyncio.sleep(1)
        assert rate, f"no process_rate > 0 in Prometheus; app log tail:\n{app.log_text()[-2000:]}"
        assert rate[0]["metric"]["thread_id"] == f"{sfx}-StreamThread-1"
        assert float(rate[0]["value"][1]) > 0
        assert sorted((s["metric"]["topic"], int(s["metric"]["partition"])) for s in lag) == sorted(
            [(inp, p) for p in range(3)] + [(f"{sfx}-counts-store-repartition", p)
                                            for p in range(3)])
        assert all(float(s["value"][1]) >= 0 for s in lag)
        tasks = await _query(prom_port, "kafka_streams_stream_task_metrics_process_total")
        assert {s["metric"]["task_id"] for s in tasks} >= {"0_0", "0_1", "0_2"}  # debug level: task metrics
        e2e = await _query(prom_port, "kafka_streams_stream_processor_node_metrics_record_e2e_latency_max")
        assert e2e and all(float(s["value"][1]) >= 0 for s in e2e)
        # Debug level: the count store's puts are timed and its cache's hit ratio is known, per task.
        puts = await _query(prom_port, 'kafka_streams_stream_state_metrics_put_rate{rocksdb_state_id="counts-store"}')
        assert {s["metric"]["task_id"] for s in puts} == {"1_0", "1_1", "1_2"}
        assert hits and all(0 <= float(s["value"][1]) <= 1 for s in hits)
        assert {s["metric"]["record_cache_id"] for s in hits} == {"counts-store"}

        exposition = await asyncio.to_thread(_get, f"http://127.0.0.1:{app_port}/metrics")
        assert promtool_complaints(promtool, exposition) == []
    finally:
        server.terminate()
        server.wait(30)
        if app.proc is not None and app.proc.poll() is None:
            app.stop()
