"""What an `on_window_close` aggregation's final-results read does to its record cache, as in Kafka Streams.

Kafka Streams keeps such an aggregation's windows in a time-ordered store under a time-ordered caching layer.
Its `fetchAll(from, to)` walks the cache by window start, and every cached window it reads becomes the most
recently used: the windows from `from` up to `to`, and the first one past `to`, which the range filter reads
before it stops. Windows before `from`, and after that first one, keep their places. Which window is the
eldest decides what the next put evicts and flushes; a flushed window can then fall below the store's
retention floor while a cached one stays readable, so the final results depend on it.

streamlet refreshed every cached window on that read. The first 50,000-case `make fidelity` run found the
difference (tests/fidelity/KAFKA_STREAMS_4_DIFFERENCES.md): a left stream-stream join releases two unjoined
records in one input, a hopping count with final results and a small cache counts them, and at 260-320 cache
bytes Kafka Streams emitted window a@2 that streamlet had evicted. A trace of Kafka Streams' cache (its
NamedCache counted exactly one hit on the first, empty, final-results read) showed the rule. The case runs
here at cache sizes on both sides of the bands where the eviction order matters.
"""

from __future__ import annotations

import pytest

from tests.fidelity.harness import KafkaStreamsReference, difference_on_both, java_available
from tests.fidelity.topology import Case

pytestmark = pytest.mark.skipif(not java_available(), reason="the differential suite needs Java 17 and Maven")



def _left_join_then_final_count(cache_max_bytes: int) -> Case:
    """The first 50,000-case `make fidelity` run's case: a left stream-stream join whose last input releases
    two unjoined records at once, counted in hopping windows with final results only."""
    return {
        "config": {"cache_max_bytes": cache_max_bytes},
        "ops": [
            {"op": "stream", "topic": "in"},
            {"op": "merge", "topic": "in2"},
            {"op": "stream_join", "kind": "left_join", "other": [{"op": "stream", "topic": "in3"}],
             "window": {"diff": 0, "grace": None, "before": None, "after": 1}, "fn": "pair", "name": None,
             "store_name": None},
            {"op": "to", "topic": "tap", "key": "string", "value": "string"},
            {"op": "group_by_key", "name": None, "serdes": False},
            {"op": "windowed_by", "window": {"size": 5, "advance": 2, "grace": None}},
            {"op": "emit_strategy", "kind": "on_window_close"},
            {"op": "count", "store": None},
            {"op": "to_stream"},
            {"op": "to", "topic": "out", "key": {"time_windowed": 5}, "value": "long"},
        ],
        "inputs": [{"advance": 1}, {"advance": 1}, {"topic": "in", "key": "a", "value": "0", "ts": 5},
                   {"topic": "in", "key": None, "value": None, "ts": 10},
                   {"topic": "in", "key": "a", "value": "0", "ts": 9},
                   {"advance": 1}, {"topic": "in", "key": "a", "value": "0", "ts": 11}],
        "outputs": ["out", "tap"],
        "all_topics": False,
    }


@pytest.mark.parametrize("cache_max_bytes", [150, 220, 260, 300, 320, 1000])
def test_final_windows_behind_a_left_join_with_a_small_cache(kafka_streams: KafkaStreamsReference,
                                                             cache_max_bytes: int) -> None:
    case = _left_join_then_final_count(cache_max_bytes)
    report = difference_on_both(kafka_streams, case)
    assert report is None, report
