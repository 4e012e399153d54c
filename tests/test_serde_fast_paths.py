"""`fast_serializer` / `fast_deserializer`: a C function for data of one exact type, which must give what
the serde's own call gives; for anything else (and on an error) the serde's own call decides."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from streamlet.actors.partition_group import PartitionGroup, RawRecord
from streamlet.actors.processor_node import SinkNode, SourceNode
from streamlet.actors.record_collector import RecordCollector
from streamlet.errors import SerializationError
from streamlet.record import Record
from streamlet.serdes import NoFastPath, Serdes, fast_deserializer, fast_serializer


@given(st.text(alphabet=st.characters(blacklist_categories=("Cs",))))  # encodable text: errors are below
def test_the_string_fast_paths_match_the_serde(text: str) -> None:
    serde = Serdes.String()
    data = text.encode()
    typ, encode = fast_serializer(serde.serializer)
    assert typ is str and encode(text) == serde.serializer.serialize("t", text)
    typ, decode = fast_deserializer(serde.deserializer)
    assert typ is bytes and decode(data) == serde.deserializer.deserialize("t", data)


def test_bytes_deserializer_fast_path_and_serdes_without_one() -> None:
    typ, decode = fast_deserializer(Serdes.Bytes().deserializer)
    data = b"\x00\xff"
    assert typ is bytes and decode(data) is data
    for serde in (Serdes.Json(), Serdes.Integer()):
        assert fast_serializer(serde.serializer)[0] is NoFastPath
        assert fast_deserializer(serde.deserializer)[0] is NoFastPath
    assert fast_deserializer(Serdes.Long().deserializer)[0] is NoFastPath


@given(st.integers(min_value=-(2**70), max_value=2**70))
def test_the_long_fast_path_matches_the_serde_or_fails_where_it_fails(n: int) -> None:
    """In range the fast path gives the serde's bytes; outside it fails too (and the callers then make the
    serde's own call, whose error is what the user sees)."""
    serializer = Serdes.Long().serializer
    typ, encode = fast_serializer(serializer)
    assert typ is int
    if -(2**63) <= n < 2**63:
        assert encode(n) == serializer.serialize("t", n)
    else:
        with pytest.raises(Exception):  # noqa: B017 - struct.error; the serde's own error is checked below
            encode(n)
        with pytest.raises(SerializationError):
            serializer.serialize("t", n)


def _sink() -> tuple[SinkNode, RecordCollector]:
    collector = RecordCollector(lambda _t: 4)
    return SinkNode("sink", "out", Serdes.String().serializer, Serdes.Long().serializer, None, collector), collector


def test_the_sink_writes_what_the_serdes_write_and_fails_with_their_error() -> None:
    sink, collector = _sink()
    sink.process(Record("word", 3, 10))
    sink.process(Record(None, None, 11))
    records = [r for recs in collector.drain().values() for r in recs]
    assert [(r.key, r.value) for r in records] == [(b"word", (3).to_bytes(8, "big")), (None, None)]
    with pytest.raises(SerializationError, match="sink 'sink' could not serialize"):
        sink.process(Record("\ud800", 1, 12))  # a lone surrogate: str.encode fails, the serde's error says so
    with pytest.raises(SerializationError):
        sink.process(Record(5, 1, 12))  # not a str: the serde's own call


def test_the_source_side_reports_the_deserializers_own_error() -> None:
    source = SourceNode("src", ["in"], Serdes.String().deserializer, Serdes.String().deserializer, None)
    errors: list[BaseException] = []

    def skip(_raw: Any, exc: BaseException) -> bool:
        errors.append(exc)
        return True

    group = PartitionGroup({"in": source}, skip)
    bad = RawRecord("in", 0, 0, 5, b"k", b"\xff")
    good = RawRecord("in", 0, 1, 6, b"k", "é".encode())
    assert group.add_records("in", 0, [bad, good]) == 1
    assert [type(e) for e in errors] == [type(_own_error(b"\xff"))]
    (_q, run) = group.next_run(5) or (None, [])
    assert [(r.key, r.value) for r, _o, _raw in run] == [("k", "é")]


def _own_error(data: bytes) -> BaseException:
    try:
        Serdes.String().deserializer.deserialize("in", data)
    except Exception as exc:
        return exc
    raise AssertionError("no error")
