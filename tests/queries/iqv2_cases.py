"""The IQv2 check shared by streamlet and Kafka Streams 4.4.0 (Iqv2Check in tests/java/streams4): the topology,
the input, the query lines both sides read, and streamlet's answers printed as Iqv2Check prints Java's.

A query line is "label store TYPE args... [p=0,1] [bound=0:5,1:3] [active]"; "-" stands for no bound/time.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from streamlet import (
    AggregationWithHeaders,
    KeyQuery,
    MultiVersionedKeyQuery,
    Position,
    PositionBound,
    Processor,
    QueryResult,
    RangeQuery,
    ReadOnlyRecord,
    Serdes,
    StateQueryRequest,
    StateQueryResult,
    Stores,
    TimestampedKeyQuery,
    TimestampedKeyWithHeadersQuery,
    TimestampedRangeQuery,
    TimestampedRangeWithHeadersQuery,
    TimestampedWindowKeyWithHeadersQuery,
    TimestampedWindowRangeWithHeadersQuery,
    Topology,
    ValueTimestampHeaders,
    VersionedKeyQuery,
    WindowKeyQuery,
    WindowRangeQuery,
)
from streamlet.record import KeyValue, Record
from streamlet.stores.api import ValueAndTimestamp
from streamlet.stores.versioned.api import VersionedRecord
from streamlet.windowed import SessionWindow, Windowed

WINDOW_MS = 10_000
SEGMENT_MS = 43_200_000
"""The window store's segment interval (half its 1-day retention): the input stays inside one segment, so
`WindowRangeQuery`'s order (segment by segment, then key, then start) is key, then start, on both sides."""


HEADERS: dict[str, list[tuple[str, bytes | None]]] = {
    "a1": [("src", b"p0")], "a3": [("src", b"p0"), ("trace", b"t-3"), ("none", None)], "b2": [("trace", b"t-b2")],
    "d2": [("src", b"p1"), ("src", b"again")], "c1": [("gone", b"soon")],
}
"""The headers of the input records by value (others have none): the store with headers keeps them."""


def records(base: int) -> list[tuple[int, str, str, int]]:
    """(partition, key, value, timestamp): the last record of partition 1 writes the versioned store only, so
    the stores' positions differ there."""
    p0 = [("a", "a1", 0), ("b", "b1", 1000), ("c", "c1", 2000), ("a", "a2", 12_000), ("b", "ver-only-b", 13_000),
          ("c", "DELETE", 14_000), ("a", "a3", 25_000), ("b", "b2", 26_000)]
    p1 = [("d", "d1", 500), ("e", "e1", 1500), ("d", "d2", 11_000), ("e", "DELETE", 16_000),
          ("d", "ver-only-d", 20_000)]
    return [(0, k, v, base + t) for k, v, t in p0] + [(1, k, v, base + t) for k, v, t in p1]


def query_lines(base: int, last: dict[int, int]) -> list[str]:
    """The queries, given the input's base time and each partition's last offset."""
    t = base
    lines = [
        "kv-key-a kv KEY a", "kv-key-missing kv KEY zz", "kv-key-deleted kv KEY c", "kv-range kv RANGE b e",
        "kv-range-desc kv RANGE_DESC - -", "kv-range-lower kv RANGE c -", "kv-range-upper kv RANGE - b",
        "kv-range-inverted kv RANGE d a",
        "ts-tkey ts TKEY a", "ts-key ts KEY a", "ts-trange ts TRANGE - -", "ts-trange-desc ts TRANGE_DESC a d",
        "ts-range ts RANGE - -",
        "hs-hkey hs HKEY a", "hs-hkey-d hs HKEY d", "hs-hkey-missing hs HKEY zz", "hs-hkey-deleted hs HKEY c",
        "hs-hrange hs HRANGE - -", "hs-hrange-desc hs HRANGE_DESC a d", "hs-hrange-lower hs HRANGE b -",
        "hs-hrange-upper hs HRANGE - b", "hs-hrange-inverted hs HRANGE d a", "hs-key hs KEY a", "hs-tkey hs TKEY a",
        "hs-range hs RANGE - -", "hs-trange hs TRANGE - -", "hs-hkey-p1 hs HKEY d p=1",
        f"hs-bound-behind hs HKEY a bound=0:{last[0] + 100}", "err-hkey-on-ts ts HKEY a", "err-hkey-on-kv kv HKEY a",
        "err-hrange-on-ts ts HRANGE - -", "err-hrange-on-kv kv HRANGE - -", "err-hkey-on-win win HKEY a",
        "err-hkey-on-ver ver HKEY a", "err-hrange-on-ver ver HRANGE - -", f"err-wkey-on-hs hs WKEY a {t} {t}",
        "err-vkey-on-hs hs VKEY a",
        f"win-key win WKEY a {t} {t + 30_000}", f"win-key-part win WKEY a {t + 10_000} {t + 20_000}",
        f"win-range win WRANGE {t} {t + 30_000}", f"win-range-narrow win WRANGE {t + 10_000} {t + 10_000}",
        "ver-latest ver VKEY a", f"ver-asof ver VKEY a {t + 12_500}", f"ver-asof-before ver VKEY a {t - 1}",
        "ver-deleted ver VKEY c", f"ver-deleted-asof ver VKEY c {t + 2500}",
        "ver-multi ver MVKEY a - - ANY", "ver-multi-asc ver MVKEY a - - ASC",
        f"ver-multi-window ver MVKEY a {t + 5000} {t + 13_000} DESC", f"ver-multi-from ver MVKEY a {t + 12_000} - ASC",
        "ver-multi-deleted ver MVKEY c - - ANY", "ver-multi-b ver MVKEY b - - ANY",
        "err-key-on-win win KEY a", "err-tkey-on-kv kv TKEY a", "err-vkey-on-kv kv VKEY a", "err-key-on-ver ver KEY a",
        "err-wrange-key-on-win win WRANGE_KEY a", "err-range-on-ver ver RANGE - -", f"err-wkey-on-ts ts WKEY a {t} {t}",
        "err-mvkey-on-ts ts MVKEY a - - ANY", "err-trange-on-kv kv TRANGE - -", "err-tkey-on-ver ver TKEY a",
        f"err-wkey-on-ver ver WKEY a {t} {t}", "err-trange-on-ver ver TRANGE - -",
        f"err-wrange-on-kv kv WRANGE {t} {t}",
        "part-0 kv KEY a p=0", "part-missing kv KEY a p=0,5", "part-1 kv RANGE - - p=1",
        f"bound-ok kv KEY a bound=0:{last[0]}", f"bound-behind kv KEY a bound=0:{last[0] + 100}",
        f"bound-kv-p1 kv RANGE - - bound=0:{last[0]},1:{last[1]}", f"bound-ver-p1 ver VKEY d bound=1:{last[1]}",
        f"bound-unknown-type win KEY a bound=0:{last[0] + 100}",
        f"bound-wrange-key win WRANGE_KEY a bound=0:{last[0] + 100}",
        f"bound-versioned-key ver KEY a bound=0:{last[0] + 100}",
        f"bound-all-behind ver MVKEY a - - ANY bound=0:{last[0] + 1},1:{last[1] + 1}",
        "active kv RANGE - - active", f"active-bound ts TKEY e active bound=1:{last[1] + 5}",
        f"hw-hwkey hw HWKEY a {t} {t + 30_000}", f"hw-hwkey-part hw HWKEY a {t + 10_000} {t + 20_000}",
        f"hw-hwkey-d hw HWKEY d {t} {t + 30_000}", f"hw-hwkey-p1 hw HWKEY d {t} {t + 30_000} p=1",
        f"hw-hwkey-missing hw HWKEY zz {t} {t + 30_000}", f"hw-hwkey-inverted hw HWKEY a {t + 30_000} {t}",
        f"hw-hwrange hw HWRANGE {t} {t + 30_000}", f"hw-hwrange-narrow hw HWRANGE {t + 10_000} {t + 10_000}",
        "hw-hwrange-key hw HWRANGE_KEY a", f"hw-wkey hw WKEY a {t} {t + 30_000}",
        f"hw-wrange hw WRANGE {t} {t + 30_000}", "hw-wrange-key hw WRANGE_KEY a", "hw-key hw KEY a",
        "hw-hkey hw HKEY a", "hw-hrange hw HRANGE - -", f"hw-bound-behind hw HWKEY a {t} {t} bound=0:{last[0] + 100}",
        f"err-hwkey-on-win win HWKEY a {t} {t + 30_000}", f"err-hwrange-on-win win HWRANGE {t} {t + 30_000}",
        f"err-hwkey-on-hs hs HWKEY a {t} {t}", f"err-hwrange-on-kv kv HWRANGE {t} {t}",
        f"err-hwkey-on-ver ver HWKEY a {t} {t}",
        "hss-wrange-key hss WRANGE_KEY a", "hss-hwrange-key hss HWRANGE_KEY a", f"hss-hwkey hss HWKEY a {t} {t}",
        f"hss-hwrange hss HWRANGE {t} {t + 30_000}", f"hss-wkey hss WKEY a {t} {t}", "hss-key hss KEY a",
        "hss-hkey hss HKEY a",
    ]
    return lines


class Writer(Processor):
    """Iqv2Check's processor: every record to kv, ts, hs (with the record's headers), win (10 s windows), ver, hw
    (a window store with headers) and hss (a session store with headers, the session [t - t % 10 s, t]);
    "DELETE" deletes from kv, ts, hs and ver; a value starting "ver-only" goes to ver alone."""

    def init(self, context: Any) -> None:
        self.kv = context.get_state_store("kv")
        self.ts = context.get_state_store("ts")
        self.hs = context.get_state_store("hs")
        self.win = context.get_state_store("win")
        self.ver = context.get_state_store("ver")
        self.hw = context.get_state_store("hw")
        self.hss = context.get_state_store("hss")

    def process(self, record: Record) -> None:
        k, v, t = record.key, record.value, record.timestamp
        if v == "DELETE":
            self.kv.delete(k)
            self.ts.delete(k)
            self.hs.delete(k)
            self.ver.delete(k, t)
            return
        if not v.startswith("ver-only"):
            self.kv.put(k, v)
            self.ts.put(k, ValueAndTimestamp(v, t))
            self.hs.put(k, ValueTimestampHeaders(v, t, record.headers))
            self.win.put(k, v, t - t % WINDOW_MS)
            self.hw.put(k, ValueTimestampHeaders(v, t, record.headers), t - t % WINDOW_MS)
            self.hss.put(Windowed(k, SessionWindow(t - t % WINDOW_MS, t)), AggregationWithHeaders(v, record.headers))
        self.ver.put(k, v, t)


def topology(topic: str) -> Topology:
    s = Serdes.String()
    top = Topology()
    top.add_source("src", topic, key_deserializer=s.deserializer, value_deserializer=s.deserializer)
    top.add_processor("writer", Writer, "src")
    top.add_state_store(Stores.key_value_store_builder(Stores.persistent_key_value_store("kv"), s, s), "writer")
    top.add_state_store(Stores.timestamped_key_value_store_builder(
        Stores.persistent_timestamped_key_value_store("ts"), s, s), "writer")
    top.add_state_store(Stores.timestamped_key_value_store_with_headers_builder(
        Stores.persistent_timestamped_key_value_store_with_headers("hs"), s, s), "writer")
    top.add_state_store(Stores.window_store_builder(
        Stores.persistent_window_store("win", timedelta(days=1), timedelta(milliseconds=WINDOW_MS), False), s, s),
        "writer")
    top.add_state_store(Stores.timestamped_window_store_with_headers_builder(
        Stores.persistent_timestamped_window_store_with_headers("hw", timedelta(days=1),
                                                                timedelta(milliseconds=WINDOW_MS)), s, s), "writer")
    top.add_state_store(Stores.session_store_with_headers_builder(
        Stores.persistent_session_store_with_headers("hss", timedelta(days=1)), s, s), "writer")
    top.add_state_store(Stores.versioned_key_value_store_builder(
        Stores.persistent_versioned_key_value_store("ver", timedelta(days=1)), s, s), "writer")
    return top


def _time(word: str) -> int | None:
    return None if word == "-" else int(word)


def _bounded(cls: Any, lo: str, hi: str, descending: bool) -> Any:
    low, high = (None if lo == "-" else lo), (None if hi == "-" else hi)
    if low is None and high is None:
        query = cls.with_no_bounds()
    elif low is None:
        query = cls.with_upper_bound(high)
    elif high is None:
        query = cls.with_lower_bound(low)
    else:
        query = cls.with_range(low, high)
    return query.with_descending_keys() if descending else query


def request(line: str, topic: str) -> tuple[str, StateQueryRequest]:
    """The request a query line stands for, and its label."""
    label, store, kind, *words = line.split()
    args = [w for w in words if not w.startswith(("p=", "bound=")) and w != "active"]
    query: Any
    if kind == "KEY":
        query = KeyQuery.with_key(args[0])
    elif kind == "TKEY":
        query = TimestampedKeyQuery.with_key(args[0])
    elif kind in ("RANGE", "RANGE_DESC"):
        query = _bounded(RangeQuery, args[0], args[1], kind.endswith("DESC"))
    elif kind in ("TRANGE", "TRANGE_DESC"):
        query = _bounded(TimestampedRangeQuery, args[0], args[1], kind.endswith("DESC"))
    elif kind == "HKEY":
        query = TimestampedKeyWithHeadersQuery.with_key(args[0])
    elif kind in ("HRANGE", "HRANGE_DESC"):
        query = _bounded(TimestampedRangeWithHeadersQuery, args[0], args[1], kind.endswith("DESC"))
    elif kind == "WKEY":
        query = WindowKeyQuery.with_key_and_window_start_range(args[0], int(args[1]), int(args[2]))
    elif kind == "WRANGE":
        query = WindowRangeQuery.with_window_start_range(int(args[0]), int(args[1]))
    elif kind == "WRANGE_KEY":
        query = WindowRangeQuery.with_key(args[0])
    elif kind == "HWKEY":
        query = TimestampedWindowKeyWithHeadersQuery.with_key_and_window_start_range(args[0], int(args[1]),
                                                                                     int(args[2]))
    elif kind == "HWRANGE":
        query = TimestampedWindowRangeWithHeadersQuery.with_window_start_range(int(args[0]), int(args[1]))
    elif kind == "HWRANGE_KEY":
        query = TimestampedWindowRangeWithHeadersQuery.with_key(args[0])
    elif kind == "VKEY":
        query = VersionedKeyQuery.with_key(args[0])
        if len(args) > 1:
            query = query.as_of(int(args[1]))
    elif kind == "MVKEY":
        query = MultiVersionedKeyQuery.with_key(args[0]).from_time(_time(args[1])).to_time(_time(args[2]))
        if args[3] == "ASC":
            query = query.with_ascending_timestamps()
        elif args[3] == "DESC":
            query = query.with_descending_timestamps()
    else:
        raise ValueError(kind)
    req = StateQueryRequest.in_store(store).with_query(query)
    for word in words:
        if word.startswith("p="):
            req = req.with_partitions(int(p) for p in word[2:].split(","))
        elif word.startswith("bound="):
            position = Position.empty_position()
            for pair in word[6:].split(","):
                partition, offset = pair.split(":")
                position.with_component(topic, int(partition), int(offset))
            req = req.with_position_bound(PositionBound.at(position))
        elif word == "active":
            req = req.require_active()
    return label, req


def _json_range(lo: str, hi: str, order: str) -> dict[str, Any]:
    return {"lower": None if lo == "-" else lo, "upper": None if hi == "-" else hi, "order": order}


_JSON_TYPES = {"KEY": "KeyQuery", "TKEY": "TimestampedKeyQuery", "HKEY": "TimestampedKeyWithHeadersQuery",
               "RANGE": "RangeQuery", "TRANGE": "TimestampedRangeQuery", "HRANGE": "TimestampedRangeWithHeadersQuery"}


def body(line: str, topic: str) -> tuple[str, str, dict[str, Any]]:
    """The label, store and JSON body of `POST /stores/{store}/query` a query line stands for."""
    label, store, kind, *words = line.split()
    args = [w for w in words if not w.startswith(("p=", "bound=")) and w != "active"]
    query: dict[str, Any]
    if kind in ("KEY", "TKEY", "HKEY"):
        query = {"type": _JSON_TYPES[kind], "key": args[0]}
    elif kind in ("RANGE", "RANGE_DESC", "TRANGE", "TRANGE_DESC", "HRANGE", "HRANGE_DESC"):
        query = {"type": _JSON_TYPES[kind.removesuffix("_DESC")],
                 **_json_range(args[0], args[1], "DESCENDING" if kind.endswith("DESC") else "ANY")}
    elif kind == "WKEY":
        query = {"type": "WindowKeyQuery", "key": args[0], "time_from": int(args[1]), "time_to": int(args[2])}
    elif kind == "WRANGE":
        query = {"type": "WindowRangeQuery", "time_from": int(args[0]), "time_to": int(args[1])}
    elif kind == "WRANGE_KEY":
        query = {"type": "WindowRangeQuery", "key": args[0]}
    elif kind == "HWKEY":
        query = {"type": "TimestampedWindowKeyWithHeadersQuery", "key": args[0], "time_from": int(args[1]),
                 "time_to": int(args[2])}
    elif kind == "HWRANGE":
        query = {"type": "TimestampedWindowRangeWithHeadersQuery", "time_from": int(args[0]), "time_to": int(args[1])}
    elif kind == "HWRANGE_KEY":
        query = {"type": "TimestampedWindowRangeWithHeadersQuery", "key": args[0]}
    elif kind == "VKEY":
        query = {"type": "VersionedKeyQuery", "key": args[0], "as_of": int(args[1]) if len(args) > 1 else None}
    elif kind == "MVKEY":
        query = {"type": "MultiVersionedKeyQuery", "key": args[0], "from_time": _time(args[1]),
                 "to_time": _time(args[2]), "order": {"ASC": "ASCENDING", "DESC": "DESCENDING"}.get(args[3], "ANY")}
    else:
        raise ValueError(kind)
    data: dict[str, Any] = {"query": query}
    for word in words:
        if word.startswith("p="):
            data["partitions"] = [int(p) for p in word[2:].split(",")]
        elif word.startswith("bound="):
            data["position_bound"] = {topic: dict(pair.split(":") for pair in word[6:].split(","))}
        elif word == "active":
            data["require_active"] = True
    return label, store, data


def from_http(label: str, status: int, answer: dict[str, Any]) -> dict[str, Any]:
    """An answer of `POST /stores/{store}/query` as Iqv2Check prints Java's."""
    if status == 400 and answer.get("unsupported"):
        return {"label": label, "exception": "UnsupportedOperationException"}
    assert status == 200, (label, status, answer)

    def result(r: dict[str, Any]) -> dict[str, Any]:
        if not r["ok"]:
            return {"ok": False, "reason": r["reason"], "position": r["position"]}
        found = r["result"]
        if isinstance(found, list):
            found = [[item["key"], item["value"]] if isinstance(item, dict) and set(item) == {"key", "value"} else item
                     for item in found]
        return {"ok": True, "result": found, "position": r["position"]}

    return {"label": label, "global": None if answer["global"] is None else result(answer["global"]),
            "partitions": {p: result(r) for p, r in answer["partitions"].items()}, "position": answer["position"]}


def jsonable(value: Any) -> Any:
    """A result as Iqv2Check prints it."""
    if value is None or isinstance(value, str | int):
        return value
    if isinstance(value, ValueAndTimestamp):
        return {"value": jsonable(value.value), "timestamp": value.timestamp}
    if isinstance(value, ReadOnlyRecord):
        return {"key": jsonable(value.key), "value": jsonable(value.value), "timestamp": value.timestamp,
                "headers": [[name, None if v is None else v.decode()] for name, v in value.headers]}
    if isinstance(value, Windowed):
        return {"key": jsonable(value.key), "start": value.window.start, "end": value.window.end}
    if isinstance(value, VersionedRecord):
        return {"value": jsonable(value.value), "timestamp": value.timestamp, "valid_to": value.valid_to}
    items = list(value)
    return [[jsonable(i.key), jsonable(i.value)] if isinstance(i, KeyValue) else jsonable(i) for i in items]


def _position(position: Position | None) -> Any:
    if position is None:
        return None
    return {topic: {str(p): o for p, o in sorted(position.get_partition_positions(topic).items())}
            for topic in sorted(position.get_topics())}


def _result(result: QueryResult) -> dict[str, Any]:
    if result.is_failure():
        return {"ok": False, "reason": result.get_failure_reason().name, "position": _position(result.get_position())}
    return {"ok": True, "result": jsonable(result.get_result()), "position": _position(result.get_position())}


def printed(label: str, result: StateQueryResult) -> dict[str, Any]:
    """A `StateQueryResult` as Iqv2Check prints Java's."""
    return {"label": label, "global": None if result.global_result is None else _result(result.global_result),
            "partitions": {str(p): _result(r) for p, r in sorted(result.partition_results.items())},
            "position": _position(result.get_position())}
