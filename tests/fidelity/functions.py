"""The named user functions of the differential cases, twins of `Runner.Functions` in java/.

Each behaves exactly as its Java twin, nulls included (Java's `String.valueOf` of a Long is Python's
`str` of an int; keys and values are ASCII), so any difference in output comes from the engines.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from streamlet.record import KeyValue


def _j(v: Any) -> str:
    """Java's string concatenation of a value: `null` for null."""
    return "null" if v is None else str(v)


def _last12(s: str) -> str:
    return s[-12:]


PREDICATES: dict[str, Callable[[Any, Any], bool]] = {
    "value_even_length": lambda k, v: v is not None and len(str(v)) % 2 == 0,
    "key_before_c": lambda k, v: k is not None and k < "c",
    "value_not_null": lambda k, v: v is not None,
}

VALUE_MAPPERS: dict[str, Callable[[Any], Any]] = {
    "tag": lambda v: "n" if v is None else str(v) + "t",
    "length": lambda v: "0" if v is None else str(len(str(v))),
}

KEY_SELECTORS: dict[str, Callable[[Any, Any], Any]] = {
    # str(v)[0] and [-1] raise on "" as Java's substring(0, 1) and substring(length - 1) do
    "value_first": lambda k, v: None if v is None else str(v)[0],
    "key_and_value_last": lambda k, v: ("n" if k is None else str(k)) + ("n" if v is None else str(v)[-1]),
    "value_length": lambda k, v: None if v is None else str(len(str(v))),
}

KEY_VALUE_MAPPERS: dict[str, Callable[[Any, Any], Any]] = {
    "swap": lambda k, v: KeyValue(v, k),
    "key_from_value_first": lambda k, v: KeyValue(None if v is None else str(v)[0], f"{_j(k)}:{_j(v)}"),
}

FLAT_VALUE_MAPPERS: dict[str, Callable[[Any], Any]] = {
    "chars": lambda v: [] if v is None else list(str(v)),
}

FLAT_KEY_VALUE_MAPPERS: dict[str, Callable[[Any, Any], Any]] = {
    "twice": lambda k, v: [KeyValue(k, v), KeyValue("n" if k is None else str(k) + "2", v)],
}

REDUCERS: dict[str, Callable[[Any, Any], Any]] = {
    "concat": lambda a, b: _last12(f"{_j(a)}+{_j(b)}"),
    "unconcat": lambda a, b: _last12(f"{_j(a)}-{_j(b)}"),
}

INITIALIZERS: dict[str, Callable[[], Any]] = {
    "trail": lambda: "",
}

AGGREGATORS: dict[str, Callable[[Any, Any, Any], Any]] = {
    "trail": lambda k, v, agg: _last12(f"{_j(agg)}/{'n' if k is None else k}{'n' if v is None else v}"),
    "untrail": lambda k, v, agg: _last12(f"{_j(agg)}\\{'n' if k is None else k}{'n' if v is None else v}"),
}

MERGERS: dict[str, Callable[[Any, Any, Any], Any]] = {
    "trail": lambda k, a, b: _last12(f"{_j(a)}|{_j(b)}"),
}

JOINERS: dict[str, Callable[[Any, Any], Any]] = {
    "pair": lambda a, b: ("n" if a is None else str(a)) + "&" + ("n" if b is None else str(b)),
}


def _first_char_key(v: Any) -> Any:
    c = str(v)[0]
    return "abcd"[int(c) % 4] if "0" <= c <= "8" else None


def _last_char_key(v: Any) -> Any:
    c = str(v)[-1]
    return "abcd"[int(c) % 4] if "0" <= c <= "9" else "a"


FOREIGN_KEYS: dict[str, Callable[[Any], Any]] = {
    "first_char_key": _first_char_key,
    "last_char_key": _last_char_key,
}


def global_key_selector(fn: str) -> Callable[[Any, Any], Any]:
    """Twin of `Functions.globalKeySelector`: the record's key, or a foreign key of its value."""
    if fn == "key":
        return lambda k, v: k
    fk = FOREIGN_KEYS[fn]
    return lambda k, v: None if v is None else fk(v)
