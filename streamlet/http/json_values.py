"""How stored keys and values look in JSON, and how a key written in a URL becomes a store key.

A URL carries text; the store's key serde says what the key really is (String keys stay text, Long
and Integer keys are numbers, Json keys are JSON). Values keep their JSON shape; `ValueAndTimestamp`
becomes `{"value", "timestamp"}`, `ValueTimestampHeaders` `{"value", "timestamp", "headers"}` (headers as
`[name, value]` pairs), `AggregationWithHeaders` `{"aggregation", "headers"}`, a windowed key
`{"key", "start", "end"}`, bytes their text when
UTF-8 and hex otherwise.
"""

from __future__ import annotations

from typing import Any

import orjson

from streamlet.serdes import Serde, Serdes
from streamlet.stores.api import AggregationWithHeaders, ValueAndTimestamp, ValueTimestampHeaders
from streamlet.windowed import Windowed

_INTEGER_SERDES = {"Short", "Integer", "Long"}
_FLOAT_SERDES = {"Float", "Double"}


def key_serde(topology: Any, config: Any, store: str) -> Serde[Any]:
    """The store's key serde: its builder's, else `default.key.serde`, else String."""
    builder = topology.store_builders.get(store)
    serde = getattr(builder, "key_serde", None) or config.default_key_serde()
    return serde if serde is not None else Serdes.String()


def parse_key(text: str, serde: Serde[Any]) -> Any:
    """A key from its URL text, as the store's key serde expects it (ValueError if it cannot be)."""
    name = getattr(serde, "name", "")
    if name in _INTEGER_SERDES:
        return int(text)
    if name in _FLOAT_SERDES:
        return float(text)
    if name == "Json":
        return orjson.loads(text)
    if name == "Bytes":
        return text.encode("utf-8")
    return text


def jsonable(value: Any) -> Any:
    """A stored key or value as plain JSON data."""
    if isinstance(value, ValueAndTimestamp):
        return {"value": jsonable(value.value), "timestamp": value.timestamp}
    if isinstance(value, AggregationWithHeaders):
        return {"aggregation": jsonable(value.aggregation),
                "headers": [[name, jsonable(v)] for name, v in value.headers]}
    if isinstance(value, ValueTimestampHeaders):
        return {"value": jsonable(value.value), "timestamp": value.timestamp,
                "headers": [[name, jsonable(v)] for name, v in value.headers]}
    if isinstance(value, Windowed):
        return {"key": jsonable(value.key), "start": value.window.start, "end": value.window.end}
    if isinstance(value, bytes | bytearray):
        try:
            return bytes(value).decode("utf-8")
        except UnicodeDecodeError:
            return bytes(value).hex()
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [jsonable(v) for v in value]
    if value is None or isinstance(value, str | int | float | bool):
        return value
    return str(value)


def dumps(data: Any) -> bytes:
    """JSON bytes of `data` (already `jsonable`)."""
    return orjson.dumps(data, default=str)
