"""`streamlet topics create` needs only the bootstrap servers: a user creates an application's source
and sink topics before choosing its `application.id`, as Kafka Streams' users do with Kafka's tools."""

from __future__ import annotations

import asyncio
import uuid

import pytest
from aiokafka.admin import AIOKafkaAdminClient

from streamlet import Consumed, Produced, Serdes, StreamsBuilder
from streamlet.cli import main
from streamlet.testing.local_broker import LocalKafkaBroker
from streamlet.topology import Topology

_SUFFIX = uuid.uuid4().hex[:8]
INPUT, OUTPUT = f"topics-create-in-{_SUFFIX}", f"topics-create-out-{_SUFFIX}"


def upper_topology() -> Topology:
    """Loaded by the command from this module: one source, one sink, no internal topic."""
    builder = StreamsBuilder()
    builder.stream(INPUT, Consumed(key_serde=Serdes.String(), value_serde=Serdes.String())) \
        .map_values(str.upper).to(OUTPUT, Produced(key_serde=Serdes.String(), value_serde=Serdes.String()))
    return builder.build()


async def _partition_counts(bootstrap: str, topics: set[str]) -> dict[str, int]:
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
    await admin.start()
    try:
        described = await admin.describe_topics(sorted(topics))
    finally:
        await admin.close()
    return {t["topic"]: len(t["partitions"]) for t in described if t["error_code"] == 0}


@pytest.mark.broker
def test_topics_create_without_an_application_id(kafka_broker: LocalKafkaBroker,
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    bootstrap = kafka_broker.bootstrap_servers
    code = main(["topics", "create", "tests.test_topics_create:upper_topology",
                 "--set", f"bootstrap.servers={bootstrap}", "--partitions", "2"])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    assert f"created {INPUT} (2 partitions)" in captured.out and f"created {OUTPUT} (2 partitions)" in captured.out
    assert asyncio.run(_partition_counts(bootstrap, {INPUT, OUTPUT})) == {INPUT: 2, OUTPUT: 2}
