"""`take_batches`: a fetch result that hands out a record batch at a time must hand out exactly what
aiokafka's own `getall` does, record for record, with the same positions after every call: across batch
boundaries and `max_records` splits, from a fetch position inside a batch, with control batches and
aborted transactions skipped under read_committed (and kept under read_uncommitted), and with `getone`."""

from __future__ import annotations

import struct
from typing import Any

import pytest
from aiokafka import TopicPartition
from aiokafka.consumer.fetcher import FetchResult, PartitionRecords
from aiokafka.consumer.subscription_state import Assignment
from aiokafka.record.default_records import DefaultRecordBatchBuilder
from aiokafka.record.memory_records import MemoryRecords
from aiokafka.record.util import calc_crc32c
from hypothesis import given, settings
from hypothesis import strategies as st

from streamlet.kafka.batched_fetch import take_batches
from streamlet.kafka.restore_records import _as_decoded

TP = TopicPartition("lines", 0)
ABORT, COMMIT = b"\x00\x00\x00\x00", b"\x00\x00\x00\x01"


def _batch(base: int, rows: list[tuple[bytes | None, bytes | None]], producer: int = -1,
           control: bool = False) -> bytes:
    builder = DefaultRecordBatchBuilder(magic=2, compression_type=0, is_transactional=int(producer >= 0),
                                        producer_id=producer, producer_epoch=0 if producer >= 0 else -1,
                                        base_sequence=-1, batch_size=1 << 20)
    for i, (key, value) in enumerate(rows):
        builder.append(i, timestamp=1_000 + base + i, key=key, value=value, headers=[])
    data = bytearray(builder.build())
    data[0:8] = base.to_bytes(8, "big")
    if control:  # the control bit of the attributes, then the CRC over attributes onward again
        attributes = struct.unpack_from(">h", data, 21)[0] | 0x20
        struct.pack_into(">h", data, 21, attributes)
        struct.pack_into(">I", data, 17, calc_crc32c(bytes(data[21:])))
    return bytes(data)


def _log(layout: list[tuple[str, int]]) -> tuple[bytes, list[tuple[int, int]]]:
    """Batches by kind ("plain", "txn-ok", "txn-aborted" with n records, then "commit"/"abort" markers) at
    consecutive offsets; returns the bytes and the fetch response's aborted transactions."""
    data, offset = b"", 0
    aborted: list[tuple[int, int]] = []
    for kind, n in layout:
        producer = {"plain": -1, "txn-ok": 7, "commit": 7, "txn-aborted": 9, "abort": 9}[kind]
        if kind in ("commit", "abort"):
            data += _batch(offset, [(COMMIT if kind == "commit" else ABORT, b"\x00\x00" + b"\x00" * 4)], producer,
                           control=True)
            offset += 1
            continue
        if kind == "txn-aborted":  # each is a transaction of its own, ended by the "abort" marker after it
            aborted.append((producer, offset))
        data += _batch(offset, [(f"k{offset + i}".encode(), b"v" * (i % 3)) for i in range(n)], producer)
        offset += n
    return data, aborted


def _result(data: bytes, aborted: list[tuple[int, int]], fetch_offset: int, isolation: int) -> tuple[FetchResult, Any]:
    assignment = Assignment([TP])
    state = assignment.state_value(TP)
    state.reset_to(fetch_offset)
    records = PartitionRecords(TP, MemoryRecords(data), list(aborted), fetch_offset, None, None, True, isolation)
    records._consumer_record = _as_decoded
    return FetchResult(TP, assignment=assignment, partition_records=records, backoff=0), state


def _drain(result: FetchResult, state: Any, takes: list[int | None]) -> list[tuple[list[tuple[Any, ...]], int, bool]]:
    out = []
    for i in range(60):
        n = takes[i % len(takes)]
        if n == 1 and i % 2:
            one = result.getone()
            got = [] if one is None else [one]
        else:
            got = result.getall(n)
        out.append(([(r.offset, r.key, r.value, r.timestamp) for r in got], state.position, result.has_more()))
        if not result.has_more():
            break
    return out


LAYOUTS = st.lists(st.tuples(st.sampled_from(["plain", "txn-ok", "txn-aborted"]), st.integers(1, 7)), min_size=1,
                   max_size=6).map(lambda parts: [p for kind, n in parts
                                                  for p in ([(kind, n), ("abort", 1)] if kind == "txn-aborted"
                                                            else [(kind, n), ("commit", 1)] if kind == "txn-ok"
                                                            else [(kind, n)])])


@pytest.mark.anyio
@settings(max_examples=150, deadline=None)
@given(layout=LAYOUTS, start=st.integers(0, 6), takes=st.lists(st.one_of(st.none(), st.integers(0, 9)), min_size=1,
                                                                   max_size=4), isolation=st.sampled_from([0, 1]))
async def test_batched_getall_hands_out_what_aiokafka_does(layout: list[tuple[str, int]], start: int,
                                                           takes: list[int | None], isolation: int) -> None:
    data, aborted = _log(layout)
    total = sum(n for _, n in layout)
    start = min(start, total - 1)
    plain, plain_state = _result(data, aborted, start, isolation)
    batched, batched_state = _result(data, aborted, start, isolation)
    assert take_batches(batched)
    expected = _drain(plain, plain_state, takes)
    got = _drain(batched, batched_state, takes)
    assert [rows for rows, _, _ in got] == [rows for rows, _, _ in expected]
    assert [more for _, _, more in got] == [more for _, _, more in expected]
    # Positions: equal after every call, except that a call ending exactly at a batch's end may already
    # stand at the batch's next offset (where aiokafka's next call moves it anyway); equal at the end.
    for (rows, got_pos, _), (_, want_pos, _) in zip(got, expected, strict=True):
        assert got_pos == want_pos or (rows and want_pos == rows[-1][0] + 1 and got_pos >= want_pos)
    assert got[-1][1] == expected[-1][1]


@pytest.mark.anyio
async def test_a_started_result_or_a_foreign_one_is_left_alone() -> None:
    data, aborted = _log([("plain", 3), ("plain", 2)])
    started, _ = _result(data, aborted, 0, 0)
    assert started.getone() is not None
    assert not take_batches(started)
    assert "getall" not in vars(started)
    fresh, _ = _result(data, aborted, 0, 0)
    assert take_batches(fresh)
    assert not take_batches(fresh)  # once
    assert not take_batches(object())
