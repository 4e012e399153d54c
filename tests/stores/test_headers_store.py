"""The timestamped key-value store with headers on both backends: its typed API, its changelog records (headers
as record headers), restoration from them (also from a timestamped store's changelog: the upgrade path), the
cache, and the driver's Processor API."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from streamlet import Processor, Serdes, Stores, Topology, ValueAndTimestamp, ValueTimestampHeaders
from streamlet.errors import SerializationError
from streamlet.record import Record
from streamlet.stores.keyvalue.headers import (
    TimestampedKeyValueStoreWithHeaders,
    TypedTimestampedKeyValueStoreWithHeaders,
)
from streamlet.stores.keyvalue.timestamped import TypedTimestampedKeyValueStore
from streamlet.stores.value_formats import (
    convert_to_header_format,
    deserialize_headers,
    join_headers_value,
    serialize_headers,
    split_headers_value,
)
from streamlet.testing import TopologyTestDriver
from tests.stores.conftest import BACKENDS
from tests.stores.context import RecordingStateStoreContext, record_context

H1 = (("trace", b"t-1"), ("empty", None))


def _store(backend: str, context: RecordingStateStoreContext, name: str = "hs",
           caching: bool = False) -> TypedTimestampedKeyValueStoreWithHeaders:
    store = TypedTimestampedKeyValueStoreWithHeaders(BACKENDS[backend](name), Serdes.String(), Serdes.String(),
                                                     caching_enabled=caching)
    store.init(context)
    return store


def test_typed_api(backend: str, context: RecordingStateStoreContext) -> None:
    store = _store(backend, context)
    assert isinstance(store, TimestampedKeyValueStoreWithHeaders)
    store.put("a", ValueTimestampHeaders("1", 10, H1))
    assert store.get("a") == ValueTimestampHeaders("1", 10, H1)
    assert store.put_if_absent("a", ValueTimestampHeaders("2", 20)) == ValueTimestampHeaders("1", 10, H1)
    store.put_all([("b", ValueTimestampHeaders("3", 30, [("x", b"y")]))])  # a list of headers is kept as a tuple
    assert store.get("b") == ValueTimestampHeaders("3", 30, (("x", b"y"),))
    store.put("c", ValueTimestampHeaders("4", 40, None))
    assert store.get("c") == ValueTimestampHeaders("4", 40, ())
    store.put("a", ValueTimestampHeaders(None, 40, H1))  # as Java's make(null, ...): a delete
    assert store.get("a") is None
    assert store.delete("c") == ValueTimestampHeaders("4", 40, ())
    with store.all() as it:
        assert [(kv.key, kv.value) for kv in it] == [("b", ValueTimestampHeaders("3", 30, (("x", b"y"),)))]
    with pytest.raises(TypeError, match="ValueTimestampHeaders"):
        store.put("c", ValueAndTimestamp("5", 1))


def test_changelog_records_carry_the_stored_headers_and_a_delete_the_current_records(
        backend: str, context: RecordingStateStoreContext) -> None:
    store = _store(backend, context)
    context.current = record_context(500, headers=(("ctx", b"c"),))
    store.put("k", ValueTimestampHeaders("v", 1234, H1))
    store.put("j", ValueTimestampHeaders("w", 7))
    store.delete("k")
    assert [(c.key, c.value, c.timestamp, c.headers) for c in context.changelog] == [
        (b"k", b"v", 1234, H1), (b"j", b"w", 7, ()), (b"k", None, 500, (("ctx", b"c"),))]


def test_restore_rebuilds_headers_and_timestamps(backend: str, context: RecordingStateStoreContext) -> None:
    store = _store(backend, context)
    for i in range(6):
        context.at(100 + i)
        store.put(f"k{i % 3}", ValueTimestampHeaders(str(i), 1000 + i, (("n", str(i).encode()),)))
    store.delete("k1")
    assert context.registrations["hs"].with_headers
    fresh_context = RecordingStateStoreContext(context.state_dir.parent / "fresh")
    fresh = _store(backend, fresh_context)
    fresh_context.restore("hs", context.changelog_entries("hs"))
    with fresh.all() as it:
        assert [(kv.key, kv.value) for kv in it] == [
            ("k0", ValueTimestampHeaders("3", 1003, (("n", b"3"),))),
            ("k2", ValueTimestampHeaders("5", 1005, (("n", b"5"),)))]
    assert fresh_context.changelog == []


def test_a_timestamped_stores_changelog_restores_into_a_store_with_headers(
        backend: str, context: RecordingStateStoreContext) -> None:
    """The upgrade path: a timestamped store's changelog, restored into a store with headers, gives each value no
    headers, the bytes of Kafka Streams' `convertToHeaderFormat` of the timestamped value."""
    old = TypedTimestampedKeyValueStore(BACKENDS[backend]("hs"), Serdes.String(), Serdes.String())
    old.init(context)
    old.put("a", ValueAndTimestamp("x", 5))
    old.put("b", ValueAndTimestamp("y", 6))
    timestamped_bytes = old._bytes.get(b"a")
    entries = [(c.key, c.value, c.timestamp, c.headers) for c in context.changelog]
    fresh_context = RecordingStateStoreContext(context.state_dir.parent / "fresh")
    fresh = _store(backend, fresh_context)
    fresh_context.restore("hs", entries)
    assert fresh.get("a") == ValueTimestampHeaders("x", 5, ())
    assert fresh._bytes.get(b"a") == convert_to_header_format(timestamped_bytes)


def test_cached_store_logs_and_forwards_at_flush(backend: str, context: RecordingStateStoreContext) -> None:
    """The changelog gets the stored headers; the listener the headers of the record that made the update, as
    Kafka Streams forwards a flushed entry (a DSL store keeps no headers and its output keeps the input's,
    tests/dsl/test_dsl_headers_format.py)."""
    context.cache_budget = 1 << 20
    store = _store(backend, context, caching=True)
    flushed: list[Any] = []
    assert store.set_flush_listener(lambda *args: flushed.append(args), send_old_values=True)
    context.current = record_context(50, headers=(("ctx", b"1"),))
    store.put("k", ValueTimestampHeaders("v1", 10, H1))
    store.put("k", ValueTimestampHeaders("v2", 11, (("h", b"2"),)))
    assert context.changelog == [] and flushed == []
    store.flush()
    assert [(c.key, c.value, c.timestamp, c.headers) for c in context.changelog] == [(b"k", b"v2", 11, (("h", b"2"),))]
    assert flushed == [("k", "v2", None, 11, (("ctx", b"1"),))]  # the headers of the record that wrote it


_headers = st.lists(st.tuples(st.text(max_size=5), st.one_of(st.none(), st.binary(max_size=200))), max_size=5)


@given(_headers, st.integers(-2**63, 2**63 - 1), st.binary(max_size=50))
def test_local_value_round_trips(headers: list[tuple[str, bytes | None]], timestamp: int, raw: bytes) -> None:
    assert deserialize_headers(serialize_headers(tuple(headers))) == tuple(headers)
    assert split_headers_value(join_headers_value(tuple(headers), timestamp, raw)) == (tuple(headers), timestamp, raw)


def test_a_value_too_short_for_its_headers_is_refused() -> None:
    with pytest.raises(SerializationError):
        split_headers_value(b"\x14\x02")


class _Writer(Processor):
    def init(self, context: Any) -> None:
        self.context = context
        self.store = context.get_state_store("hs")

    def process(self, record: Record) -> None:
        old = self.store.get(record.key)
        self.store.put(record.key, ValueTimestampHeaders(record.value, record.timestamp, record.headers))
        self.context.forward(record.with_value(None if old is None else f"{old.value}@{old.headers}"))


def test_processor_api_on_the_driver(backend: str) -> None:
    s = Serdes.String()
    supplier = (Stores.in_memory_key_value_store("hs") if backend == "memory"
                else Stores.persistent_timestamped_key_value_store_with_headers("hs"))
    top = Topology()
    top.add_source("src", "in", key_deserializer=s.deserializer, value_deserializer=s.deserializer)
    top.add_processor("writer", _Writer, "src")
    top.add_state_store(Stores.timestamped_key_value_store_with_headers_builder(supplier, s, s), "writer")
    top.add_sink("out", "out", "writer", key_serializer=s.serializer, value_serializer=s.serializer)
    with TopologyTestDriver(top, {"application.id": "hdr", "bootstrap.servers": "x:9"}) as driver:
        source = driver.create_input_topic("in", s.serializer, s.serializer)
        source.pipe_input("k", "v1", 5, headers=[("h", b"1")])
        source.pipe_input("k", "v2", 6)
        out = driver.create_output_topic("out", s, s)
        assert out.read_values_to_list() == [None, "v1@(('h', b'1'),)"]
        assert driver.get_state_store("hs").get("k") == ValueTimestampHeaders("v2", 6, ())
