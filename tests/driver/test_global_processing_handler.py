"""The processing exception handler and global stores (KIP-1033, Kafka Streams 4.4): it applies to a
global store's processor only with `processing.exception.handler.global.enabled=true`; by default such an
error fails (the instance; here, the driver's pipe). A dead-letter topic changes nothing there: the
global task has no producer, and Kafka Streams sends no dead-letter record from it either.

Differential against Kafka Streams 4.4.0's TopologyTestDriver (GlobalHandlerCheck in tests/java/streams4):
values 1, 7 (the processor raises), an undeserializable one and 2 are piped to the global topic. The
deserialization handler is log_and_continue in every case: Kafka Streams' driver always gives the global
task a LogAndContinueExceptionHandler of its own, whatever the setting (KafkaStreams uses the setting), so
only that case can be compared.
"""

from __future__ import annotations

from typing import Any

from streamlet import Processor, ProcessorContext, Record, Serdes, Stores, Topology
from streamlet.errors import StreamsError
from streamlet.testing import TopologyTestDriver
from tests.streams4_java import run_check

CASES = ["a false continue - continue", "b true continue - continue", "c true fail - continue",
         "d true continue dlq continue", "e false continue dlq continue", "f true fail dlq continue"]


class _PutUnlessSeven(Processor):
    def init(self, context: ProcessorContext) -> None:
        super().init(context)
        self.store = context.get_state_store("global")

    def process(self, record: Record) -> None:
        if record.value == 7:
            raise ValueError("boom 7")
        self.store.put(record.key, record.value)


def _streamlet_lines(case: str) -> list[str]:
    label, enabled, handler, dlq, deser = case.split()
    config: dict[str, Any] = {"application.id": "global-handler",
                              "processing.exception.handler.global.enabled": enabled,
                              "processing.exception.handler": f"log_and_{handler}",
                              "deserialization.exception.handler": f"log_and_{deser}"}
    if dlq != "-":
        config["errors.dead.letter.queue.topic.name"] = dlq
    store = Stores.key_value_store_builder(Stores.in_memory_key_value_store("global"), Serdes.String(),
                                           Serdes.Integer()).with_logging_disabled()
    topology = Topology()
    topology.add_global_store(store, "gsrc", "global-in", "gproc", _PutUnlessSeven,
                              key_deserializer=Serdes.String().deserializer,
                              value_deserializer=Serdes.Integer().deserializer)
    lines: list[str] = []
    raw = Serdes.ByteArray()
    with TopologyTestDriver(topology, config) as driver:
        pipe = driver.create_input_topic("global-in", raw.serializer, raw.serializer)
        for i, value in enumerate([b"\0\0\0\x01", b"\0\0\0\x07", b"abc", b"\0\0\0\x02"]):
            try:
                pipe.pipe_input(f"k{i}".encode(), value, 10 + i)
            except (StreamsError, ValueError):
                lines.append(f"{label} failed {i}")
        lines += [f"{label} row {kv.key} {kv.value}" for kv in driver.get_key_value_store("global").all()]
        lines.append(f"{label} produced [{', '.join(sorted(driver.produced_topic_names()))}]")
    return lines


def test_global_processing_handler_matches_kafka_streams() -> None:
    java = run_check("GlobalHandlerCheck", "".join(f"{c}\n" for c in CASES)).splitlines()
    assert [line for case in CASES for line in _streamlet_lines(case)] == java
