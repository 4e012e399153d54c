"""`streamlet run --workers 2 --http HOST:PORT`: one HTTP view of both workers on PORT — their metrics
merged (every sample labelled with its worker, promtool-clean), health of both, queries answered."""

from __future__ import annotations

import asyncio
import shutil
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from streamlet.http.client import ForwardingError, get, get_json
from streamlet.http.workers_app import merge_expositions
from tests.helpers.kafka import produce
from tests.http.served_apps import free_ports, served_wordcount
from tests.metrics.promtool_check import promtool_complaints

pytestmark = [pytest.mark.anyio]


def test_merged_expositions_label_each_worker_and_keep_help_and_type_once() -> None:
    one = '# HELP m_total records\n# TYPE m_total counter\nm_total{thread_id="a-1"} 3.0\nplain 1.0\n'
    two = '# HELP m_total records\n# TYPE m_total counter\nm_total{thread_id="a-2"} 4.0\n'
    merged = merge_expositions([("0", one), ("1", two)])
    assert merged.splitlines() == ["# HELP m_total records", "# TYPE m_total counter",
                                   'm_total{thread_id="a-1",worker="0"} 3.0', 'm_total{thread_id="a-2",worker="1"} 4.0',
                                   'plain{worker="0"} 1.0']


@pytest.mark.broker
async def test_one_view_of_two_workers(kafka_broker: Any, tmp_path: Path) -> None:
    promtool = shutil.which("promtool")
    if promtool is None:
        pytest.fail("promtool is not installed: run `make prometheus` (Debian's prometheus package)")
    bootstrap = kafka_broker.bootstrap_servers
    (port,) = free_ports(1)
    served = await served_wordcount(bootstrap, tmp_path, "wv", 4, ["--workers", "2", "--http", f"127.0.0.1:{port}"],
                                    # Announced by each worker with its own port (PORT+1+i).
                                    {"commit.interval.ms": 200, "statestore.cache.max.bytes": 0,
                                     "application.server": "127.0.0.1:1"})
    app, inp, sfx = served.app, served.input_topic, served.application_id
    lines = [f"alpha beta w{i % 20}" for i in range(400)]
    counts = Counter(w for line in lines for w in line.split())
    try:
        app.start()
        deadline = time.monotonic() + 90
        while True:
            try:
                if (await get("127.0.0.1", port, "/health/ready"))[0] == 200:
                    break
            except ForwardingError:
                pass
            assert time.monotonic() < deadline, app.log_text()[-3000:]
            await asyncio.sleep(0.3)
        await produce(bootstrap, inp, [(None, line.encode()) for line in lines])
        served_by: set[str] = set()
        for word, n in sorted(counts.items()):  # through the pool's port; a worker forwards to the owner
            while True:
                status, body = await get_json("127.0.0.1", port, f"/stores/counts-store/keys/{word}")
                if status == 200 and body["value"] == n:
                    served_by.add(body["served_by"])
                    break
                assert time.monotonic() < deadline, (word, status, body)
                await asyncio.sleep(0.3)
        assert served_by == {f"127.0.0.1:{port + 1}", f"127.0.0.1:{port + 2}"}  # both workers own words
        _, _, exposition = await get("127.0.0.1", port, "/metrics")
        text = exposition.decode()
        threads = {line.split('thread_id="')[1].split('"')[0] for line in text.splitlines()
                   if line.startswith("kafka_streams_stream_thread_metrics_process_total{")}
        assert threads == {f"{sfx}-StreamThread-1", f"{sfx}-StreamThread-2"}
        assert 'worker="0"' in text and 'worker="1"' in text
        # metrics.recording.level is INFO by default: no debug-level task, store or cache metrics.
        assert "kafka_streams_stream_task_metrics_dropped_records_total{" in text
        for debug_only in ("stream_task_metrics_process_total", "stream_state_metrics", "stream_record_cache_metrics"):
            assert debug_only not in text
        assert promtool_complaints(promtool, exposition) == []
    finally:
        if app.proc is not None and app.proc.poll() is None:
            app.stop()
