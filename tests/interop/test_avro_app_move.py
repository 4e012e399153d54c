"""A Kafka Streams 4.4.0 application with Avro values through a schema registry, moved to streamlet and back.

The `customer-totals` application (AvroApps.java with Apicurio Registry's Java Avro serde in Confluent's wire
format; its twin `customer_totals` in tests/interop/apps.py with streamlet's `SpecificAvroSerde`): orders
(key: the customer, value: an Avro Order) grouped by customer through the repartition topic
`orders-by-customer`, aggregated into an Avro CustomerTotals in the persistent store `customer-totals` (its
changelog holds registry-framed Avro), and the aggregates written to an output topic, Avro too. Both sides
talk to the same real registry (Apicurio 2.6, started by streamlet/testing/local_registry.py), under
exactly_once_v2 with no record cache.

Three runs over the same input, cut into `PHASES` slices:
- the reference: one Kafka Streams instance, uninterrupted, alone;
- offline: Kafka Streams, streamlet, Kafka Streams, ... one instance per slice, each started on the same
  application id after the previous one closed, so the application moves Kafka Streams -> streamlet ->
  Kafka Streams three times, its store's state carried by the changelog;
- rolling: two instances in a streams group (`group.protocol=streams`), one replaced by the other engine at a
  time while the input keeps arriving, so that the whole application goes to streamlet and back three times.

Each customer's orders are on one input partition (the key is the customer) and reach the aggregate in their
order, so each customer's sequence of aggregates is deterministic: compared value for value, and byte for
byte, with the reference's (0 lost, 0 duplicated, equal values, the same schema id). In the offline run the
engine that wrote each changelog record is known (the slice of the order it counts): the bytes streamlet
wrote for an aggregate are the bytes Kafka Streams wrote for it in the reference, and each engine restored
the other's (it went on counting from where the other stopped).
"""

from __future__ import annotations

import asyncio
import json
import os
import random
import re
import struct
import time
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit
from urllib.request import urlopen

import pytest

from streamlet.schema_registry import GenericAvroSerde, SpecificAvroSerde
from tests.helpers.kafka import create_topics, producer
from tests.interop import apps
from tests.interop.apps import AVRO_ROLES, Order
from tests.interop.kafka_streams_app import java_available, java_describe
from tests.interop.operator_runs import (
    PARTITIONS,
    Instance,
    Record,
    RunResult,
    Runs,
    read_committed,
    wait_processed,
)

pytestmark = [
    pytest.mark.anyio, pytest.mark.broker, pytest.mark.registry,
    pytest.mark.skipif(not java_available(), reason="needs Java 17 and Maven"),
]

APP = "customer-totals"
STORE = "customer-totals"
REPARTITION = "orders-by-customer"
PHASES = 7
"""Input slices; engines by slice in the offline run: Kafka Streams, streamlet, Kafka Streams, ... (3 round trips)."""
CUSTOMERS = 10
ORDERS_PER_PHASE = 40
STEP_SECONDS = 4.0
_STREAMLET_TASKS = re.compile(r"running active tasks \d")
_JAVA_TASKS = re.compile(r"(Assigning active tasks \{|New active tasks: \[)\d")
"""Kafka Streams' log line of an assignment with active tasks: in a streams group, in a classic group."""
_STREAMLET_STARTED_TASK = re.compile(r"running active tasks \d|task \d+_\d+ started on")
"""streamlet's: in a streams group, in a classic group."""
_ID = struct.Struct(">I")


def offline_engine(phase: int) -> str:
    return "java" if phase % 2 == 0 else "streamlet"


def make_phases(seed: int) -> list[list[tuple[str, Order]]]:
    """`PHASES` slices of orders (customer, Order); order ids are unique and say their slice ("o<slice>-<n>")."""
    rng = random.Random(seed)
    return [[(customer, Order(f"o{phase}-{n}", customer, rng.randrange(1, 100_000) / 100, rng.randrange(1, 9)))
             for n in range(ORDERS_PER_PHASE) for customer in [f"c{rng.randrange(CUSTOMERS)}"]]
            for phase in range(PHASES)]


def phase_of(order_id: str) -> int:
    return int(order_id[1:].split("-")[0])


class Registry:
    """The registry's two APIs: Confluent's (streamlet's `schema.registry.url`) and Apicurio's own (the Java
    serde's `apicurio.registry.url`)."""

    def __init__(self, confluent_url: str) -> None:
        self.confluent_url = confluent_url
        parts = urlsplit(confluent_url)
        self.apicurio_url = f"{parts.scheme}://{parts.netloc}/apis/registry/v2"

    def settings(self) -> dict[str, str]:
        return {"schema.registry.url": self.confluent_url, "apicurio.registry.url": self.apicurio_url}

    def latest_id(self, subject: str) -> int:
        """The id Confluent's API gives for the subject's latest version."""
        with urlopen(f"{self.confluent_url}/subjects/{subject}/versions/latest", timeout=10) as response:
            return int(json.load(response)["id"])

    def schema(self, schema_id: int) -> dict[str, Any]:
        """The schema registered under this id (Confluent's API), parsed."""
        with urlopen(f"{self.confluent_url}/schemas/ids/{schema_id}", timeout=10) as response:
            return dict(json.loads(json.load(response)["schema"]))


async def produce_orders(bootstrap: str, topic: str, orders: list[tuple[str, Order]], registry: Registry,
                         seconds: float = 0.0) -> None:
    """Write the orders as an upstream producer would (Confluent's wire format), in order; with `seconds`,
    spread over about that long in acknowledged chunks, ten a second."""
    serde = SpecificAvroSerde(Order, config={"schema.registry.url": registry.confluent_url})
    async with producer(bootstrap, idempotent=True) as p:
        chunks = max(1, int(seconds * 10))
        began = time.monotonic()
        for c in range(chunks):
            futures = [await p.send(topic, key=customer.encode(), value=serde.serializer.serialize(topic, order))
                       for customer, order in orders[len(orders) * c // chunks:len(orders) * (c + 1) // chunks]]
            await asyncio.gather(*futures)
            await asyncio.sleep(max(0.0, began + seconds * (c + 1) / chunks - time.monotonic()))


async def new_application(bootstrap: str, kind: str) -> tuple[str, dict[str, str]]:
    suffix = uuid.uuid4().hex[:8]
    topics = {role: f"avro-{role}-{suffix}" for role in AVRO_ROLES}
    await create_topics(bootstrap, {t: PARTITIONS for t in topics.values()})
    return f"interop-avro-{kind}-{suffix}", topics


class Application:
    """One run's application: its id, topics and instances, started and stopped by engine name."""

    def __init__(self, bootstrap: str, tmp: Path, registry: Registry, app_id: str, topics: dict[str, str],
                 settings: dict[str, Any] | None = None) -> None:
        self.bootstrap, self.tmp, self.registry = bootstrap, tmp, registry
        self.app_id, self.topics = app_id, topics
        self.settings = {**registry.settings(), **(settings or {})}
        self.instances: list[Instance] = []
        self.began = time.monotonic()
        self.events: list[str] = []

    def note(self, what: str) -> None:
        self.events.append(f"{time.monotonic() - self.began:6.1f}s {what}")

    def start(self, engine: str) -> Instance:
        name = f"{engine}-{len(self.instances)}"
        instance = Instance(engine, self.bootstrap, self.app_id, self.topics, self.tmp, name=name,
                            settings=self.settings, app=APP).start()
        self.instances.append(instance)
        self.note(f"{name} started")
        return instance

    async def stop(self, instance: Instance) -> None:
        await instance.stop(leave_group=True)
        self.note(f"{instance.name} stopped")

    async def produce(self, orders: list[tuple[str, Order]], seconds: float = 0.0) -> None:
        await produce_orders(self.bootstrap, self.topics["orders"], orders, self.registry, seconds)

    async def processed(self) -> None:
        await wait_processed(self.bootstrap, self.app_id, self.topics, inputs=("orders",), outputs=("totals",))

    async def stop_all(self) -> None:
        for instance in self.instances:
            if instance.running():
                await self.stop(instance)

    async def result(self) -> RunResult:
        run = RunResult(self.app_id)
        run.outputs["totals"] = await read_committed(self.bootstrap, self.topics["totals"])
        run.changelogs[STORE] = await read_committed(self.bootstrap, f"{self.app_id}-{STORE}-changelog")
        run.logs = {i.name: i.log_text() for i in self.instances}
        run.logs["events"] = "\n".join(self.events)
        run.seconds = time.monotonic() - self.began
        return run


async def reference_run(bootstrap: str, tmp: Path, registry: Registry, phases: list[list[tuple[str, Order]]]
                        ) -> RunResult:
    """Kafka Streams alone, uninterrupted, over the slices one after the other."""
    app = Application(bootstrap, tmp, registry, *await new_application(bootstrap, "ref"))
    try:
        app.start("java")
        for orders in phases:
            await app.produce(orders)
            await app.processed()
    finally:
        await app.stop_all()
    return await app.result()


async def offline_run(bootstrap: str, tmp: Path, registry: Registry, phases: list[list[tuple[str, Order]]]
                      ) -> RunResult:
    """One instance per slice, engines alternating (`offline_engine`), each closed before the next starts."""
    app = Application(bootstrap, tmp, registry, *await new_application(bootstrap, "offline"))
    try:
        for phase, orders in enumerate(phases):
            await app.produce(orders)
            instance = app.start(offline_engine(phase))
            await app.processed()
            await app.stop(instance)
    finally:
        await app.stop_all()
    return await app.result()


async def _has_tasks(instance: Instance, timeout: float = 120.0) -> None:
    """Until the instance logged that it runs active tasks."""
    deadline = time.monotonic() + timeout
    while True:
        if instance.java is not None:
            await instance.java.wait_for_active_tasks(timeout)
            return
        if _STREAMLET_TASKS.search(instance.log_text()):
            return
        if not instance.running():
            raise AssertionError(f"{instance.name} exited:\n{instance.log_text()[-3000:]}")
        if time.monotonic() > deadline:
            raise TimeoutError(f"{instance.name} was handed no active task in {timeout}s:\n"
                               f"{instance.log_text()[-3000:]}")
        await asyncio.sleep(0.5)


ROLLING_SWAPS = ("streamlet", "streamlet", "java", "java") * 3
"""The engine each rolling step starts in place of the oldest instance: to streamlet and back, three times."""


async def rolling_run(bootstrap: str, tmp: Path, registry: Registry, phases: list[list[tuple[str, Order]]]
                      ) -> RunResult:
    """Two instances in a streams group; at each step the oldest closes (leaving the group) and an instance of
    the next engine of `ROLLING_SWAPS` starts, while a slice of the input arrives."""
    app = Application(bootstrap, tmp, registry, *await new_application(bootstrap, "rolling"),
                      settings={"group.protocol": "streams"})
    whole = [order for orders in phases for order in orders]
    steps = len(ROLLING_SWAPS) + 1
    slices = [whole[len(whole) * i // steps:len(whole) * (i + 1) // steps] for i in range(steps)]
    try:
        running = [app.start("java"), app.start("java")]
        for instance in running:
            await _has_tasks(instance, 180)
        await app.produce(slices[0])
        for step, engine in enumerate(ROLLING_SWAPS, start=1):
            producing = asyncio.create_task(app.produce(slices[step], STEP_SECONDS))
            try:
                oldest = running.pop(0)
                await app.stop(oldest)
                running.append(app.start(engine))
                await _has_tasks(running[-1])
                app.note(f"{running[-1].name} running active tasks")
            finally:
                await producing
        await app.processed()
    finally:
        await app.stop_all()
    return await app.result()


@pytest.fixture(scope="module")
def runs(kafka_broker: Any, schema_registry: str, tmp_path_factory: pytest.TempPathFactory) -> Runs:
    bootstrap, tmp = kafka_broker.bootstrap_servers, tmp_path_factory.mktemp("avro-move")
    registry = Registry(schema_registry)
    phases = make_phases(38)

    def maker(run: Callable[..., Awaitable[RunResult]]) -> Callable[[], Awaitable[Any]]:
        return lambda: run(bootstrap, tmp, registry, phases)

    return Runs(tmp, {"reference": maker(reference_run), "offline": maker(offline_run),
                      "rolling": maker(rolling_run)})


MOVES = ["offline", pytest.param("rolling", marks=pytest.mark.streams_group_move)]
"""The rolling move runs in a streams group: only on a broker that has them (Kafka 4.2+)."""


@pytest.fixture(autouse=True)
def _streams_groups_for_rolling(request: pytest.FixtureRequest) -> None:
    if request.node.get_closest_marker("streams_group_move") is not None:
        request.getfixturevalue("streams_groups")  # skips on a broker without streams groups


@pytest.fixture(scope="module")
def registry(schema_registry: str) -> Registry:
    return Registry(schema_registry)


def per_customer(records: list[Record]) -> dict[str, list[bytes]]:
    """Each customer's values (bytes) in offset order; a customer's records are all on one partition."""
    sequences: dict[str, list[bytes]] = {}
    partitions: dict[str, int] = {}
    for partition, key, value, _ in records:
        assert key is not None and value is not None
        customer = key.decode()
        assert partitions.setdefault(customer, partition) == partition, customer
        sequences.setdefault(customer, []).append(value)
    return sequences


def decoded(registry: Registry, sequences: dict[str, list[bytes]]) -> dict[str, list[dict[str, Any]]]:
    serde = GenericAvroSerde(config={"schema.registry.url": registry.confluent_url})
    return {c: [serde.deserializer.deserialize("any", v) for v in values]  # type: ignore[misc]
            for c, values in sequences.items()}


def expected_totals(phases: list[list[tuple[str, Order]]]) -> dict[str, list[dict[str, Any]]]:
    """Each customer's aggregates as the topology computes them, order by order (the test's own arithmetic)."""
    totals: dict[str, list[dict[str, Any]]] = {}
    for orders in phases:
        for customer, order in orders:
            before = totals.get(customer, [{"count": 0, "total": 0.0, "last_order_id": ""}])[-1]
            totals.setdefault(customer, []).append({"count": before["count"] + 1,
                                                    "total": before["total"] + order.amount,
                                                    "last_order_id": order.id})
    return totals


async def test_the_twins_describe_the_same_topology(registry: Registry) -> None:
    """Same node, store and repartition topic names on both sides, or the state could not move."""
    topics = {"orders": "orders-t", "totals": "totals-t"}
    java = java_describe(APP, topics, registry.settings())
    assert f"stores: [{STORE}]" in java and f"{REPARTITION}-repartition" in java
    os.environ[apps.TOPICS_ENV] = json.dumps(topics)
    try:
        assert str(apps.customer_totals().describe()) == java
    finally:
        del os.environ[apps.TOPICS_ENV]


async def test_reference_computes_the_totals(runs: Runs, registry: Registry) -> None:
    """The reference itself is right: every order counted once, in order, per customer."""
    reference = await runs.get("reference")
    phases = make_phases(38)
    assert decoded(registry, per_customer(reference.outputs["totals"])) == expected_totals(phases)


@pytest.mark.parametrize("move", MOVES)
async def test_output_equals_the_reference(runs: Runs, registry: Registry, move: str) -> None:
    """0 lost, 0 duplicated, equal values: each customer's aggregates, byte for byte, in order."""
    reference, moved = await runs.get("reference"), await runs.get(move)
    print(moved.logs["events"], f"\n{move} run: {moved.seconds:.1f}s, reference {reference.seconds:.1f}s")
    expected = per_customer(reference.outputs["totals"])
    got = per_customer(moved.outputs["totals"])
    assert decoded(registry, got) == decoded(registry, expected)
    assert got == expected


@pytest.mark.parametrize("move", MOVES)
async def test_changelog_equals_the_reference(runs: Runs, registry: Registry, move: str) -> None:
    """The store's changelog: every aggregate once, the same bytes as Kafka Streams alone wrote."""
    reference, moved = await runs.get("reference"), await runs.get(move)
    assert per_customer(moved.changelogs[STORE]) == per_customer(reference.changelogs[STORE])


async def test_offline_each_engine_writes_the_bytes_of_the_other(runs: Runs, registry: Registry) -> None:
    """In the offline run the slice of the counted order tells which engine wrote a changelog record: both
    wrote, for the same aggregate the same bytes (the same schema id) as Kafka Streams alone, and each went
    on from the count the other left (it read the other's bytes back when restoring)."""
    reference, offline = await runs.get("reference"), await runs.get("offline")
    serde = GenericAvroSerde(config={"schema.registry.url": registry.confluent_url})
    written: dict[str, int] = {"java": 0, "streamlet": 0}
    reference_bytes = {(c, i): v for c, values in per_customer(reference.changelogs[STORE]).items()
                       for i, v in enumerate(values)}
    for customer, values in per_customer(offline.changelogs[STORE]).items():
        for i, value in enumerate(values):
            totals = serde.deserializer.deserialize("any", value)
            assert totals is not None and totals["count"] == i + 1, (customer, i, totals)
            written[offline_engine(phase_of(totals["last_order_id"]))] += 1
            assert value == reference_bytes[(customer, i)], (customer, i, totals)
    assert written["java"] > 0 and written["streamlet"] > 0, written
    ids = {_ID.unpack_from(v, 1)[0] for _, _, v, _ in offline.changelogs[STORE] if v is not None}
    subject = f"{offline.app_id}-{STORE}-changelog-value"
    assert ids == {registry.latest_id(subject)}, (ids, subject)


async def test_one_schema_id_for_the_aggregate_whichever_engine_wrote(runs: Runs, registry: Registry) -> None:
    """Both sides' serializers found or registered the same schema: one id for the aggregate in the output
    and the changelog, whichever engine wrote, and it is the CustomerTotals schema."""
    offline = await runs.get("offline")
    written = offline.outputs["totals"] + offline.changelogs[STORE]
    totals_ids = {_ID.unpack_from(v, 1)[0] for _, _, v, _ in written if v is not None}
    assert len(totals_ids) == 1, totals_ids
    schema = registry.schema(totals_ids.pop())
    assert schema["name"] == "CustomerTotals"
    assert [f["name"] for f in schema["fields"]] == ["count", "total", "last_order_id"]


@pytest.mark.parametrize("move", MOVES)
async def test_the_move_was_real_and_no_instance_failed(runs: Runs, move: str) -> None:
    """Each engine ran instances that were handed active tasks (the offline slices each had one instance;
    the rolling steps waited for each new instance's tasks), and none failed."""
    moved = await runs.get(move)
    engines = {name.split("-")[0] for name in moved.logs if name != "events"}
    assert engines == {"java", "streamlet"}
    for name, log in moved.logs.items():
        if name.startswith("streamlet"):
            assert _STREAMLET_STARTED_TASK.search(log) and "Traceback" not in log, log[-3000:]
        elif name.startswith("java"):
            assert _JAVA_TASKS.search(log) and "FAILED" not in log, log[-3000:]
    expected_starts = PHASES if move == "offline" else len(ROLLING_SWAPS) + 2
    assert len(moved.logs) - 1 == expected_starts
