"""A restore reads every changelog partition of the process at once and must still end with exactly
the content that processing left: the last write of each key, and no key a tombstone deleted.

The `ChangelogReader` assigns all changelog partitions still to restore together, routes each
fetched partition's records to its own task's store, and pauses a partition once its store is
complete while the others go on. Here a count store's changelog on three partitions is written by
hand, several thousand records with every key updated many times, some keys deleted (a tombstone)
and some of those written again afterwards. After the restore, one more input record per key shows
the restored count through the output: last count + 1, or 1 for a key whose last write was a
tombstone or that never existed.
"""

from __future__ import annotations

import logging
import random
import struct
import uuid
from pathlib import Path
from typing import Any

import pytest

from streamlet.runtime.kafka_streams import KafkaStreams
from tests.helpers.kafka import create_topics, produce, read_until
from tests.integration.topologies import count_topology  # store "counts"

pytestmark = [pytest.mark.anyio, pytest.mark.broker]

PARTITIONS = 3
KEYS = 60


def _changelog(records: int) -> tuple[list[tuple[bytes, bytes | None]], dict[bytes, int]]:
    """Changelog writes with duplicates and tombstones, and the content they leave (key -> count)."""
    rng = random.Random(14)
    writes: list[tuple[bytes, bytes | None]] = []
    content: dict[bytes, int] = {}
    for _ in range(records):
        key = f"k{rng.randrange(KEYS)}".encode()
        if rng.random() < 0.1:
            writes.append((key, None))
            content.pop(key, None)
        else:
            count = rng.randrange(1, 1000)
            writes.append((key, struct.pack(">q", count)))
            content[key] = count
    return writes, content


async def test_restore_of_several_partitions_ends_with_what_processing_left(
        kafka_broker: Any, tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    bootstrap = kafka_broker.bootstrap_servers
    suffix = uuid.uuid4().hex[:8]
    app_id, inp, out = f"restore-all-{suffix}", f"restore-all-in-{suffix}", f"restore-all-out-{suffix}"
    await create_topics(bootstrap, {inp: PARTITIONS, out: PARTITIONS, f"{app_id}-counts-changelog": PARTITIONS})
    writes, content = _changelog(6000)
    assert len(content) < KEYS  # some keys end deleted
    # Keyed like the input (the client's murmur2 partitioner): a key's task owns its changelog partition.
    await produce(bootstrap, f"{app_id}-counts-changelog", writes)

    streams = KafkaStreams(count_topology(inp, out), {
        "bootstrap.servers": bootstrap, "application.id": app_id, "state.dir": tmp_path / "state",
        "statestore.cache.max.bytes": 0, "commit.interval.ms": 100})
    caplog.set_level(logging.INFO, logger="streamlet")
    keys = [f"k{i}".encode() for i in range(KEYS + 5)]  # 5 keys the changelog never had
    async with streams:
        await produce(bootstrap, inp, [(k, b"x") for k in keys])
        got = await read_until(bootstrap, out, lambda rs: len({r.key for r in rs}) >= len(keys), timeout=90)
    counts = {r.key: struct.unpack(">q", r.value)[0] for r in got}
    assert counts == {k: content.get(k, 0) + 1 for k in keys}
    restored = [line for line in caplog.text.splitlines() if " restored " in line and "into counts" in line]
    assert len(restored) == PARTITIONS, caplog.text[-3000:]  # every partition's store was restored
