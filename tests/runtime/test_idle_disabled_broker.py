"""`max.task.idle.ms` = -1 on a real broker: a task reading several partitions processes what it has buffered
without waiting for any other input partition, as Kafka Streams' `PartitionGroup.readyToProcess` does when
idling is disabled; with 0 it waits for the records the broker has on an empty partition and merges by
timestamp.

The case: a stream-table left join (one task reading partition 0 of both topics) whose table topic holds a
long backlog, written one record per batch and read one batch per fetch (`max.partition.fetch.bytes` 1), its
last rows the users the orders name; the orders, written later in one batch, arrive in the first fetch. With 0
the task waits for the table's backlog and every order finds its user; with -1 it joins the orders while the
table's rows are still on the broker, and none does. Kafka Streams 4.4.0 (EnforcedProcessingCheck in
tests/java/streams4) is run over the same input and must give the same output.

Found while adding the enforced-processing metric: streamlet treated -1 as 0.
"""

from __future__ import annotations

import time
import uuid
from pathlib import Path
from typing import Any

import anyio
import pytest

from streamlet.runtime.kafka_streams import KafkaStreams
from tests.helpers.kafka import create_topics, produce, produce_in_order, read_until
from tests.streams4_java import enforced_check_topology, run_check

pytestmark = [pytest.mark.anyio, pytest.mark.broker]

_ORDERS = 7
_BACKLOG = 200
"""Table rows before the users the orders name, one fetch each: the orders are joined long before the users
arrive unless the task waits for them."""
_FETCH = {"main.consumer.max.partition.fetch.bytes": 1}


def _outcome(records: list[Any]) -> list[tuple[str, bool]]:
    """Per output record, its key and whether the order found its user (Java's joiner sees null, Python's None)."""
    return sorted((r.key.decode(), not r.value.decode().endswith(("|null", "|None"))) for r in records)


@pytest.mark.parametrize("idle_ms", [-1, 0])
async def test_a_disabled_idle_time_joins_without_waiting_for_the_table_backlog(
        kafka_broker: Any, tmp_path: Path, idle_ms: int) -> None:
    bootstrap = kafka_broker.bootstrap_servers
    sfx = uuid.uuid4().hex[:8]
    orders, users = f"nowait-orders-{sfx}", f"nowait-users-{sfx}"
    java_out, our_out = f"nowait-oj-{sfx}", f"nowait-op-{sfx}"
    await create_topics(bootstrap, {orders: 1, users: 1, java_out: 1, our_out: 1})
    # Recent times, older than the orders' (stamped when sent): the broker's retention check, first run 30 s after
    # it started, deletes records of 1970 at once (7 days' retention), and took the table's rows mid-test.
    base = int(time.time() * 1000) - 3_600_000
    rows = [(f"filler-{i}", "x", base + i) for i in range(_BACKLOG)]
    rows += [(f"user-{i}", f"name-{i}", base + _BACKLOG + i) for i in range(_ORDERS)]
    await produce_in_order(bootstrap, users, rows)  # one batch per record: one fetch per record
    await produce(bootstrap, orders, [(f"user-{i}".encode(), f"order-{i}".encode()) for i in range(_ORDERS)])

    extra = "".join(f"{k}={v}\n" for k, v in _FETCH.items())
    stdin = f"{bootstrap}\nnowait-java-{sfx}\n{orders}\n{users}\n{java_out}\n{_ORDERS}\n{idle_ms}\n{extra}"
    await anyio.to_thread.run_sync(lambda: run_check("EnforcedProcessingCheck", stdin))
    java = _outcome(await read_until(bootstrap, java_out, lambda rs: len(rs) >= _ORDERS, timeout=60))

    streams = KafkaStreams(enforced_check_topology(orders, users, our_out), {
        "application.id": f"nowait-{sfx}", "bootstrap.servers": bootstrap, "state.dir": str(tmp_path),
        "commit.interval.ms": 100, "max.task.idle.ms": idle_ms, **_FETCH})
    await streams.start()
    try:
        ours = _outcome(await read_until(bootstrap, our_out, lambda rs: len(rs) >= _ORDERS, timeout=60))
    finally:
        await streams.close()

    joined = idle_ms != -1
    assert java == [(f"user-{i}", joined) for i in range(_ORDERS)]  # the case shows what it is meant to
    assert ours == java
