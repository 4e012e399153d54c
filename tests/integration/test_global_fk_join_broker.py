"""A KStream-GlobalKTable join and a foreign-key join on the real broker, against the driver's output.

The global table is restored before any stream record is processed and then kept current by the
global consumer; the foreign-key join's subscription and response topics are created with the
partition counts of the tables they are co-partitioned with (here the two tables differ). The output
of each is compared with what `TopologyTestDriver` gives for the same input."""

from __future__ import annotations

import asyncio
import os
import uuid
from pathlib import Path
from typing import Any

import pytest

from streamlet import KafkaStreams, Serdes
from streamlet.testing import TopologyTestDriver
from tests.helpers.app_process import AppProcess
from tests.helpers.kafka import create_topics, produce, read_until
from tests.integration import global_fk_app

pytestmark = [pytest.mark.anyio, pytest.mark.broker]

Rows = list[tuple[str, str | None]]


def _encoded(rows: Rows) -> list[tuple[bytes | None, bytes | None]]:
    return [(k.encode(), None if v is None else v.encode()) for k, v in rows]


def _by_key(records: list[Any]) -> dict[str, list[str | None]]:
    """Each key's output values in order (the order across keys depends on partitions)."""
    out: dict[str, list[str | None]] = {}
    for r in records:
        out.setdefault(r.key.decode(), []).append(None if r.value is None else r.value.decode())
    return out


DEFAULT_SERDES = {"default.key.serde": "String", "default.value.serde": "String"}


def _config(bootstrap: str, app_id: str, state_dir: Path, default_serdes: bool = True) -> dict[str, Any]:
    return {"bootstrap.servers": bootstrap, "application.id": app_id, "state.dir": str(state_dir),
            "commit.interval.ms": 100, **(DEFAULT_SERDES if default_serdes else {})}


async def test_global_table_join_matches_the_driver(kafka_broker: Any, tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    bootstrap = kafka_broker.bootstrap_servers
    suffix = uuid.uuid4().hex[:8]
    orders, customers, out = f"gj-orders-{suffix}", f"gj-customers-{suffix}", f"gj-out-{suffix}"
    await create_topics(bootstrap, {orders: 3, customers: 2, out: 3})  # a global table needs no co-partitioning
    for name, topic in (("GJ_ORDERS", orders), ("GJ_CUSTOMERS", customers), ("GJ_OUTPUT", out)):
        monkeypatch.setenv(name, topic)
    first_customers: Rows = [(f"c{i}", f"name{i}") for i in range(20)]
    first_orders: Rows = [(f"o{i}", f"c{i % 25}:item{i}") for i in range(100)] + [("o-none", "no-customer")]
    later_customers: Rows = [("c1", "renamed1"), ("c2", None), ("c21", "late21")]
    later_orders: Rows = [(f"o{i}", f"c{i % 25}:again{i}") for i in range(50)]

    topology = global_fk_app.global_join_topology()
    with TopologyTestDriver(topology, {"application.id": "gj", "default.key.serde": "String",
                                       "default.value.serde": "String"}) as driver:
        for topic, rows in ((customers, first_customers), (orders, first_orders), (customers, later_customers),
                            (orders, later_orders)):
            pipe = driver.create_input_topic(topic)
            for k, v in rows:
                pipe.pipe_input(k, v)
        expected_records = driver.create_output_topic(out, Serdes.Bytes(), Serdes.Bytes()).read_records_to_list()
    expected = _by_key(expected_records)
    # No customer to look up: joined with no row, as Kafka Streams 4.x's left join does (3.9.1 dropped it;
    # tests/fidelity/KAFKA_STREAMS_4_DIFFERENCES.md).
    assert expected["o-none"] == ["no-customer|None"]

    await produce(bootstrap, customers, _encoded(first_customers))  # on the broker before the app starts
    streams = KafkaStreams(topology, _config(bootstrap, f"gj-{suffix}", tmp_path / "state"))
    async with streams:
        await produce(bootstrap, orders, _encoded(first_orders))
        await read_until(bootstrap, out, lambda rs: len(rs) >= len(first_orders) - 1, timeout=60)
        await produce(bootstrap, customers, _encoded(later_customers))
        view = streams.store("customers-global")
        for _ in range(200):  # the global consumer keeps the store current while the app runs
            if view.get("c1") is not None and view.get("c1").value == "renamed1" and view.get("c2") is None \
                    and view.get("c21") is not None:
                break
            await asyncio.sleep(0.1)
        await produce(bootstrap, orders, _encoded(later_orders))
        total = len(expected_records)
        got = await read_until(bootstrap, out, lambda rs: len(rs) >= total, timeout=60)
    assert len(got) == total
    assert _by_key(got) == expected


@pytest.mark.parametrize("default_serdes", [True, False], ids=["default-serdes", "serdes-from-consumed-only"])
async def test_foreign_key_join_matches_the_driver(kafka_broker: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                   default_serdes: bool) -> None:
    """Both tables' serdes come from `Consumed`: the join's internal topics need no default serdes (Kafka
    Streams infers theirs from the tables), so the run without them must give the same output."""
    bootstrap = kafka_broker.bootstrap_servers
    suffix = uuid.uuid4().hex[:8]
    app_id = f"fk-{suffix}"
    orders, customers, out = f"fk-orders-{suffix}", f"fk-customers-{suffix}", f"fk-out-{suffix}"
    await create_topics(bootstrap, {orders: 3, customers: 2, out: 3})
    for name, topic in (("FK_ORDERS", orders), ("FK_CUSTOMERS", customers), ("FK_OUTPUT", out)):
        monkeypatch.setenv(name, topic)
    batches: list[tuple[str, Rows]] = [
        (customers, [(f"c{i}", f"name{i}") for i in range(10)]),
        (orders, [(f"o{i}", f"c{i % 12}:item{i}") for i in range(60)]),  # c10, c11: no customer yet
        (customers, [("c10", "name10"), ("c3", "renamed3"), ("c4", None)]),
        (orders, [("o1", "c2:moved"), ("o5", None), ("o7", "c11:moved"), ("o8", "nocustomer")]),
        (customers, [("c11", "name11"), ("c2", "renamed2")]),
    ]
    topology = global_fk_app.fk_join_topology()
    driver_config = {"application.id": app_id, **(DEFAULT_SERDES if default_serdes else {})}
    string = Serdes.String()
    with TopologyTestDriver(topology, driver_config) as driver:
        for topic, rows in batches:
            pipe = driver.create_input_topic(topic, string, string)
            for k, v in rows:
                pipe.pipe_input(k, v)
        expected = {k: v for k, v in driver.create_output_topic(out, string, string).read_key_values_to_map().items()
                    if v is not None}
    assert expected and "o8" not in expected and "o5" not in expected

    def final(records: list[Any]) -> dict[str, str]:
        latest = {r.key.decode(): None if r.value is None else r.value.decode() for r in records}
        return {k: v for k, v in latest.items() if v is not None}

    streams = KafkaStreams(topology, _config(bootstrap, app_id, tmp_path / "state", default_serdes))
    async with streams:
        for topic, rows in batches:
            await produce(bootstrap, topic, _encoded(rows))
            await asyncio.sleep(0.5)
        got = await read_until(bootstrap, out, lambda rs: final(rs) == expected, timeout=90)
    assert final(got) == expected
    plan = streams._supervisor.plan if streams._supervisor is not None else None
    assert plan is not None
    counts = {t.name: t.partitions for t in plan.internal_topics.values()}
    # the subscriptions are partitioned like the customers, the responses like the orders
    assert counts[f"{app_id}-KTABLE-FK-JOIN-SUBSCRIPTION-REGISTRATION-0000000006-topic"] == 2
    assert counts[f"{app_id}-KTABLE-FK-JOIN-SUBSCRIPTION-RESPONSE-0000000014-topic"] == 3


def _fk_stages(orders: str, customers: str) -> list[tuple[str, Rows]]:
    """Input in stages that each touch one table and each key at most once: then every key's output
    sequence is fixed (no stage can race itself), whatever the partitioning and the failover."""
    return [
        (customers, [(f"c{i}", f"name{i}") for i in range(30)]),
        (orders, [(f"o{i}", f"c{i % 35}:item{i}") for i in range(300)]),  # c30-c34: no customer yet
        (customers, [(f"c{i}", f"renamed{i}") for i in range(15)] + [(f"c{i}", None) for i in range(15, 20)]
         + [(f"c{i}", f"new{i}") for i in range(30, 35)]),
        (orders, [(f"o{i}", f"c{(i + 7) % 35}:moved{i}") for i in range(100)]
         + [(f"o{i}", None) for i in range(100, 120)]),
        (customers, [(f"c{i}", f"again{i}") for i in range(10)]),
    ]


async def test_foreign_key_join_survives_a_kill_under_exactly_once(kafka_broker: Any, tmp_path: Path) -> None:
    """Two instances under exactly_once_v2; one is killed (SIGKILL) while a stage is in flight. Read
    committed, every order's sequence of join results is the driver's: nothing lost, nothing twice."""
    bootstrap = kafka_broker.bootstrap_servers
    suffix = uuid.uuid4().hex[:8]
    app_id = f"fk-eos-{suffix}"
    orders, customers, out = f"fke-orders-{suffix}", f"fke-customers-{suffix}", f"fke-out-{suffix}"
    await create_topics(bootstrap, {orders: 4, customers: 3, out: 4})
    env = {"FK_ORDERS": orders, "FK_CUSTOMERS": customers, "FK_OUTPUT": out}
    stages = _fk_stages(orders, customers)

    expected_after: list[int] = []
    expected: dict[str, list[str | None]] = {}
    for name, topic in env.items():
        os.environ[name] = topic
    try:
        topology = global_fk_app.fk_join_topology()
    finally:
        for name in env:
            del os.environ[name]
    with TopologyTestDriver(topology, {"application.id": app_id, "default.key.serde": "String",
                                       "default.value.serde": "String"}) as driver:
        output = driver.create_output_topic(out, Serdes.Bytes(), Serdes.Bytes())
        total = 0
        for topic, rows in stages:
            pipe = driver.create_input_topic(topic)
            for k, v in rows:
                pipe.pipe_input(k, v)
            records = output.read_records_to_list()
            total += len(records)
            expected_after.append(total)
            for key, values in _by_key(records).items():
                expected.setdefault(key, []).extend(values)

    settings = {"bootstrap.servers": bootstrap, "application.id": app_id,
                "processing.guarantee": "exactly_once_v2", "statestore.cache.max.bytes": 0,
                "commit.interval.ms": 100, "session.timeout.ms": 6000, "heartbeat.interval.ms": 1000,
                "default.key.serde": "String", "default.value.serde": "String"}
    apps = [AppProcess("tests.integration.global_fk_app:fk_join_topology",
                       {**settings, "state.dir": tmp_path / f"s{i}"}, tmp_path / f"app-{i}.log", env=env)
            for i in range(2)]

    async def committed(at_least: int) -> list[Any]:
        return await read_until(bootstrap, out, lambda rs: len(rs) >= at_least, timeout=120,
                                isolation_level="read_committed")

    try:
        await apps[0].start().wait_for_log("to RUNNING")
        await apps[1].start().wait_for_log("started on")
        for index, (topic, rows) in enumerate(stages):
            await produce(bootstrap, topic, _encoded(rows))
            if index == 3:
                await asyncio.sleep(0.3)  # the stage is in flight: subscriptions and responses under way
                survivor_log_before = len(apps[1].log_text())
                apps[0].kill()
            await committed(expected_after[index])
        await asyncio.sleep(2)  # anything extra (a duplicate) would show up now
        got = await committed(expected_after[-1])
        takeover = apps[1].log_text()[survivor_log_before:]
    finally:
        for app in apps:
            if app.proc is not None and app.proc.poll() is None:
                app.stop()
    assert "restored" in takeover  # the survivor took the victim's tasks over, stores and all
    assert len(got) == expected_after[-1], apps[1].log_text()[-3000:]
    assert _by_key(got) == expected
