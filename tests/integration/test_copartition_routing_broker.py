"""On the real broker: co-partitioning of join inputs at start-up, and dynamic routing to topics the
application did not know when it started (`to(TopicNameExtractor)`)."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import anyio
import pytest

from streamlet import Consumed, KafkaStreams, Produced, State, StreamsBuilder, TopologyError
from streamlet.kafka.topic_manager import admin_client, describe_partition_counts
from streamlet.partitioner import default_partition
from streamlet.serdes import Serdes
from tests.helpers.kafka import create_topics, produce, read_until

pytestmark = [pytest.mark.anyio, pytest.mark.broker]

S = Serdes.String()


def settings(bootstrap: str, app_id: str, state_dir: Path) -> dict[str, Any]:
    return {"application.id": app_id, "bootstrap.servers": bootstrap, "state.dir": str(state_dir),
            "commit.interval.ms": 100, "statestore.cache.max.bytes": 0,
            "default.key.serde": "String", "default.value.serde": "String"}


def order_user_join(orders: str, users: str, out: str, rekey: bool) -> Any:
    """Orders (order id -> user id) left-joined with the users table (user id -> name)."""
    b = StreamsBuilder()
    stream = b.stream(orders, Consumed(S, S))
    if rekey:
        stream = stream.select_key(lambda order, user: user)
    stream.left_join(b.table(users, Consumed(S, S)), lambda user, name: f"{user}:{name}").to(out, Produced(S, S))
    return b.build()


async def test_a_join_over_topics_with_different_partition_counts_does_not_start(
        kafka_broker: Any, tmp_path: Path) -> None:
    bootstrap = kafka_broker.bootstrap_servers
    sfx = uuid.uuid4().hex[:8]
    orders, users, out = f"cp-orders-{sfx}", f"cp-users-{sfx}", f"cp-out-{sfx}"
    await create_topics(bootstrap, {orders: 2, users: 3, out: 1})
    streams = KafkaStreams(order_user_join(orders, users, out, rekey=False),
                           settings(bootstrap, f"cp-{sfx}", tmp_path))
    with pytest.raises(TopologyError, match=rf"Topics not co-partitioned: \[\{{{orders}=2, {users}=3\}}\]"):
        await streams.start()
    assert streams.state is State.ERROR
    await streams.close()


async def test_a_repartitioned_join_input_gets_the_other_inputs_partition_count(
        kafka_broker: Any, tmp_path: Path) -> None:
    """The orders are re-keyed by user through a repartition topic; it must have the users topic's 3
    partitions (not the orders topic's 2), or an order would reach a task that does not hold its user."""
    bootstrap = kafka_broker.bootstrap_servers
    sfx = uuid.uuid4().hex[:8]
    orders, users, out = f"cp-orders-{sfx}", f"cp-users-{sfx}", f"cp-out-{sfx}"
    await create_topics(bootstrap, {orders: 2, users: 3, out: 1})
    user_ids = [f"u{i}" for i in range(30)]
    await produce(bootstrap, users, [(u.encode(), f"name-{u}".encode()) for u in user_ids])
    topology = order_user_join(orders, users, out, rekey=True)
    [repartition] = [n for n, spec in topology.internal_topics.items() if spec.kind == "repartition"]
    app_id = f"cp-{sfx}"
    async with KafkaStreams(topology, settings(bootstrap, app_id, tmp_path)) as streams:
        with anyio.fail_after(60):
            while streams.state is not State.RUNNING:
                await anyio.sleep(0.1)
        async with admin_client(bootstrap) as admin:
            counts = await describe_partition_counts(admin, [f"{app_id}-{repartition}"])
        assert counts == {f"{app_id}-{repartition}": 3}
        await anyio.sleep(2)  # the table's partitions are read before the orders come
        orders_sent = [(f"o{i}".encode(), user_ids[i % len(user_ids)].encode()) for i in range(300)]
        await produce(bootstrap, orders, orders_sent)
        got = await read_until(bootstrap, out, lambda rs: len(rs) >= len(orders_sent), timeout=90)
    assert sorted(r.value.decode() for r in got) == sorted(f"{u.decode()}:name-{u.decode()}" for _, u in orders_sent)


async def test_records_are_routed_to_topics_first_named_while_running(kafka_broker: Any, tmp_path: Path) -> None:
    """Neither output topic is known at start-up: the first record for each makes the runtime look it up,
    and every record lands in the partition Kafka's default partitioner picks for that topic's count."""
    bootstrap = kafka_broker.bootstrap_servers
    sfx = uuid.uuid4().hex[:8]
    inp, small, large = f"rt-in-{sfx}", f"rt-small-{sfx}", f"rt-large-{sfx}"
    await create_topics(bootstrap, {inp: 2, small: 2, large: 5})
    b = StreamsBuilder()
    b.stream(inp, Consumed(S, S)).to(lambda key, value, ctx: small if int(value) % 2 else large, Produced(S, S))
    records = [(f"k{i}".encode(), str(i).encode()) for i in range(400)]
    async with KafkaStreams(b.build(), settings(bootstrap, f"rt-{sfx}", tmp_path)):
        await produce(bootstrap, inp, records)
        got_small = await read_until(bootstrap, small, lambda rs: len(rs) >= 200, timeout=60)
        got_large = await read_until(bootstrap, large, lambda rs: len(rs) >= 200, timeout=60)
    assert sorted(r.value for r in got_small) == sorted(v for _, v in records if int(v) % 2)
    assert sorted(r.value for r in got_large) == sorted(v for _, v in records if not int(v) % 2)
    assert all(r.partition == default_partition(r.key, 2) for r in got_small)
    assert all(r.partition == default_partition(r.key, 5) for r in got_large)
