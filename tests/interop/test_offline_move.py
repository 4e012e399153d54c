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

import os
import random
import struct
import uuid
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

import pytest

from examples.wordcount import split_words
from tests.integration.kafka_helpers import AppProcess, create_topics, produce, read_until
from tests.interop.kafka_streams_app import KafkaStreamsApp, java_available, java_describe

pytestmark = [
    pytest.mark.anyio, pytest.mark.broker,
    pytest.mark.skipif(not java_available(), reason="needs Java 17 and Maven"),
]

WORDS = ["kafka", "streams", "python", "java", "state", "store", "topic", "partition", "task", "commit",
         "window", "join", "table", "stream", "offset", "leader", "group", "member"]
JAVA_SESSION_TIMEOUT_MS = os.environ.get("INTEROP_JAVA_SESSION_TIMEOUT_MS", "20000")
"""The Java apps' session.timeout.ms; "default" leaves Kafka Streams' own (45 s) for a manual run."""
STREAMLET_TARGET = "tests.integration.wordcount_app:topology"
WAIT_LOG = "still holds members of another protocol"


def make_lines(n: int, rng: random.Random) -> list[str]:
    return [" ".join(rng.choice(WORDS) for _ in range(rng.randint(1, 6))) for _ in range(n)]


def counts(lines: list[str]) -> dict[str, int]:
    return dict(Counter(w for ln in lines for w in split_words(ln)))


def latest_counts(records: list[Any]) -> dict[str, int]:
    latest: dict[str, int] = {}
    for r in records:
        latest[r.key.decode()] = struct.unpack(">q", r.value)[0]
    return latest


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


async def read_committed_until(bootstrap: str, topic: str, expected: dict[str, int]) -> list[Any]:
    return await read_until(bootstrap, topic, lambda rs: latest_counts(rs) == expected, timeout=180,
                            isolation_level="read_committed")


def java_settings(bootstrap: str, app_id: str, state_dir: Path) -> dict[str, Any]:
    settings = {"bootstrap.servers": bootstrap, "application.id": app_id, "state.dir": state_dir,
                "replication.factor": 1}
    if JAVA_SESSION_TIMEOUT_MS != "default":
        settings["session.timeout.ms"] = JAVA_SESSION_TIMEOUT_MS
    return settings


def streamlet_app(bootstrap: str, app_id: str, state_dir: Path, topics: dict[str, str], log: Path) -> AppProcess:
    settings = {"bootstrap.servers": bootstrap, "application.id": app_id, "state.dir": state_dir,
                "processing.guarantee": "exactly_once_v2", "statestore.cache.max.bytes": 0}
    env = {"WORDCOUNT_INPUT": topics["input"], "WORDCOUNT_OUTPUT": topics["output"]}
    return AppProcess(STREAMLET_TARGET, settings, log, env=env)


async def wordcount_topics(bootstrap: str, suffix: str) -> dict[str, str]:
    topics = {"input": f"interop-lines-{suffix}", "output": f"interop-counts-{suffix}"}
    await create_topics(bootstrap, {topics["input"]: 2, topics["output"]: 2})
    return topics


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
