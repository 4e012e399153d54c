"""A user's first commands on a brand-new cluster, as getting started and operations show them:
`streamlet topics create` needs only the bootstrap servers (the source and sink topics are made before
there is an `application.id`, as Kafka Streams' users make them with Kafka's tools), and `streamlet
reset --dry-run` works on a cluster that never saw a consumer group (whose group coordinator is not
there yet when first asked)."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Iterator
from pathlib import Path

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


@pytest.fixture(scope="module")
def new_cluster() -> Iterator[LocalKafkaBroker]:
    """A broker of its own: no topic, no consumer group, no offsets topic yet."""
    with LocalKafkaBroker() as broker:
        yield broker


async def _partition_counts(bootstrap: str, topics: set[str]) -> dict[str, int]:
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
    await admin.start()
    try:
        described = await admin.describe_topics(sorted(topics))
    finally:
        await admin.close()
    return {t["topic"]: len(t["partitions"]) for t in described if t["error_code"] == 0}


@pytest.mark.broker
def test_topics_create_without_an_application_id(new_cluster: LocalKafkaBroker,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    bootstrap = new_cluster.bootstrap_servers
    code = main(["topics", "create", "tests.cli.test_cli_new_cluster:upper_topology",
                 "--set", f"bootstrap.servers={bootstrap}", "--partitions", "2"])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    assert f"created {INPUT} (2 partitions)" in captured.out and f"created {OUTPUT} (2 partitions)" in captured.out
    assert asyncio.run(_partition_counts(bootstrap, {INPUT, OUTPUT})) == {INPUT: 2, OUTPUT: 2}


@pytest.mark.broker
def test_reset_dry_run_on_a_cluster_that_never_saw_a_group(new_cluster: LocalKafkaBroker,
                                                           capsys: pytest.CaptureFixture[str],
                                                           tmp_path: Path) -> None:
    code = main(["reset", "tests.cli.test_cli_new_cluster:upper_topology", "--set",
                 f"bootstrap.servers={new_cluster.bootstrap_servers}", "--set", f"application.id=upper-{_SUFFIX}",
                 "--set", f"state.dir={tmp_path}", "--dry-run"])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    assert "(dry run: nothing changed)" in captured.out
