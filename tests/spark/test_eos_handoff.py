"""One application's state moves between the Spark engine and the asyncio runtime, both ways, exactly once.

Under `exactly_once_v2` the same input is processed three times: by one asyncio run over all of it (the
reference), by Spark for its first half and the asyncio runtime for its second, and by the asyncio
runtime for the first half and Spark for the second. The outputs, read `read_committed`, and the final
stores (the latest value per key in the changelogs, from which either engine restores) must equal the
reference's, record for record per key: a word count behind a repartition and a windowed count.

The Spark half of the first direction runs in two parts, and between them the last batch of every
query loses its commit in Spark's checkpoint, as when the driver dies after the tasks' transactions
committed but before Spark's own commit. The second part replays those batches, which must write nothing
again and bring the Spark state forward from the changelogs, then counts more lines on top of that state.

Timestamps are recent, as the windowed store's changelog (retention: one day beyond the windows') would
lose records with old ones. Words are per input partition (`p0w3` occurs only in partition 0), so each
word has one upstream task and its updates' order does not depend on how two writers interleave in the
repartition topic.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections import defaultdict
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from streamlet.dsl import Consumed, Grouped, Materialized, Produced, StreamsBuilder, TimeWindows
from streamlet.record import KeyValue
from streamlet.runtime.kafka_streams import KafkaStreams
from streamlet.serdes import Serdes
from streamlet.testing.local_broker import LocalKafkaBroker
from streamlet.topology import Topology
from streamlet.windowed import Windowed
from tests.helpers.kafka import Rec, create_kept_topics, produce_records, read_all
from tests.spark.engine_moves import handoff_config, on_spark

pytestmark = pytest.mark.broker

S, L = Serdes.String(), Serdes.Long()
PARTITIONS = 2
LINES = 60


def _window_key(key: Windowed, value: int) -> KeyValue:
    return KeyValue(f"{key.key}@{key.window.start}", value)


def _topology(source: str, prefix: str) -> Topology:
    builder = StreamsBuilder()
    lines = builder.stream(source, Consumed(S, S))
    (lines.flat_map_values(lambda line: line.split())
     .group_by(lambda _key, word: word, Grouped(S, S))
     .count(Materialized("counts"))
     .to_stream().to(f"{prefix}-words", Produced(S, L)))
    (lines.group_by_key()
     .windowed_by(TimeWindows.of_size_and_grace(timedelta(milliseconds=40), timedelta(milliseconds=10)))
     .count(Materialized("windowed"))
     .to_stream().map(_window_key).to(f"{prefix}-windows", Produced(S, L)))
    return builder.build()


def _lines(topic: str, first: int, count: int, base_ms: int) -> list[Rec]:
    out = []
    for i in range(first, first + count):
        partition = i % PARTITIONS
        words = " ".join(f"p{partition}w{(i * 7 + j) % 5}" for j in range(1 + i % 3))
        out.append(Rec(topic, partition, f"k{i % 4}".encode(), words.encode(), base_ms + 5 * i))
    return out


Found = dict[str, list[tuple[int, bytes, bytes | None, int]]]


async def _read_committed(bootstrap: str, topics: list[str]) -> Found:
    """Per topic: (partition, key, value, timestamp) of every committed record, by partition in offset
    order (every topic here, changelogs too, has PARTITIONS partitions: the tasks' count)."""
    found: Found = defaultdict(list)
    read = await read_all(bootstrap, dict.fromkeys(topics, PARTITIONS), isolation_level="read_committed")
    for (topic, partition), records in sorted(read.items()):
        found[topic].extend((partition, r.key, r.value, r.timestamp) for r in records)
    return found


async def _asyncio_until(topology: Topology, config: dict[str, Any], outputs: list[str], records: int) -> None:
    """Run on the asyncio runtime until `records` committed records are in `outputs`, then close it."""
    async with KafkaStreams(topology, config):
        deadline = time.monotonic() + 90
        while True:
            found = await _read_committed(config["bootstrap.servers"], outputs)
            if sum(len(v) for v in found.values()) >= records:
                return
            assert time.monotonic() < deadline, f"{config['application.id']}: the asyncio runtime did not finish"
            await asyncio.sleep(0.5)


def _drop_last_spark_commits(checkpoint: Path) -> int:
    """Remove the newest entry of each query's commit log: Spark will run that batch again."""
    dropped = 0
    for commits in checkpoint.glob("subtopology-*/commits"):
        newest = max((p for p in commits.iterdir() if p.name.isdigit()), key=lambda p: int(p.name), default=None)
        if newest is not None:
            newest.unlink()
            (commits / f".{newest.name}.crc").unlink(missing_ok=True)
            dropped += 1
    return dropped


def _per_key(found: Found, topic: str
             ) -> dict[tuple[int, bytes], list[tuple[bytes | None, int]]]:
    out: dict[tuple[int, bytes], list[tuple[bytes | None, int]]] = defaultdict(list)
    for partition, key, value, ts in found.get(topic, []):
        out[(partition, key)].append((value, ts))
    return dict(out)


def _latest(found: Found, topic: str) -> dict[bytes, bytes | None]:
    latest: dict[bytes, bytes | None] = {}
    for _partition, key, value, _ts in found.get(topic, []):
        latest[key] = value
    return {k: v for k, v in latest.items() if v is not None}


def _words(records: list[Rec]) -> int:
    return sum(len((r.value or b"").split()) for r in records)


def test_state_moves_between_spark_and_asyncio_both_ways(spark: Any, kafka_broker: LocalKafkaBroker,
                                                         tmp_path: Path) -> None:
    bootstrap = kafka_broker.bootstrap_servers
    run = uuid.uuid4().hex[:8]
    source = f"handoff-{run}-lines"
    apps = {"reference": f"handoff-{run}-ref", "spark-first": f"handoff-{run}-sa", "asyncio-first": f"handoff-{run}-as"}
    outputs = {name: [f"{app}-words", f"{app}-windows"] for name, app in apps.items()}
    topics = {source: PARTITIONS, **{t: PARTITIONS for ts in outputs.values() for t in ts}}
    asyncio.run(create_kept_topics(bootstrap, topics))
    topologies = {name: _topology(source, app) for name, app in apps.items()}
    configs = {name: handoff_config(app, bootstrap, tmp_path) for name, app in apps.items()}

    # Recent timestamps: the windowed store's changelog deletes records older than its retention (one day
    # beyond the windows'), which old timestamps would make the broker do before the handoff reads them.
    base_ms = int(time.time() * 1000) - 60_000
    first, second = _lines(source, 0, LINES // 2, base_ms), _lines(source, LINES // 2, LINES - LINES // 2, base_ms)
    updates_first = _words(first) + len(first)  # one word-count update per word, one window update per line
    updates_all = updates_first + _words(second) + len(second)

    early, late = first[: len(first) // 2], first[len(first) // 2:]
    asyncio.run(produce_records(bootstrap, early))
    on_spark(spark, topologies["spark-first"], configs["spark-first"])
    assert _drop_last_spark_commits(Path(configs["spark-first"]["spark.checkpoint.location"])) == 2
    asyncio.run(produce_records(bootstrap, late))
    # Replays the last batches (their input is committed in Kafka: nothing may be written again, and the
    # Spark state must catch up from the changelogs), then counts the late lines on top of that state.
    on_spark(spark, topologies["spark-first"], configs["spark-first"])
    replayed = asyncio.run(_read_committed(bootstrap, outputs["spark-first"]))
    assert sum(len(v) for v in replayed.values()) == updates_first, "a replayed Spark batch wrote its output again"
    asyncio.run(_asyncio_until(topologies["asyncio-first"], configs["asyncio-first"], outputs["asyncio-first"],
                               updates_first))

    asyncio.run(produce_records(bootstrap, second))
    asyncio.run(_asyncio_until(topologies["spark-first"], configs["spark-first"], outputs["spark-first"],
                               updates_all))
    on_spark(spark, topologies["asyncio-first"], configs["asyncio-first"])
    asyncio.run(_asyncio_until(topologies["reference"], configs["reference"], outputs["reference"], updates_all))

    reference = apps["reference"]
    want = asyncio.run(_read_committed(bootstrap, [*outputs["reference"], f"{reference}-counts-changelog",
                                                   f"{reference}-windowed-changelog"]))
    for name in ("spark-first", "asyncio-first"):
        app = apps[name]
        got = asyncio.run(_read_committed(bootstrap, [*outputs[name], f"{app}-counts-changelog",
                                                      f"{app}-windowed-changelog"]))
        for suffix in ("words", "windows"):
            mine, theirs = _per_key(got, f"{app}-{suffix}"), _per_key(want, f"{reference}-{suffix}")
            assert sum(len(v) for v in theirs.values()) == (updates_all - len(first) - len(second)
                                                             if suffix == "words" else len(first) + len(second))
            assert mine == theirs, f"{name}: {suffix} differ from one asyncio run"
        for store in ("counts", "windowed"):
            assert _latest(got, f"{app}-{store}-changelog") == _latest(want, f"{reference}-{store}-changelog"), \
                f"{name}: final {store} store differs from one asyncio run"
