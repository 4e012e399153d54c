"""Co-partition groups as Kafka Streams makes them: a cogroup's grouped streams (`ensureCopartitionWith`), and
groups that share a topic merged into one.

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


def test_groups_sharing_a_topic_are_one_group() -> None:
    """A stream-stream join, then a stream-table join of its result: Kafka Streams 4.4.0 gives one group
    [in, in3, tbl] (its transitive closure), which a streams group's members must announce alike."""
    ops = [{"op": "stream", "topic": "in"},
           {"op": "stream_join", "kind": "join", "other": [{"op": "stream", "topic": "in3"}],
            "window": {"diff": 5, "grace": 20, "before": None, "after": None}, "fn": "pair", "name": None,
            "store_name": None},
           {"op": "join_table", "kind": "join", "table": [{"op": "table", "topic": "tbl", "store": None}],
            "fn": "pair"},
           {"op": "to", "topic": "out", "key": "string", "value": "string"}]
    assert build({"ops": ops}).copartition_topic_groups() == [["in", "in3", "tbl"]]
