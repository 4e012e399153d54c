"""The Spark engine and the asyncio runtime write the same records, and both what the driver writes.

The same input goes, under two application ids, to the Spark engine (one bounded run: one micro-batch
per query) and to the asyncio runtime (`KafkaStreams`, real broker, caching off; the input is on the
broker before it starts). Each output must equal the `TopologyTestDriver`'s (see `harness`), and the
two outputs must equal each other per output partition and key: record for record and in order where
one task writes a key, the same multiset where several do (a repartition topic: the interleaving of its
writers is the broker's). Behind a repartition topic, each engine's records follow the interleaving it
read there (checked against the driver fed the same), so only the number of updates per key must agree.

Inputs avoid timestamp ties between different topics: a real runtime breaks such a tie by which fetch
arrived first, the driver and the Spark engine by topic name, and Kafka Streams leaves it unspecified.
"""

from __future__ import annotations

import asyncio
import dataclasses
import os
import uuid
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, Phase, example, given, settings
from hypothesis import strategies as st

from streamlet.partitioner import default_partition
from streamlet.spark import SparkStreams
from streamlet.spark.query import Bounds
from streamlet.testing.local_broker import LocalKafkaBroker
from streamlet.topology import Topology
from tests.helpers.kafka import Rec, create_kept_topics, produce_records, read_all
from tests.spark.harness import compare, expected_outputs, run_asyncio_runtime
from tests.spark.topologies import Topics, everything, wordcount

pytestmark = pytest.mark.broker

PARTITIONS = 3
BASE_TS = 1_700_000_000_000
EXAMPLES = int(os.environ.get("STREAMLET_SPARK_ASYNCIO_EXAMPLES", "0"))
"""Drawn examples beyond the explicit one (each costs a Spark run and an asyncio run); 0: the explicit one."""

_keys = st.sampled_from([f"k{i}" for i in range(7)])
_values = st.text(alphabet="xyzab", min_size=1, max_size=3)
# Events at even milliseconds, table rows at odd ones: no tie between the two topics (see above).
_event = st.tuples(_keys, _values, st.integers(0, 30).map(lambda t: 2 * t), st.booleans())
_row = st.tuples(_keys, _values, st.integers(0, 30).map(lambda t: 2 * t + 1))


def _records(topic: str, rows: list[tuple[Any, ...]]) -> list[Rec]:
    out = []
    for index, row in enumerate(rows):
        key, value, offset_ms = row[0].encode(), row[1].encode(), row[2]
        with_header = len(row) > 3 and (row[3] or index == 0)
        headers = (("seen", str(offset_ms).encode()),) if with_header else ()
        out.append(Rec(topic, default_partition(key, PARTITIONS), key, value, BASE_TS + offset_ms, headers))
    return out


def _run_both(spark: Any, build: Callable[[Topics], Topology], records_for: Callable[[Topics], list[Rec]],
              bootstrap: str, tmp_path: Path) -> set[str]:
    """Returns the repartition topics the Spark engine passed through its shuffle."""
    run = uuid.uuid4().hex[:8]
    on_spark, on_asyncio = Topics(f"adiff-{run}-s"), Topics(f"adiff-{run}-a")
    outputs: dict[str, list[str]] = {}
    actual: dict[str, dict[tuple[str, int], list[Rec]]] = {}
    expected: dict[str, Any] = {}
    shuffled: set[str] = set()  # repartition topics Spark passed through its shuffle (streamlet.spark.fused)
    for engine, topics in (("spark", on_spark), ("asyncio", on_asyncio)):
        topology = build(topics)
        counts = {topics.events: PARTITIONS, topics.table: PARTITIONS, **dict.fromkeys(topics.outputs, PARTITIONS)}
        asyncio.run(create_kept_topics(bootstrap, counts))
        mine = records_for(topics)
        asyncio.run(produce_records(bootstrap, mine))
        config = {"application.id": topics.prefix, "bootstrap.servers": bootstrap, "statestore.cache.max.bytes": 0,
                  "state.dir": str(tmp_path / engine), "commit.interval.ms": 100,
                  "repartition.purge.interval.ms": 3_600_000,  # the check reads the repartition topics back
                  "spark.checkpoint.location": str(tmp_path / f"checkpoint-{run}")}
        fused: list[str] = []
        if engine == "spark":
            streams = SparkStreams(topology, config, spark=spark)
            streams.backfill(Bounds(bounded=True))
            fused = [plan.source_topics[0] for plan in streams.plans if plan.upstream is not None]
            shuffled.update(fused)
        else:
            asyncio.run(run_asyncio_runtime(topology, config))
        repartition = [f"{topics.prefix}-{name}" for name, spec in topology.internal_topics.items()
                       if spec.kind == "repartition"]
        counts.update(dict.fromkeys(repartition, PARTITIONS))
        outputs[engine] = topics.outputs + repartition
        actual[engine] = asyncio.run(read_all(bootstrap, {t: counts[t] for t in outputs[engine]}))
        expected[engine] = expected_outputs(topology, config, [mine], counts, actual[engine], fused)
        assert sum(len(rs) for per_task in expected[engine].values() for rs in per_task.values()) > 0
        problems = compare(expected[engine], actual[engine], outputs[engine])
        assert not problems, f"{engine} differs from the driver:\n" + "\n".join(problems[:20])

    def by_key(engine: str, prefix: str) -> dict[tuple[str, int, bytes], list[Rec]]:
        found: dict[tuple[str, int, bytes], list[Rec]] = {}
        for records_of in actual[engine].values():
            for r in records_of:
                same = dataclasses.replace(r, topic=r.topic.replace(prefix, on_spark.prefix))
                found.setdefault((same.topic, same.partition, same.key), []).append(same)
        return found

    spark_out, asyncio_out = by_key("spark", on_spark.prefix), by_key("asyncio", on_asyncio.prefix)
    asyncio_out = {where: got for where, got in asyncio_out.items() if where[0] not in shuffled}
    assert spark_out.keys() == asyncio_out.keys()
    topology = build(on_spark)
    downstream = {on_spark.prefix + "-" + t if t in topology.internal_topics else t
                  for sub in topology.sub_topologies() if any(s in topology.internal_topics for s in sub.source_topics)
                  for t in sub.sink_topics}
    for where, got in spark_out.items():
        if where[0] in downstream:
            # Behind a repartition topic whose writers interleave as the broker received them: the records
            # follow that interleaving (each engine's matched the driver's for its own above); the number of
            # updates per key does not depend on it.
            assert len(got) == len(asyncio_out[where]), where
        elif len(expected["spark"].get(where, {})) <= 1:
            assert got == asyncio_out[where], where
        else:
            assert Counter(got) == Counter(asyncio_out[where]), where
    return shuffled


@settings(max_examples=max(1, EXAMPLES), deadline=None,
          phases=[Phase.explicit, Phase.generate] if EXAMPLES else [Phase.explicit],
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(events=st.lists(_event, min_size=15, max_size=40), rows=st.lists(_row, max_size=12))
# Out-of-order events (one late for its window after grace), every key, table rows before and after.
@example(events=[*((f"k{i}", "a", 40 + 2 * i, i % 2 == 0) for i in range(7)), ("k1", "b", 6, True),
                 ("k2", "a", 60, False), ("k3", "xy", 20, False),
                 *((f"k{i}", "b", 54 + 2 * i, False) for i in range(3))],
         rows=[("k1", "t1", 1), ("k2", "t2", 41), ("k3", "t3", 61)])
def test_everything_on_spark_equals_the_asyncio_runtime(spark: Any, kafka_broker: LocalKafkaBroker,
                                                        tmp_path: Path, events: list[tuple[Any, ...]],
                                                        rows: list[tuple[Any, ...]]) -> None:
    _run_both(spark, everything, lambda topics: _records(topics.table, rows) + _records(topics.events, events),
              kafka_broker.bootstrap_servers, tmp_path)


def test_wordcount_on_spark_equals_the_asyncio_runtime(spark: Any, kafka_broker: LocalKafkaBroker,
                                                       tmp_path: Path) -> None:
    lines = [f"w{i % 5} w{(i * 3) % 7} w{i % 2}" for i in range(60)]

    def records_for(topics: Topics) -> list[Rec]:
        return [Rec(topics.events, i % PARTITIONS, f"line{i}".encode(), line.encode(), BASE_TS + i,
                    (("n", str(i).encode()),) if i % 4 == 0 else ()) for i, line in enumerate(lines)]

    shuffled = _run_both(spark, wordcount, records_for, kafka_broker.bootstrap_servers, tmp_path)
    assert len(shuffled) == 1, "the split and the count ran as one query (streamlet.spark.fused)"
