"""The start-up check of the internal topics the cluster holds for an application, on the real broker.

An application ran with a WordCount whose store is `counts-store`; the cluster now holds
`<app>-counts-store-changelog` and `<app>-counts-store-repartition`. A topology that names the store
otherwise would start with an empty store and leave the old topics behind: it is refused before it
creates anything, naming the first difference. The same topology, or one that only adds an operator,
starts (under the default `internal.topics.check=existing`); `exact` refuses the added operator too,
and `none` lets anything start. The Kafka Streams (Java) case is in tests/interop/test_startup_check.py.
"""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import anyio
import pytest

from examples.wordcount import split_words
from streamlet import Consumed, Grouped, KafkaStreams, Materialized, Produced, Serdes, State, StreamsBuilder, Topology
from streamlet.kafka.internal_topic_check import InternalTopicsMismatchError
from streamlet.kafka.topic_manager import admin_client
from tests.helpers.kafka import create_topics, produce, read_until

pytestmark = [pytest.mark.anyio, pytest.mark.broker]

S = Serdes.String()


def wordcount(inp: str, out: str, store: str = "counts-store", line_counts: bool = False) -> Topology:
    """WordCount with its store named `store`; `line_counts` adds a count of lines per key (a new store)."""
    builder = StreamsBuilder()
    lines = builder.stream(inp, Consumed(S, S))
    (lines.flat_map_values(split_words)
     .group_by(lambda _k, w: w, Grouped(key_serde=S, value_serde=S))
     .count(Materialized(store))
     .to_stream()
     .to(out, Produced(S, Serdes.Long())))
    if line_counts:
        lines.group_by_key().count(Materialized("line-counts")).to_stream().to(out, Produced(S, Serdes.Long()))
    return builder.build()


class _App:
    def __init__(self, bootstrap: str, tmp: Path) -> None:
        sfx = uuid.uuid4().hex[:8]
        self.bootstrap, self.tmp = bootstrap, tmp
        self.app_id, self.inp, self.out = f"topicheck-{sfx}", f"topicheck-in-{sfx}", f"topicheck-out-{sfx}"

    def streams(self, topology: Topology, **settings: Any) -> KafkaStreams:
        # Commits every 100 ms: the cached counts reach the output at a commit, and at-least-once's default
        # interval (30 s) made every run that waits for output wait that long.
        return KafkaStreams(topology, {"application.id": self.app_id, "bootstrap.servers": self.bootstrap,
                                       "state.dir": str(self.tmp / uuid.uuid4().hex[:6]), "commit.interval.ms": 100,
                                       **settings})

    async def topics(self) -> set[str]:
        async with admin_client(self.bootstrap) as admin:
            return {t for t in await admin.list_topics() if t.startswith(f"{self.app_id}-")}


@pytest.fixture
async def ran_once(kafka_broker: Any, tmp_path: Path) -> _App:
    """An application that ran WordCount with `counts-store` and stopped."""
    app = _App(kafka_broker.bootstrap_servers, tmp_path)
    await create_topics(app.bootstrap, {app.inp: 2, app.out: 2})
    await produce(app.bootstrap, app.inp, [(b"k", b"hello world")])
    async with app.streams(wordcount(app.inp, app.out)):
        await read_until(app.bootstrap, app.out, lambda rs: len(rs) >= 2)
    assert await app.topics() == {f"{app.app_id}-counts-store-changelog", f"{app.app_id}-counts-store-repartition"}
    return app


async def _runs(streams: KafkaStreams) -> None:
    await streams.start()
    try:
        with anyio.fail_after(60):
            while streams.state is not State.RUNNING:
                await anyio.sleep(0.1)
    finally:
        await streams.close()


async def test_a_renamed_store_is_refused_naming_the_first_difference(ran_once: _App) -> None:
    app = ran_once
    before = await app.topics()
    streams = app.streams(wordcount(app.inp, app.out, store="word-counts"))
    with pytest.raises(InternalTopicsMismatchError) as refused:
        await streams.start()
    await streams.close()
    message = str(refused.value)
    assert message.startswith(f"the cluster holds the internal topic '{app.app_id}-counts-store-changelog' of "
                              f"application '{app.app_id}', which this topology does not have"), message
    assert f"This topology has instead '{app.app_id}-word-counts-changelog'" in message, message
    assert f"'{app.app_id}-counts-store-repartition'" in message and "Materialized.as" in message, message
    assert streams.state is State.ERROR
    assert await app.topics() == before  # refused before anything was created


async def test_the_same_topology_or_one_that_only_adds_operators_starts(ran_once: _App) -> None:
    app = ran_once
    await _runs(app.streams(wordcount(app.inp, app.out)))
    await _runs(app.streams(wordcount(app.inp, app.out, line_counts=True)))
    assert f"{app.app_id}-line-counts-changelog" in await app.topics()


async def test_exact_refuses_a_topic_the_cluster_lacks(ran_once: _App) -> None:
    app = ran_once
    streams = app.streams(wordcount(app.inp, app.out, line_counts=True), **{"internal.topics.check": "exact"})
    with pytest.raises(InternalTopicsMismatchError, match=f"this topology has the internal topic "
                                                          f"'{app.app_id}-line-counts-changelog', which the cluster "
                                                          f"does not hold"):
        await streams.start()
    await streams.close()
    await _runs(app.streams(wordcount(app.inp, app.out), **{"internal.topics.check": "exact"}))


async def test_none_lets_a_renamed_store_start(ran_once: _App) -> None:
    app = ran_once
    await _runs(app.streams(wordcount(app.inp, app.out, store="word-counts"), **{"internal.topics.check": "none"}))


async def test_a_longer_application_id_is_another_application(ran_once: _App) -> None:
    """`<app>-audit`'s topics pass Kafka Streams' test of `<app>`'s internal names; its consumer group
    tells them apart, so `<app>` still starts."""
    app = ran_once
    audit = _App(app.bootstrap, app.tmp)
    audit.app_id, audit.inp, audit.out = f"{app.app_id}-audit", app.inp, app.out
    async with audit.streams(wordcount(app.inp, app.out, store="audit-counts")):
        await read_until(app.bootstrap, app.out, lambda rs: len(rs) >= 4)
    assert f"{app.app_id}-audit-audit-counts-changelog" in await app.topics()
    await _runs(app.streams(wordcount(app.inp, app.out)))


async def test_an_application_that_never_committed_is_not_refused(kafka_broker: Any, tmp_path: Path) -> None:
    """Topics under the application's prefix, but no committed offsets: nothing continues from them,
    so the first start goes on (with a warning)."""
    app = _App(kafka_broker.bootstrap_servers, tmp_path)
    leftover = f"{app.app_id}-old-store-changelog"
    await create_topics(app.bootstrap, {app.inp: 1, app.out: 1, leftover: 1})
    await _runs(app.streams(wordcount(app.inp, app.out)))
    await produce(app.bootstrap, app.inp, [(b"k", b"a")])
    async with app.streams(wordcount(app.inp, app.out)):
        await read_until(app.bootstrap, app.out, lambda rs: len(rs) >= 1)
    # Now it has committed: the leftover topic counts.
    streams = app.streams(wordcount(app.inp, app.out))
    with pytest.raises(InternalTopicsMismatchError, match=f"'{leftover}'"):
        await streams.start()
    await streams.close()
