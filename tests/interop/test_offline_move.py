"""Moving an application between Kafka Streams 4.4.0 (Java) and streamlet, offline, in both directions.

One instance runs the first half of the input under `exactly_once_v2` with no record cache and closes
cleanly; at once (no pause) an instance of the other kind takes over the same application id and
runs the second half. The state moves through the store's changelog and the committed offsets: every
word's updates must be exactly 1..n across both, and the changelog must hold the final count of each
word. Kafka Streams' members do not leave the group when it closes, so streamlet, after it, must wait
for them to expire (and say so) rather than fail: that wait is the session timeout of the Java app,
set to 20 s here to keep the test short (the 45 s default behaves the same, only longer); streamlet's
start-up takes a few seconds of it, the rest is the wait the test checks is logged.
"""

from __future__ import annotations

import random
import struct
import uuid
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest

from tests.helpers.app_process import AppProcess
from tests.helpers.kafka import produce
from tests.interop.kafka_streams_app import KafkaStreamsApp, java_available, java_describe
from tests.interop.wordcount_move import (
    counts,
    java_settings,
    latest_counts,
    make_lines,
    read_committed_until,
    wordcount_topics,
)

pytestmark = [
    pytest.mark.anyio, pytest.mark.broker,
    pytest.mark.skipif(not java_available(), reason="needs Java 17 and Maven"),
]

STREAMLET_TARGET = "tests.integration.wordcount_app:topology"
WAIT_LOG = "still holds members of another protocol"


def updates_per_word(records: list[Any]) -> dict[str, list[int]]:
    """Each word's count updates in the order written (a word's updates all go to one partition)."""
    updates: dict[str, list[int]] = defaultdict(list)
    for r in sorted(records, key=lambda r: (r.partition, r.offset)):
        updates[r.key.decode()].append(struct.unpack(">q", r.value)[0])
    return dict(updates)


def assert_exact_updates(records: list[Any], expected: dict[str, int]) -> None:
    """Every word's updates are exactly 1, 2, ..., n: none lost, none repeated, across the move."""
    updates = updates_per_word(records)
    wrong = {w: u for w, u in updates.items() if u != list(range(1, expected.get(w, 0) + 1))}
    assert not wrong and set(updates) == set(expected), {w: (u[:12], expected.get(w)) for w, u in wrong.items()}


def streamlet_app(bootstrap: str, app_id: str, state_dir: Path, topics: dict[str, str], log: Path) -> AppProcess:
    settings = {"bootstrap.servers": bootstrap, "application.id": app_id, "state.dir": state_dir,
                "processing.guarantee": "exactly_once_v2", "statestore.cache.max.bytes": 0}
    env = {"WORDCOUNT_INPUT": topics["input"], "WORDCOUNT_OUTPUT": topics["output"]}
    return AppProcess(STREAMLET_TARGET, settings, log, env=env)


def test_wordcount_describes_as_kafka_streams() -> None:
    """The move relies on equal names: streamlet's WordCount (examples/wordcount.py's topology) has
    Kafka Streams' WordCount's nodes, store `counts-store` and repartition topic `counts-store-repartition`."""
    from examples import wordcount

    topics = {"input": wordcount.INPUT_TOPIC, "output": wordcount.OUTPUT_TOPIC}
    java = java_describe("wordcount", topics)
    assert "counts-store-repartition" in java and "stores: [counts-store]" in java
    assert str(wordcount.topology().describe()) == java


async def test_kafka_streams_then_streamlet(kafka_broker: Any, tmp_path: Path) -> None:
    """Kafka Streams runs the first half and closes (its member stays in the group); streamlet starts at
    once, waits for that member to expire, restores the store from the changelog and runs the second half."""
    bootstrap = kafka_broker.bootstrap_servers
    suffix = uuid.uuid4().hex[:8]
    topics = await wordcount_topics(bootstrap, suffix)
    app_id = f"interop-wc-j2p-{suffix}"
    rng = random.Random(25)
    first, second = make_lines(300, rng), make_lines(300, rng)

    await produce(bootstrap, topics["input"], [(None, ln.encode()) for ln in first])
    java = KafkaStreamsApp("wordcount", topics, java_settings(bootstrap, app_id, tmp_path / "java-state"),
                           tmp_path / "java.log").start()
    try:
        await read_committed_until(bootstrap, topics["output"], counts(first))
    finally:
        assert await java.close() == 0, java.log_tail()
    assert "CLOSED" in java.lines

    await produce(bootstrap, topics["input"], [(None, ln.encode()) for ln in second])
    app = streamlet_app(bootstrap, app_id, tmp_path / "py-state", topics, tmp_path / "streamlet.log").start()
    try:
        records = await read_committed_until(bootstrap, topics["output"], counts(first + second))
        assert WAIT_LOG in app.log_text(), app.log_text()[-3000:]
    finally:
        assert app.stop() == 0, app.log_text()[-3000:]
    assert_exact_updates(records, counts(first + second))
    changelog = await read_committed_until(bootstrap, f"{app_id}-counts-store-changelog", counts(first + second))
    assert latest_counts(changelog) == counts(first + second)


async def test_streamlet_then_kafka_streams(kafka_broker: Any, tmp_path: Path) -> None:
    """streamlet runs the first half and stops (it leaves the group); Kafka Streams starts at once,
    restores the store from streamlet's changelog and runs the second half."""
    bootstrap = kafka_broker.bootstrap_servers
    suffix = uuid.uuid4().hex[:8]
    topics = await wordcount_topics(bootstrap, suffix)
    app_id = f"interop-wc-p2j-{suffix}"
    rng = random.Random(52)
    first, second = make_lines(300, rng), make_lines(300, rng)

    await produce(bootstrap, topics["input"], [(None, ln.encode()) for ln in first])
    app = streamlet_app(bootstrap, app_id, tmp_path / "py-state", topics, tmp_path / "streamlet.log").start()
    try:
        await read_committed_until(bootstrap, topics["output"], counts(first))
    finally:
        assert app.stop() == 0, app.log_text()[-3000:]

    await produce(bootstrap, topics["input"], [(None, ln.encode()) for ln in second])
    java = KafkaStreamsApp("wordcount", topics, java_settings(bootstrap, app_id, tmp_path / "java-state"),
                           tmp_path / "java.log").start()
    try:
        records = await read_committed_until(bootstrap, topics["output"], counts(first + second))
        assert "FAILED" not in " ".join(java.lines), java.lines
    finally:
        assert await java.close() == 0, java.log_tail()
    assert_exact_updates(records, counts(first + second))
    changelog = await read_committed_until(bootstrap, f"{app_id}-counts-store-changelog", counts(first + second))
    assert latest_counts(changelog) == counts(first + second)
