"""The suppression buffer's changelog is Kafka Streams' own (its v3 buffer format), so a suppressed table's
buffer moves between a Java application and streamlet like every other store.

Kafka Streams 4.4.0's TopologyTestDriver (tests/java/streams4 `SuppressChangelogCheck`) and streamlet's run
the same cases: a windowed count suppressed until its windows close, and a table suppressed for a time limit,
over drawn records (with and without headers, tombstones for the table). Every record the buffer's changelog
received must be byte for byte Kafka Streams' (key, value, headers), in the same order (within one flush, the
order of Kafka Streams' `HashSet` of changed keys), and so must the output. Restoring from those bytes is in
tests/stores/test_suppression_buffer.py.
"""

from __future__ import annotations

import random
from datetime import timedelta
from typing import Any

from streamlet import BufferConfig, Consumed, Materialized, Produced, Serdes, StreamsBuilder, Suppressed, TimeWindows
from streamlet.testing import TopologyTestDriver
from tests.streams4_java import run_check

CHANGELOG = "sup-sup-store-changelog"


def _topology(mode: str) -> Any:
    builder = StreamsBuilder()
    if mode == "final":
        (builder.stream("in", Consumed(key_serde=Serdes.String(), value_serde=Serdes.String()))
         .group_by_key()
         .windowed_by(TimeWindows.of_size_and_grace(timedelta(milliseconds=10), timedelta(milliseconds=5)))
         .count(Materialized("counts"))
         .suppress(Suppressed.until_window_closes(BufferConfig.unbounded()).with_name("sup"))
         .to_stream()
         .map(lambda k, v: (f"{k.key}@{k.window.start}", str(v)))
         .to("out", Produced(key_serde=Serdes.String(), value_serde=Serdes.String())))
    else:
        (builder.table("in", Consumed(key_serde=Serdes.String(), value_serde=Serdes.String()), Materialized("latest"))
         .suppress(Suppressed.until_time_limit(timedelta(milliseconds=7), BufferConfig.unbounded()).with_name("sup"))
         .to_stream()
         .to("out", Produced(key_serde=Serdes.String(), value_serde=Serdes.String())))
    return builder.build()


def _headers(headers: Any) -> str:
    parts = [f"{name}={'null' if value is None else value.hex()}" for name, value in headers or ()]
    return ";".join(parts) or "-"


def _streamlet_lines(label: str, mode: str, records: list[str]) -> list[str]:
    config = {"application.id": "sup", "bootstrap.servers": "localhost:9", "statestore.cache.max.bytes": 0}
    with TopologyTestDriver(_topology(mode), config, initial_wall_clock_time=0) as driver:
        source = driver.create_input_topic("in", Serdes.String().serializer, Serdes.String().serializer)
        for record in records:
            key, value, ts, *header = record.split(",")
            source.pipe_input(key, None if value == "null" else value, int(ts),
                              headers=[("h", header[0].encode())] if header else None)
        changelog = driver.create_output_topic(CHANGELOG, Serdes.Bytes(), Serdes.Bytes())
        lines = [f"{label} cl {r.key.hex()} {'null' if r.value is None else r.value.hex()} {_headers(r.headers)}"
                 for r in changelog.read_records_to_list()]
        out = driver.create_output_topic("out", Serdes.String(), Serdes.String())
        lines += [f"{label} out {r.key} {'null' if r.value is None else r.value} {r.timestamp}"
                  for r in out.read_records_to_list()]
    return lines


def _record(rng: random.Random) -> tuple[str, str, int, str]:
    return rng.choice("abc"), rng.choice(["x", "y", "null"]), rng.randint(0, 40), rng.choice(["", "h1", "h2"])


def _case(mode: str, drawn: list[tuple[str, str, int, str]]) -> list[str]:
    return [",".join([k, "x" if mode == "final" and v == "null" else v, str(ts), *([h] if h else [])])
            for k, v, ts, h in drawn]


def _cases(seed: int, count: int) -> list[tuple[str, list[tuple[str, str, int, str]]]]:
    """`count` seeded cases (a mode, 1-12 records each): seeded rather than drawn by hypothesis, whose one
    generated example would be its simplest (every record `a,x,0`), one Java run comparing them all."""
    rng = random.Random(seed)
    return [(rng.choice(["final", "limit"]), [_record(rng) for _ in range(rng.randint(1, 12))]) for _ in range(count)]


def test_buffer_changelog_bytes_are_kafka_streams() -> None:
    cases = _cases(1287, 40)
    assert len({tuple(drawn) for _, drawn in cases}) == len(cases)  # 40 different cases, not one 40 times
    lines = [(f"c{i}", mode, _case(mode, drawn)) for i, (mode, drawn) in enumerate(cases)]
    java = run_check("SuppressChangelogCheck", "".join(f"{label} {mode} {' '.join(recs)}\n"
                                                       for label, mode, recs in lines)).splitlines()
    ours = [line for label, mode, recs in lines for line in _streamlet_lines(label, mode, recs)]
    assert ours == java

