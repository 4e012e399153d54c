"""Under exactly-once a restore must not stop at a changelog's last stable offset while a transaction
is open on it, found by `make soak`.

A read_committed consumer sees a partition only up to its last stable offset (LSO): the first offset
of the oldest transaction still open there. Records that *later* transactions wrote and committed
lie beyond it and stay invisible until the open one ends. On a changelog this happens when a task
changes hands twice while a previous owner's transaction hangs open (a frozen or cut-off instance,
whose transaction only the transaction timeout ends): owner B restores up to the LSO, processes and
commits; the task moves on to C before the old transaction ends; C's restore, stopping at the same
LSO, misses everything B committed and continues from stale counts. The soak saw exactly that: one
window's count went 1..63 and then 19, 20, ... again.

Here the changelog is prepared by hand: a "zombie" transaction writes `a` = 5 and stays open, then
a "previous owner" transaction writes `a` = 7 and commits. The application's restore must wait for
the zombie's transaction to end (it is aborted a few seconds later) and then restore `a` = 7, so the
next input for `a` counts 8.
"""

from __future__ import annotations

import asyncio
import logging
import struct
import uuid
from pathlib import Path
from typing import Any

import pytest

from streamlet.runtime.kafka_streams import KafkaStreams
from tests.helpers.kafka import create_topics, produce, read_until, transactional_producer
from tests.integration.topologies import count_topology

pytestmark = [pytest.mark.anyio, pytest.mark.broker]


async def test_restore_waits_until_no_transaction_is_open_on_the_changelog(
        kafka_broker: Any, tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    bootstrap = kafka_broker.bootstrap_servers
    suffix = uuid.uuid4().hex[:8]
    app_id, inp, out = f"stable-{suffix}", f"stable-in-{suffix}", f"stable-out-{suffix}"
    changelog = f"{app_id}-counts-changelog"
    await create_topics(bootstrap, {inp: 1, out: 1, changelog: 1})

    zombie = await transactional_producer(bootstrap, "zombie")
    await zombie.begin_transaction()
    await (await zombie.send(changelog, key=b"a", value=struct.pack(">q", 5)))  # left open
    owner = await transactional_producer(bootstrap, "owner")
    async with owner.transaction():
        await (await owner.send(changelog, key=b"a", value=struct.pack(">q", 7)))
    await owner.stop()

    streams = KafkaStreams(count_topology(inp, out), {
        "bootstrap.servers": bootstrap, "application.id": app_id, "state.dir": tmp_path / "state",
        "processing.guarantee": "exactly_once_v2", "statestore.cache.max.bytes": 0})
    caplog.set_level(logging.INFO, logger="streamlet")
    try:
        async with streams:
            await produce(bootstrap, inp, [(b"a", b"x")])
            await asyncio.sleep(4)  # the restore is waiting on the zombie's transaction meanwhile
            await zombie.abort_transaction()
            got = await read_until(bootstrap, out, lambda rs: len(rs) >= 1, timeout=60,
                                   isolation_level="read_committed")
    finally:
        await zombie.stop()
    assert [(r.key, struct.unpack(">q", r.value)[0]) for r in got] == [(b"a", 8)]
    assert "open transaction" in caplog.text, caplog.text[-3000:]  # and it said what it waited for
