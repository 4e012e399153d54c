"""Interactive queries on the real broker: two instances, every key answered by its owner, the views'
value shapes, window fetches, metadata from `application.server`, and the errors Kafka Streams gives."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import pytest

from streamlet import (
    HostInfo,
    InvalidStateStoreError,
    InvalidStateStorePartitionError,
    KafkaStreams,
    QueryableStoreTypes,
    Serdes,
    StateStoreMigratedError,
    StateStoreNotAvailableError,
    StoreQueryParameters,
    StreamsNotStartedError,
    UnknownStateStoreError,
    ValueAndTimestamp,
    Windowed,
)
from streamlet.http import StreamsApp
from tests.helpers.kafka import create_topics
from tests.queries.helpers import BASE_TS, eventually, expected_counts, produce_counts
from tests.queries.query_app import WINDOW_MS, topology

pytestmark = [pytest.mark.anyio, pytest.mark.broker]

KV = QueryableStoreTypes.key_value_store()
TS_KV = QueryableStoreTypes.timestamped_key_value_store()
WIN = QueryableStoreTypes.window_store()
TS_WIN = QueryableStoreTypes.timestamped_window_store()


def _settings(bootstrap: str, app_id: str, state_dir: Path, port: int) -> dict[str, Any]:
    return {"bootstrap.servers": bootstrap, "application.id": app_id, "state.dir": str(state_dir),
            "commit.interval.ms": 100, "statestore.cache.max.bytes": 0, "num.standby.replicas": 1,
            "application.server": f"127.0.0.1:{port}", "session.timeout.ms": 10000,
            "heartbeat.interval.ms": 1000}


def _owner(apps: list[KafkaStreams], key: str) -> KafkaStreams:
    meta = apps[0].query_metadata_for_key("counts", key, Serdes.String())
    return next(a for a in apps if a.application_server == meta.active_host)


async def test_two_instances_answer_every_key_from_its_owner(kafka_broker: Any, tmp_path: Path,
                                                            monkeypatch: Any) -> None:
    bootstrap = kafka_broker.bootstrap_servers
    sfx = uuid.uuid4().hex[:8]
    topic = f"iq-in-{sfx}"
    await create_topics(bootstrap, {topic: 4})
    monkeypatch.setenv("QUERY_INPUT", topic)
    apps = [KafkaStreams(topology(), _settings(bootstrap, f"iq-{sfx}", tmp_path / f"s{i}", 7100 + i)) for i in range(2)]
    with pytest.raises(StreamsNotStartedError):
        apps[0].store(StoreQueryParameters.from_name_and_type("counts", KV))
    counts = expected_counts(40)
    try:
        for app in apps:
            await app.start()
        await eventually(lambda: all(a.state.name == "RUNNING" for a in apps)
                         and len(apps[0].metadata_for_all_streams_clients()) == 2)
        await produce_counts(bootstrap, topic, counts)

        def all_counts_visible_at_owners() -> bool:
            for key, n in counts.items():
                assert _owner(apps, key).store(StoreQueryParameters.from_name_and_type("counts", KV)).get(key) == n
            return True

        await eventually(all_counts_visible_at_owners)

        # Metadata: both instances, every partition of the input once as active and once as standby.
        clients = apps[1].metadata_for_all_streams_clients()
        assert {c.host_info for c in clients} == {HostInfo("127.0.0.1", 7100), HostInfo("127.0.0.1", 7101)}
        assert sorted(p for c in clients for p in c.topic_partitions) == [(topic, p) for p in range(4)]
        assert sorted(p for c in clients for p in c.standby_topic_partitions) == [(topic, p) for p in range(4)]
        assert all("counts" in c.state_store_names for c in apps[0].streams_metadata_for_store("counts"))
        assert apps[0].streams_metadata_for_store("no-such-store") == []

        for key, n in counts.items():
            meta = apps[0].query_metadata_for_key("counts", key, Serdes.String())
            assert meta == apps[1].query_metadata_for_key("counts", key, Serdes.String().serializer)
            owner = _owner(apps, key)
            other = apps[1] if owner is apps[0] else apps[0]
            assert meta.standby_hosts == {other.application_server}
            by_partition = StoreQueryParameters.from_name_and_type("counts", KV).with_partition(meta.partition)
            assert owner.store(by_partition).get(key) == n  # the key's partition is the sink's partition
            stamped = owner.store(StoreQueryParameters.from_name_and_type("counts", TS_KV)).get(key)
            assert isinstance(stamped, ValueAndTimestamp) and stamped.value == n
            assert stamped.timestamp == BASE_TS + n - 1
            # The other instance has no active copy; its standby answers only when stale stores are allowed.
            assert other.store(StoreQueryParameters.from_name_and_type("counts", KV)).get(key) is None
            with pytest.raises(InvalidStateStorePartitionError):
                other.store(by_partition).get(key)
            assert other.store(by_partition.enable_stale_stores()).get(key) in (None, *range(1, n + 1))
            # Windows: one window per key, starting at BASE_TS.
            win = owner.store(StoreQueryParameters.from_name_and_type("windowed-counts", WIN))
            assert win.fetch(key, BASE_TS) == n
            assert list(win.fetch(key, BASE_TS - WINDOW_MS, BASE_TS + WINDOW_MS)) == [(BASE_TS, n)]
            assert list(win.backward_fetch(key, 0, BASE_TS)) == [(BASE_TS, n)]
            ts_win = owner.store(StoreQueryParameters.from_name_and_type("windowed-counts", TS_WIN))
            assert ts_win.fetch(key, BASE_TS).value == n

        # Scans over both instances' active copies give every key once, in order.
        merged: dict[str, int] = {}
        for app in apps:
            view = app.store(StoreQueryParameters.from_name_and_type("counts", KV))
            with view.all() as entries:
                keys = [kv.key for kv in entries]
            assert keys == sorted(keys)
            assert [kv.key for kv in view.reverse_all()] == keys[::-1]
            merged.update(dict(view.all()))
            some = [k for k in keys if "key-010" <= k <= "key-019"]
            assert [kv.key for kv in view.range("key-010", "key-019")] == some
            assert [kv.key for kv in view.reverse_range("key-010", "key-019")] == some[::-1]
            assert [kv.key for kv in view.prefix_scan("key-01", Serdes.String().serializer)] == some
            assert view.approximate_num_entries() >= 0
            windows = app.store(StoreQueryParameters.from_name_and_type("windowed-counts", WIN))
            fetched = list(windows.fetch("key-000", "key-039", BASE_TS, BASE_TS))
            assert [kv.key.key for kv in fetched] == keys
            assert all(isinstance(kv.key, Windowed) and kv.key.window.start == BASE_TS for kv in fetched)
            assert list(windows.fetch_all(BASE_TS, BASE_TS)) == fetched == list(windows.all())
            assert list(windows.backward_all()) == fetched[::-1]
        assert merged == dict(counts)

        # The old bare-name form still answers values as stored.
        assert any(isinstance(a.store("counts").get("key-000"), ValueAndTimestamp) for a in apps)

        with pytest.raises(UnknownStateStoreError):
            apps[0].store(StoreQueryParameters.from_name_and_type("nope", KV))
        with pytest.raises(InvalidStateStoreError, match="does not accept"):
            apps[0].store(StoreQueryParameters.from_name_and_type("counts", WIN)).fetch("key-000", BASE_TS)
        with pytest.raises(InvalidStateStoreError, match="does not accept"):
            apps[0].store(StoreQueryParameters.from_name_and_type("windowed-counts", KV)).get("key-000")
    finally:
        for app in apps:
            await app.close()
    with pytest.raises(StateStoreNotAvailableError):
        apps[0].store(StoreQueryParameters.from_name_and_type("counts", KV))


async def test_during_a_rebalance_stale_queries_read_the_standby_and_plain_ones_say_migrating(
        kafka_broker: Any, tmp_path: Path, monkeypatch: Any) -> None:
    """A third instance joins: at the moment the first one goes from RUNNING to REBALANCING (its state
    listener runs synchronously there), a plain query fails with StateStoreMigratedError, and a stale
    query answers every key the second instance owns from the first instance's standby copy."""
    bootstrap = kafka_broker.bootstrap_servers
    sfx = uuid.uuid4().hex[:8]
    topic = f"iq-rb-{sfx}"
    await create_topics(bootstrap, {topic: 4})
    monkeypatch.setenv("QUERY_INPUT", topic)
    apps = [KafkaStreams(topology(), _settings(bootstrap, f"iq-rb-{sfx}", tmp_path / f"s{i}", 7200 + i))
            for i in range(3)]
    counts = expected_counts(30, seed=3)
    seen: dict[str, Any] = {}
    armed = False

    def on_change(new: Any, old: Any) -> None:
        if not armed or seen or new.name != "REBALANCING" or old.name != "RUNNING":
            return
        plain = apps[0].store(StoreQueryParameters.from_name_and_type("counts", KV))
        stale = apps[0].store(StoreQueryParameters.from_name_and_type("counts", KV).enable_stale_stores())
        try:
            plain.get("key-000")
        except StateStoreMigratedError as exc:
            seen["plain"] = exc
        seen["stale"] = {key: stale.get(key) for key in counts}
        http = StreamsApp(apps[0])  # the same answers as HTTP gives them
        seen["http_plain"] = http.local_key("counts", "key-000", "keys", {})
        seen["http_stale"] = {key: http.local_key("counts", key, "keys", {"stale": "true"}) for key in counts}

    apps[0].set_state_listener(on_change)
    try:
        for app in apps[:2]:
            await app.start()
        await eventually(lambda: all(a.state.name == "RUNNING" for a in apps[:2]))
        await produce_counts(bootstrap, topic, counts)
        stale_view = apps[0].store(StoreQueryParameters.from_name_and_type("counts", KV).enable_stale_stores())
        # Every key is in the first instance: actively or, for the second instance's keys, in its standby.
        await eventually(lambda: {k: stale_view.get(k) for k in counts} == dict(counts))
        owned_by_second = [k for k in counts if _owner(apps[:2], k) is apps[1]]
        assert owned_by_second
        armed = True
        await apps[2].start()
        await eventually(lambda: bool(seen))
    finally:
        for app in apps:
            await app.close()
    assert "migrating" in str(seen["plain"])
    assert {k: seen["stale"][k] for k in owned_by_second} == {k: counts[k] for k in owned_by_second}
    status, body = seen["http_plain"]
    assert status == 503 and "migrating" in body["error"] and body["retriable"]
    for key in owned_by_second:
        status, body = seen["http_stale"][key]
        assert status == 200 and body["value"] == counts[key] and body["stale"], body
