"""How an instance's record cache (`statestore.cache.max.bytes`) is split among its tasks."""

from __future__ import annotations

from streamlet import Consumed, Grouped, Materialized, Produced, Serdes, StreamsBuilder, Topology
from streamlet.config import StreamsConfig
from streamlet.runtime.task_manager import cache_bytes_per_task

CONFIG = StreamsConfig({"application.id": "cache-split", "bootstrap.servers": "unused:9092",
                        "statestore.cache.max.bytes": 8_000_000})


def _wordcount(caching: bool = True) -> Topology:
    builder = StreamsBuilder()
    counts = Materialized("counts", caching=caching)
    (
        builder.stream("lines", Consumed(key_serde=Serdes.String(), value_serde=Serdes.String()))
        .flat_map_values(lambda line: line.split())
        .group_by(lambda _k, w: w, Grouped(key_serde=Serdes.String(), value_serde=Serdes.String()))
        .count(counts)
        .to_stream()
        .to("counts", Produced(key_serde=Serdes.String(), value_serde=Serdes.Long()))
    )
    return builder.build()


def test_tasks_without_cached_stores_take_no_share() -> None:
    """WordCount: 4 split tasks (no store) and 4 count tasks; the count tasks share the whole budget."""
    topology = _wordcount()
    split, count = sorted(topology.sub_topologies(), key=lambda s: s.id)
    assert not split.stores and count.stores
    tasks = [split] * 4 + [count] * 4
    assert cache_bytes_per_task(CONFIG, topology, tasks) == 2_000_000
    assert cache_bytes_per_task(CONFIG, topology, [count] * 3) == 2_666_666


def test_no_cached_store_anywhere_leaves_the_budget_unsplit() -> None:
    topology = _wordcount(caching=False)
    tasks = [sub for sub in topology.sub_topologies() for _ in range(4)]
    assert cache_bytes_per_task(CONFIG, topology, tasks) == 8_000_000
    assert cache_bytes_per_task(CONFIG, topology, []) == 8_000_000
