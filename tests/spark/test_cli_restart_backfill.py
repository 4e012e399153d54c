"""`streamlet spark run` killed with kill -9 (with the JVM and Python workers it started) and started
again from its checkpoint; then `streamlet spark backfill` over the same input, which must end by itself
and write what the continuous run wrote.

Each word occurs in lines of one input partition only, so each word's updates have one writer and a
fixed order: the continuous run's output, less the records a replayed micro-batch wrote again (allowed
under at-least-once, and counted), must equal the backfill's record for record, for every word that a
replayed write to the repartition topic did not make the continuous run count twice (also counted).
"""

from __future__ import annotations

import asyncio
import signal
import struct
import subprocess
import time
import uuid
from collections import defaultdict
from pathlib import Path

import pytest
from aiokafka import AIOKafkaConsumer, TopicPartition

from streamlet.testing.local_broker import LocalKafkaBroker
from tests.helpers.kafka import Rec, create_kept_topics, produce_records, read_all
from tests.spark.cli_runs import kill_group, word_lines
from tests.spark.cli_runs import spark_cli as _spark_cli
from tests.spark.cli_runs import word_counts as _truth

pytestmark = pytest.mark.broker

LINES = 400


def _updates(records: dict[tuple[str, int], list[Rec]]) -> dict[str, list[tuple[int, int]]]:
    """word -> its (count, timestamp) updates in the order written."""
    per_word: dict[str, list[tuple[int, int]]] = defaultdict(list)
    for rs in records.values():
        for r in rs:
            per_word[r.key.decode()].append((struct.unpack(">q", r.value or b"")[0], r.timestamp))
    return per_word


def _wait_for(bootstrap: str, topic: str, updates: int, app: subprocess.Popen[bytes], log: Path,
              timeout_s: float) -> dict[tuple[str, int], list[Rec]]:
    deadline = time.monotonic() + timeout_s
    while True:
        found = asyncio.run(read_all(bootstrap, {topic: 2}))
        if sum(len(v) for v in found.values()) >= updates:
            return found
        assert app.poll() is None, f"the Spark app exited with {app.returncode}:\n{log.read_text()[-3000:]}"
        assert time.monotonic() < deadline, f"{updates} updates not reached:\n{log.read_text()[-3000:]}"
        time.sleep(1.0)


async def _written(bootstrap: str, topic: str) -> int:
    consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False)
    await consumer.start()
    try:
        return sum((await consumer.end_offsets([TopicPartition(topic, p) for p in range(2)])).values())
    finally:
        await consumer.stop()


def test_kill_9_restart_then_backfill_writes_the_same(kafka_broker: LocalKafkaBroker, tmp_path: Path) -> None:
    bootstrap = kafka_broker.bootstrap_servers
    prefix = f"restart-{uuid.uuid4().hex[:8]}"
    source, continuous, backfilled = f"{prefix}-lines", f"{prefix}-counts", f"{prefix}-backfill-counts"
    asyncio.run(create_kept_topics(bootstrap, {source: 2, continuous: 2, backfilled: 2}))
    lines = word_lines(source, int(time.time() * 1000) - 60_000, LINES)
    truth = _truth(lines)
    total = sum(truth.values())
    log = tmp_path / "spark-run.log"

    asyncio.run(produce_records(bootstrap, lines[: LINES // 2]))
    app = _spark_cli("run", bootstrap, prefix, tmp_path / "checkpoint", continuous, source, log)
    try:
        _wait_for(bootstrap, continuous, total // 4, app, log, 120)
        written_before = asyncio.run(_written(bootstrap, continuous))
        asyncio.run(produce_records(bootstrap, lines[LINES // 2:]))
        # Kill as soon as the second half's updates start to appear: most likely inside the micro-batch
        # that writes them, before Spark commits it.
        deadline = time.monotonic() + 60
        while asyncio.run(_written(bootstrap, continuous)) <= written_before and time.monotonic() < deadline:
            time.sleep(0.05)
    finally:
        kill_group(app)
    killed_at = sum(len(v) for v in asyncio.run(read_all(bootstrap, {continuous: 2})).values())

    app = _spark_cli("run", bootstrap, prefix, tmp_path / "checkpoint", continuous, source, log)
    try:
        def final_counts_reached() -> bool:
            got = _updates(asyncio.run(read_all(bootstrap, {continuous: 2})))
            return all(max((c for c, _ in got.get(w, [])), default=0) >= n for w, n in truth.items())

        # The restarted app must really resume from the checkpoint: wait until its queries run (its second
        # "running" line). The kill may land after the first run wrote everything, and a SIGTERM before
        # the restart got going would test nothing (it once ended the restart while pyspark was loading).
        deadline = time.monotonic() + 150
        while log.read_text(errors="replace").count("streamlet spark: running") < 2:
            assert app.poll() is None, f"the restarted app exited with {app.returncode}:\n{log.read_text()[-3000:]}"
            assert time.monotonic() < deadline, f"the restarted app did not start:\n{log.read_text()[-3000:]}"
            time.sleep(0.5)
        while not final_counts_reached():
            assert app.poll() is None, f"the restarted app exited with {app.returncode}:\n{log.read_text()[-3000:]}"
            assert time.monotonic() < deadline, f"final counts not reached:\n{log.read_text()[-3000:]}"
            time.sleep(1.0)
    finally:
        app.send_signal(signal.SIGTERM)
        code = app.wait(60)
    assert code == 0, log.read_text()[-3000:]

    written = _updates(asyncio.run(read_all(bootstrap, {continuous: 2})))
    repeats = 0
    deduplicated: dict[str, list[tuple[int, int]]] = {}
    for word, updates in written.items():
        seen: set[tuple[int, int]] = set()
        deduplicated[word] = [u for u in updates if not (u in seen or seen.add(u))]  # type: ignore[func-returns-value]
        repeats += len(updates) - len(deduplicated[word])
    # No input lost and state intact: every word counts 1, 2, ... without a gap or a restart from zero, up
    # to at least its true count. Beyond it only if the kill landed in a batch of the first query after it
    # had written to the repartition topic: the replayed batch writes those words again, and the second
    # query counts them again (at-least-once; Kafka Streams' at_least_once does the same).
    counted = {w: [c for c, _ in u] for w, u in deduplicated.items()}
    assert counted.keys() == truth.keys()
    broken = {w: (c, truth[w]) for w, c in counted.items() if c != list(range(1, len(c) + 1)) or len(c) < truth[w]}
    assert not broken, f"lost input or state: {broken}"
    over = {w: len(c) - truth[w] for w, c in counted.items() if len(c) > truth[w]}
    print(f"kill -9 after {killed_at} of {total} updates; {repeats} updates written twice by a replayed batch; "
          f"{sum(over.values())} counts too many on {len(over)} words after a replayed repartition write")

    backfill_log = tmp_path / "spark-backfill.log"
    started = time.monotonic()
    backfill = _spark_cli("backfill", bootstrap, f"{prefix}-backfill", tmp_path / "backfill-checkpoint", backfilled,
                          source, backfill_log)
    assert backfill.wait(240) == 0, backfill_log.read_text()[-3000:]
    print(f"backfill of {LINES} lines ended by itself in {time.monotonic() - started:.1f} s")
    backfill_updates = _updates(asyncio.run(read_all(bootstrap, {backfilled: 2})))
    assert {w: [c for c, _ in u] for w, u in backfill_updates.items()} == {
        w: list(range(1, n + 1)) for w, n in truth.items()}
    same = [w for w in truth if w not in over]
    assert same, "every word was counted twice: nothing left to compare the backfill with"
    assert {w: backfill_updates[w] for w in same} == {w: deduplicated[w] for w in same}
