"""An instance that lost its group membership must not keep its tasks: issue #11's root cause.

The path that broke exactly-once, forced step by step instead of hoped for in a chaos run:

1. instance A runs WordCount alone, processes a first batch and commits it, then is frozen (SIGSTOP)
   for longer than its session timeout: the group drops it;
2. instance B joins, takes every task over (restoring from the changelogs), processes a second batch
   and commits it, then closes cleanly and leaves the group;
3. the records B processed are deleted (as retention would), so that A, once awake, has nothing new
   to fetch and therefore nothing to commit when it learns that it was dropped. Without this, A
   sometimes fetches and processes part of B's input in the instant between waking and its failed
   heartbeat; its revocation commit then holds work and is fenced, which hides the bug by chance;
4. A wakes up (SIGCONT). Its heartbeat learns that its member id is unknown, it rejoins under a new
   member id and, as the only member, is handed **its own tasks back**.

Before the fix A treated those tasks as kept across an ordinary rebalance: it went on from its own
pre-freeze position with its own pre-freeze stores and processed the second batch again (repeated
updates under both guarantees). Kafka Streams treats this as lost partitions (`onPartitionsLost` →
every task closed dirty, nothing committed, state rebuilt from the changelog), and so must we.

No instance crashes here and every commit is clean, so even at-least-once has nothing to replay:
both guarantees must show every word's updates as exactly 1..n.
"""

from __future__ import annotations

import asyncio
import random
import uuid
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from aiokafka import AIOKafkaConsumer, TopicPartition
from aiokafka.admin import AIOKafkaAdminClient, RecordsToDelete

from examples.wordcount import split_words
from tests.helpers.app_process import AppProcess
from tests.helpers.kafka import create_topics, produce
from tests.integration.chaos import TARGET, check_sequences, make_lines, read_sequences

pytestmark = [pytest.mark.anyio, pytest.mark.broker]

SESSION_TIMEOUT_MS = 6000
PARTITIONS = 4
TASKS = 8  # WordCount: two sub-topologies (split, then count after the repartition) on 4 partitions


async def _produce_and_wait(bootstrap: str, inp: str, out: str, lines: list[str], expected: Counter[str]) -> None:
    """Write `lines`, then wait until the output shows every word at its running total."""
    expected.update(w for ln in lines for w in split_words(ln))
    await produce(bootstrap, inp, [(None, ln.encode()) for ln in lines])
    sequences = await read_sequences(bootstrap, out, expected, timeout=120)
    missing = {w: n for w, n in expected.items() if max(sequences.get(w, [0])) < n}
    assert not missing, f"the output did not reach the running totals: {list(missing.items())[:5]}"


async def _delete_everything_written(bootstrap: str, topics: list[str]) -> None:
    """DeleteRecords up to each partition's end: what was processed is gone, as after retention."""
    consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap, group_id=None)
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
    await consumer.start()
    await admin.start()
    try:
        parts = [TopicPartition(t, p) for t in topics for p in range(PARTITIONS)]
        ends = await consumer.end_offsets(parts)
        await admin.delete_records({tp: RecordsToDelete(end) for tp, end in ends.items()})
    finally:
        await admin.close()
        await consumer.stop()


@pytest.mark.parametrize("guarantee", ["exactly_once_v2", "at_least_once"])
async def test_instance_that_lost_its_membership_does_not_keep_its_tasks(
        kafka_broker: Any, tmp_path: Path, guarantee: str) -> None:
    bootstrap = kafka_broker.bootstrap_servers
    suffix = uuid.uuid4().hex[:8]
    inp, out = f"lost-in-{suffix}", f"lost-out-{suffix}"
    await create_topics(bootstrap, {inp: PARTITIONS, out: PARTITIONS})
    settings = {
        "bootstrap.servers": bootstrap, "application.id": f"lost-{suffix}",
        "processing.guarantee": guarantee, "statestore.cache.max.bytes": 0,
        "commit.interval.ms": 100 if guarantee == "exactly_once_v2" else 200,
        "session.timeout.ms": SESSION_TIMEOUT_MS, "heartbeat.interval.ms": 1000,
        "default.key.serde": "String", "default.value.serde": "String",
    }
    env = {"WORDCOUNT_INPUT": inp, "WORDCOUNT_OUTPUT": out}
    a = AppProcess(TARGET, {**settings, "state.dir": tmp_path / "state-a"}, tmp_path / "app-a.log", env=env)
    b = AppProcess(TARGET, {**settings, "state.dir": tmp_path / "state-b"}, tmp_path / "app-b.log", env=env)
    rng = random.Random(11)
    expected: Counter[str] = Counter()
    try:
        await a.start().wait_for_log("to RUNNING", timeout=120)
        await _produce_and_wait(bootstrap, inp, out, make_lines(4000, rng), expected)
        await asyncio.sleep(2)  # at-least-once: let a commit interval pass after the output showed

        a.pause()
        await b.start().wait_for_log("to RUNNING", timeout=120)  # after A's session expired
        assert b.log_text().count("started on") == TASKS, "B took every task over"
        await _produce_and_wait(bootstrap, inp, out, make_lines(4000, rng), expected)
        assert b.stop() == 0  # clean: B commits and leaves the group
        await _delete_everything_written(bootstrap, [inp, f"lost-{suffix}-counts-store-repartition"])

        a_log_before_wake = len(a.log_text())
        a.resume()
        await _produce_and_wait(bootstrap, inp, out, make_lines(4000, rng), expected)
        sequences = await read_sequences(bootstrap, out, expected, timeout=30)
    finally:
        for app in (a, b):
            if app.proc is not None and app.proc.poll() is None:
                app.stop()
    woken = a.log_text()[a_log_before_wake:]
    # The path under test: A, back from the freeze, was given its own tasks again.
    assert "Setting newly assigned partitions" in woken, woken[-4000:]
    check = check_sequences(sequences, expected)
    assert check.exact, f"{check.summary()}\n--- A after waking:\n{woken[-4000:]}"
    # ...and it took them as new tasks, restored from the changelog, not as tasks it had kept.
    assert "membership lost" in woken, woken[-4000:]
    assert woken.count("started on") == TASKS, woken[-4000:]
