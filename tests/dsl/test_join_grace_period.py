"""A stream-table join with a grace period (KIP-923, `Joined(grace_period=...)`) through the TopologyTestDriver.

Stream records wait in the join's buffer until the join's stream time has passed them by the grace
period and are then joined oldest first, each with the versioned table as of its own time, so table
updates that arrive late but within the grace period are seen; a record already older than that is
joined at once. The differential test runs the same drawn out-of-order cases through Kafka Streams
4.4.0's TopologyTestDriver (tests/java/streams4 GraceJoinCheck) and compares the join's output, the
topology's description and the buffer's changelog byte for byte.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Any

import pytest

from streamlet import Consumed, Joined, Materialized, Produced, Serdes, Stores, StreamsBuilder
from streamlet.errors import TopologyError
from streamlet.testing import TopologyTestDriver
from streamlet.topology import Topology
from tests.streams4_java import run_check

S = Serdes.String()
B = Serdes.ByteArray()
CONFIG = {"application.id": "app", "default.key.serde": "String", "default.value.serde": "String",
          "statestore.cache.max.bytes": 0}


def joiner(value: str, row: str | None) -> str:
    return f"{value}+{'null' if row is None else row}"


def grace_topology(left: bool, grace: int, history: int, versioned: bool = True, in_memory: bool = False,
                   name: str | None = None, builder: StreamsBuilder | None = None) -> Topology:
    builder = builder or StreamsBuilder()
    factory = Stores.in_memory_versioned_key_value_store if in_memory else Stores.persistent_versioned_key_value_store
    materialized = Materialized.as_(factory("versions", history)) if versioned else Materialized("plain")
    table = builder.table("tbl", Consumed(S, S), materialized)
    stream = builder.stream("in", Consumed(S, S))
    joined = Joined(S, S, S, name=name, grace_period=grace)
    (stream.left_join if left else stream.join)(table, joiner, joined).to("out", Produced(S, S))
    return builder.build()


def run_case(line: str, in_memory: bool = False) -> list[str]:
    """What GraceJoinCheck prints for one case line, computed by streamlet."""
    words = line.split(" ")
    label, left, grace, history, versioned = words[0], words[1] == "left", int(words[2]), int(words[3]), \
        words[4] == "versioned"
    try:
        topology = grace_topology(left, grace, history, versioned, in_memory)
        described = str(topology.describe())
    except TopologyError as error:
        return [f"{label} error {error}"]
    lines = [f"{label} describe", *(f"{label} | {text}" for text in described.split("\n") if text.strip())]
    join_name = "KSTREAM-LEFTJOIN-0000000003" if left else "KSTREAM-JOIN-0000000003"
    with TopologyTestDriver(topology, CONFIG) as driver:
        inputs = {"s": driver.create_input_topic("in", S, S), "t": driver.create_input_topic("tbl", S, S)}
        for event in words[5:]:
            side, key, value, ts = event.split(",")
            inputs[side].pipe_input(None if key == "~" else key, None if value == "~" else value, int(ts))
        lines += [f"{label} out {r.key} {r.value} {r.timestamp}"
                  for r in driver.create_output_topic("out", S, S).read_records_to_list()]
        log = driver.create_output_topic(f"app-{join_name}-Buffer-changelog", B, B).read_records_to_list()
        lines += [f"{label} log {r.key.hex()} {'null' if r.value is None else r.value.hex()}" for r in log]
    return lines


HAND_CASES = [
    # a table update arriving after the stream record, within the grace: seen; s12 is late: joined at once
    "hand1 join 10 100 versioned t,k,v10,10 s,k,s25,25 t,k,v20,20 s,k,s30,30 s,k,s12,12 s,k,s40,40 s,k,s50,50",
    # equal timestamps: key bytes, then arrival order; grace 0 still buffers a record at stream time
    "hand2 left 0 50 versioned s,b,x,5 s,a,y,5 s,b,z,5 t,a,r,5 s,a,w,6 s,c,q,4",
    # null values are dropped and do not move the buffer's stream time; null key in an inner join dropped
    "hand3 join 5 20 versioned t,k,r1,1 s,k,~,100 s,~,n,50 s,k,a,3 s,k,b,9 t,k,r2,2 s,k,c,20",
    # the check at build time: the history retention must cover the grace period; a plain table is refused
    "hand4 left 10 5 versioned s,k,a,1",
    "hand5 left 10 100 plain s,k,a,1",
    # a deletion within the grace: a left join meets no row
    "hand6 left 20 100 versioned t,k,v1,1 s,k,a,10 t,k,~,5 s,k,b,40",
]


def _drawn_case(rng: random.Random, index: int) -> str:
    left = rng.random() < 0.5
    grace = rng.choice([0, 1, 5, 10, 30])
    history = grace + rng.choice([0, 5, 40, 200])
    keys = ["a", "b", "c"][: rng.randint(1, 3)]
    events, clock = [], 0
    for step in range(rng.randint(4, 24)):
        clock += rng.randint(0, 8)
        ts = max(0, clock - rng.choice([0, 0, 0, 2, 7, 15, 40]))  # often out of order, sometimes past the grace
        side = "t" if rng.random() < 0.4 else "s"
        key = rng.choice(keys)
        if side == "s" and not left and rng.random() < 0.05:
            key = "~"  # an inner join drops a null key (Kafka Streams fails a left join's buffered null key)
        value = "~" if rng.random() < 0.08 else f"{side}{step}"
        events.append(f"{side},{key},{value},{ts}")
    return f"drawn{index} {'left' if left else 'join'} {grace} {history} versioned {' '.join(events)}"


DRAWN_CASES = [_drawn_case(random.Random(seed), seed) for seed in range(60)]


def test_same_output_description_and_changelog_as_kafka_streams() -> None:
    cases = HAND_CASES + DRAWN_CASES
    java = run_check("GraceJoinCheck", "".join(f"{case}\n" for case in cases)).splitlines()
    ours = [line for case in cases for line in run_case(case)]
    assert ours == java
    # the in-memory versioned table (and so an in-memory buffer) gives the same
    assert [line for case in cases for line in run_case(case, in_memory=True)] == java


Step = tuple[str, str | None, str | None, int]


def _outputs(topology: Topology, steps: Sequence[Step]) -> list[tuple[Any, Any, int]]:
    with TopologyTestDriver(topology, CONFIG) as driver:
        inputs = {"s": driver.create_input_topic("in", S, S), "t": driver.create_input_topic("tbl", S, S)}
        for side, key, value, ts in steps:
            inputs[side].pipe_input(key, value, ts)
        return [(r.key, r.value, r.timestamp) for r in driver.create_output_topic("out", S, S).read_records_to_list()]


def test_a_late_table_update_within_the_grace_is_seen() -> None:
    steps = [("t", "k", "old", 1), ("s", "k", "s10", 10), ("t", "k", "new", 8), ("s", "k", "s30", 30)]
    assert _outputs(grace_topology(True, 15, 100), steps) == [("k", "s10+new", 10)]  # s30 still waits
    # without a grace period the stream record is joined when it arrives, before the update
    builder = StreamsBuilder()
    versions = Materialized.as_(Stores.persistent_versioned_key_value_store("v", 100))
    table = builder.table("tbl", Consumed(S, S), versions)
    builder.stream("in", Consumed(S, S)).left_join(table, joiner).to("out", Produced(S, S))
    assert _outputs(builder.build(), steps) == [("k", "s10+old", 10), ("k", "s30+new", 30)]


def test_records_wait_until_stream_time_passes_them_by_the_grace_and_late_ones_join_at_once() -> None:
    steps = [("s", "k", "a", 20), ("s", "k", "b", 25), ("s", "k", "late", 5), ("s", "k", "c", 30)]
    assert _outputs(grace_topology(True, 10, 100), steps) == [("k", "late+null", 5), ("k", "a+null", 20)]


def test_a_left_join_joins_a_null_key_at_once() -> None:
    steps = [("s", "k", "a", 20), ("s", None, "n", 21), ("s", "k", "b", 40)]
    assert _outputs(grace_topology(True, 10, 100), steps) == [(None, "n+null", 21), ("k", "a+null", 20)]


def test_buffer_names_follow_the_join_and_are_listed_when_generated() -> None:
    topology = grace_topology(False, 10, 100, name="orders")
    assert "orders-Buffer" in topology.store_builders
    assert "Processor: orders (stores: [versions, orders-Buffer])" in str(topology.describe())
    builder = StreamsBuilder({"ensure.explicit.internal.resource.naming": "true"})
    with pytest.raises(TopologyError, match="KSTREAM-JOIN-0000000003-Buffer-changelog"):
        grace_topology(False, 10, 100, builder=builder)


def test_bad_grace_periods_get_clear_errors() -> None:
    with pytest.raises(TopologyError, match="must be versioned"):
        grace_topology(False, 10, 100, versioned=False)
    with pytest.raises(TopologyError, match="History retention must be at least grace period"):
        grace_topology(False, 101, 100)
    with pytest.raises(TopologyError, match="must not be negative"):
        Joined(grace_period=-1)
