"""How big a session store's cache entries are, as Kafka Streams counts them, decides what it evicts.

Kafka Streams sizes every cache entry by its own estimate: the cache key (for a session store, an 8-byte
segment id before the session key), the value's bytes, the LRU node's references and the dirty flag, and the
record context with its topic name and headers (`cache.entry_size`). streamlet's key-value cache, which
session stores use, counted a flat 48 bytes besides key and value. Its entries were smaller than Kafka Streams',
so at 300 bytes Kafka Streams evicted a session that streamlet kept: once the commit flushed a session ending
at 30, the store's retention hid the evicted session ending at 0, and Kafka Streams started a new session
where streamlet merged the two. `make test`'s differential run found the case (2026-11-26, 17:12 UTC,
tests/fidelity/KAFKA_STREAMS_4_DIFFERENCES.md); it runs here at cache sizes around the ones where the
eviction order changes.
"""

from __future__ import annotations

import pytest

from tests.fidelity.harness import KafkaStreamsReference, difference_on_both, java_available
from tests.fidelity.topology import Case

pytestmark = pytest.mark.skipif(not java_available(), reason="the differential suite needs Java 17 and Maven")


def _session_cogroup(cache_max_bytes: int) -> Case:
    """A session-windowed cogroup of three grouped streams (one through `flat_map`, so one input updates two
    keys' sessions), each aggregator appending to a trail."""
    return {
        "config": {"cache_max_bytes": cache_max_bytes},
        "ops": [
            {"op": "stream", "topic": "in"},
            {"op": "merge", "topic": "in2"},
            {"op": "to", "topic": "tap", "key": "string", "value": "string"},
            {"op": "group_by_key", "name": None, "serdes": False},
            {"op": "cogroup", "fn": "trail",
             "others": [{"ops": [{"op": "stream", "topic": "cg1"},
                                 {"op": "group_by", "fn": "value_first", "name": "cgroup2", "serdes": False}],
                         "fn": "trail"},
                        {"ops": [{"op": "stream", "topic": "cg2"},
                                 {"op": "flat_map", "fn": "twice"},
                                 {"op": "group_by_key", "name": "cgroup3", "serdes": False}],
                         "fn": "trail"}],
             "window": {"type": "session", "gap": 30, "grace": None}, "store": None, "name": None},
            {"op": "to_stream"},
            {"op": "to", "topic": "out", "key": {"session_windowed": True}, "value": "string"},
        ],
        "inputs": [{"advance": 1}, {"topic": "cg2", "key": "b", "value": None, "ts": 0}, {"advance": 1},
                   {"topic": "cg1", "key": None, "value": None, "ts": 1},
                   {"topic": "cg1", "key": "a", "value": None, "ts": 30}, {"advance": 1},
                   {"topic": "cg2", "key": "b", "value": None, "ts": 30},
                   {"topic": "cg2", "key": "b", "value": "x", "ts": 45}],
        "outputs": ["out", "tap"],
        "all_topics": False,
    }


@pytest.mark.parametrize("cache_max_bytes", [150, 250, 300, 340, 400, 1000])
def test_session_cogroup_with_a_small_cache(kafka_streams: KafkaStreamsReference, cache_max_bytes: int) -> None:
    report = difference_on_both(kafka_streams, _session_cogroup(cache_max_bytes))
    assert report is None, report
