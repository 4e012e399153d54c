"""Issue #15's chaos on Spark: WordCount under `exactly_once_v2` on `streamlet spark run` (`local[2,4]`:
two threads, a failed task retried up to 4 times), its driver killed with kill -9 together with the JVM
and the Python workers it started, at random moments, and restarted from its checkpoint each time; one
Spark task fails on purpose mid-batch, after part of its output is in its transaction
(`spark.test.fail.once.file`). Read `read_committed`, every word's updates must be exactly 1, 2, ..., n
(n its true count): nothing lost, nothing twice, no state gone back.

Input arrives while the app runs (a quarter before each start), and micro-batches are capped small, so
that the kills land among many batches, some in flight.

Runs in `make spark-chaos` (about 2-3 minutes: each start of a Spark driver costs 15-20 s here), not in
`make test`, unless STREAMLET_SPARK_CHAOS=1 is set.
"""

from __future__ import annotations

import asyncio
import os
import random
import signal
import struct
import subprocess
import time
import uuid
from collections import defaultdict
from pathlib import Path

import pytest

from streamlet.testing.local_broker import LocalKafkaBroker
from tests.helpers.kafka import create_kept_topics, produce_records, read_all
from tests.spark.cli_runs import kill_group, spark_cli, word_counts, word_lines

pytestmark = [pytest.mark.broker,
              pytest.mark.skipif(os.environ.get("STREAMLET_SPARK_CHAOS") != "1",
                                 reason="Spark chaos runs in `make spark-chaos` (STREAMLET_SPARK_CHAOS=1)")]

LINES = 800
KILLS = 3


def _start(bootstrap: str, app_id: str, checkpoint: Path, source: str, output: str, failed_marker: Path,
           log: Path) -> subprocess.Popen[bytes]:
    return spark_cli("run", bootstrap, app_id, checkpoint, output, source, log, master="local[2,4]",
                     settings=("processing.guarantee=exactly_once_v2", "spark.max.offsets.per.trigger=60",
                               f"spark.test.fail.once.file={failed_marker}"))


def _committed_updates(bootstrap: str, topic: str) -> dict[str, list[int]]:
    """word -> its counts, as written, read `read_committed`."""
    per_word: dict[str, list[int]] = defaultdict(list)
    read = asyncio.run(read_all(bootstrap, {topic: 2}, isolation_level="read_committed"))
    for records in read.values():
        for r in records:
            per_word[r.key.decode()].append(struct.unpack(">q", r.value or b"")[0])
    return per_word


def _running(log: Path) -> int:
    return log.read_text(errors="replace").count("streamlet spark: running")


def test_spark_exactly_once_survives_kill_9_and_a_failed_task(kafka_broker: LocalKafkaBroker, tmp_path: Path) -> None:
    bootstrap = kafka_broker.bootstrap_servers
    prefix = f"spark-eos-chaos-{uuid.uuid4().hex[:8]}"
    source, output = f"{prefix}-lines", f"{prefix}-counts"
    asyncio.run(create_kept_topics(bootstrap, {source: 2, output: 2}))
    lines = word_lines(source, int(time.time() * 1000) - 60_000, LINES)
    truth = word_counts(lines)
    log, marker, checkpoint = tmp_path / "spark-run.log", tmp_path / "task-failed", tmp_path / "checkpoint"
    rng = random.Random()
    quarter = LINES // (KILLS + 1)
    kills: list[str] = []
    started = time.monotonic()

    for attempt in range(KILLS):
        asyncio.run(produce_records(bootstrap, lines[attempt * quarter:(attempt + 1) * quarter]))
        app = _start(bootstrap, prefix, checkpoint, source, output, marker, log)
        try:
            deadline = time.monotonic() + 120
            before = sum(len(u) for u in _committed_updates(bootstrap, output).values())
            while _running(log) < attempt + 1:  # the queries run
                assert app.poll() is None, f"the Spark app exited with {app.returncode}:\n{log.read_text()[-3000:]}"
                assert time.monotonic() < deadline, f"the Spark app did not start:\n{log.read_text()[-3000:]}"
                time.sleep(0.3)
            # Some progress since the start (the batches run), then a random moment.
            while sum(len(u) for u in _committed_updates(bootstrap, output).values()) <= before:
                assert app.poll() is None, f"the Spark app exited with {app.returncode}:\n{log.read_text()[-3000:]}"
                assert time.monotonic() < deadline, f"no progress:\n{log.read_text()[-3000:]}"
                time.sleep(0.3)
            pause = rng.uniform(0.0, 3.0)
            time.sleep(pause)
        finally:
            kill_group(app)
        done = sum(len(u) for u in _committed_updates(bootstrap, output).values())
        kills.append(f"kill {attempt + 1}: {pause:.2f} s after the first committed output, {done} updates committed")

    asyncio.run(produce_records(bootstrap, lines[KILLS * quarter:]))
    app = _start(bootstrap, prefix, checkpoint, source, output, marker, log)
    try:
        deadline = time.monotonic() + 180
        while True:
            got = _committed_updates(bootstrap, output)
            if all(len(got.get(w, [])) >= n for w, n in truth.items()):
                break
            assert app.poll() is None, f"the Spark app exited with {app.returncode}:\n{log.read_text()[-3000:]}"
            assert time.monotonic() < deadline, f"final counts not reached:\n{log.read_text()[-3000:]}"
            time.sleep(1.0)
        time.sleep(2.0)  # anything written twice would be committed by now
    finally:
        app.send_signal(signal.SIGTERM)
        code = app.wait(60)
    assert code == 0, log.read_text()[-3000:]
    assert marker.exists(), "the injected task failure never happened"
    assert "InjectedTaskFailure" in log.read_text(errors="replace"), "no task failed mid-batch"

    got = _committed_updates(bootstrap, output)
    wrong = {w: got.get(w) for w, n in truth.items() if got.get(w) != list(range(1, n + 1))}
    assert got.keys() == truth.keys()
    assert not wrong, f"updates not exactly 1..n: {wrong}"
    print("; ".join(kills) + f"; {sum(truth.values())} updates exactly once in {time.monotonic() - started:.0f} s")
