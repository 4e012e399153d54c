"""Kafka Streams 4.x's dead-letter queue (KIP-1034) on the real broker: `errors.dead.letter.queue.topic.name`
set, the built-in handlers send each failed source record there with Kafka Streams' headers, partitioned
as a producer's default partitioner would; `log_and_fail` sends it too before failing (at-least-once);
without the setting there is no dead-letter topic; a production handler callable resumes after a record
its sink cannot serialize, with its own dead-letter record.
"""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import anyio
import orjson
import pytest
from aiokafka import AIOKafkaProducer
from aiokafka.admin import AIOKafkaAdminClient

from streamlet import Consumed, Produced, Serdes, StreamsBuilder, Topology
from streamlet.error_handling import DeadLetterRecord, ErrorHandlerContext, Response
from streamlet.partitioner import default_partition
from streamlet.runtime.kafka_streams import KafkaStreams, State
from streamlet.serdes import Serde, Serializer
from tests.helpers.kafka import create_topics, read_until

pytestmark = [pytest.mark.anyio, pytest.mark.broker]

DLQ_PARTITIONS = 3


class _NoNegatives(Serializer[int]):
    def serialize(self, topic: str | None, data: int | None) -> bytes | None:
        if data is not None and data < 0:
            raise ValueError(f"negative: {data}")
        return Serdes.Long().serializer.serialize(topic, data)


def _topology(inp: str, out: str) -> Topology:
    builder = StreamsBuilder()
    (builder.stream(inp, Consumed(key_serde=Serdes.String(), value_serde=Serdes.Json()))
     .map_values(lambda v: int(v["n"]) * 2)
     .to(out, Produced(key_serde=Serdes.String(), value_serde=Serde(_NoNegatives(), Serdes.Long().deserializer))))
    return builder.build()


async def _produce(bootstrap: str, topic: str, records: list[tuple[bytes, bytes, list[tuple[str, bytes]]]]) -> None:
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, acks="all")
    await producer.start()
    try:
        for key, value, headers in records:
            await (await producer.send(topic, key=key, value=value, headers=headers, partition=0))
    finally:
        await producer.stop()


async def _start(bootstrap: str, tmp_path: Path, settings: dict[str, Any]) -> tuple[KafkaStreams, str, str, str]:
    sfx = uuid.uuid4().hex[:8]
    inp, out, dlq = f"dlq-in-{sfx}", f"dlq-out-{sfx}", f"dlq-{sfx}"
    await create_topics(bootstrap, {inp: 1, out: 1, dlq: DLQ_PARTITIONS})
    config = {"application.id": f"dlq-app-{sfx}", "bootstrap.servers": bootstrap, "state.dir": str(tmp_path),
              "commit.interval.ms": 100, **{k: (dlq if v == "DLQ" else v) for k, v in settings.items()}}
    streams = KafkaStreams(_topology(inp, out), config)
    await streams.start()
    return streams, inp, out, dlq


async def test_built_in_handlers_send_failed_records_with_kafka_streams_headers(
        kafka_broker: Any, tmp_path: Path) -> None:
    bootstrap = kafka_broker.bootstrap_servers
    streams, inp, out, dlq = await _start(bootstrap, tmp_path, {
        "processing.guarantee": "exactly_once_v2", "errors.dead.letter.queue.topic.name": "DLQ",
        "deserialization.exception.handler": "log_and_continue", "processing.exception.handler": "log_and_continue"})
    poison = {b"truncated": b'{"n": 1', b"wrong-type": b'"a string"', b"no-n": b'{"m": 5}'}
    records = [(f"v{i}".encode(), orjson.dumps({"n": i}), [("trace", b"t%d" % i)]) for i in range(20)]
    for i, (key, value) in enumerate(poison.items()):
        records.insert(5 * i + 3, (key, value, [("trace", key)]))
    try:
        await _produce(bootstrap, inp, records)
        got = await read_until(bootstrap, out, lambda rs: len(rs) >= 20, isolation_level="read_committed")
        dead = await read_until(bootstrap, dlq, lambda rs: len(rs) >= len(poison), isolation_level="read_committed")
        assert streams.state is State.RUNNING
    finally:
        await streams.close()
    assert sorted(r.key for r in got) == sorted(f"v{i}".encode() for i in range(20))
    offsets = {key: i for i, (key, _, _) in enumerate(records)}
    assert sorted(r.key for r in dead) == sorted(poison)
    for r in dead:
        assert r.value == poison[r.key]  # the source record's bytes, untouched
        assert r.partition == default_partition(r.key, DLQ_PARTITIONS)  # the producer's default partitioner
        names = [name for name, _ in r.headers]
        assert names == ["trace", "__streams.errors.exception", "__streams.errors.message",
                         "__streams.errors.stacktrace", "__streams.errors.topic", "__streams.errors.partition",
                         "__streams.errors.offset"]
        headers = dict(r.headers)
        assert headers["trace"] == r.key  # the source record's own headers come first
        assert headers["__streams.errors.topic"] == inp.encode()
        assert headers["__streams.errors.partition"] == b"0"
        assert headers["__streams.errors.offset"] == str(offsets[r.key]).encode()
        exception = headers["__streams.errors.exception"].decode()
        assert exception == ("streamlet.errors.SerializationError" if r.key == b"truncated"
                             else "TypeError" if r.key == b"wrong-type" else "KeyError"), exception
        stacktrace = headers["__streams.errors.stacktrace"].decode()
        assert stacktrace.startswith("Traceback (most recent call last):") and exception in stacktrace
        assert headers["__streams.errors.message"]


async def test_log_and_fail_sends_the_record_before_failing(kafka_broker: Any, tmp_path: Path) -> None:
    bootstrap = kafka_broker.bootstrap_servers
    streams, inp, _out, dlq = await _start(bootstrap, tmp_path, {"errors.dead.letter.queue.topic.name": "DLQ"})
    try:
        await _produce(bootstrap, inp, [(b"ok", orjson.dumps({"n": 1}), []), (b"bad", b"{", [])])
        with anyio.fail_after(30):
            while streams.state is not State.ERROR:
                await anyio.sleep(0.05)
        dead = await read_until(bootstrap, dlq, lambda rs: len(rs) >= 1, timeout=30)
    finally:
        await streams.close()
    assert [(r.key, r.value, dict(r.headers)["__streams.errors.offset"]) for r in dead] == [(b"bad", b"{", b"1")]


async def test_without_the_setting_there_is_no_dead_letter_topic(kafka_broker: Any, tmp_path: Path) -> None:
    bootstrap = kafka_broker.bootstrap_servers
    streams, inp, out, _dlq = await _start(bootstrap, tmp_path, {
        "deserialization.exception.handler": "log_and_continue"})
    try:
        await _produce(bootstrap, inp, [(b"bad", b"{", []), (b"ok", orjson.dumps({"n": 1}), [])])
        await read_until(bootstrap, out, lambda rs: len(rs) >= 1, timeout=30)
        app_id = streams.config.application_id
    finally:
        await streams.close()
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
    await admin.start()
    try:
        topics = await admin.list_topics()
    finally:
        await admin.close()
    assert not [t for t in topics if t.startswith(app_id) and "dlq" in t], topics


async def test_a_production_handler_resumes_with_its_dead_letter_record(kafka_broker: Any, tmp_path: Path) -> None:
    bootstrap = kafka_broker.bootstrap_servers
    seen: list[tuple[ErrorHandlerContext, Any, Exception]] = []

    def resume_to_dlq(context: ErrorHandlerContext, record: Any, exc: Exception) -> Response:
        seen.append((context, record, exc))
        return Response.resume([DeadLetterRecord(dlq_name[0], context.source_raw_key, b"unwritable", 7)])

    dlq_name: list[str] = []
    sfx = uuid.uuid4().hex[:8]
    dlq_name.append(f"dlq-prod-{sfx}")
    await create_topics(bootstrap, {dlq_name[0]: 1})
    streams, inp, out, _ = await _start(bootstrap, tmp_path, {"production.exception.handler": resume_to_dlq})
    try:
        await _produce(bootstrap, inp, [(b"neg", orjson.dumps({"n": -4}), []), (b"pos", orjson.dumps({"n": 4}), [])])
        got = await read_until(bootstrap, out, lambda rs: len(rs) >= 1, timeout=30)
        dead = await read_until(bootstrap, dlq_name[0], lambda rs: len(rs) >= 1, timeout=30)
        assert streams.state is State.RUNNING
        assert streams.metrics["records-dropped-by-production-handler"] == 1
    finally:
        await streams.close()
    assert [(r.key, r.value) for r in got] == [(b"pos", (8).to_bytes(8, "big"))]
    assert [(r.key, r.value, r.timestamp) for r in dead] == [(b"neg", b"unwritable", 7)]
    [(context, record, exc)] = seen
    assert (context.topic, context.offset, record.topic, record.value) == (inp, 0, out, -8)
    assert isinstance(exc, ValueError)
