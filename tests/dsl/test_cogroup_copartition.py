"""A cogroup co-partitions its grouped streams' sources, as Kafka Streams' `ensureCopartitionWith` does.

The groups below are what Kafka Streams 4.4.0's `InternalTopologyBuilder.copartitionGroups()` gives for the same
topologies (checked with a few lines of Java against kafka-streams 4.4.0). A streams group's members announce
them with the topology, and the broker refuses a member whose topology differs: a rolling swap of a cogroup
application from Kafka Streams to streamlet failed so ("Topology updates are not supported yet") before.
"""

from __future__ import annotations

from typing import Any

from tests.fidelity_restart.ops import build

_GROUP_BY_KEY = {"op": "group_by_key", "name": None, "serdes": False}
_END = [{"op": "to_stream"}, {"op": "to", "topic": "out", "key": "string", "value": "string"}]


def _cogroup(others: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{"op": "stream", "topic": "in"}, _GROUP_BY_KEY,
            {"op": "cogroup", "fn": "trail", "others": others, "window": None, "store": None, "name": None}, *_END]


def test_one_grouped_stream_is_a_group_of_its_own() -> None:
    assert build({"ops": _cogroup([])}).copartition_topic_groups() == [["in"]]


def test_grouped_streams_without_repartition_are_co_partitioned() -> None:
    others = [{"ops": [{"op": "stream", "topic": "cg1"}, _GROUP_BY_KEY], "fn": "trail"},
              {"ops": [{"op": "stream", "topic": "cg2"}, {"op": "filter_not", "fn": "value_not_null"},
                       _GROUP_BY_KEY], "fn": "trail"}]
    assert build({"ops": _cogroup(others)}).copartition_topic_groups() == [["cg1", "cg2", "in"]]


def test_a_repartitioned_stream_is_named_by_its_source_before_the_repartition() -> None:
    others = [{"ops": [{"op": "stream", "topic": "cg1"},
                       {"op": "group_by", "fn": "value_first", "name": "cgroup2", "serdes": False}], "fn": "trail"}]
    assert build({"ops": _cogroup(others)}).copartition_topic_groups() == [["cg1", "in"]]
