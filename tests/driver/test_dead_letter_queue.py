"""Dead-letter records of the built-in exception handlers (KIP-1034), differential against Kafka Streams
4.4.0's TopologyTestDriver (DeadLetterCheck in tests/java/streams4).

Each case sets the deserialization and processing handlers (continue or fail), the dead-letter topic (or
none), a throwing punctuation (or none) and the production handler (fail, or one that resumes), pipes a
record its serde cannot read, one its processor raises on, one its sink cannot serialize and one that
passes, and prints every record of the dead-letter topic and of the output: key and value
bytes, timestamp, every header in order. Both must print the same lines, except what names a language's
exception: the exception header (Java's class name vs Python's), the stacktrace header (Java's first line
vs Python's traceback) and the deserializer's message, which are compared apart.
"""

from __future__ import annotations

from typing import Any

from streamlet import Processor, ProcessorContext, PunctuationType, Record, Serdes, Topology
from streamlet.errors import StreamsError
from streamlet.serdes import Serializer
from streamlet.testing import TopologyTestDriver
from tests.streams4_java import run_check

CASES = ["a continue continue dlq - fail", "b fail fail dlq - fail", "c continue fail dlq - fail",
         "d continue continue - - fail", "e continue continue dlq punct fail", "f fail continue dlq punct fail",
         "g fail continue - punct fail", "h continue continue dlq - continue", "i continue fail dlq - continue",
         "j continue fail - - fail"]
# (no case fails a record and then punctuates: Kafka Streams' driver leaves the failed node current, and its next
# punctuation fails on that, before any handler, an artifact of a driver that goes on after a failure)
JAVA_EXCEPTIONS = {"org.apache.kafka.common.errors.SerializationException": "deserialize",
                   "java.lang.IllegalArgumentException": "process", "java.lang.IllegalStateException": "punctuate",
                   "org.apache.kafka.streams.errors.StreamsException": "production failed"}
PY_EXCEPTIONS = {"streamlet.errors.SerializationError": "deserialize", "ValueError": "process",
                 "RuntimeError": "punctuate", "streamlet.errors.SinkSerializationError": "production failed"}
# A sink that cannot serialize its record hands the serde's exception to the production handler; when that
# fails, the sink node's processing error (Kafka Streams' StreamsException, streamlet's SinkSerializationError)
# goes to the processing handler, which may dead-letter the source record a second time.


class _NotNine(Serializer[int]):
    def serialize(self, topic: str | None, data: int | None) -> bytes | None:
        if data == 9:
            raise ValueError("cannot write 9")
        return Serdes.Integer().serializer.serialize(topic, data)


def _streamlet_lines(case: str) -> list[str]:
    label, deser, proc, dlq, punct, produce = case.split()
    lines: list[str] = []

    class Raising(Processor):
        def init(self, context: ProcessorContext) -> None:
            super().init(context)
            if punct == "punct":
                def tick(ts: int) -> None:
                    raise RuntimeError("tick")
                context.schedule(100, PunctuationType.WALL_CLOCK_TIME, tick)

        def process(self, record: Record) -> None:
            if record.value == 7:
                raise ValueError(f"boom {record.value}")
            self.context.forward(record)

    topology = Topology()
    topology.add_source("src", "in", key_deserializer=Serdes.String().deserializer,
                        value_deserializer=Serdes.Integer().deserializer)
    topology.add_processor("proc", Raising, "src")
    topology.add_sink("out", "out", "proc", key_serializer=Serdes.String().serializer,
                      value_serializer=_NotNine())
    config: dict[str, Any] = {"application.id": "dead-letter", "deserialization.exception.handler": f"log_and_{deser}",
                              "processing.exception.handler": f"log_and_{proc}",
                              "production.exception.handler": produce}
    if dlq != "-":
        config["errors.dead.letter.queue.topic.name"] = dlq
    raw = Serdes.ByteArray()
    with TopologyTestDriver(topology, config, initial_wall_clock_time=1000) as driver:
        pipe = driver.create_input_topic("in", raw.serializer, raw.serializer)
        for i, (value, where) in enumerate([(b"abc", "deserialize"), (b"\0\0\0\x07", "process"),
                                            (b"\0\0\0\x09", "produce"), (b"\0\0\0\x01", "pass")]):
            try:
                pipe.pipe_input(f"k{i}".encode(), value, 40 + i, headers=(("h", f"x{i}".encode()),))
            except (StreamsError, ValueError):
                lines.append(f"{label} failed {where}")
        if punct == "punct":
            try:
                driver.advance_wall_clock_time(150)
            except RuntimeError:
                lines.append(f"{label} failed punctuate")
        for topic in (dlq, "out"):
            if topic == "-":
                continue
            for r in driver.create_output_topic(topic, raw, raw).read_records_to_list():
                text = [b.hex() if b is not None else "null" for b in (r.key, r.value)]
                lines.append(f"{label} {'out' if topic == 'out' else 'dlq'} {text[0]} {text[1]} {r.timestamp}")
                for name, value in r.headers:
                    shown = "null" if value is None else value.decode()
                    if name == "__streams.errors.stacktrace":
                        shown = shown.splitlines()[0]
                    lines.append(f"{label} header {name} {shown}")
        lines.append(f"{label} produced [{', '.join(sorted(driver.produced_topic_names()))}]")
    return lines


def _normalized(lines: list[str], exceptions: dict[str, str]) -> tuple[list[str], list[tuple[str, str, str]]]:
    """The lines with the language-specific headers replaced by what they name, and those headers apart."""
    out: list[str] = []
    apart: list[tuple[str, str, str]] = []
    kind = ""
    for line in lines:
        label, what, *rest = line.split(" ", 3)
        if what == "header" and rest[0] == "__streams.errors.exception":
            kind = exceptions[rest[1]]
            line = f"{label} header {rest[0]} <{kind}>"
        elif what == "header" and rest[0] == "__streams.errors.stacktrace":
            apart.append((label, kind, rest[1] if len(rest) > 1 else ""))
            line = f"{label} header {rest[0]} <stacktrace>"
        elif what == "header" and rest[0] == "__streams.errors.message" and kind in ("deserialize",
                                                                                     "production failed"):
            line = f"{label} header {rest[0]} <message>"
        out.append(line)
    return out, apart


def test_dead_letter_records_match_kafka_streams() -> None:
    java = run_check("DeadLetterCheck", "".join(f"{c}\n" for c in CASES)).splitlines()
    ours = [line for case in CASES for line in _streamlet_lines(case)]
    java_lines, _ = _normalized(java, JAVA_EXCEPTIONS)
    our_lines, stacktraces = _normalized(ours, PY_EXCEPTIONS)
    assert our_lines == java_lines
    for label, kind, first in stacktraces:
        assert first.startswith("Traceback (most recent call last):"), (label, kind, first)


def test_stacktrace_header_is_the_python_traceback() -> None:
    lines = _streamlet_lines("a continue continue dlq - fail")
    assert any(line.startswith("a header __streams.errors.exception ValueError") for line in lines)
    assert "a header __streams.errors.message boom 7" in lines
