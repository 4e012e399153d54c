"""A timestamped key-value store with headers keeps Kafka Streams 4.4.0's bytes (KIP-1271): its local values and
its changelog records, so its changelog moves between a Java application and streamlet like every other store.

Kafka Streams' TopologyTestDriver (tests/java/streams4 `HeadersStoreCheck`) and streamlet's run the same cases
(drawn from a fixed seed): a processor puts `ValueTimestampHeaders(value, timestamp, record headers)` into the
store, or deletes the key, on the persistent and the in-memory store. Every changelog record (key, value,
timestamp, headers) must be Kafka Streams', in order, and so must the stored bytes of every key. The upgrade
conversions of a timestamped and of a plain value are checked against Kafka Streams' `HeadersBytesStore` on drawn
bytes.
"""

from __future__ import annotations

import random
from typing import Any

from streamlet import AggregationWithHeaders, Processor, Serdes, Stores, Topology, ValueTimestampHeaders
from streamlet.record import Record
from streamlet.stores.value_formats import convert_from_plain_to_header_format, convert_to_header_format
from streamlet.testing import TopologyTestDriver
from streamlet.windowed import MAX_TIME, SessionWindow, Windowed
from tests.streams4_java import run_check


class _Writer(Processor):
    def init(self, context: Any) -> None:
        self.store = context.get_state_store("hs")

    def process(self, record: Record) -> None:
        if record.value == "DELETE":
            self.store.delete(record.key)
        else:
            self.store.put(record.key, ValueTimestampHeaders(record.value, record.timestamp, record.headers))


class _WindowWriter(_Writer):
    """HeadersStoreCheck's WindowWriter: the window starting at `timestamp - timestamp % 100`."""

    def process(self, record: Record) -> None:
        value = None if record.value == "DELETE" else ValueTimestampHeaders(record.value, record.timestamp,
                                                                             record.headers)
        self.store.put(record.key, value, record.timestamp - record.timestamp % 100)


class _SessionWriter(_Writer):
    """HeadersStoreCheck's SessionWriter: the session [timestamp - timestamp % 100, timestamp]."""

    def process(self, record: Record) -> None:
        session = Windowed(record.key, SessionWindow(record.timestamp - record.timestamp % 100, record.timestamp))
        if record.value == "DELETE":
            self.store.remove(session)
        else:
            self.store.put(session, AggregationWithHeaders(record.value, record.headers))


DAY_MS = 24 * 60 * 60 * 1000


def _topology(backend: str) -> Topology:
    s = Serdes.String()
    top = Topology()
    top.add_source("src", "in", key_deserializer=s.deserializer, value_deserializer=s.deserializer)
    builder: Any
    if backend.startswith("window-"):
        supplier = (Stores.in_memory_window_store("hs", DAY_MS, 100) if backend == "window-memory"
                    else Stores.persistent_timestamped_window_store_with_headers("hs", DAY_MS, 100,
                                                                                  backend == "window-dups"))
        top.add_processor("writer", _WindowWriter, "src")
        builder = Stores.timestamped_window_store_with_headers_builder(supplier, s, s)
    elif backend.startswith("session-"):
        session_supplier = (Stores.in_memory_session_store("hs", DAY_MS) if backend == "session-memory"
                            else Stores.persistent_session_store_with_headers("hs", DAY_MS))
        top.add_processor("writer", _SessionWriter, "src")
        builder = Stores.session_store_with_headers_builder(session_supplier, s, s)
    else:
        kv_supplier = (Stores.in_memory_key_value_store("hs") if backend == "memory"
                       else Stores.persistent_timestamped_key_value_store_with_headers("hs"))
        top.add_processor("writer", _Writer, "src")
        builder = Stores.timestamped_key_value_store_with_headers_builder(kv_supplier, s, s)
    top.add_state_store(builder, "writer")
    return top


def _stored_lines(label: str, backend: str, store: Any) -> list[str]:
    """The local bytes the store keeps, under its serdes, as HeadersStoreCheck prints them."""
    local = store._bytes
    if backend.startswith("window-"):
        return sorted(f"{label} store {key.decode()} {start} {value.hex()}"
                      for key, start, _seqnum, value in local.fetch_all(0, MAX_TIME))
    if backend.startswith("session-"):
        with local.range(None, None) as stored:
            return sorted(f"{label} store {key[:-16].decode()} {int.from_bytes(key[-8:], 'big')} "
                          f"{int.from_bytes(key[-16:-8], 'big')} {value.hex()}" for key, value in stored)
    with local.range(None, None) as stored:
        return [f"{label} store {key.decode()} {value.hex()}" for key, value in stored]


def _headers(headers: Any) -> str:
    parts = [f"{name}={'null' if value is None else value.hex()}" for name, value in headers or ()]
    return ";".join(parts) or "-"


def _parse_headers(spec: str) -> list[tuple[str, bytes | None]]:
    return [(name, None if value == "null" else value.encode())
            for name, value in (pair.split("=", 1) for pair in spec.split(";"))]


def streamlet_lines(label: str, backend: str, records: list[str]) -> list[str]:
    config = {"application.id": "hdr", "bootstrap.servers": "localhost:9", "statestore.cache.max.bytes": 0}
    with TopologyTestDriver(_topology(backend), config, initial_wall_clock_time=0) as driver:
        source = driver.create_input_topic("in", Serdes.String().serializer, Serdes.String().serializer)
        for record in records:
            key, value, ts, *spec = record.split(",", 3)
            source.pipe_input(key, value, int(ts), headers=_parse_headers(spec[0]) if spec else None)
        changelog = driver.create_output_topic("hdr-hs-changelog", Serdes.Bytes(), Serdes.Bytes())
        lines = [f"{label} cl {r.key.hex()} {'null' if r.value is None else r.value.hex()} {r.timestamp} "
                 f"{_headers(r.headers)}" for r in changelog.read_records_to_list()]
        lines += _stored_lines(label, backend, driver.get_state_store("hs"))
    return lines


def _cases(seed: int, count: int, backends: tuple[str, ...] = ("persistent", "memory"),
           max_timestamp: int = 2**40) -> list[tuple[str, str, list[str]]]:
    """(label, backend, records) drawn from `seed`: keys a-d, deletes, timestamps up to `max_timestamp`, up to three
    headers a record (null values, a non-ASCII name, values long enough for two-byte varints)."""
    rnd = random.Random(seed)
    cases = []
    for i in range(count):
        records = []
        for _ in range(rnd.randint(1, 10)):
            headers = ";".join(f"{rnd.choice(['h', 'k', 'trace-id', 'é'])}="
                               f"{rnd.choice(['null', '', 'ab', 'xyz', 'q' * 70])}" for _ in range(rnd.randint(0, 3)))
            fields = [rnd.choice("abcd"), rnd.choice(["x", "yy", "DELETE", "a-long-value" * 12]),
                      str(rnd.randint(0, max_timestamp)), *([headers] if headers else [])]
            records.append(",".join(fields))
        cases.append((f"c{i}", rnd.choice(backends), records))
    return cases


def test_store_and_changelog_bytes_are_kafka_streams() -> None:
    cases = _cases(1271, 40)
    raws = [random.Random(i).randbytes(i % 20 + 1) for i in range(10)]
    stdin = "".join(f"{label} {backend} {' '.join(recs)}\n" for label, backend, recs in cases)
    stdin += "".join(f"convert {raw.hex()}\n" for raw in raws)
    java = run_check("HeadersStoreCheck", stdin).splitlines()
    assert any("=null" in line for line in java) and any(" cl " in line and " null " in line for line in java)
    ours = [line for label, backend, recs in cases for line in streamlet_lines(label, backend, recs)]
    for raw in raws:
        to_header, from_plain = convert_to_header_format(raw), convert_from_plain_to_header_format(raw)
        assert to_header is not None and from_plain is not None
        ours.append(f"convert {raw.hex()} {to_header.hex()} {from_plain.hex()}")
    assert ours == java


WINDOWED_BACKENDS = ("window-persistent", "window-memory", "window-dups", "session-persistent", "session-memory")


def test_window_and_session_store_bytes_are_kafka_streams() -> None:
    """The window and session stores with headers: every changelog record and the stored bytes of every window
    and session are Kafka Streams 4.4.0's (timestamps within a day's retention; windows and sessions of 100 ms so
    that records of one key meet in one window or session)."""
    cases = _cases(1285, 50, WINDOWED_BACKENDS, max_timestamp=1000)
    assert {backend for _label, backend, _recs in cases} == set(WINDOWED_BACKENDS)
    stdin = "".join(f"{label} {backend} {' '.join(recs)}\n" for label, backend, recs in cases)
    java = run_check("HeadersStoreCheck", stdin).splitlines()
    assert any("=null" in line for line in java) and any(" cl " in line and " null " in line for line in java)
    ours = [line for label, backend, recs in cases for line in streamlet_lines(label, backend, recs)]
    assert ours == java
