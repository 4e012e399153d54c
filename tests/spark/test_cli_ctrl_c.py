"""Ctrl-C stops `streamlet spark run` as cleanly as SIGTERM: the queries stop and the command exits 0
(pyspark's SparkContext installs a SIGINT handler of its own, which raised KeyboardInterrupt wherever
the driver was and made the command exit 130 with py4j tracebacks)."""

from __future__ import annotations

import asyncio
import os
import signal
import time
import uuid
from pathlib import Path

import pytest

from streamlet.testing.local_broker import LocalKafkaBroker
from tests.helpers.kafka import create_kept_topics
from tests.spark.cli_runs import spark_cli

pytestmark = pytest.mark.broker


def test_ctrl_c_stops_spark_run_cleanly(kafka_broker: LocalKafkaBroker, tmp_path: Path) -> None:
    run = uuid.uuid4().hex[:8]
    source, sink = f"ctrl-c-in-{run}", f"ctrl-c-out-{run}"
    asyncio.run(create_kept_topics(kafka_broker.bootstrap_servers, {source: 1, sink: 1}))
    log = tmp_path / "spark.log"
    app = spark_cli("run", kafka_broker.bootstrap_servers, f"ctrl-c-{run}", tmp_path / "checkpoint", sink, source,
                    log, master="local[1]")
    try:
        deadline = time.monotonic() + 240
        while "streamlet spark: running" not in log.read_text(errors="replace"):
            assert app.poll() is None, f"spark run ended:\n{log.read_text()[-3000:]}"
            assert time.monotonic() < deadline, f"spark run did not start:\n{log.read_text()[-3000:]}"
            time.sleep(0.5)
        os.killpg(app.pid, signal.SIGINT)  # what Ctrl-C in a terminal does: the whole process group
        code = app.wait(120)
    finally:
        if app.poll() is None:
            app.kill()
            app.wait()
    output = log.read_text(errors="replace")
    assert code == 0, output[-3000:]
    assert "KeyboardInterrupt" not in output, output[-3000:]
