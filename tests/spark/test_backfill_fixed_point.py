"""A Spark backfill ends only when its work is done, whatever way its sub-topologies feed each other.

One application holds a topology of each kind the differential generator of tests/fidelity makes and the
Spark engine runs (built with the generator's own op vocabulary, `tests.fidelity.topology.apply`):
stateless operations, an aggregation after a repartition, a windowed count over out-of-order input, an
inner stream-stream join, a stream-table and a table-table join, a table regrouped and counted, a
foreign-key join (whose two halves feed each other through the subscription and response topics), and
a loop through a user topic that one sub-topology both reads and writes. (The engine has no backend yet
for a left or outer stream-stream join's shared store, session stores or suppression buffers.) Its
input is on the broker before anything runs; a backfill on Spark (local[2], the session of the test
run) and a run of the asyncio runtime must then write the same records to every output: per partition
and key, the same keys, values, timestamps and headers in the same order. The input is chosen so that
this order does not depend on how fetches or micro-batches happen to interleave: each key of a
repartitioned or foreign-key output has one writer, no two topics of one task share a timestamp, and
each foreign-key join row is written once, after every row of the other table.

A backfill that cannot finish says why: a loop that feeds itself without end, and a query stopped from
outside before it read its input.
"""

from __future__ import annotations

import asyncio
import dataclasses
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from streamlet.cli import main
from streamlet.dsl import Consumed, Produced, StreamsBuilder
from streamlet.partitioner import default_partition
from streamlet.serdes import Serdes
from streamlet.spark import SparkStreams
from streamlet.spark.backfill import BackfillIncompleteError, BackfillQuery, KafkaPositions, run_to_fixed_point
from streamlet.spark.query import Bounds, start_query
from streamlet.testing.local_broker import LocalKafkaBroker
from streamlet.topology import Topology
from tests.fidelity.topology import apply
from tests.helpers.kafka import Rec, create_kept_topics, produce_records, read_all
from tests.spark.apps import INPUT_ENV
from tests.spark.harness import run_asyncio_runtime

pytestmark = pytest.mark.broker

PARTITIONS = 2
BASE_TS = 1_700_000_000_000
S = Serdes.String()
_INPUTS = ["events", "events-right", "table", "orders", "customers", "regroup-table", "left-table", "right-table",
           "loop"]
_OUTPUTS = ["stateless", "aggregated", "windowed", "stream-joined", "table-joined", "fk-joined", "regrouped",
            "tables-joined", "looped"]


def _to(topic: str, key: Any = "string", value: str = "string") -> dict[str, Any]:
    return {"op": "to", "topic": topic, "key": key, "value": value}


def _every_kind(topic: Callable[[str], str]) -> Topology:
    builder = StreamsBuilder()

    def chain(current: Any, ops: list[dict[str, Any]]) -> Any:
        for op in ops:
            current = apply(builder, current, op)
        return current

    events = apply(builder, None, {"op": "stream", "topic": topic("events")})
    chain(events, [{"op": "flat_map", "fn": "twice"}, {"op": "filter", "fn": "value_even_length"},
                   {"op": "map_values", "fn": "tag"}, _to(topic("stateless"))])
    chain(events, [{"op": "group_by", "fn": "value_first", "name": "by-first", "serdes": True},
                   {"op": "aggregate", "fn": "trail", "store": None}, {"op": "to_stream"}, _to(topic("aggregated"))])
    chain(events, [{"op": "group_by_key", "name": None, "serdes": True},
                   {"op": "windowed_by", "window": {"size": 10, "advance": None, "grace": 5}},
                   {"op": "count", "store": None}, {"op": "to_stream"},
                   _to(topic("windowed"), {"time_windowed": 10}, "long")])
    chain(events, [{"op": "stream_join", "kind": "join", "other": [{"op": "stream", "topic": topic("events-right")}],
                    "window": {"diff": 5, "grace": 3, "before": None, "after": None}, "fn": "pair", "name": None,
                    "store_name": None}, _to(topic("stream-joined"))])
    chain(events, [{"op": "join_table", "kind": "left_join", "fn": "pair",
                    "table": [{"op": "table", "topic": topic("table"), "store": None}]}, _to(topic("table-joined"))])
    chain(None, [{"op": "table", "topic": topic("orders"), "store": None},
                 {"op": "fk_join", "kind": "left_join", "fk_fn": "first_char_key", "fn": "pair", "name": None,
                  "store": None, "table": [{"op": "table", "topic": topic("customers"), "store": None}]},
                 {"op": "to_stream"}, _to(topic("fk-joined"))])
    chain(None, [{"op": "table", "topic": topic("regroup-table"), "store": None},
                 {"op": "table_group_by", "fn": "swap", "name": "swapped", "serdes": True},
                 {"op": "count", "store": None}, {"op": "to_stream"}, _to(topic("regrouped"), "string", "long")])
    chain(None, [{"op": "table", "topic": topic("left-table"), "store": None},
                 {"op": "table_join", "kind": "outer_join", "fn": "pair", "store": None,
                  "table": [{"op": "table", "topic": topic("right-table"), "store": None}]},
                 {"op": "to_stream"}, _to(topic("tables-joined"))])
    # A loop through a user topic: a one-character value goes round once more.
    loop = builder.stream(topic("loop"), Consumed(S, S))
    loop.filter(lambda _k, v: len(v) < 2).map_values(lambda v: v + "+").to(topic("loop"), Produced(S, S))
    loop.to(topic("looped"), Produced(S, S))
    return builder.build()


def _keys_by_partition() -> list[list[str]]:
    keys: list[list[str]] = [[] for _ in range(PARTITIONS)]
    for i in range(40):
        key = f"k{i}"
        keys[default_partition(key.encode(), PARTITIONS)].append(key)
    return keys


def _input(topic: Callable[[str], str]) -> list[Rec]:
    """Each partition's events have values starting with digits of their own (so that a regrouped key has
    one writer); events at times 0 mod 3, the other stream at 1 mod 3, table rows at 2 mod 3."""
    keys = _keys_by_partition()
    records: list[Rec] = []

    def rec(name: str, key: str, value: str, ms: int) -> None:
        records.append(Rec(topic(name), default_partition(key.encode(), PARTITIONS), key.encode(), value.encode(),
                           BASE_TS + ms, (("h", str(ms).encode()),) if ms % 4 == 0 else ()))

    for partition, digits in ((0, "12"), (1, "34")):
        mine = keys[partition][:4]
        for i in range(14):
            ms = 3 * ((i * 7) % 20) + (60 if i > 9 else 0)  # out of order; some later than a window's grace
            rec("events", mine[i % 4], f"{digits[i % 2]}{'x' * (i % 3)}", ms)
            if i % 2 == 0:
                rec("events-right", mine[(i // 2) % 4], f"r{i}", ms + 1)
        for i, key in enumerate(mine[:3]):
            rec("table", key, f"t{i}", 3 * i + 2)
        for i, key in enumerate(keys[partition][4:8]):
            rec("regroup-table", key, f"{digits[0]}{i % 2}", 3 * i + 2)  # swapped: the value is the new key
            rec("regroup-table", key, f"{digits[1]}{i % 2}", 3 * i + 50)
            rec("left-table", key, f"l{i}", 3 * i + 2)
            if i % 2 == 0:
                rec("right-table", key, f"r{i}", 3 * i + 5)
        for i, key in enumerate(keys[partition][8:14]):
            rec("orders", key, f"{(i * 3) % 9}{partition}", 100 + 3 * i)  # customer a..d by the first digit; 8: none
        rec("loop", keys[partition][14], "a", 10 + partition)
        rec("loop", keys[partition][15], "bc", 20 + partition)
    for i, customer in enumerate(["a", "b", "c"]):  # d has no row; each is written before every order
        rec("customers", customer, f"c{i}", 3 * i + 2)
        rec("customers", customer, f"C{i}", 3 * i + 30)
    return records


def _config(prefix: str, bootstrap: str, tmp_path: Path) -> dict[str, Any]:
    return {"application.id": prefix, "bootstrap.servers": bootstrap, "statestore.cache.max.bytes": 0,
            "default.key.serde": "String", "default.value.serde": "String",  # as the differential suite's
            "state.dir": str(tmp_path / prefix), "commit.interval.ms": 100,
            "spark.checkpoint.location": str(tmp_path / prefix / "checkpoint"),
            "spark.task.partitions": 1}  # one Spark partition (one Python worker) per query: the cheapest run


def _outputs(bootstrap: str, topic: Callable[[str], str], prefix: str) -> dict[tuple[str, int, bytes], list[Rec]]:
    found = asyncio.run(read_all(bootstrap, {topic(name): PARTITIONS for name in _OUTPUTS}))
    by_key: dict[tuple[str, int, bytes], list[Rec]] = {}
    for records in found.values():
        for r in records:
            same = dataclasses.replace(r, topic=r.topic.removeprefix(prefix))
            by_key.setdefault((same.topic, same.partition, same.key), []).append(same)
    return by_key


def test_backfill_writes_what_the_asyncio_runtime_writes(spark: Any, kafka_broker: LocalKafkaBroker,
                                                         tmp_path: Path) -> None:
    bootstrap = kafka_broker.bootstrap_servers
    run = uuid.uuid4().hex[:8]
    outputs = {}
    passes = 0
    for engine in ("spark", "asyncio"):
        prefix = f"bfix-{run}-{engine}-"

        def topic(name: str, prefix: str = prefix) -> str:
            return prefix + name

        asyncio.run(create_kept_topics(bootstrap, {topic(name): PARTITIONS for name in [*_INPUTS, *_OUTPUTS]}))
        asyncio.run(produce_records(bootstrap, _input(topic)))
        config = _config(prefix.rstrip("-"), bootstrap, tmp_path)
        started = time.monotonic()
        if engine == "spark":
            passes = SparkStreams(_every_kind(topic), config, spark=spark).backfill(Bounds(bounded=True))
            print(f"backfill: {passes} passes in {time.monotonic() - started:.1f} s")
        else:
            asyncio.run(run_asyncio_runtime(_every_kind(topic), config))
            print(f"asyncio runtime: {time.monotonic() - started:.1f} s")
        outputs[engine] = _outputs(bootstrap, topic, prefix)
    spark_out, asyncio_out = outputs["spark"], outputs["asyncio"]
    written = {where[0] for where in asyncio_out}
    assert written == set(_OUTPUTS), f"the asyncio runtime wrote nothing to {set(_OUTPUTS) - written}"
    missing = sorted({w[0] for w in asyncio_out} - {w[0] for w in spark_out})
    assert not missing, f"the backfill wrote nothing to {missing}"
    differences = [f"{where}:\n  backfill {spark_out.get(where)}\n  asyncio  {asyncio_out.get(where)}"
                   for where in sorted(spark_out.keys() | asyncio_out.keys())
                   if spark_out.get(where) != asyncio_out.get(where)]
    assert not differences, f"{len(differences)} keys differ:\n" + "\n".join(differences[:20])
    assert passes == 3  # the foreign-key join's answers and the loop's second round: one pass more, then none


def test_a_loop_without_end_fails_the_backfill_saying_so(spark: Any, kafka_broker: LocalKafkaBroker, tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    """`streamlet spark backfill` itself (in this process: its session is the test run's)."""
    bootstrap = kafka_broker.bootstrap_servers
    prefix = f"bfix-{uuid.uuid4().hex[:8]}-endless"
    monkeypatch.setenv(INPUT_ENV, f"{prefix}-loop")
    asyncio.run(create_kept_topics(bootstrap, {f"{prefix}-loop": 1}))
    asyncio.run(produce_records(bootstrap, [Rec(f"{prefix}-loop", 0, b"k", b"a", BASE_TS)]))
    code = main(["spark", "backfill", "tests.spark.apps:endless_loop", "--checkpoint", str(tmp_path / "checkpoint"),
                 "--set", f"bootstrap.servers={bootstrap}", "--set", f"application.id={prefix}",
                 "--set", "spark.backfill.max.rounds=3", "--set", f"state.dir={tmp_path}"])
    err = capsys.readouterr().err
    assert code == 1
    assert f"no end after 3 passes over its queries: each pass wrote new records to topics the topology reads " \
           f"again ({prefix}-loop-0)" in err
    assert "backfill done" not in err


def test_a_query_stopped_before_the_end_of_its_input_fails_the_backfill(spark: Any, kafka_broker: LocalKafkaBroker,
                                                                        tmp_path: Path) -> None:
    bootstrap = kafka_broker.bootstrap_servers
    prefix = f"bfix-{uuid.uuid4().hex[:8]}-stopped"
    builder = StreamsBuilder()
    builder.stream(f"{prefix}-in", Consumed(S, S)).map_values(str.upper).to(f"{prefix}-out", Produced(S, S))
    asyncio.run(create_kept_topics(bootstrap, {f"{prefix}-in": 1, f"{prefix}-out": 1}))
    asyncio.run(produce_records(bootstrap,
                                [Rec(f"{prefix}-in", 0, b"k", f"v{i}".encode(), BASE_TS + i) for i in range(5)]))
    streams = SparkStreams(builder.build(), _config(prefix, bootstrap, tmp_path), spark=spark)
    [plan] = streams._plan()
    checkpoint = tmp_path / "stopped-checkpoint"

    def stopped_at_once() -> None:  # as `query.stop()` from another thread, or a SIGTERM handler, would
        query = start_query(spark, plan, str(checkpoint), Bounds(bounded=True))
        query.stop()

    offsets = KafkaPositions({"bootstrap.servers": bootstrap, "application.id": prefix}, read_committed=False)
    try:
        with pytest.raises(BackfillIncompleteError, match=rf"stopped before the end of its input: {prefix}-in-0 at "
                                                          r"offset 0 of 5"):
            run_to_fixed_point([BackfillQuery("stopped", [(f"{prefix}-in", 0)], checkpoint, stopped_at_once)], set(),
                               offsets)
    finally:
        offsets.close()
