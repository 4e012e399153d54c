"""Avro through the real registry on the Spark engine: the same topology and input on SparkStreams and on the
asyncio runtime (real broker, real Apicurio registry) write the same records, byte for byte once decoded.

The topology reads typed Avro records (a dataclass with an enum and a datetime), keeps an Avro-valued
store, writes Avro values and Avro keys, and runs a stateless sub-topology beside it. The Spark engine
pickles its serdes to the Python workers for every micro-batch: each copy must come configured with the
application's `schema.registry.*` settings, and every copy of one serde in one worker process must share
what the first one configured (one configuration per process, not per batch). The input arrives in two
rounds, each run by its own bounded Spark run, so that workers see the serdes again.
"""

from __future__ import annotations

import asyncio
import datetime
import enum
import os
import uuid
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from streamlet import Consumed, KeyValue, Materialized, Produced, Serdes, StreamsBuilder, Topology
from streamlet.partitioner import default_partition
from streamlet.schema_registry import SpecificAvroSerde
from streamlet.spark import SparkStreams
from streamlet.spark.query import Bounds
from tests.helpers.kafka import Rec, create_kept_topics, produce_records, read_all
from tests.spark.harness import run_asyncio_runtime

pytestmark = [pytest.mark.broker, pytest.mark.registry]

PARTITIONS = 3
BASE = datetime.datetime(2026, 1, 1, tzinfo=datetime.UTC)


class Kind(enum.Enum):
    CARD = "card"
    CASH = "cash"


@dataclass
class Payment:
    account: str
    amount: float
    kind: Kind
    at: datetime.datetime
    note: str | None = None


@dataclass
class Balance:
    payments: int
    total: float
    last_kind: Kind | None = None
    last_at: datetime.datetime | None = None


@dataclass
class Account:
    id: str


def _add(_key: str, payment: Payment, balance: Balance) -> Balance:
    return Balance(balance.payments + 1, balance.total + payment.amount, payment.kind, payment.at)


def topology(prefix: str, probe: Path | None = None) -> Topology:
    payments = SpecificAvroSerde(Payment)
    builder = StreamsBuilder()
    stream = builder.stream(f"{prefix}-payments", Consumed(key_serde=Serdes.String(), value_serde=payments))
    if probe is not None:
        def note_configuration(_key: str, payment: Payment) -> None:
            # Which configured serializer this copy of the serde uses, in which worker process and round.
            with open(probe, "a") as out:
                out.write(f"{os.getpid()} {payment.at.hour} {id(payments._state.serializer)}\n")

        stream = stream.peek(note_configuration)
    (stream.filter(lambda _k, p: p.kind is Kind.CASH)
        .map_values(lambda p: Payment(p.account, -p.amount, p.kind, p.at, "refund"))
        .to(f"{prefix}-refunds", Produced(key_serde=Serdes.String(), value_serde=SpecificAvroSerde(Payment))))
    (stream.group_by_key()
        .aggregate(lambda: Balance(0, 0.0), _add,
                   Materialized("balances", key_serde=Serdes.String(), value_serde=SpecificAvroSerde(Balance)))
        .to_stream()
        .map(lambda key, balance: KeyValue(Account(key), balance))
        .to(f"{prefix}-balances", Produced(key_serde=SpecificAvroSerde(Account),
                                           value_serde=SpecificAvroSerde(Balance))))
    return builder.build()


def _input(prefix: str, registry: str, round_: int) -> list[Rec]:
    writer = SpecificAvroSerde(Payment, config={"schema.registry.url": registry})
    records = []
    for index in range(12):
        account = f"acct-{index % 5}"
        at = BASE + datetime.timedelta(minutes=round_ * 100 + index, milliseconds=index * 7)
        payment = Payment(account, float(index) + 0.25 * round_, Kind.CASH if index % 3 == 0 else Kind.CARD, at,
                          None if index % 2 else f"n{index}")
        value = writer.serializer.serialize(f"{prefix}-payments", payment)
        assert value is not None
        key = account.encode()
        records.append(Rec(f"{prefix}-payments", default_partition(key, PARTITIONS), key, value,
                           int(at.timestamp() * 1000)))
    return records


def _decoded(found: dict[tuple[str, int], list[Rec]], registry: str) -> dict[tuple[str, Any], list[Any]]:
    """Each output's records per key, in offset order (tasks that write one partition interleave as they run,
    so only each key's sequence is the same on both engines)."""
    config = {"schema.registry.url": registry}
    keys = {"balances": SpecificAvroSerde(Account, config=config, is_key=True), "refunds": Serdes.String()}
    values = {"balances": SpecificAvroSerde(Balance, config=config),
              "refunds": SpecificAvroSerde(Payment, config=config)}
    out: dict[tuple[str, Any], list[Any]] = defaultdict(list)
    for (topic, _partition), records in sorted(found.items()):
        kind = topic.rsplit("-", 1)[1]
        for r in records:
            key = keys[kind].deserializer.deserialize(topic, r.key)
            out[(kind, key if isinstance(key, str) else key.id)].append(
                (values[kind].deserializer.deserialize(topic, r.value), r.timestamp))
    return dict(out)


def test_avro_topology_on_spark_equals_the_asyncio_runtime(
        spark: Any, kafka_broker: Any, schema_registry: str, tmp_path: Path) -> None:
    bootstrap = kafka_broker.bootstrap_servers
    run = uuid.uuid4().hex[:8]
    probe = tmp_path / "configured.txt"
    outputs: dict[str, dict[tuple[str, Any], list[Any]]] = {}
    for engine in ("spark", "asyncio"):
        prefix = f"avro-{run}-{engine}"
        topics = {f"{prefix}-{name}": PARTITIONS for name in ("payments", "balances", "refunds")}
        asyncio.run(create_kept_topics(bootstrap, topics))
        config = {"application.id": prefix, "bootstrap.servers": bootstrap, "schema.registry.url": schema_registry,
                  "statestore.cache.max.bytes": 0, "commit.interval.ms": 100, "state.dir": str(tmp_path / engine),
                  "spark.checkpoint.location": str(tmp_path / f"checkpoint-{engine}")}
        if engine == "spark":
            on_spark = topology(prefix, probe)  # one application: its serdes reach the workers in both runs
            for round_ in range(2):
                asyncio.run(produce_records(bootstrap, _input(prefix, schema_registry, round_)))
                SparkStreams(on_spark, config, spark=spark).backfill(Bounds(bounded=True))
        else:
            for round_ in range(2):
                asyncio.run(produce_records(bootstrap, _input(prefix, schema_registry, round_)))
            asyncio.run(run_asyncio_runtime(topology(prefix), config))
        found = asyncio.run(read_all(bootstrap, {t: n for t, n in topics.items() if not t.endswith("payments")}))
        outputs[engine] = _decoded(found, schema_registry)

    spark_out, asyncio_out = outputs["spark"], outputs["asyncio"]
    assert sum(len(records) for records in spark_out.values()) == 24 + 8  # every payment's balance, the refunds
    assert spark_out == asyncio_out
    last = {key: records[-1][0] for (kind, key), records in spark_out.items() if kind == "balances"}
    assert last["acct-0"] == Balance(6, sum(float(i) + 0.25 * r for r in range(2) for i in (0, 5, 10)), Kind.CARD,
                                     BASE + datetime.timedelta(minutes=110, milliseconds=70))

    per_process: dict[str, set[str]] = defaultdict(set)
    rounds: dict[str, set[str]] = defaultdict(set)
    lines = [line.split() for line in probe.read_text().splitlines()]
    for pid, second_round, serializer in lines:
        per_process[pid].add(serializer)
        rounds[pid].add(second_round)
    assert len(lines) == 24
    assert "None" not in {s for ids in per_process.values() for s in ids}  # each copy came configured
    assert all(len(ids) == 1 for ids in per_process.values()), per_process  # once per worker process
    # Meaningful only where a process ran batches of both runs (Spark reuses its Python workers):
    assert any(len(seen) == 2 for seen in rounds.values()), rounds
