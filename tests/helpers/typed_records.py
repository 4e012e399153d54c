"""One record shape as a dataclass, a pydantic model and a msgspec struct (the latter two only where the
library is installed), and a hypothesis strategy for its field values: the typed-record serdes' tests build
each flavour from the same values."""

from __future__ import annotations

import datetime
import enum
import uuid
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Annotated, Any, NamedTuple

from hypothesis import strategies as st


class Kind(enum.Enum):
    CARD = "card"
    CASH = "cash"


class Digits(NamedTuple):
    """An Avro decimal's precision and scale, for a dataclass or struct field (pydantic has its own Field)."""

    max_digits: int
    decimal_places: int


@dataclass
class Line:
    sku: str
    quantity: int


@dataclass
class Order:
    id: str
    amount: float
    kind: Kind
    at: datetime.datetime
    day: datetime.date
    price: Annotated[Decimal, Digits(12, 2)]
    lines: list[Line]
    tags: dict[str, int] = field(default_factory=dict)
    note: str | None = None
    ref: uuid.UUID | None = None


FLAVOURS: dict[str, tuple[type, type]] = {"dataclass": (Order, Line)}
"""flavour -> (the order type, its line type)."""

try:
    import pydantic
except ImportError:  # the dev extra installs it; without it the pydantic cases skip
    pydantic = None
else:
    class PLine(pydantic.BaseModel):
        sku: str
        quantity: int

    class POrder(pydantic.BaseModel):
        id: str
        amount: float
        kind: Kind
        at: datetime.datetime
        day: datetime.date
        price: Annotated[Decimal, pydantic.Field(max_digits=12, decimal_places=2)]
        lines: list[PLine]
        tags: dict[str, int] = {}
        note: str | None = None
        ref: uuid.UUID | None = None

    FLAVOURS["pydantic"] = (POrder, PLine)

try:
    import msgspec
except ImportError:  # as above
    msgspec = None
else:
    class MLine(msgspec.Struct):
        sku: str
        quantity: int

    class MOrder(msgspec.Struct):
        id: str
        amount: float
        kind: Kind
        at: datetime.datetime
        day: datetime.date
        price: Annotated[Decimal, Digits(12, 2)]
        lines: list[MLine]
        tags: dict[str, int] = {}
        note: str | None = None
        ref: uuid.UUID | None = None

    FLAVOURS["msgspec"] = (MOrder, MLine)

ALL_FLAVOURS = ("dataclass", "pydantic", "msgspec")


def flavour_param(name: str) -> Any:
    """A pytest parameter for a flavour, skipped where its library is not installed."""
    import pytest

    return pytest.param(name, marks=pytest.mark.skipif(name not in FLAVOURS, reason=f"{name} is not installed"))


def build(flavour: str, values: dict[str, Any]) -> Any:
    """The flavour's order from plain field values (lines as dicts)."""
    order_type, line_type = FLAVOURS[flavour]
    lines = [line_type(**line) if flavour != "pydantic" else line_type.model_validate(line)
             for line in values["lines"]]
    fields = {**values, "lines": lines}
    return order_type.model_validate(fields) if flavour == "pydantic" else order_type(**fields)


_INT64 = st.integers(-(2**63), 2**63 - 1)
_MILLIS = st.datetimes(min_value=datetime.datetime(1900, 1, 1), max_value=datetime.datetime(2200, 1, 1),
                       timezones=st.just(datetime.UTC),
                       ).map(lambda d: d.replace(microsecond=d.microsecond // 1000 * 1000))

order_values = st.fixed_dictionaries({
    "id": st.text(max_size=12),
    "amount": st.floats(allow_nan=False, allow_infinity=False),
    "kind": st.sampled_from(Kind),
    "at": _MILLIS,
    "day": st.dates(min_value=datetime.date(1900, 1, 1), max_value=datetime.date(2200, 1, 1)),
    "price": st.decimals(min_value=-(10**9), max_value=10**9, places=2, allow_nan=False, allow_infinity=False),
    "lines": st.lists(st.fixed_dictionaries({"sku": st.text(max_size=5), "quantity": _INT64}), max_size=3),
    "tags": st.dictionaries(st.text(max_size=4), _INT64, max_size=3),
    "note": st.none() | st.text(max_size=8),
    "ref": st.none() | st.uuids(),
})
"""Field values of an order, in the ranges the formats keep exactly (Avro's timestamp-millis: milliseconds)."""
