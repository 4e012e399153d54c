"""The Spark engine writes exactly what the TopologyTestDriver writes, per output partition and key.

Hypothesis draws the input (keys, values with and without headers, out-of-order timestamps, table rows,
three partitions per topic) and where it is cut into two runs; each example is two bounded runs of the
`everything` application on local[2] against the real broker, the second continuing from the first's
checkpoint, so that state, stream time and punctuation schedules must carry over between micro-batches.
Examples are few because each costs Spark micro-batches (STREAMLET_SPARK_EXAMPLES=N draws more); none is
shrunk (a failure prints its input).
"""

from __future__ import annotations

import asyncio
import os
import uuid
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, Phase, example, given, settings
from hypothesis import strategies as st

from streamlet.partitioner import default_partition
from streamlet.spark import SparkStreams
from streamlet.spark.query import Bounds
from streamlet.testing.local_broker import LocalKafkaBroker
from tests.helpers.kafka import Rec, create_kept_topics, produce_records, read_all
from tests.spark.harness import compare, expected_outputs
from tests.spark.topologies import Topics, everything

pytestmark = pytest.mark.broker

PARTITIONS = 3
BASE_TS = 1_700_000_000_000

_keys = st.sampled_from([f"k{i}" for i in range(7)])
_values = st.text(alphabet="xyzab", min_size=1, max_size=3)
_event = st.tuples(_keys, _values, st.integers(0, 60), st.booleans())
_row = st.tuples(_keys, _values, st.integers(0, 60))


def _records(topic: str, rows: list[tuple[Any, ...]]) -> list[Rec]:
    out = []
    for index, row in enumerate(rows):
        key, value, offset_ms = row[0].encode(), row[1].encode(), row[2]
        with_header = len(row) > 3 and (row[3] or index == 0)  # every example has headers to carry
        headers = (("seen", str(offset_ms).encode()),) if with_header else ()
        out.append(Rec(topic, default_partition(key, PARTITIONS), key, value, BASE_TS + offset_ms, headers))
    return out


EXAMPLES = int(os.environ.get("STREAMLET_SPARK_EXAMPLES", "2"))
"""Drawn examples per run (each costs Spark micro-batches); raise it for a longer search by hand, 0 for
the explicit example alone."""


@settings(max_examples=max(1, EXAMPLES), deadline=None,
          phases=[Phase.explicit, Phase.generate] if EXAMPLES else [Phase.explicit],
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(events=st.lists(_event, min_size=15, max_size=40), rows=st.lists(_row, max_size=12),
       cut=st.integers(0, 10**6))
# Every run: every key counted in both runs (the second reads the first's state, whole or key by key),
# and a record late for its window in the second run. Found by this test: that record was counted, since
# the windowed aggregation's observed stream time did not outlive the first run's task (now it is carried).
@example(events=[*((f"k{i}", "a", 44 + i, False) for i in range(7)), ("k1", "a", 50, False),
                 ("k1", "b", 7, True), *((f"k{i}", "b", 52 + i, i % 2 == 0) for i in range(7))], rows=[], cut=8)
def test_spark_writes_what_the_driver_writes(spark: Any, kafka_broker: LocalKafkaBroker, tmp_path: Path,
                                             events: list[tuple[Any, ...]], rows: list[tuple[Any, ...]],
                                             cut: int) -> None:
    topics = Topics(f"diff-{uuid.uuid4().hex[:8]}")
    topology = everything(topics)
    bootstrap = kafka_broker.bootstrap_servers
    counts = {topics.events: PARTITIONS, topics.table: PARTITIONS, **dict.fromkeys(topics.outputs, PARTITIONS)}
    asyncio.run(create_kept_topics(bootstrap, counts))
    records = _records(topics.table, rows) + _records(topics.events, events)
    cut %= len(records) + 1
    batches = [records[:cut], records[cut:]]
    # All of a query's tasks share one Spark partition (`spark.task.partitions`): several tasks per Spark
    # task; test_asyncio_differential runs one partition per task.
    config = {"application.id": topics.prefix, "bootstrap.servers": bootstrap, "statestore.cache.max.bytes": 0,
              "spark.task.partitions": 1,
              "spark.checkpoint.location": str(tmp_path / uuid.uuid4().hex)}
    for batch in batches:
        asyncio.run(produce_records(bootstrap, batch))
        SparkStreams(topology, config, spark=spark).backfill(Bounds(bounded=True))

    repartition = [f"{topics.prefix}-{name}" for name, spec in topology.internal_topics.items()
                   if spec.kind == "repartition"]
    counts.update(dict.fromkeys(repartition, PARTITIONS))
    actual = asyncio.run(read_all(bootstrap, {t: counts[t] for t in topics.outputs + repartition}))
    expected = expected_outputs(topology, config, batches, counts, actual)
    assert sum(len(rs) for per_task in expected.values() for rs in per_task.values()) > 0
    problems = compare(expected, actual, topics.outputs + repartition)
    assert not problems, "\n".join(problems[:20])
