"""`StreamsApp`: the ASGI app of one `KafkaStreams` instance — interactive queries, health, metrics, page.

Query routes (GET, JSON answers):
    /stores/{store}/keys/{key}                 one key, from whichever instance owns it
    /stores/{store}/range?from=A&to=B          keys in [A, B] (either bound optional), from every instance
    /stores/{store}/all                        every key, from every instance
    /stores/{store}/windows/{key}?from=T&to=U  the windows of one key starting in [T, U] (epoch ms)
    /stores/{store}/windows?from=T&to=U        the windows of every key, from every instance
    POST /stores/{store}/query                 an IQv2 request as JSON (streamlet.http.iqv2_json), every
                                               instance holding the store answering its partitions
    /metadata                                  every instance: endpoint, stores, partitions (active, standby)
    /health/live, /health/ready                200 while the client runs / once it is RUNNING, else 503
    /metrics                                   Kafka Streams' metrics, Prometheus text format
    /  and /status.json                        the live page and its data (streamlet.http.page)
Key-value and session stores answer /keys, /range and /all; window stores /windows; versioned stores
/keys only: the latest version, or with `as_of=T` the version valid at T (epoch ms), as
`{"value", "timestamp", "valid_to"}` (`valid_to` null for the latest, as Kafka Streams' IQv2
`VersionedKeyQuery` answers). A session store's
key answers `"sessions": [{"start", "end", "value"}]` (with `from=T&to=U`: the sessions that end at or
after T and start at or before U, Kafka Streams' `find_sessions`); its scans, like window scans, answer
items `{"key": {"key", "start", "end"}, "value"}`. Every scan item names its `partition`.

Options: `stale=true` also reads standby and restoring copies (Kafka Streams' `enable_stale_stores()`),
`partition=P` reads only partition P (`with_partition(P)`), `timestamped=true` answers
`{"value", "timestamp"}` (key-value and window stores), `local=true` answers from this instance only
(what instances send each other when they forward). A scan reads each partition once, from an active
copy when one answers, else (stale) from a standby or restoring one.

An instance answers a key itself when it owns it and forwards the request to the owner's
`application.server` otherwise (found with `query_metadata_for_key`); scans ask every instance that
holds the store. Without `application.server` there is nothing to forward to: each instance answers
from its own copies. Errors follow Kafka Streams' exceptions: a store that is migrating is 503 with
the reason (retry, or ask with `stale=true`), an unknown store 404, bad parameters (or a key the
store's key serde cannot serialize) 400, an owner that cannot be reached 502. Any other failure in any
route is 500 with `{"error": ...}` and the traceback in the log: a request never goes unanswered.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Any
from urllib.parse import parse_qs, quote, urlencode

import orjson

from streamlet.errors import (
    InvalidStateStoreError,
    InvalidStateStorePartitionError,
    SerializationError,
    StateStoreMigratedError,
    StateStoreNotAvailableError,
    StreamsError,
    StreamsNotStartedError,
    UnknownStateStoreError,
)
from streamlet.http.client import ForwardingError, get_json, post_json
from streamlet.http.iqv2_json import merge_answers, parse_request, state_result_json
from streamlet.http.json_values import dumps, jsonable, key_serde, parse_key
from streamlet.http.page.live_page import live_page
from streamlet.http.page.status import status
from streamlet.http.server import Receive, Scope, Send, respond
from streamlet.metrics.prometheus import CONTENT_TYPE, render
from streamlet.queries.metadata import HostInfo
from streamlet.queries.parameters import QueryableStoreType, StoreQueryParameters, native_store_type
from streamlet.queries.session_view import ReadOnlySessionView
from streamlet.windowed import MAX_TIME

log = logging.getLogger(__name__)

Answer = tuple[int, Any]
Route = Callable[[list[str], dict[str, str]], Awaitable[tuple[int, bytes, str]]]


class _BadRequest(Exception):
    """A malformed path or parameter: answered 400 with the message."""


def _flag(query: dict[str, str], name: str) -> bool:
    return query.get(name, "").lower() in ("1", "true", "yes")


def _error_answer(exc: Exception) -> Answer:
    """Kafka Streams' exceptions as HTTP statuses (see the module docstring); anything else is 500,
    its traceback logged."""
    if isinstance(exc, UnknownStateStoreError):
        return 404, {"error": str(exc)}
    if isinstance(exc, StateStoreMigratedError | StateStoreNotAvailableError | StreamsNotStartedError
                  | InvalidStateStorePartitionError):
        return 503, {"error": str(exc), "retriable": True}
    if isinstance(exc, InvalidStateStoreError | _BadRequest | ValueError | SerializationError):
        return 400, {"error": str(exc)}
    if isinstance(exc, NotImplementedError):  # a query the store does not support (Java's UnsupportedOperation)
        return 400, {"error": str(exc), "unsupported": True}
    if isinstance(exc, ForwardingError):
        return 502, {"error": str(exc)}
    log.error("HTTP query failed", exc_info=exc)
    return 500, {"error": f"{type(exc).__name__}: {exc}"}


class StreamsApp:
    """An ASGI application over one `KafkaStreams` (see the module docstring for its routes).

    Mount it in any ASGI server or framework (`app.mount("/streams", StreamsApp(streams))` in
    Starlette/FastAPI), or run it with `streamlet.http.serve`. `extra_routes` maps a first path
    segment ("metrics", "") to a handler, which is how the metrics and the live page join in."""

    def __init__(self, streams: Any, extra_routes: dict[str, Route] | None = None) -> None:
        self.streams = streams
        self._routes: dict[str, Route] = {"stores": self._stores_route, "metadata": self._metadata_route,
                                          "health": self._health_route, "metrics": self._metrics_route,
                                          "": self._page_route, "status.json": self._status_route,
                                          **(extra_routes or {})}

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":  # nothing to set up: accept start-up and shutdown
            while (await receive())["type"] != "lifespan.shutdown":
                await send({"type": "lifespan.startup.complete"})
            await send({"type": "lifespan.shutdown.complete"})
            return
        if scope["type"] != "http":
            return
        if scope["method"] == "POST":
            status, body, content_type = await self._post(scope, receive)
        elif scope["method"] not in ("GET", "HEAD"):
            status, body, content_type = 405, dumps({"error": "only GET, and POST to /stores/{store}/query"}), \
                "application/json"
        else:
            # Mounted under a prefix: ASGI servers and frameworks differ on whether `path` still holds it.
            path, root = scope["path"], scope.get("root_path", "")
            if root and path.startswith(root):
                path = path[len(root):]
            parts = [p for p in path.split("/") if p]
            query = {k: v[-1] for k, v in parse_qs(scope.get("query_string", b"").decode("latin-1")).items()}
            route = self._routes.get(parts[0] if parts else "")
            if route is None:
                status, body, content_type = 404, dumps({"error": f"no route {path}"}), "application/json"
            else:
                try:
                    status, body, content_type = await route(parts[1:], query)
                except Exception as exc:  # any route: an answer, never a dropped connection
                    log.error("HTTP route %s failed", path, exc_info=exc)
                    status, body = 500, dumps({"error": f"{type(exc).__name__}: {exc}"})
                    content_type = "application/json"
        await respond(send, status, content_type, body)

    async def _post(self, scope: Scope, receive: Receive) -> tuple[int, bytes, str]:
        """`POST /stores/{store}/query`: an IQv2 request in the body (the only POST route)."""
        path, root = scope["path"], scope.get("root_path", "")
        if root and path.startswith(root):
            path = path[len(root):]
        parts = [p for p in path.split("/") if p]
        if len(parts) != 3 or parts[0] != "stores" or parts[2] != "query":
            return 405, dumps({"error": "POST goes to /stores/{store}/query only"}), "application/json"
        chunks: list[bytes] = []
        while True:
            message = await receive()
            chunks.append(message.get("body", b""))
            if message["type"] != "http.request" or not message.get("more_body"):
                break
        try:
            status, data = await self._iqv2(parts[1], b"".join(chunks))
        except Exception as exc:
            status, data = _error_answer(exc)
        return status, dumps(data), "application/json"

    async def _iqv2(self, store: str, raw: bytes) -> Answer:
        """An IQv2 request: this instance's answer merged with every other instance's that holds the store
        (each asked with `"local": true`), or this instance's alone without `application.server`."""
        streams = self.streams
        if store not in streams.topology.store_builders:
            raise UnknownStateStoreError(f"no state store named {store!r} in the topology")
        try:
            body = orjson.loads(raw)
        except orjson.JSONDecodeError as exc:
            raise _BadRequest(f"the body is not JSON: {exc}") from exc
        serde = key_serde(streams.topology, streams.config, store)
        request = parse_request(store, body, lambda key: parse_key(key, serde) if isinstance(key, str) else key)
        me = streams.application_server
        local = state_result_json(store, streams.query(request))
        try:  # each partition's role here, so that merging prefers the active copy's answer
            roles = dict(streams.store(StoreQueryParameters.from_name_and_type(
                store, native_store_type(streams.topology.store_builders[store])).enable_stale_stores())
                .local_partitions())
        except InvalidStateStoreError:
            roles = {}
        for partition, answer in local["partitions"].items():
            answer["role"] = roles.get(int(partition))
        if me is None or (isinstance(body, dict) and body.get("local")):
            return 200, local
        hosts = sorted({m.host_info for m in streams.streams_metadata_for_store(store)} - {me})
        answers = [local]
        for host in hosts:
            status, data = await post_json(host.host, host.port, f"/stores/{quote(store, safe='')}/query",
                                           {**body, "local": True})
            if status != 200:
                return status, data
            answers.append(data)
        return 200, merge_answers(answers)

    # -- routes -------------------------------------------------------------------------------------
    async def _health_route(self, parts: list[str], _query: dict[str, str]) -> tuple[int, bytes, str]:
        state = self.streams.state.name
        if parts == ["live"]:
            ok = state in ("CREATED", "REBALANCING", "RUNNING")
        elif parts == ["ready"]:
            ok = state == "RUNNING"
        else:
            return 404, dumps({"error": "health/live or health/ready"}), "application/json"
        return (200 if ok else 503), dumps({"state": state}), "application/json"

    async def _page_route(self, parts: list[str], _query: dict[str, str]) -> tuple[int, bytes, str]:
        if parts:
            return 404, dumps({"error": "no such page"}), "application/json"
        return 200, live_page(self.streams).encode(), "text/html; charset=utf-8"

    async def _status_route(self, _parts: list[str], _query: dict[str, str]) -> tuple[int, bytes, str]:
        return 200, dumps(status(self.streams)), "application/json"

    async def _metrics_route(self, _parts: list[str], _query: dict[str, str]) -> tuple[int, bytes, str]:
        return 200, render(self.streams.streams_metrics.metrics()).encode(), CONTENT_TYPE

    async def _metadata_route(self, _parts: list[str], _query: dict[str, str]) -> tuple[int, bytes, str]:
        try:
            clients = self.streams.metadata_for_all_streams_clients()
        except StreamsError as exc:
            status, data = _error_answer(exc)
            return status, dumps(data), "application/json"
        return 200, dumps([{"host_info": str(c.host_info), "state_store_names": sorted(c.state_store_names),
                            "topic_partitions": sorted(c.topic_partitions),
                            "standby_state_store_names": sorted(c.standby_state_store_names),
                            "standby_topic_partitions": sorted(c.standby_topic_partitions)} for c in clients]), \
            "application/json"

    async def _stores_route(self, parts: list[str], query: dict[str, str]) -> tuple[int, bytes, str]:
        try:
            status, data = await self._store_query(parts, query)
        except Exception as exc:
            status, data = _error_answer(exc)
        return status, dumps(data), "application/json"

    async def _store_query(self, parts: list[str], query: dict[str, str]) -> Answer:
        if len(parts) < 2:
            raise _BadRequest("expected /stores/{store}/keys/{key}, /range, /all or /windows")
        store, what, rest = parts[0], parts[1], parts[2:]
        if store not in self.streams.topology.store_builders:
            raise UnknownStateStoreError(f"no state store named {store!r} in the topology")
        if what in ("keys", "windows", "range", "all"):
            params = self._params(store, query, want_window=what == "windows")  # a route for another kind: 400
            if params.queryable_store_type.kind == "versioned" and what != "keys":
                raise _BadRequest(f"store {store!r} is a versioned store: it answers /keys/{{key}} (with "
                                  f"as_of=T) only, as Kafka Streams has no range queries over versioned stores")
        if what == "keys" and len(rest) == 1:
            return await self._key(store, rest[0], query, "keys")
        if what == "windows" and len(rest) == 1:
            return await self._key(store, rest[0], query, "windows")
        if what in ("range", "all", "windows") and not rest:
            return await self._scan(store, what, query)
        raise _BadRequest(f"unknown store query /{'/'.join(parts)}")

    # -- one key: the owner answers -----------------------------------------------------------------
    async def _key(self, store: str, key_text: str, query: dict[str, str], what: str) -> Answer:
        streams = self.streams
        stale = _flag(query, "stale")
        key = parse_key(key_text, key_serde(streams.topology, streams.config, store))
        meta = streams.query_metadata_for_key(store, key, key_serde(streams.topology, streams.config, store))
        me = streams.application_server
        holders = {meta.active_host} | (set(meta.standby_hosts) if stale else set())
        if _flag(query, "local") or meta.partition < 0 or me is None or me in holders:
            return self.local_key(store, key, what, query, meta.partition)
        target = meta.active_host if meta.active_host != HostInfo.unavailable() else next(iter(holders - {me}), None)
        if target is None or target == HostInfo.unavailable():
            raise StateStoreMigratedError(f"no instance hosts the partition of key {key_text!r} of {store!r} now")
        path = f"/stores/{quote(store, safe='')}/{what}/{quote(key_text, safe='')}"
        return await get_json(target.host, target.port, f"{path}?{urlencode({**query, 'local': 'true'})}")

    def local_key(self, store: str, key: Any, what: str, query: dict[str, str], partition: int = -1) -> Answer:
        """Answer one key from this instance's copies (synchronous: one consistent read), errors
        included as their HTTP answer."""
        try:
            return self._local_key(store, key, what, query, partition)
        except Exception as exc:
            return _error_answer(exc)

    def _local_key(self, store: str, key: Any, what: str, query: dict[str, str], partition: int) -> Answer:
        params = self._params(store, query, want_window=what == "windows")
        if partition >= 0 and params.partition is None:  # `partition=P` in the query wins
            params = params.with_partition(partition)
        view = self.streams.store(params)
        served = {"store": store, "key": jsonable(key),
                  "partition": params.partition if params.partition is not None and params.partition >= 0 else None,
                  "served_by": str(self.streams.application_server or "") or None, "stale": params.stale_stores}
        if what == "windows":
            low, high = _time(query, "from", 0), _time(query, "to", MAX_TIME)
            with view.fetch(key, low, high) as found:
                windows = [{"start": kv.key, "value": jsonable(kv.value)} for kv in found]
            return 200, {**served, "windows": windows}
        if params.queryable_store_type.kind == "versioned":
            as_of = None if "as_of" not in query else _time(query, "as_of", 0)
            version = view.get(key, as_of)
            if version is None:
                return 404, {**served, "as_of": as_of, "error": "no version" if as_of is not None else "no such key"}
            return 200, {**served, "as_of": as_of, "value": jsonable(version.value), "timestamp": version.timestamp,
                         "valid_to": version.valid_to}
        if params.queryable_store_type.kind == "session":
            found = view.find_sessions(key, _time(query, "from", 0), _time(query, "to", MAX_TIME))
            with found:
                sessions = [{"start": kv.key.window.start, "end": kv.key.window.end, "value": jsonable(kv.value)}
                            for kv in found]
            return 200, {**served, "sessions": sessions}
        value = view.get(key)
        if value is None:
            return 404, {**served, "error": "no such key"}
        return 200, {**served, "value": jsonable(value)}

    # -- scans: every holder answers its part, each partition read once -----------------------------
    async def _scan(self, store: str, what: str, query: dict[str, str]) -> Answer:
        if _flag(query, "local"):
            return 200, self.local_scan_part(store, what, query)
        streams = self.streams
        me = streams.application_server
        stale = _flag(query, "stale")
        # Without application.server: this instance alone. Otherwise every instance holding a copy that
        # may answer (standbys too when stale), or this one to say why there is none.
        holders = [] if me is None else sorted(
            {m.host_info for m in streams.streams_metadata_for_store(store)
             if store in m.state_store_names or (stale and store in m.standby_state_store_names)})
        hosts: list[HostInfo | None] = list(holders) or [me]
        path = f"/stores/{quote(store, safe='')}/{what}?{urlencode({**query, 'local': 'true'})}"
        parts: list[dict[str, Any]] = []
        for host in hosts:
            if host is None or host == me:
                parts.append(self.local_scan_part(store, what, query))
                continue
            status, data = await get_json(host.host, host.port, path)
            if status != 200:
                return status, data
            parts.append(data)
        items = one_copy_per_partition(parts)
        wanted = self._params(store, query, want_window=what == "windows").partition
        if wanted is not None and not any(c["partition"] == wanted for part in parts for c in part["copies"]):
            raise InvalidStateStorePartitionError(
                f"no instance holds partition {wanted} of store {store!r}"
                + ("" if stale else " as an active copy (stale=true also reads standby copies)"))
        if native_store_type(self.streams.topology.store_builders[store]).kind == "key_value":
            items.sort(key=lambda item: str(item["key"]))
        else:
            items.sort(key=lambda item: (str(item["key"]["key"]), item["key"]["start"]))
        return 200, {"store": store, "items": items}

    def local_scan_part(self, store: str, what: str, query: dict[str, str]) -> dict[str, Any]:
        """This instance's part of a scan: `items` (each with its `partition`) and `copies`, the
        partitions read and their copies' roles. A partition asked for (`partition=P`) that this
        instance lacks is no error here: another instance may hold it."""
        params = self._params(store, query, want_window=what == "windows")
        try:
            copies = self.streams.store(params).local_partitions()
        except InvalidStateStorePartitionError:
            copies = []
        items: list[dict[str, Any]] = []
        for partition, _role in copies:
            view = self.streams.store(params.with_partition(partition))
            items += [{**item, "partition": partition} for item in self._scan_one(view, store, what, query)]
        return {"store": store, "items": items, "copies": [{"partition": p, "role": r} for p, r in copies]}

    def _scan_one(self, view: Any, store: str, what: str, query: dict[str, str]) -> list[dict[str, Any]]:
        """The scan of one copy (`view` reads one partition)."""
        if what == "windows":
            found = view.fetch_all(_time(query, "from", 0), _time(query, "to", MAX_TIME))
        elif what == "range":
            serde = key_serde(self.streams.topology, self.streams.config, store)
            low, high = query.get("from"), query.get("to")
            bounds = (None if low is None else parse_key(low, serde), None if high is None else parse_key(high, serde))
            found = view.fetch(*bounds) if isinstance(view, ReadOnlySessionView) else view.range(*bounds)
        else:
            found = view.fetch(None, None) if isinstance(view, ReadOnlySessionView) else view.all()
        with found:
            return [{"key": jsonable(kv.key), "value": jsonable(kv.value)} for kv in found]

    def _params(self, store: str, query: dict[str, str], want_window: bool) -> StoreQueryParameters:
        own = native_store_type(self.streams.topology.store_builders[store])
        if (own.kind == "window") != want_window:
            raise _BadRequest(f"store {store!r} is a {own.kind} store: use "
                              f"{'/windows' if own.kind == 'window' else '/keys, /range or /all'}")
        timestamped = _flag(query, "timestamped") and own.kind != "versioned"  # a version has its timestamp
        if timestamped and own.kind == "session":
            raise _BadRequest(f"store {store!r} is a session store: its sessions keep no timestamp "
                              "(leave out timestamped=true)")
        params = StoreQueryParameters.from_name_and_type(store, QueryableStoreType(own.kind, timestamped))
        partition = query.get("partition")
        if partition is not None:
            if not partition.isdigit():
                raise _BadRequest(f"partition must be a partition number, got {partition!r}")
            params = params.with_partition(int(partition))
        return params.enable_stale_stores() if _flag(query, "stale") else params


def one_copy_per_partition(parts: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The items of scan parts (`local_scan_part` answers of several instances), each partition taken
    from one instance only: the one whose copy is active, else restoring, else standby (several
    instances hold a partition when stale copies are read, and every instance a global store)."""
    rank = {"active": 0, "restoring": 1, "standby": 2}
    best: dict[int, tuple[int, int]] = {}
    for index, part in enumerate(parts):
        for copy in part["copies"]:
            choice = (rank.get(copy["role"], 3), index)
            best[copy["partition"]] = min(best.get(copy["partition"], choice), choice)
    return [item for index, part in enumerate(parts) for item in part["items"]
            if best[item["partition"]][1] == index]


def _time(query: dict[str, str], name: str, default: int) -> int:
    text = query.get(name)
    if text is None:
        return default
    if not text.lstrip("-").isdigit():
        raise _BadRequest(f"{name} must be epoch milliseconds, got {text!r}")
    return int(text)
