"""A state store whose value serde needs the schema registry (its changelog subject is registered at the store's
first write) while the registry is down, at start-up and mid-run, under both guarantees, with the record cache
off (the value is serialized at each write) and on (at the cache's flush, at the commit). The task stops,
is closed dirty and revived from its last commit after a backoff until the registry is back; the application
stays up. Under exactly-once the output read `read_committed` is exact; under at-least-once nothing is lost
(records processed since the last commit may be processed again: the aggregate here ignores a payment it has
seen, so a replay repeats a state without changing it).

A real broker, a real Apicurio registry of the module's own (stopped and started again, schemas kept on disk).
"""

from __future__ import annotations

import json
import logging
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import pytest

from streamlet import Consumed, Materialized, Produced, Serdes, StreamsBuilder, Topology
from streamlet.partitioner import default_partition
from streamlet.runtime.kafka_streams import KafkaStreams, State
from streamlet.schema_registry import SpecificAvroSerde
from tests.helpers.kafka import create_topics, produce, read_topic, read_until
from tests.helpers.payments import Balance, Payment
from tests.schema_registry.test_faults_on_the_broker import (
    OwnRegistry,
    _json_payments,
    _payments,
    _subjects,
    _wait_for_log,
    _wait_running,
    own_registry,
)

pytestmark = [pytest.mark.anyio, pytest.mark.broker, pytest.mark.registry]

__all__ = ["own_registry"]

Aggregator = Callable[[str, Payment, Balance], Balance]


def summed(_key: str, payment: Payment, balance: Balance) -> Balance:
    """Exactly-once: a payment applied twice would show in the count and the sum."""
    return Balance(balance.payments + 1, balance.total + payment.amount)


def highest(_key: str, payment: Payment, balance: Balance) -> Balance:
    """At-least-once: an account's payments come in increasing amounts, so one not above the highest seen is a
    replay, which changes nothing (the count counts payments, the total is the highest amount)."""
    if payment.amount <= balance.total and balance.payments:
        return balance
    return Balance(balance.payments + 1, payment.amount)


def with_avro_stores(inp: str, out: str, big_out: str, aggregate: Aggregator, caching: bool) -> Topology:
    """JSON payments in; each account's balance in the store `balances`, and that of its payments of 15 or more
    in the store `big` (first written mid-run), both with `SpecificAvroSerde` values: only the stores need the
    registry. Every update to `out` and `big_out` as JSON."""
    builder = StreamsBuilder()
    payments = builder.stream(inp, Consumed(key_serde=Serdes.String(), value_serde=Serdes.json(Payment)))
    for stream, store, topic in ((payments, "balances", out),
                                 (payments.filter(lambda _key, p: p.amount >= 15), "big", big_out)):
        (stream.group_by_key()
            .aggregate(lambda: Balance(0, 0.0), aggregate,
                       Materialized(store, key_serde=Serdes.String(), value_serde=SpecificAvroSerde(Balance),
                                    caching=caching))
            .to_stream()
            .to(topic, Produced(key_serde=Serdes.String(), value_serde=Serdes.json(Balance))))
    return builder.build()


def _states(payments: list[tuple[str, float]], aggregate: Aggregator) -> dict[str, list[Balance]]:
    """Each account's successive states, computed here from the inputs."""
    states: dict[str, list[Balance]] = {}
    for account, amount in payments:
        history = states.setdefault(account, [])
        history.append(aggregate(account, Payment(account, amount), history[-1] if history else Balance(0, 0.0)))
    return states


def _decoded(records: list[Any]) -> list[tuple[str, Balance]]:
    return [(r.key.decode(), Balance(**json.loads(r.value))) for r in records]


async def _read_final(bootstrap: str, topic: str, states: dict[str, list[Balance]]) -> list[tuple[str, Balance]]:
    """The output read `read_committed` until every account's last state arrived."""
    final = {account: history[-1] for account, history in states.items()}

    def done(records: list[Any]) -> bool:
        last: dict[str, Balance] = dict(_decoded(records))
        return last == final

    return _decoded(await read_until(bootstrap, topic, done, timeout=180, isolation_level="read_committed"))


def _check(got: list[tuple[str, Balance]], states: dict[str, list[Balance]], payments: list[tuple[str, float]],
           aggregate: Aggregator, exactly_once: bool, caching: bool) -> None:
    """Every output is a state the inputs lead to, in order per account, ending at the last one. Without the cache
    every state is there (nothing lost), and under exactly-once once only: the output is exactly one update per
    input, in input order. With the cache an account's updates between two commits are one."""
    if exactly_once and not caching:
        expected = []
        running = {account: iter(history) for account, history in states.items()}
        for account, _amount in payments:
            expected.append((account, next(running[account])))
        if len(_partitions_of(payments)) == 1:
            assert got == expected
        for account in states:  # (across partitions, only each account's order is defined)
            assert [b for a, b in got if a == account] == [b for a, b in expected if a == account]
        assert len(got) == len(expected)
        return
    for account, history in states.items():
        seen = [history.index(balance) for key, balance in got if key == account]  # ValueError: not a state
        assert seen == sorted(seen), (account, seen)
        if exactly_once:
            assert len(set(seen)) == len(seen), (account, seen)  # no state twice
        assert seen[-1] == len(history) - 1
        if not caching:
            assert set(seen) == set(range(len(history))), (account, seen)  # nothing lost


def _partitions_of(payments: list[tuple[str, float]], count: int = 2) -> set[int]:
    """The input partitions (of `count`) the payments' accounts go to (the producer's default partitioner)."""
    return {default_partition(account.encode(), count) for account, _amount in payments}


def _config(kafka_broker: Any, url: str, tmp_path: Path, sfx: str, exactly_once: bool,
            caching: bool) -> dict[str, Any]:
    return {"application.id": f"store-faults-{sfx}", "bootstrap.servers": kafka_broker.bootstrap_servers,
            "state.dir": str(tmp_path), "schema.registry.url": url,
            "processing.guarantee": "exactly_once_v2" if exactly_once else "at_least_once",
            "commit.interval.ms": 200, "statestore.cache.max.bytes": 10_000_000 if caching else 0,
            "schema.registry.retry.backoff.max.ms": 500}


GUARANTEES = [pytest.param(True, id="exactly_once"), pytest.param(False, id="at_least_once")]
CACHING = [pytest.param(False, id="uncached"), pytest.param(True, id="cached")]


@pytest.mark.parametrize("caching", CACHING)
@pytest.mark.parametrize("exactly_once", GUARANTEES)
async def test_store_registry_down_at_start_up(kafka_broker: Any, own_registry: OwnRegistry, tmp_path: Path,
                                               caplog: pytest.LogCaptureFixture, exactly_once: bool,
                                               caching: bool) -> None:
    caplog.set_level(logging.INFO)
    if not own_registry.is_running():
        await own_registry.start_again()
    url, sfx = own_registry.url, uuid.uuid4().hex[:8]
    bootstrap = kafka_broker.bootstrap_servers
    inp, out, big = f"payments-{sfx}", f"balances-{sfx}", f"big-{sfx}"
    await create_topics(bootstrap, {inp: 1, out: 1, big: 1})
    aggregate = summed if exactly_once else highest
    payments = _payments(30, 0)
    await produce(bootstrap, inp, _json_payments(payments))
    await own_registry.stop_now()

    streams = KafkaStreams(with_avro_stores(inp, out, big, aggregate, caching),
                           _config(kafka_broker, url, tmp_path, sfx, exactly_once, caching))
    await streams.start()
    try:
        await _wait_for_log(streams, caplog, "closed dirty and revived")
        await _wait_running(streams, 4)
        assert "cannot be reached" in caplog.text
        await own_registry.start_again()
        outputs = await _read_both(bootstrap, out, big, payments, aggregate)
        assert streams.state is State.RUNNING
    finally:
        await streams.close()
    for got, states, their_payments in outputs:
        _check(got, states, their_payments, aggregate, exactly_once, caching)
    assert streams.metrics["records-skipped"] == 0


async def _read_both(bootstrap: str, out: str, big: str, payments: list[tuple[str, float]],
                     aggregate: Aggregator) -> list[tuple[list[tuple[str, Balance]], dict[str, list[Balance]],
                                                          list[tuple[str, float]]]]:
    """What `out` (every payment) and `big` (the payments of 15 or more) brought once each reached its final
    states: (what was read, the expected states, the payments behind them), for `_check`."""
    big_payments = [(a, x) for a, x in payments if x >= 15]
    read = []
    for topic, their_payments in ((out, payments), (big, big_payments)):
        states = _states(their_payments, aggregate)
        read.append((await _read_final(bootstrap, topic, states), states, their_payments))
    return read


@pytest.mark.parametrize("caching", CACHING)
@pytest.mark.parametrize("exactly_once", GUARANTEES)
async def test_store_registry_down_mid_run_before_a_new_subjects_first_write(
        kafka_broker: Any, own_registry: OwnRegistry, tmp_path: Path, caplog: pytest.LogCaptureFixture,
        exactly_once: bool, caching: bool) -> None:
    await _mid_run(kafka_broker, own_registry, tmp_path, caplog, exactly_once, caching, 1, _payments(30, 0))


@pytest.mark.parametrize("exactly_once", GUARANTEES)
async def test_store_registry_down_mid_run_with_two_tasks(
        kafka_broker: Any, own_registry: OwnRegistry, tmp_path: Path, caplog: pytest.LogCaptureFixture,
        exactly_once: bool) -> None:
    """Two tasks: under exactly-once both are revived (they share the transaction), under at-least-once each
    on its own outage."""
    payments = [(f"acct-{i % 6}", float(i)) for i in range(30)]
    assert _partitions_of(payments) == {0, 1}
    await _mid_run(kafka_broker, own_registry, tmp_path, caplog, exactly_once, False, 2, payments)


async def _mid_run(kafka_broker: Any, own_registry: OwnRegistry, tmp_path: Path, caplog: pytest.LogCaptureFixture,
                   exactly_once: bool, caching: bool, partitions: int, payments: list[tuple[str, float]]) -> None:
    """The registry stops after the first 12 payments (none of 15 or more: the store `big` is not written yet)."""
    caplog.set_level(logging.INFO)
    if not own_registry.is_running():
        await own_registry.start_again()
    url, sfx = own_registry.url, uuid.uuid4().hex[:8]
    bootstrap = kafka_broker.bootstrap_servers
    inp, out, big = f"payments-{sfx}", f"balances-{sfx}", f"big-{sfx}"
    await create_topics(bootstrap, {inp: partitions, out: 1, big: 1})
    aggregate = summed if exactly_once else highest
    first, second = payments[:12], payments[12:]
    assert all(amount < 15 for _account, amount in first)
    app_id = f"store-faults-{sfx}"
    streams = KafkaStreams(with_avro_stores(inp, out, big, aggregate, caching),
                           _config(kafka_broker, url, tmp_path, sfx, exactly_once, caching))
    await streams.start()
    try:
        await produce(bootstrap, inp, _json_payments(first))
        await _read_final(bootstrap, out, _states(first, aggregate))
        assert f"{app_id}-balances-changelog-value" in _subjects(url)
        assert f"{app_id}-big-changelog-value" not in _subjects(url)
        await own_registry.stop_now()

        await produce(bootstrap, inp, _json_payments(second))
        await _wait_for_log(streams, caplog, "closed dirty and revived")
        await _wait_running(streams, 4)
        await own_registry.start_again()
        outputs = await _read_both(bootstrap, out, big, payments, aggregate)
        assert streams.state is State.RUNNING
    finally:
        await streams.close()
    for got, states, their_payments in outputs:
        _check(got, states, their_payments, aggregate, exactly_once, caching)
    assert streams.metrics["records-skipped"] == 0


async def test_store_outage_fails_the_application_after_task_timeout(
        kafka_broker: Any, own_registry: OwnRegistry, tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """`task.timeout.ms` counts from the outage's start across the revivals: then the error fails the application,
    and nothing was committed."""
    caplog.set_level(logging.INFO)
    url, sfx = own_registry.url, uuid.uuid4().hex[:8]
    bootstrap = kafka_broker.bootstrap_servers
    inp, out, big = f"payments-{sfx}", f"balances-{sfx}", f"big-{sfx}"
    await create_topics(bootstrap, {inp: 1, out: 1, big: 1})
    await produce(bootstrap, inp, _json_payments(_payments(5, 0)))
    if own_registry.is_running():
        await own_registry.stop_now()
    config = {**_config(kafka_broker, url, tmp_path, sfx, True, False), "task.timeout.ms": 4000}
    streams = KafkaStreams(with_avro_stores(inp, out, big, summed, False), config)
    await streams.start()
    try:
        with anyio.fail_after(180):
            while streams.state is not State.ERROR:
                await anyio.sleep(0.2)
    finally:
        await streams.close()
    assert caplog.text.count("dirty and reviving them") >= 2, "revived until then"
    error = f"{streams.error} {getattr(streams.error, '__notes__', '')}"
    assert "cannot be reached" in error and "longer than task.timeout.ms (4000 ms)" in error
    assert await read_topic(bootstrap, out, isolation_level="read_committed") == []
