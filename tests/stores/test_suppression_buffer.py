"""The suppression buffer: Kafka Streams' order, non-resetting re-puts, size estimate, changelog and restore."""

from __future__ import annotations

import struct
from pathlib import Path

import pytest

from streamlet.errors import StreamsError
from streamlet.stores.suppression.buffer import BufferedChange, SuppressionBuffer
from tests.stores.context import RecordingStateStoreContext


def _open(tmp_path: Path, logged: bool = True) -> tuple[SuppressionBuffer, RecordingStateStoreContext]:
    context = RecordingStateStoreContext(tmp_path)
    buffer = SuppressionBuffer("buf", logged)
    buffer.init(context)
    return buffer, context


def _drain(buffer: SuppressionBuffer) -> list[tuple[bytes, BufferedChange]]:
    out: list[tuple[bytes, BufferedChange]] = []
    buffer.evict_while(lambda: True, lambda key, change: out.append((key, change)))
    return out


def test_entries_leave_in_time_then_key_order_and_a_re_put_keeps_its_place(tmp_path: Path) -> None:
    buffer, _ = _open(tmp_path)
    buffer.put(20, b"b", b"b1", None, 5, (), "in")
    buffer.put(10, b"z", b"z1", None, 6, (), "in")
    buffer.put(20, b"a", b"a1", None, 7, (), "in")
    buffer.put(99, b"z", b"z2", b"z1", 8, (("h", b"x"),), "in")  # keeps time 10, takes the new update
    assert buffer.min_time() == 10
    drained = _drain(buffer)
    assert [key for key, _ in drained] == [b"z", b"a", b"b"]
    z = drained[0][1]
    assert (z.prior, z.old, z.new, z.timestamp, z.headers) == (None, b"z1", b"z2", 8, (("h", b"x"),))
    assert buffer.min_time() is None and buffer.num_records() == 0 and buffer.size_bytes() == 0


def test_size_is_kafka_streams_estimate(tmp_path: Path) -> None:
    buffer, _ = _open(tmp_path)
    buffer.put(1, b"k", b"v1", None, 0, (), "in")
    # buffer time 8 + key 1 + new value 2 + context (timestamp 8, offset 8, topic "in" 2, partition 4)
    assert buffer.size_bytes() == 33
    buffer.put(1, b"k", b"v22", b"v1", 0, (("h", b"ab"),), "in")
    # prior (None) + old 2 + new 3 + context 22 + header name 1 and value 2
    assert buffer.size_bytes() == 8 + 1 + 2 + 3 + 22 + 3


def test_flush_logs_changed_keys_and_a_restore_rebuilds_the_buffer(tmp_path: Path) -> None:
    buffer, context = _open(tmp_path)
    buffer.put(10, b"a", b"a1", None, 3, (("h", b"1"),), "in")
    buffer.put(5, b"b", b"b1", b"b0", 4, (), None)
    buffer.flush()
    buffer.put(10, b"a", b"a2", b"a1", 9, (), "in")
    buffer.evict_while(lambda: buffer.min_time() == 5, lambda key, change: None)  # b leaves
    buffer.flush()
    entries = context.changelog_entries("buf")
    assert [(key, value is None, headers) for key, value, _, headers in entries] == [
        (b"a", False, (("v", b"\x03"),)), (b"b", False, (("v", b"\x03"),)), (b"a", False, (("v", b"\x03"),)),
        (b"b", True, ())]  # Kafka Streams' layout version on values; tombstones without headers
    restored, restored_context = _open(tmp_path / "again")
    restored_context.registrations["buf"].restore(entries)
    assert restored.num_records() == 1 and restored.size_bytes() == buffer.size_bytes()
    [(key, change)] = _drain(restored)
    assert (key, change.prior, change.old, change.new, change.timestamp, change.topic) == (
        b"a", None, b"a1", b"a2", 9, "in")


def test_an_unlogged_buffer_writes_no_changelog(tmp_path: Path) -> None:
    buffer, context = _open(tmp_path, logged=False)
    buffer.put(1, b"k", b"v", None, 0, (), "in")
    buffer.flush()
    assert context.changelog == []
    assert not context.registrations["buf"].logged


def test_a_changelog_in_streamlets_earlier_layout_still_restores(tmp_path: Path) -> None:
    """Values without a `v` header are streamlet's layout from before it wrote Kafka Streams' v3."""
    def sized(data: bytes | None) -> bytes:
        return struct.pack(">i", -1) if data is None else struct.pack(">i", len(data)) + data

    legacy = (struct.pack(">qq", 10, 9) + b"\x00" + sized(None) + sized(b"a1") + sized(b"a2") + sized(b"in")
              + struct.pack(">i", 1) + sized(b"h") + sized(b"x"))
    buffer, context = _open(tmp_path)
    context.registrations["buf"].restore([(b"a", legacy, 9, ())])
    [(key, change)] = _drain(buffer)
    assert (key, change.prior, change.old, change.new, change.timestamp, change.topic, change.headers) == (
        b"a", None, b"a1", b"a2", 9, "in", (("h", b"x"),))


def test_an_unknown_layout_version_is_refused_by_name(tmp_path: Path) -> None:
    _buffer, context = _open(tmp_path)
    with pytest.raises(StreamsError, match="layout version"):
        context.registrations["buf"].restore([(b"a", b"\x00" * 40, 9, (("v", b"\x02"),))])


# The changelog of one buffer (a table suppressed for 7 ms; keys a, b, c) as Kafka Streams 4.4.0 wrote it, and as
# streamlet wrote it before its values matched: identical but for the last value of `c`, whose old value equals its
# prior after `c` was buffered again, and which streamlet ended with one zero byte per byte of that value.
_V3 = (("v", b"\x03"),)
_KAFKA_STREAMS_CHANGELOG = [(bytes.fromhex(key), None if value == "null" else bytes.fromhex(value)) for key, value in [
    ("62", "0000000000000009000000000000000000000002696e0000000000000000ffffffffffffffffffffffff0000000000000009"),
    ("62", "0000000000000003000000000000000100000002696e00000000000000010000000168000000026831ffffffffffffffffffff"
           "ffff0000000000000009"),
    ("61", "0000000000000021000000000000000200000002696e0000000000000000ffffffffffffffff00000001790000000000000021"),
    ("62", "null"), ("63", "null"),
    ("61", "0000000000000011000000000000000400000002696e00000000000000010000000168000000026831ffffffff0000000179"
           "00000001790000000000000021"),
    ("62", "null"),
    ("63", "000000000000001c000000000000000600000002696e000000000000000100000001680000000268320000000178fffffffe"
           "0000000179000000000000001c"),
    ("63", "0000000000000020000000000000000700000002696e0000000000000000000000017800000001790000000178000000000000"
           "001c"),
    ("61", "000000000000000c000000000000000800000002696e0000000000000000ffffffff00000001790000000178000000000000"
           "0021"),
    ("63", "000000000000001c000000000000000900000002696e000000000000000100000001680000000268320000000178fffffffe"
           "0000000179000000000000001c"),
    ("62", "null")]]


def test_a_changelog_streamlet_wrote_with_trailing_zeros_restores_as_kafka_streams_own(tmp_path: Path) -> None:
    padded = [*_KAFKA_STREAMS_CHANGELOG]
    key, value = padded[10]
    assert value is not None
    padded[10] = (key, value + b"\x00")
    restored = []
    for i, changelog in enumerate([_KAFKA_STREAMS_CHANGELOG, padded]):
        buffer, context = _open(tmp_path / str(i))
        context.registrations["buf"].restore([(key, value, 0, _V3 if value else ()) for key, value in changelog])
        size = buffer.size_bytes()
        restored.append((size, _drain(buffer)))
    assert restored[0] == restored[1]
    size, [(c, c_change), (a, a_change)] = restored[1]  # by buffer time: c at 28, a at 33
    assert (c, c_change.prior, c_change.old, c_change.new, c_change.timestamp, c_change.offset, c_change.headers) == (
        b"c", b"x", b"x", b"y", 28, 9, (("h", b"h2"),))
    assert (a, a_change.prior, a_change.old, a_change.new, a_change.timestamp, a_change.offset) == (
        b"a", None, b"y", b"x", 12, 8)
    # Kafka Streams' estimate: per entry 8 (time) + key + context (8 + 8 + 4 + "in" + headers) + values, the old
    # value of c not counted (it is its prior)
    assert size == (8 + 1 + 22 + 3 + 1 + 1) + (8 + 1 + 22 + 1 + 1)


def test_an_old_value_equal_to_the_prior_is_logged_once_and_counted_once(tmp_path: Path) -> None:
    """Kafka Streams' `BufferValue` keeps one array for an old value equal to the prior, also when the key was
    buffered again: written as -2 with nothing after the buffer time, and not counted in the size twice."""
    buffer, context = _open(tmp_path)
    buffer.put(5, b"k", b"v1", b"v0", 1, (), "in")
    buffer.put(5, b"k", b"v2", b"v0", 2, (), "in")  # buffered again: old equals the prior again
    assert buffer.size_bytes() == 8 + 1 + 22 + 2 + 2  # prior 2, old not counted, new 2
    buffer.flush()
    [(_, value, _, _)] = context.changelog_entries("buf")
    # context 8 + 8 + (4 + 2) + 4 + 4 (no headers), prior 4 + 2, old -2, new 4 + 2, buffer time 8
    assert len(value) == 30 + 6 + 4 + 6 + 8
    assert value[30 + 6:30 + 6 + 4] == b"\xff\xff\xff\xfe"
