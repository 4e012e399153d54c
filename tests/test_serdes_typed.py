"""`Serdes.json(MyType)`: JSON values as dataclasses, pydantic models and msgspec structs, with no registry."""

from __future__ import annotations

import datetime
import pickle
import subprocess
import sys
import uuid
from decimal import Decimal
from typing import Any

import orjson
import pytest
from hypothesis import given, settings

from streamlet import Consumed, Produced, Serdes, StreamsBuilder
from streamlet.errors import SerializationError
from streamlet.testing import TopologyTestDriver
from tests.helpers.typed_records import ALL_FLAVOURS, FLAVOURS, Kind, Line, Order, build, flavour_param, order_values

FLAVOUR_PARAMS = [flavour_param(name) for name in ALL_FLAVOURS]


@pytest.mark.parametrize("flavour", FLAVOUR_PARAMS)
@settings(max_examples=60, deadline=None)
@given(values=order_values)
def test_round_trip(flavour: str, values: dict[str, Any]) -> None:
    order = build(flavour, values)
    serde = Serdes.json(type(order))
    data = serde.serializer.serialize("orders", order)
    assert data is not None
    assert serde.deserializer.deserialize("orders", data) == order


@pytest.mark.parametrize("flavour", FLAVOUR_PARAMS)
def test_plain_json_that_any_reader_understands(flavour: str) -> None:
    values = {"id": "o-1", "amount": 2.5, "kind": Kind.CASH,
              "at": datetime.datetime(2026, 3, 4, 5, 6, 7, 8000, tzinfo=datetime.UTC),
              "day": datetime.date(2026, 3, 4), "price": Decimal("9.90"), "lines": [{"sku": "a", "quantity": 2}],
              "tags": {"t": 1}, "note": None, "ref": uuid.UUID(int=7)}
    data = Serdes.json(FLAVOURS[flavour][0]).serializer.serialize("orders", build(flavour, values))
    assert data is not None
    plain = orjson.loads(data)
    assert plain["kind"] == "cash" and plain["lines"] == [{"sku": "a", "quantity": 2}]
    assert plain["price"] == "9.90" and plain["ref"] == "00000000-0000-0000-0000-000000000007"
    assert datetime.datetime.fromisoformat(plain["at"]) == values["at"] and plain["day"] == "2026-03-04"
    assert plain["note"] is None and plain["tags"] == {"t": 1} and plain["id"] == "o-1" and plain["amount"] == 2.5


def test_dataclass_reads_json_written_elsewhere() -> None:
    """Another producer's JSON: an integer where a float is declared, a 'Z' suffix, fields the type lacks."""
    data = (b'{"id":"o","amount":3,"kind":"card","at":"2026-01-01T00:00:00Z","day":"2026-01-01","price":1.5,'
            b'"lines":[{"sku":"s","quantity":1,"extra":true}],"other":1}')
    order = Serdes.json(Order).deserializer.deserialize("orders", data)
    assert order == Order("o", 3.0, Kind.CARD, datetime.datetime(2026, 1, 1, tzinfo=datetime.UTC),
                          datetime.date(2026, 1, 1), Decimal("1.5"), [Line("s", 1)])
    assert type(order.amount) is float


@pytest.mark.parametrize("flavour", FLAVOUR_PARAMS)
def test_errors_are_serialization_errors(flavour: str) -> None:
    serde = Serdes.json(FLAVOURS[flavour][0])
    with pytest.raises(SerializationError, match="cannot serialize Line"):
        serde.serializer.serialize("orders", Line("a", 1))
    with pytest.raises(SerializationError, match="cannot read"):
        serde.deserializer.deserialize("orders", b'{"id": 1')
    assert serde.serializer.serialize("orders", None) is None
    assert serde.deserializer.deserialize("orders", None) is None


def test_not_a_record_type() -> None:
    with pytest.raises(SerializationError, match="dataclass, pydantic model or msgspec struct"):
        Serdes.json(dict)


@pytest.mark.parametrize("flavour", FLAVOUR_PARAMS)
def test_pickles_before_and_after_use(flavour: str) -> None:
    """A topology's serdes are pickled to the Spark engine's workers."""
    order = build(flavour, {"id": "o", "amount": 1.0, "kind": Kind.CARD, "at": datetime.datetime(2026, 1, 1),
                            "day": datetime.date(2026, 1, 1), "price": Decimal("1.00"), "lines": []})
    serde = Serdes.json(type(order))
    copy = pickle.loads(pickle.dumps(serde))
    data = serde.serializer.serialize("orders", order)
    assert copy.deserializer.deserialize("orders", data) == order
    again = pickle.loads(pickle.dumps(serde))  # after use: its library objects are made again
    assert again.serializer.serialize("orders", order) == data


def test_importing_streamlet_imports_neither_library() -> None:
    code = ("import sys\nfrom dataclasses import dataclass\nfrom streamlet import Serdes\n"
            "@dataclass\nclass A:\n    x: int\n"
            "s = Serdes.json(A)\nassert s.deserializer.deserialize('t', s.serializer.serialize('t', A(1))) == A(1)\n"
            "print(sorted(m for m in ('pydantic', 'msgspec') if m in sys.modules))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


@pytest.mark.parametrize("flavour", FLAVOUR_PARAMS)
def test_typed_values_through_the_driver(flavour: str) -> None:
    order_type, line_type = FLAVOURS[flavour]
    builder = StreamsBuilder()
    (builder.stream("orders", Consumed(key_serde=Serdes.String(), value_serde=Serdes.json(order_type)))
        .flat_map_values(lambda order: order.lines)
        .to("lines", Produced(key_serde=Serdes.String(), value_serde=Serdes.json(line_type))))
    values = {"id": "o", "amount": 1.0, "kind": Kind.CARD, "at": datetime.datetime(2026, 1, 1, tzinfo=datetime.UTC),
              "day": datetime.date(2026, 1, 1), "price": Decimal("1.00"),
              "lines": [{"sku": "a", "quantity": 1}, {"sku": "b", "quantity": 3}]}
    with TopologyTestDriver(builder.build(), {"application.id": "typed-json"}) as driver:
        orders = driver.create_input_topic("orders", Serdes.String(), Serdes.json(order_type))
        lines = driver.create_output_topic("lines", Serdes.String(), Serdes.json(line_type))
        orders.pipe_input("o", build(flavour, values))
        got = lines.read_values_to_list()
    assert got == build(flavour, values).lines
