"""streamlet refuses to take over a Kafka Streams (Java) application whose internal topics it does not have.

Kafka Streams 4.4.0's WordCount (its store named `counts-store`) runs and closes; the cluster then
holds `<app>-counts-store-changelog` and `<app>-counts-store-repartition`. A streamlet WordCount that
leaves its store unnamed (a generated `KSTREAM-AGGREGATE-STATE-STORE-...` name) would start with an
empty store: `streamlet run` refuses at once (before joining the group, so without waiting for the Java
members) with exit 1 and one line naming the Java topic, the topic the streamlet topology has instead
and how to name the store. The matching topology takes over (tests/interop/test_offline_move.py).
"""

from __future__ import annotations

import os
import random
import uuid
from pathlib import Path
from typing import Any

import pytest

from examples.wordcount import split_words
from streamlet import Consumed, Grouped, Produced, Serdes, StreamsBuilder, Topology
from tests.helpers.app_process import AppProcess
from tests.helpers.kafka import produce
from tests.interop.kafka_streams_app import KafkaStreamsApp, java_available
from tests.interop.wordcount_move import (
    counts,
    java_settings,
    make_lines,
    read_committed_until,
    wordcount_topics,
)

pytestmark = [
    pytest.mark.anyio, pytest.mark.broker,
    pytest.mark.skipif(not java_available(), reason="needs Java 17 and Maven"),
]


def unnamed_store_wordcount() -> Topology:
    """WordCount whose count is not materialized under a name (topics from $WORDCOUNT_INPUT/OUTPUT)."""
    builder = StreamsBuilder()
    (builder.stream(os.environ["WORDCOUNT_INPUT"], Consumed(Serdes.String(), Serdes.String()))
     .flat_map_values(split_words)
     .group_by(lambda _k, w: w, Grouped(key_serde=Serdes.String(), value_serde=Serdes.String()))
     .count()
     .to_stream()
     .to(os.environ["WORDCOUNT_OUTPUT"], Produced(Serdes.String(), Serdes.Long())))
    return builder.build()


async def test_a_topology_without_the_java_store_name_is_refused(kafka_broker: Any, tmp_path: Path) -> None:
    bootstrap = kafka_broker.bootstrap_servers
    suffix = uuid.uuid4().hex[:8]
    topics = await wordcount_topics(bootstrap, suffix)
    app_id = f"interop-check-{suffix}"
    lines = make_lines(50, random.Random(7))
    await produce(bootstrap, topics["input"], [(None, ln.encode()) for ln in lines])
    java = KafkaStreamsApp("wordcount", topics, java_settings(bootstrap, app_id, tmp_path / "java-state"),
                           tmp_path / "java.log").start()
    try:
        await read_committed_until(bootstrap, topics["output"], counts(lines))
    finally:
        assert await java.close() == 0, java.log_tail()

    app = AppProcess("tests.interop.test_startup_check:unnamed_store_wordcount",
                     {"bootstrap.servers": bootstrap, "application.id": app_id, "state.dir": tmp_path / "py-state",
                      "processing.guarantee": "exactly_once_v2"},
                     tmp_path / "streamlet.log",
                     env={"WORDCOUNT_INPUT": topics["input"], "WORDCOUNT_OUTPUT": topics["output"]}).start()
    assert app.proc is not None
    try:
        code = app.proc.wait(timeout=60)  # well within the Java member's session: no group wait
    finally:
        app.stop()
    output = app.log_text()
    assert code == 1, output[-3000:]
    last = output.strip().splitlines()[-1]
    assert last.startswith(f"streamlet: error: the cluster holds the internal topic '{app_id}-counts-store-changelog' "
                           f"of application '{app_id}', which this topology does not have"), last
    assert f"This topology has instead '{app_id}-KSTREAM-AGGREGATE-STATE-STORE-0000000003-changelog'" in last, last
    assert f"'{app_id}-counts-store-repartition'" in last, last
    assert "Materialized.as" in last, last
    assert "still holds members of another protocol" not in output
