"""Co-partitioning of join inputs at start-up (the pure planning step; the broker test is in tests/integration).

A join reads partition p of both its inputs in one task, so the inputs must have the same partition
count. Kafka Streams checks this when it assigns tasks: user topics with different counts are an error
(`Topics not co-partitioned`), and the repartition topics among a join's inputs get the count of the
others instead of the count of the sub-topology that writes them.
"""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from streamlet.dsl import Consumed, JoinWindows, Repartitioned, StreamsBuilder
from streamlet.errors import TopologyError
from streamlet.kafka.topic_manager import plan_internal_topics
from streamlet.serdes import Serdes
from streamlet.topology import Topology

S = Serdes.String()


def _joiner(a: object, b: object) -> str:
    return f"{a}&{b}"


def stream_table(rekey: bool = False) -> Topology:
    b = StreamsBuilder()
    stream = b.stream("orders", Consumed(S, S))
    if rekey:
        stream = stream.select_key(lambda k, v: v)
    stream.join(b.table("users", Consumed(S, S)), _joiner).to("out")
    return b.build()


def repartition_name(topology: Topology) -> str:
    [name] = [n for n, spec in topology.internal_topics.items() if spec.kind == "repartition"]
    return name


def test_stream_table_join_over_topics_with_different_counts_fails_as_kafka_streams() -> None:
    message = r"^Invalid topology: Topics not co-partitioned: \[\{orders=2, users=3\}\]$"
    with pytest.raises(TopologyError, match=message):
        plan_internal_topics(stream_table(), "app", {"orders": 2, "users": 3, "out": 1})


def test_equal_counts_plan_one_task_per_partition() -> None:
    plan = plan_internal_topics(stream_table(), "app", {"orders": 4, "users": 4, "out": 1})
    assert plan.subtopology_partitions == {0: 4}


@pytest.mark.parametrize("kind", ["join", "left_join", "outer_join"])
def test_stream_stream_and_table_table_joins_are_checked(kind: str) -> None:
    b = StreamsBuilder()
    left, right = b.stream("l", Consumed(S, S)), b.stream("r", Consumed(S, S))
    getattr(left, kind)(right, _joiner, JoinWindows.of_time_difference_with_no_grace(5)).to("out")
    with pytest.raises(TopologyError, match=r"Topics not co-partitioned: \[\{l=1, r=2\}\]"):
        plan_internal_topics(b.build(), "app", {"l": 1, "r": 2, "out": 1})
    b = StreamsBuilder()
    getattr(b.table("l", Consumed(S, S)), kind)(b.table("r", Consumed(S, S)), _joiner).to_stream().to("out")
    with pytest.raises(TopologyError, match=r"Topics not co-partitioned: \[\{l=3, r=2\}\]"):
        plan_internal_topics(b.build(), "app", {"l": 3, "r": 2, "out": 1})


def test_merge_is_not_a_join_and_needs_no_co_partitioning() -> None:
    b = StreamsBuilder()
    b.stream("a", Consumed(S, S)).merge(b.stream("b", Consumed(S, S))).to("out")
    plan = plan_internal_topics(b.build(), "app", {"a": 1, "b": 5, "out": 1})
    assert plan.subtopology_partitions == {0: 5}


@given(st.integers(1, 12), st.integers(1, 12))
def test_a_repartitioned_join_input_gets_the_partition_count_of_the_other_input(orders: int, users: int) -> None:
    """Not the count of the sub-topology that writes it (`orders`), which would leave keys on the wrong task."""
    topology = stream_table(rekey=True)
    plan = plan_internal_topics(topology, "app", {"orders": orders, "users": users, "out": 1})
    assert plan.internal_topics[f"app-{repartition_name(topology)}"].partitions == users
    assert sorted(plan.subtopology_partitions.values()) == sorted([orders, users])


def test_a_repartition_topic_with_its_own_count_must_match_the_other_input() -> None:
    b = StreamsBuilder()
    stream = b.stream("orders", Consumed(S, S)).repartition(Repartitioned(name="rk", num_partitions=7))
    stream.join(b.table("users", Consumed(S, S)), _joiner).to("out")
    with pytest.raises(TopologyError, match=r"Number of partitions \[7\] of repartition topic \[app-rk-repartition\] "
                                            r"doesn't match number of partitions \[4\] of the source topic\."):
        plan_internal_topics(b.build(), "app", {"orders": 2, "users": 4, "out": 1})
    plan = plan_internal_topics(b.build(), "app", {"orders": 2, "users": 7, "out": 1})
    assert plan.internal_topics["app-rk-repartition"].partitions == 7


def test_joined_repartition_topics_only_take_the_largest_count() -> None:
    b = StreamsBuilder()
    left = b.stream("l", Consumed(S, S)).select_key(lambda k, v: v)
    right = b.stream("r", Consumed(S, S)).select_key(lambda k, v: v)
    left.join(right, _joiner, JoinWindows.of_time_difference_with_no_grace(5)).to("out")
    topology = b.build()
    plan = plan_internal_topics(topology, "app", {"l": 2, "r": 6, "out": 1})
    repartitions = [t for t in plan.internal_topics.values() if t.kind == "repartition"]
    assert len(repartitions) == 2 and {t.partitions for t in repartitions} == {6}
    join_sub = plan.source_topics[repartitions[0].name]
    assert plan.subtopology_partitions[join_sub] == 6
    # the join's stores live in that sub-topology: their changelogs follow its task count
    assert {t.partitions for t in plan.internal_topics.values() if t.kind == "changelog"} == {6}
