"""Avro through a running KafkaStreams, the real broker and the real registry: serdes given in Consumed,
Materialized and Produced configured from the application's `schema.registry.url`; records with a wrong
magic byte, an unknown schema id or a body that does not match go to the deserialization handler, and its
messages name the schema id."""

from __future__ import annotations

import logging
import struct
import uuid
from pathlib import Path
from typing import Any

import anyio
import pytest

from streamlet.runtime.kafka_streams import KafkaStreams, State
from streamlet.schema_registry import SpecificAvroSerde
from tests.helpers.kafka import create_topics, produce, read_until
from tests.helpers.payments import Balance, Payment, balances

pytestmark = [pytest.mark.anyio, pytest.mark.broker, pytest.mark.registry]


async def _run(kafka_broker: Any, schema_registry: str, tmp_path: Path, handler: str,
               poison: list[bytes]) -> tuple[KafkaStreams, str, list[Any]]:
    bootstrap = kafka_broker.bootstrap_servers
    sfx = uuid.uuid4().hex[:8]
    inp, out = f"payments-{sfx}", f"balances-{sfx}"
    await create_topics(bootstrap, {inp: 1, out: 1})
    writer = SpecificAvroSerde(Payment, config={"schema.registry.url": schema_registry})
    valid = [(b"acct-1", writer.serializer.serialize(inp, Payment("acct-1", 10.0))),
             (b"acct-2", writer.serializer.serialize(inp, Payment("acct-2", 1.0)))]
    records = [valid[0], *((b"acct-1", bad) for bad in poison), valid[1],
               (b"acct-1", writer.serializer.serialize(inp, Payment("acct-1", 5.0)))]
    config = {"application.id": f"avro-{sfx}", "bootstrap.servers": bootstrap, "state.dir": str(tmp_path),
              "schema.registry.url": schema_registry, "commit.interval.ms": 100,
              "statestore.cache.max.bytes": 0, "default.deserialization.exception.handler": handler}
    streams = KafkaStreams(balances(inp, out), config)
    await streams.start()
    await produce(bootstrap, inp, records)  # type: ignore[arg-type]
    return streams, out, valid


def _poison(schema_id: int) -> list[bytes]:
    return [b"\x01" + struct.pack(">I", schema_id) + b"\x0cacct-1",    # wrong magic byte
            b"\x00" + struct.pack(">I", 424242) + b"\x0cacct-1",       # unknown schema id
            b"\x00" + struct.pack(">I", schema_id) + b"\xff"]          # body that does not match


async def test_log_and_continue_skips_bad_records_and_names_the_schema_id(
        kafka_broker: Any, schema_registry: str, tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING)
    probe = SpecificAvroSerde(Payment, config={"schema.registry.url": schema_registry})
    schema_id = struct.unpack(">I", probe.serializer.serialize("probe", Payment("x", 0.0))[1:5])[0]  # type: ignore[index]
    streams, out, _ = await _run(kafka_broker, schema_registry, tmp_path, "log_and_continue", _poison(schema_id))
    try:
        got = await read_until(kafka_broker.bootstrap_servers, out, lambda rs: len(rs) >= 3)
        with anyio.fail_after(10):
            while streams.metrics["records-skipped"] < 3:
                await anyio.sleep(0.1)
        assert streams.metrics["records-skipped"] == 3
        assert streams.state is State.RUNNING
        reader = SpecificAvroSerde(Balance, config={"schema.registry.url": schema_registry})
        assert [(r.key.decode(), reader.deserializer.deserialize(out, r.value)) for r in got] == [
            ("acct-1", Balance(1, 10.0)), ("acct-2", Balance(1, 1.0)), ("acct-1", Balance(2, 15.0))]
        assert all(r.value[0] == 0 for r in got)  # Confluent's framing on the output
        assert streams.store("balances").get("acct-1").value == Balance(2, 15.0)  # a timestamped store
    finally:
        await streams.close()
    text = caplog.text
    assert "unknown setting schema.registry.url" not in text  # a setting of the serdes, not of the clients
    assert "magic byte 01" in text
    assert "schema id 424242" in text
    assert f"schema id {schema_id}" in text


async def test_log_and_fail_stops_naming_the_schema_id(
        kafka_broker: Any, schema_registry: str, tmp_path: Path) -> None:
    streams, _out, _ = await _run(kafka_broker, schema_registry, tmp_path, "log_and_fail",
                                  [b"\x00" + struct.pack(">I", 313131) + b"\x0cacct-1"])
    try:
        with anyio.fail_after(60):
            while streams.state is not State.ERROR:
                await anyio.sleep(0.05)
        assert "schema id 313131" in str(streams.error)
        assert "offset 1" in str(streams.error)
    finally:
        await streams.close()
