"""Poison input on the real broker: every handler setting does what it says, nothing valid is lost.

Input mixes valid JSON objects with truncated JSON and non-UTF-8 bytes (deserialization errors) and
JSON of the wrong type (a string where an object is expected: a processing error). Runs under
exactly-once, so dead-lettered records and skipped offsets commit in the same transactions as output.
"""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import anyio
import orjson
import pytest

from streamlet import Consumed, Produced, Serdes, StreamsBuilder, Topology
from streamlet.runtime.kafka_streams import KafkaStreams, State
from tests.helpers.kafka import create_topics, produce, read_until

pytestmark = [pytest.mark.anyio, pytest.mark.broker]

VALID = 300
TRUNCATED = [b'{"n": 1', b'{"n"', b"{"]
NOT_UTF8 = [b'{"n": "\xff\xfe"}', b"\xc3\x28"]
WRONG_TYPE = [b'"a string"', b"[1, 2, 3]", b'{"m": 5}']


def doubling_topology(inp: str, out: str) -> Topology:
    builder = StreamsBuilder()
    (builder.stream(inp, Consumed(key_serde=Serdes.String(), value_serde=Serdes.Json()))
     .map_values(lambda v: int(v["n"]) * 2)
     .to(out, Produced(key_serde=Serdes.String(), value_serde=Serdes.Long())))
    return builder.build()


def poisoned_input() -> tuple[list[tuple[bytes, bytes]], dict[bytes, str]]:
    """(records in order, key -> kind for every poison record)."""
    poison = [("deserialize", v) for v in TRUNCATED + NOT_UTF8] + [("process", v) for v in WRONG_TYPE]
    records: list[tuple[bytes, bytes]] = []
    kinds: dict[bytes, str] = {}
    step = VALID // len(poison)
    for i in range(VALID):
        records.append((f"v{i}".encode(), orjson.dumps({"n": i})))
        if i % step == step - 1 and poison:
            kind, value = poison.pop()
            key = f"p{len(kinds)}".encode()
            kinds[key] = kind
            records.append((key, value))
    return records, kinds


async def run_app(bootstrap: str, tmp_path: Path, settings: dict[str, Any]) -> tuple[KafkaStreams, str, str, str]:
    sfx = uuid.uuid4().hex[:8]
    inp, out = f"poison-in-{sfx}", f"poison-out-{sfx}"
    await create_topics(bootstrap, {inp: 2, out: 2})
    config = {"application.id": f"poison-{sfx}", "bootstrap.servers": bootstrap, "state.dir": str(tmp_path),
              "processing.guarantee": "exactly_once_v2", **settings}
    streams = KafkaStreams(doubling_topology(inp, out), config)
    await streams.start()
    return streams, inp, out, f"poison-{sfx}-dlq"


async def test_dead_letter_topic_receives_every_poison_record_with_its_coordinates(
    kafka_broker: Any, tmp_path: Path
) -> None:
    bootstrap = kafka_broker.bootstrap_servers
    records, kinds = poisoned_input()
    streams, inp, out, dlq = await run_app(bootstrap, tmp_path, {
        "default.deserialization.exception.handler": "dead_letter", "processing.exception.handler": "dead_letter"})
    try:
        await produce(bootstrap, inp, records)
        got = await read_until(bootstrap, out, lambda rs: len(rs) >= VALID, isolation_level="read_committed")
        dead = await read_until(bootstrap, dlq, lambda rs: len(rs) >= len(kinds), isolation_level="read_committed")
        assert streams.state is State.RUNNING
        assert streams.metrics["records-dead-lettered"] == len(kinds)
        assert streams.metrics["records-skipped"] == 0
    finally:
        await streams.close()
    assert sorted(r.key.decode() for r in got) == sorted(f"v{i}" for i in range(VALID))
    assert {r.key: int.from_bytes(r.value, "big", signed=True) for r in got} == {
        f"v{i}".encode(): 2 * i for i in range(VALID)}
    original = dict(records)
    assert sorted(r.key for r in dead) == sorted(kinds)
    for r in dead:
        headers = dict(r.headers)
        assert r.value == original[r.key]  # the original bytes, untouched
        assert headers["__streams.errors.topic"] == inp.encode()
        partition, offset = int(headers["__streams.errors.partition"]), int(headers["__streams.errors.offset"])
        assert 0 <= partition < 2 and offset >= 0
        processing_errors = {b"TypeError", b"KeyError"}  # int(v["n"]) on a string, a list, a dict without n
        assert (headers["__streams.errors.exception"] in processing_errors) == (kinds[r.key] == "process"), headers


async def test_log_and_continue_counts_every_skipped_record(kafka_broker: Any, tmp_path: Path) -> None:
    bootstrap = kafka_broker.bootstrap_servers
    records, kinds = poisoned_input()
    streams, inp, out, _ = await run_app(bootstrap, tmp_path, {
        "default.deserialization.exception.handler": "log_and_continue",
        "processing.exception.handler": "log_and_continue"})
    try:
        await produce(bootstrap, inp, records)
        got = await read_until(bootstrap, out, lambda rs: len(rs) >= VALID, isolation_level="read_committed")
        with anyio.fail_after(10):
            while streams.metrics["records-skipped"] < len(kinds):
                await anyio.sleep(0.1)
        assert streams.metrics["records-skipped"] == len(kinds)
        assert streams.metrics["records-dead-lettered"] == 0
        assert streams.state is State.RUNNING
    finally:
        await streams.close()
    assert sorted(r.key.decode() for r in got) == sorted(f"v{i}" for i in range(VALID))


@pytest.mark.parametrize("poison", [TRUNCATED[0], WRONG_TYPE[0]], ids=["truncated", "wrong-type"])
async def test_fail_stops_the_app_naming_the_record(kafka_broker: Any, tmp_path: Path, poison: bytes) -> None:
    bootstrap = kafka_broker.bootstrap_servers
    streams, inp, _out, _ = await run_app(bootstrap, tmp_path, {})  # both handlers default to log_and_fail
    try:
        await produce(bootstrap, inp, [(b"k", orjson.dumps({"n": 1})), (b"k", poison)])
        with anyio.fail_after(30):
            while streams.state is not State.ERROR:
                await anyio.sleep(0.05)
        assert "offset 1" in str(streams.error) or any("offset 1" in n for n in getattr(
            streams.error, "__notes__", [])), repr(streams.error)
    finally:
        await streams.close()


def inflating_topology(inp: str, out: str) -> Topology:
    """Values "big" become 2 MB: larger than any batch, so the producer cannot send them."""
    builder = StreamsBuilder()
    (builder.stream(inp, Consumed(key_serde=Serdes.String(), value_serde=Serdes.String()))
     .map_values(lambda v: "x" * (2 << 20) if v == "big" else v.upper())
     .to(out, Produced(key_serde=Serdes.String(), value_serde=Serdes.String())))
    return builder.build()


@pytest.mark.parametrize("handler", ["fail", "continue"])
async def test_production_exception_handler(kafka_broker: Any, tmp_path: Path, handler: str) -> None:
    bootstrap = kafka_broker.bootstrap_servers
    sfx = uuid.uuid4().hex[:8]
    inp, out = f"produce-in-{sfx}", f"produce-out-{sfx}"
    await create_topics(bootstrap, {inp: 1, out: 1})
    streams = KafkaStreams(inflating_topology(inp, out), {
        "application.id": f"produce-{sfx}", "bootstrap.servers": bootstrap, "state.dir": str(tmp_path),
        "commit.interval.ms": 100, "default.production.exception.handler": handler})
    await streams.start()
    try:
        await produce(bootstrap, inp, [(b"k", b"a"), (b"k", b"big"), (b"k", b"b")])
        if handler == "fail":
            with anyio.fail_after(30):
                while streams.state is not State.ERROR:
                    await anyio.sleep(0.05)
            assert "larger than the batch size" in str(streams.error)
        else:
            got = await read_until(bootstrap, out, lambda rs: len(rs) >= 2, timeout=30)
            assert [r.value for r in got] == [b"A", b"B"]
            assert streams.metrics["records-dropped-by-production-handler"] == 1
            assert streams.state is State.RUNNING
    finally:
        await streams.close()
