"""IQv2 over HTTP: a `StateQueryRequest` from a JSON body, and a `StateQueryResult` as JSON.

The body of `POST /stores/{store}/query`::

    {"query": {"type": "KeyQuery", "key": "alice"},
     "partitions": [0, 2],                              # optional: all partitions by default
     "position_bound": {"orders": {"0": 41}},           # optional: PositionBound.at(that position)
     "require_active": false}                           # optional

Query types and their fields (times in epoch ms; `order` is "ANY", "ASCENDING" or "DESCENDING"):
`KeyQuery`, `TimestampedKeyQuery` and `TimestampedKeyWithHeadersQuery` {key}; `RangeQuery`,
`TimestampedRangeQuery` and `TimestampedRangeWithHeadersQuery` {lower, upper, order} (a missing bound is
none); `WindowKeyQuery` and `TimestampedWindowKeyWithHeadersQuery` {key, time_from, time_to};
`WindowRangeQuery` and `TimestampedWindowRangeWithHeadersQuery` {time_from, time_to} or {key};
`VersionedKeyQuery` {key, as_of}; `MultiVersionedKeyQuery` {key, from_time, to_time, order}. A key given as
text becomes the store's key type as in the GET routes (a number for Long keys).

The answer: `{"store", "partitions": {"0": {"ok": true, "result": ..., "position": {...}, "role": "active"},
"5": {"ok": false, "reason": "NOT_PRESENT", "message": ..., "position": null, "role": null}}, "global": null,
"position": {...}}` (`role`: the answering copy's, "active", "restoring" or "standby"),
`position` being the merged positions, `{topic: {partition: offset}}`. Results: a value as the GET routes
show it, `ValueAndTimestamp` as `{"value", "timestamp"}`, a `ReadOnlyRecord` (the header-returning queries) as
`{"key", "value", "timestamp", "headers"}` with headers as `[name, value]` pairs (a value as bytes show), a
version as `{"value", "timestamp", "valid_to"}`, an iterator as a list (of `{"key", "value"}` for key-value pairs).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from streamlet.http.json_values import jsonable
from streamlet.queries.iqv2 import (
    KeyQuery,
    MultiVersionedKeyQuery,
    PositionBound,
    RangeQuery,
    ReadOnlyRecord,
    StateQueryRequest,
    TimestampedKeyQuery,
    TimestampedKeyWithHeadersQuery,
    TimestampedRangeQuery,
    TimestampedRangeWithHeadersQuery,
    TimestampedWindowKeyWithHeadersQuery,
    TimestampedWindowRangeWithHeadersQuery,
    VersionedKeyQuery,
    WindowKeyQuery,
    WindowRangeQuery,
)
from streamlet.queries.query_result import FailureReason, QueryResult, StateQueryResult
from streamlet.record import KeyValue
from streamlet.stores.position import Position
from streamlet.stores.versioned.api import VersionedRecord


class QueryBodyError(ValueError):
    """A body that is no valid IQv2 request (answered 400 with the message)."""


def _field(data: dict[str, Any], name: str, kind: type | tuple[type, ...], required: bool = True) -> Any:
    value = data.get(name)
    if value is None:
        if required:
            raise QueryBodyError(f"the query needs {name!r}")
        return None
    if isinstance(value, bool) or not isinstance(value, kind):
        raise QueryBodyError(f"{name!r} must be {getattr(kind, '__name__', kind)}, got {value!r}")
    return value


def _ordered(query: Any, order: Any, descending: str, ascending: str) -> Any:
    if order in (None, "ANY"):
        return query
    if order == "DESCENDING":
        return getattr(query, descending)()
    if order == "ASCENDING":
        return getattr(query, ascending)()
    raise QueryBodyError(f"order must be ANY, ASCENDING or DESCENDING, got {order!r}")


def _range(cls: Any, data: dict[str, Any], key: Callable[[Any], Any]) -> Any:
    lower, upper = data.get("lower"), data.get("upper")
    if lower is None and upper is None:
        query = cls.with_no_bounds()
    elif lower is None:
        query = cls.with_upper_bound(key(upper))
    elif upper is None:
        query = cls.with_lower_bound(key(lower))
    else:
        query = cls.with_range(key(lower), key(upper))
    return _ordered(query, data.get("order"), "with_descending_keys", "with_ascending_keys")


def parse_query(data: Any, key: Callable[[Any], Any]) -> Any:
    """The query object a JSON query stands for; `key` turns a JSON key into a store key."""
    if not isinstance(data, dict):
        raise QueryBodyError(f"'query' must be an object, got {data!r}")
    kind = data.get("type")
    if kind in ("KeyQuery", "TimestampedKeyQuery", "TimestampedKeyWithHeadersQuery", "VersionedKeyQuery",
                "MultiVersionedKeyQuery", "WindowKeyQuery", "TimestampedWindowKeyWithHeadersQuery"):
        if data.get("key") is None:
            raise QueryBodyError(f"a {kind} needs a 'key'")
        the_key = key(data["key"])
    if kind == "KeyQuery":
        return KeyQuery.with_key(the_key)
    if kind == "TimestampedKeyQuery":
        return TimestampedKeyQuery.with_key(the_key)
    if kind == "RangeQuery":
        return _range(RangeQuery, data, key)
    if kind == "TimestampedRangeQuery":
        return _range(TimestampedRangeQuery, data, key)
    if kind == "TimestampedKeyWithHeadersQuery":
        return TimestampedKeyWithHeadersQuery.with_key(the_key)
    if kind == "TimestampedRangeWithHeadersQuery":
        return _range(TimestampedRangeWithHeadersQuery, data, key)
    if kind == "WindowKeyQuery":
        return WindowKeyQuery.with_key_and_window_start_range(
            the_key, _field(data, "time_from", int), _field(data, "time_to", int))
    if kind == "WindowRangeQuery":
        if data.get("key") is not None:
            return WindowRangeQuery.with_key(key(data["key"]))
        return WindowRangeQuery.with_window_start_range(_field(data, "time_from", int), _field(data, "time_to", int))
    if kind == "TimestampedWindowKeyWithHeadersQuery":
        return TimestampedWindowKeyWithHeadersQuery.with_key_and_window_start_range(
            the_key, _field(data, "time_from", int), _field(data, "time_to", int))
    if kind == "TimestampedWindowRangeWithHeadersQuery":
        if data.get("key") is not None:
            return TimestampedWindowRangeWithHeadersQuery.with_key(key(data["key"]))
        return TimestampedWindowRangeWithHeadersQuery.with_window_start_range(
            _field(data, "time_from", int), _field(data, "time_to", int))
    if kind == "VersionedKeyQuery":
        query = VersionedKeyQuery.with_key(the_key)
        as_of = _field(data, "as_of", int, required=False)
        return query if as_of is None else query.as_of(as_of)
    if kind == "MultiVersionedKeyQuery":
        multi = MultiVersionedKeyQuery.with_key(the_key).from_time(_field(data, "from_time", int, required=False)) \
            .to_time(_field(data, "to_time", int, required=False))
        return _ordered(multi, data.get("order"), "with_descending_timestamps", "with_ascending_timestamps")
    raise QueryBodyError(f"unknown query type {kind!r}")


def _position(data: Any) -> Position:
    if not isinstance(data, dict):
        raise QueryBodyError(f"'position_bound' must be {{topic: {{partition: offset}}}}, got {data!r}")
    position = Position()
    try:
        for topic, partitions in data.items():
            for partition, offset in partitions.items():
                position.with_component(str(topic), int(partition), int(offset))
    except (AttributeError, TypeError, ValueError) as exc:
        raise QueryBodyError(f"'position_bound' must be {{topic: {{partition: offset}}}}, got {data!r}") from exc
    return position


def parse_request(store: str, body: Any, key: Callable[[Any], Any]) -> StateQueryRequest:
    """The `StateQueryRequest` of a JSON body (see the module docstring)."""
    if not isinstance(body, dict):
        raise QueryBodyError("the body must be a JSON object with a 'query'")
    request = StateQueryRequest.in_store(store).with_query(parse_query(body.get("query"), key))
    partitions = body.get("partitions")
    if partitions is not None:
        if not isinstance(partitions, list) or not all(isinstance(p, int) and not isinstance(p, bool)
                                                       for p in partitions):
            raise QueryBodyError(f"'partitions' must be a list of partition numbers, got {partitions!r}")
        request = request.with_partitions(partitions)
    if body.get("position_bound") is not None:
        request = request.with_position_bound(PositionBound.at(_position(body["position_bound"])))
    if body.get("require_active"):
        request = request.require_active()
    return request


def position_json(position: Position | None) -> Any:
    if position is None:
        return None
    return {topic: {str(p): o for p, o in sorted(position.get_partition_positions(topic).items())}
            for topic in sorted(position.get_topics())}


def _answer(value: Any) -> Any:
    if isinstance(value, ReadOnlyRecord):
        return {"key": jsonable(value.key), "value": jsonable(value.value), "timestamp": value.timestamp,
                "headers": [[name, jsonable(v)] for name, v in value.headers]}
    if isinstance(value, VersionedRecord):
        return {"value": jsonable(value.value), "timestamp": value.timestamp, "valid_to": value.valid_to}
    if value is None or isinstance(value, str | int | float | bool | bytes | dict):
        return jsonable(value)
    if hasattr(value, "__iter__") and not hasattr(value, "value"):
        items = list(value)
        close = getattr(value, "close", None)
        if close is not None:
            close()
        return [{"key": jsonable(i.key), "value": jsonable(i.value)} if isinstance(i, KeyValue) else _answer(i)
                for i in items]
    return jsonable(value)


def result_json(result: QueryResult) -> dict[str, Any]:
    """One partition's answer as JSON."""
    if result.is_failure():
        return {"ok": False, "reason": result.get_failure_reason().name, "message": result.get_failure_message(),
                "position": position_json(result.get_position())}
    return {"ok": True, "result": _answer(result.get_result()), "position": position_json(result.get_position())}


def state_result_json(store: str, result: StateQueryResult) -> dict[str, Any]:
    """A whole `StateQueryResult` as JSON (see the module docstring)."""
    return {"store": store,
            "partitions": {str(p): result_json(r) for p, r in sorted(result.partition_results.items())},
            "global": None if result.global_result is None else result_json(result.global_result),
            "position": position_json(result.get_position())}


_RANK = {"active": 0, "restoring": 1, "standby": 2}


def _rank(result: dict[str, Any]) -> int:
    if result.get("reason") == FailureReason.NOT_PRESENT.name:
        return 4
    return _RANK.get(result.get("role") or "", 3)


def merge_answers(answers: list[dict[str, Any]]) -> dict[str, Any]:
    """The answers of several instances as one: each partition from the instance whose copy there is
    active, else restoring, else a standby (each answer's `role`), a `NOT_PRESENT` only where no instance
    has the partition; positions merged."""
    merged: dict[str, Any] = {"store": answers[0]["store"], "partitions": {}, "global": None}
    position = Position()
    for answer in answers:
        for partition, result in answer["partitions"].items():
            held = merged["partitions"].get(partition)
            if held is None or _rank(result) < _rank(held):
                merged["partitions"][partition] = result
        merged["global"] = merged["global"] or answer.get("global")
    for result in merged["partitions"].values():
        if result.get("position"):
            position.merge(_position(result["position"]))
    merged["partitions"] = dict(sorted(merged["partitions"].items(), key=lambda item: int(item[0])))
    merged["position"] = position_json(position)
    return merged
