"""Interactive queries of a session store on the real broker: two instances, every key's sessions
from its owner (`fetch`, `find_sessions`, `fetch_session`, key ranges, backwards), as Kafka Streams'
`ReadOnlySessionStore` answers them."""

from __future__ import annotations

import uuid
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from streamlet import (
    Consumed,
    Grouped,
    InvalidStateStoreError,
    KafkaStreams,
    Materialized,
    QueryableStoreTypes,
    Serdes,
    SessionWindows,
    StoreQueryParameters,
    StreamsBuilder,
    Topology,
)
from tests.helpers.kafka import create_topics
from tests.queries.helpers import BASE_TS, eventually, expected_counts, produce_counts
from tests.queries.query_app import WINDOW_MS

pytestmark = [pytest.mark.anyio, pytest.mark.broker]

SESSIONS = StoreQueryParameters.from_name_and_type("sessions", QueryableStoreTypes.session_store())


def session_topology(topic: str) -> Topology:
    """Per-key counts per session of activity (10 s inactivity gap) in the session store `sessions`, which
    keeps sessions for 10 minutes (by default a session store keeps them only for the gap plus grace)."""
    builder = StreamsBuilder()
    (builder.stream(topic, Consumed(key_serde=Serdes.String(), value_serde=Serdes.String()))
     .group_by_key(Grouped(key_serde=Serdes.String(), value_serde=Serdes.String()))
     .windowed_by(SessionWindows.of_inactivity_gap_with_no_grace(timedelta(seconds=10)))
     .count(Materialized("sessions", retention=timedelta(minutes=10))))
    return builder.build()


async def test_every_keys_sessions_from_its_owner(kafka_broker: Any, tmp_path: Path) -> None:
    bootstrap = kafka_broker.bootstrap_servers
    sfx = uuid.uuid4().hex[:8]
    topic = f"iq-sessions-{sfx}"
    await create_topics(bootstrap, {topic: 4})
    apps = [KafkaStreams(session_topology(topic), {
        "bootstrap.servers": bootstrap, "application.id": f"iq-sessions-{sfx}", "state.dir": str(tmp_path / f"s{i}"),
        "commit.interval.ms": 100, "statestore.cache.max.bytes": 0, "application.server": f"127.0.0.1:{7300 + i}",
    }) for i in range(2)]
    first, second = expected_counts(20), expected_counts(20, seed=3)
    try:
        for app in apps:
            await app.start()
        await eventually(lambda: all(a.state.name == "RUNNING" for a in apps))
        # Two sessions per key: one in window 0 (BASE_TS ...), one a minute later, far past the 10 s gap.
        await produce_counts(bootstrap, topic, first, window=0)
        await produce_counts(bootstrap, topic, second, window=1)

        def owner(key: str) -> KafkaStreams:
            meta = apps[0].query_metadata_for_key("sessions", key, Serdes.String())
            return next(a for a in apps if a.application_server == meta.active_host)

        def sessions_of(key: str) -> list[tuple[int, int, int]]:
            with owner(key).store(SESSIONS).fetch(key) as found:
                return [(kv.key.window.start, kv.key.window.end, kv.value) for kv in found]

        def expected(key: str) -> list[tuple[int, int, int]]:
            return [(BASE_TS, BASE_TS + first[key] - 1, first[key]),
                    (BASE_TS + WINDOW_MS, BASE_TS + WINDOW_MS + second[key] - 1, second[key])]

        await eventually(lambda: all(sessions_of(key) == expected(key) for key in first))
        for key in first:
            view = owner(key).store(SESSIONS)
            assert all(kv.key.key == key for kv in view.fetch(key))
            assert [kv.value for kv in view.backward_fetch(key)] == [second[key], first[key]]
            # find_sessions: sessions ending at or after t1 and starting at or before t2.
            late = list(view.find_sessions(key, BASE_TS + WINDOW_MS, BASE_TS + 2 * WINDOW_MS))
            assert [kv.value for kv in late] == [second[key]]
            assert [kv.value for kv in view.backward_find_sessions(key, 0, BASE_TS + 2 * WINDOW_MS)] == \
                [second[key], first[key]]
            assert view.fetch_session(key, BASE_TS, BASE_TS + first[key] - 1) == first[key]
            assert view.fetch_session(key, BASE_TS, BASE_TS + first[key]) is None
            other = apps[1] if owner(key) is apps[0] else apps[0]
            assert list(other.store(SESSIONS).fetch(key)) == []

        # A key range over both instances' copies: every key's two sessions, by key.
        merged = []
        for app in apps:
            found = list(app.store(SESSIONS).fetch("key-005", "key-014"))
            keys = [kv.key.key for kv in found]
            assert keys == sorted(keys) and all("key-005" <= k <= "key-014" for k in keys)
            merged += found
        assert sorted((kv.key.key, kv.value) for kv in merged) == sorted(
            [(k, first[k]) for k in first if "key-005" <= k <= "key-014"]
            + [(k, second[k]) for k in first if "key-005" <= k <= "key-014"])
        with pytest.raises(InvalidStateStoreError, match="does not accept"):
            apps[0].store(StoreQueryParameters.from_name_and_type("sessions", QueryableStoreTypes.key_value_store())
                          ).get("key-000")
    finally:
        for app in apps:
            await app.close()
