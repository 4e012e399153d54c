"""Exactly-once: a task killed with kill -9 restores only the changelog tail, not its whole store.

WordCount (cache off, so every update is a changelog record) first counts many distinct words, then
keeps counting a steady stream while its process is killed with SIGKILL, batches in flight. The
killed instance's store keeps only committed writes and the changelog offset they reach; the test
reads that offset from the store on disk while the process is down, counts the committed changelog
records after it (`read_committed`, up to where the killed instance's open transaction begins), and
checks that the restarted instance restored exactly those (its `restore-total` metric), far fewer
than the store holds, and that the output is exact: every word's counts are 1..n, nothing lost or
counted twice.

That tail is often empty: a kill -9 loses only the open transaction, and the store's write batch follows
each committed one at once. A store that is behind its changelog, with committed transactions after the
offset it keeps, is what a machine losing the store's last write batches (a power cut: LevelDB does not
sync them) or a kill between a transaction's commit and the store's batch leaves. The second test makes
one on purpose: it keeps a copy of the task's directory from one kill -9, lets a second run commit many
transactions, kills it and puts the copy back. The restart must restore exactly the committed changelog
records after the copy's offset, a tail of thousands, and count exactly.
"""

from __future__ import annotations

import asyncio
import random
import re
import shutil
import urllib.request
import uuid
from collections import Counter
from pathlib import Path
from typing import Any

import plyvel
import pytest
from aiokafka import AIOKafkaConsumer, TopicPartition

from examples.wordcount import split_words
from streamlet.stores.leveldb.staging import read_committed_offset
from tests.helpers.app_process import AppProcess
from tests.helpers.kafka import create_topics
from tests.http.served_apps import free_ports
from tests.integration.chaos import check_sequences, make_lines, produce_steadily, read_sequences
from tests.integration.wordcount_app import TARGET, topic_env

pytestmark = [pytest.mark.anyio, pytest.mark.broker]

KEYS = 30_000
"""Distinct words counted before the crash: a full rebuild restores at least this many records."""
STORE = "counts-store"
TASK = "1_0"  # the counting sub-topology's task (after the repartition), one partition


async def _committed_records(bootstrap: str, topic: str, start: int) -> int:
    """Committed records of `topic`-0 from offset `start` up to its last stable offset."""
    tp = TopicPartition(topic, 0)
    consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False, group_id=None,
                                isolation_level="read_committed")
    await consumer.start()
    try:
        consumer.assign([tp])
        stable = (await consumer.end_offsets([tp]))[tp]
        consumer.seek(tp, start)
        count = 0
        while await consumer.position(tp) < stable:
            batch = await consumer.getmany(tp, timeout_ms=1000, max_records=50_000)
            count += sum(1 for r in batch.get(tp, []) if r.offset < stable)
        return count
    finally:
        await consumer.stop()


def _restore_total(http: str) -> float | None:
    """The restarted instance's `restore-total` of the counting task (None while not reported)."""
    with urllib.request.urlopen(f"http://{http}/metrics", timeout=10) as response:
        text = response.read().decode()
    for line in text.splitlines():
        if line.startswith("kafka_streams_stream_task_metrics_restore_total{") and f'task_id="{TASK}"' in line:
            return float(line.rsplit(" ", 1)[1])
    return None


async def test_a_killed_exactly_once_task_restores_only_the_changelog_tail(kafka_broker: Any, tmp_path: Path) -> None:
    bootstrap = kafka_broker.bootstrap_servers
    suffix = uuid.uuid4().hex[:8]
    app_id, inp, out = f"eos-tail-{suffix}", f"eos-tail-in-{suffix}", f"eos-tail-out-{suffix}"
    changelog = f"{app_id}-{STORE}-changelog"
    await create_topics(bootstrap, {inp: 1, out: 1})
    distinct = [f"k{i:05d}" for i in range(KEYS)]
    first = [" ".join(distinct[i:i + 20]) for i in range(0, KEYS, 20)]
    then = make_lines(6_000, random.Random(7))
    expected = Counter(w for line in first + then for w in split_words(line))
    state_dir = tmp_path / "state"
    http = f"127.0.0.1:{free_ports(1)[0]}"
    settings = {"bootstrap.servers": bootstrap, "application.id": app_id, "processing.guarantee": "exactly_once_v2",
                "statestore.cache.max.bytes": 0, "commit.interval.ms": 100, "state.dir": state_dir,
                "metrics.recording.level": "DEBUG", "session.timeout.ms": 6000, "heartbeat.interval.ms": 1000,
                "default.key.serde": "String", "default.value.serde": "String"}
    app = AppProcess(TARGET, settings, tmp_path / "app.log", env=topic_env(inp, out), extra_args=["--http", http])
    restarted = AppProcess(TARGET, settings, tmp_path / "restarted.log", env=topic_env(inp, out),
                           extra_args=["--http", http])
    try:
        await app.start().wait_for_log("to RUNNING", timeout=120)
        await produce_steadily(bootstrap, inp, first, 2)
        await read_sequences(bootstrap, out, Counter(distinct), timeout=180)  # all KEYS words counted
        producing = asyncio.create_task(produce_steadily(bootstrap, inp, then, 8))
        await asyncio.sleep(4)
        app.kill()  # SIGKILL while the steady input is being processed and committed

        db = plyvel.DB(str(state_dir / app_id / TASK / STORE))
        try:
            offset = read_committed_offset(db)
        finally:
            db.close()
        assert offset is not None, "the store keeps no changelog offset: it would be rebuilt in full"
        assert offset >= KEYS  # the store holds at least every word of the first part
        tail = await _committed_records(bootstrap, changelog, offset)

        await restarted.start().wait_for_log(f"task {TASK} started", timeout=180)
        await producing
        sequences = await read_sequences(bootstrap, out, expected, timeout=180)
        restored = _restore_total(http)
    finally:
        for a in (app, restarted):
            if a.proc is not None and a.proc.poll() is None:
                a.stop()
    log = restarted.log_text()
    check = check_sequences(sequences, expected)
    assert check.exact, check.summary()
    assert not re.search(r"wiping", log), log[-4000:]
    assert restored == tail, (restored, tail, offset, log[-4000:])
    assert tail < KEYS // 10  # only what was committed after the store's last commit, not the store


async def test_a_store_behind_its_committed_changelog_restores_exactly_the_tail(kafka_broker: Any,
                                                                               tmp_path: Path) -> None:
    bootstrap = kafka_broker.bootstrap_servers
    suffix = uuid.uuid4().hex[:8]
    app_id, inp, out = f"eos-lost-{suffix}", f"eos-lost-in-{suffix}", f"eos-lost-out-{suffix}"
    changelog = f"{app_id}-{STORE}-changelog"
    await create_topics(bootstrap, {inp: 1, out: 1})
    distinct = [f"k{i:05d}" for i in range(KEYS // 10)]
    first = [" ".join(distinct[i:i + 20]) for i in range(0, len(distinct), 20)]
    then = make_lines(4_000, random.Random(11))
    expected = Counter(w for line in first + then for w in split_words(line))
    state_dir = tmp_path / "state"
    http = f"127.0.0.1:{free_ports(1)[0]}"
    settings = {"bootstrap.servers": bootstrap, "application.id": app_id, "processing.guarantee": "exactly_once_v2",
                "statestore.cache.max.bytes": 0, "commit.interval.ms": 100, "state.dir": state_dir,
                "metrics.recording.level": "DEBUG", "session.timeout.ms": 6000, "heartbeat.interval.ms": 1000,
                "default.key.serde": "String", "default.value.serde": "String"}
    apps = [AppProcess(TARGET, settings, tmp_path / f"app-{i}.log", env=topic_env(inp, out),
                       extra_args=["--http", http]) for i in range(3)]
    task_dir, copy = state_dir / app_id / TASK, tmp_path / "task-copy"
    try:
        await apps[0].start().wait_for_log("to RUNNING", timeout=120)
        await produce_steadily(bootstrap, inp, first, 2)
        await read_sequences(bootstrap, out, Counter(distinct), timeout=180)
        apps[0].kill()
        shutil.copytree(task_dir, copy)  # the task's directory as the first kill -9 left it

        await apps[1].start().wait_for_log(f"task {TASK} started", timeout=180)
        producing = asyncio.create_task(produce_steadily(bootstrap, inp, then, 8))
        await asyncio.sleep(5)
        apps[1].kill()  # many transactions committed since the copy, one in flight
        shutil.rmtree(task_dir)
        shutil.copytree(copy, task_dir)  # their write batches lost, the changelog's transactions committed

        db = plyvel.DB(str(task_dir / STORE))
        try:
            offset = read_committed_offset(db)
        finally:
            db.close()
        assert offset is not None, "the store keeps no changelog offset: it would be rebuilt in full"
        tail = await _committed_records(bootstrap, changelog, offset)

        await apps[2].start().wait_for_log(f"task {TASK} started", timeout=180)
        await producing
        sequences = await read_sequences(bootstrap, out, expected, timeout=180)
        restored = _restore_total(http)
    finally:
        for a in apps:
            if a.proc is not None and a.proc.poll() is None:
                a.stop()
    log = apps[2].log_text()
    check = check_sequences(sequences, expected)
    assert check.exact, check.summary()
    assert not re.search(r"wiping", log), log[-4000:]
    assert tail > 1_000, (tail, offset)  # a tail: the second run's committed transactions, not an empty one
    assert restored == tail, (restored, tail, offset, log[-4000:])
