"""`streamlet spark backfill --from/--until <ISO time>`: the times become each input partition's first
offset at or after them, asked of Kafka before the run (streamlet.spark.bounds.offsets_at); a missing
input topic is a one-line error. No Spark is started: this is the step before it."""

from __future__ import annotations

import uuid

import pytest

from streamlet.errors import ConfigError
from streamlet.spark.bounds import backfill_bounds, offsets_at
from streamlet.testing.local_broker import LocalKafkaBroker
from tests.helpers.kafka import Rec, create_kept_topics, produce_records

pytestmark = [pytest.mark.anyio, pytest.mark.broker]


async def _topic_with_times(bootstrap: str, times: list[int]) -> str:
    """A fresh two-partition topic (kept forever: its timestamps are old) with one record per time,
    alternately in partitions 0 and 1."""
    topic = f"backfill-times-{uuid.uuid4().hex[:8]}"
    await create_kept_topics(bootstrap, {topic: 2})
    await produce_records(bootstrap, [Rec(topic, i % 2, b"k", b"v", ts) for i, ts in enumerate(times)])
    return topic


async def test_a_time_becomes_each_partitions_first_offset_at_or_after_it(kafka_broker: LocalKafkaBroker) -> None:
    settings = {"bootstrap.servers": kafka_broker.bootstrap_servers}
    topic = await _topic_with_times(kafka_broker.bootstrap_servers, [1_000, 2_000, 3_000, 4_000, 5_000])
    # partition 0 holds 1000, 3000, 5000; partition 1 holds 2000, 4000
    assert await offsets_at(settings, [topic], 2_500) == {topic: {"0": 1, "1": 1}}
    assert await offsets_at(settings, [topic], 9_000) == {topic: {"0": 3, "1": 2}}  # none after: the end
    bounds = await backfill_bounds(settings, [topic], "1970-01-01T00:00:02Z", "1970-01-01T00:00:04.500Z")
    assert bounds.starting == f'{{"{topic}": {{"0": 1, "1": 0}}}}'
    assert bounds.until_offsets == {topic: {"0": 2, "1": 2}}


async def test_a_missing_input_topic_is_named(kafka_broker: LocalKafkaBroker) -> None:
    with pytest.raises(ConfigError, match="no-such-input"):
        await offsets_at({"bootstrap.servers": kafka_broker.bootstrap_servers}, ["no-such-input"], 0)
