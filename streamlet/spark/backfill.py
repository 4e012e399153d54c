"""A Spark backfill that ends only when its work is done: every query has read its input to the end, and
every topic the topology feeds itself is drained.

Spark's `availableNow` trigger runs a query over what its input holds when the query starts, then stops.
A topology's sub-topologies talk through topics (repartition topics, a foreign-key join's subscription
and response topics, a user topic one sub-topology writes and another reads), and these may go round in
a circle: a foreign-key join's left table sends subscriptions to the right table's side, which answers
on a response topic that the left side reads. One pass in data-flow order cannot finish such a
topology: the left side ran when there was no answer yet to read. So the backfill goes round in
passes: after the first pass (every query once), a query runs again whenever a topic the topology
writes and it reads holds records beyond what its checkpoint consumed, until a whole pass runs nothing
(the fixed point). The ends of such fed topics are known only then; the application's own input ends
where each query's `availableNow` run found it (and `--until` cuts it).

After every run the query's checkpoint must show each input partition consumed at least to the end it
had when the run started. A query stopped from outside, or one that skipped input, fails the backfill
with the partitions it did not reach, rather than letting it report done with output missing. A loop
that keeps feeding itself (or input still being written, fed round a loop) is given up after
`spark.backfill.max.rounds` passes (default 100), naming the topics still growing.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

from streamlet.errors import StreamsError
from streamlet.kafka.client_settings import ClientRole, client_kwargs, start_client, stop_client
from streamlet.topology import Topology

log = logging.getLogger(__name__)

MAX_ROUNDS_KEY = "spark.backfill.max.rounds"
"""Passes over the queries a backfill makes at most before it gives up on a topology that keeps feeding
itself (default 100)."""
DEFAULT_MAX_ROUNDS = 100

Partition = tuple[str, int]


class BackfillIncompleteError(StreamsError):
    """A Spark backfill that could not bring every query to the end of its input: the message names the
    query, the partitions and why. The checkpoints keep what was done; a new backfill or `streamlet spark
    run` on them goes on from there."""


def fed_topics(topology: Topology, resolve: Callable[[str], str]) -> set[str]:
    """The topics (real names) that the topology both writes and reads: its repartition and foreign-key
    topics, and user topics one of its sinks names and one of its sources reads. A sink that picks its
    topic per record (`TopicNameExtractor`) is not known here."""
    subs = topology.sub_topologies()
    written = {resolve(t) for s in subs for t in s.sink_topics}
    read = {resolve(t) for s in subs for t in s.source_topics}
    return written & read


def checkpoint_positions(checkpoint: Path) -> dict[Partition, int]:
    """What a query's checkpoint says it consumed: the offsets where its last committed micro-batch
    ended, per Kafka partition (empty before its first batch). Spark writes a batch's end offsets to
    `offsets/<batch>` (a version line, the batch metadata, then one line per source) before it runs the
    batch, and `commits/<batch>` once the batch is done."""
    commits = checkpoint / "commits"
    done = sorted((int(p.name) for p in commits.iterdir() if p.name.isdigit()), reverse=True) \
        if commits.is_dir() else []
    if not done:
        return {}
    lines = (checkpoint / "offsets" / str(done[0])).read_text(encoding="utf-8").splitlines()
    if len(lines) < 3 or not lines[0].startswith("v"):
        raise BackfillIncompleteError(f"cannot read the offsets of batch {done[0]} in checkpoint {checkpoint}")
    offsets: dict[str, dict[str, int]] = json.loads(lines[2])
    return {(topic, int(partition)): int(offset) for topic, parts in offsets.items()
            for partition, offset in parts.items()}


class KafkaPositions:
    """Log start and end offsets of partitions, from one consumer kept for the whole backfill (on its own
    event loop: the caller is synchronous). `read_committed` (exactly-once): the end is the last stable
    offset, as far as the queries' own read_committed sources can read."""

    def __init__(self, settings: dict[str, Any], read_committed: bool) -> None:
        self._loop = asyncio.new_event_loop()
        self._kwargs = {**client_kwargs(settings, ClientRole.MAIN_CONSUMER), "enable_auto_commit": False,
                        "group_id": None, "isolation_level": "read_committed" if read_committed else "read_uncommitted"}
        self._consumer: Any = None

    async def _bounds(self, partitions: Sequence[Partition]) -> dict[Partition, tuple[int, int]]:
        from aiokafka import AIOKafkaConsumer, TopicPartition

        if self._consumer is None:
            consumer = AIOKafkaConsumer(**self._kwargs)
            await start_client(consumer, self._kwargs)
            self._consumer = consumer
        tps = [TopicPartition(t, p) for t, p in partitions]
        begins = await self._consumer.beginning_offsets(tps)
        ends = await self._consumer.end_offsets(tps)
        return {(tp.topic, tp.partition): (begins[tp], ends[tp]) for tp in tps}

    def bounds(self, partitions: Sequence[Partition]) -> dict[Partition, tuple[int, int]]:
        """(log start, end) of each partition."""
        return self._loop.run_until_complete(self._bounds(partitions)) if partitions else {}

    def close(self) -> None:
        consumer, self._consumer = self._consumer, None
        try:
            if consumer is not None:
                self._loop.run_until_complete(stop_client(consumer))
        finally:
            self._loop.close()


class BackfillQuery:
    """One sub-topology's query as the backfill drives it: `run()` runs it once with `availableNow` and
    returns when it stopped (raising if it failed)."""

    def __init__(self, name: str, partitions: Iterable[Partition], checkpoint: Path, run: Callable[[], None]) -> None:
        self.name = name
        self.partitions = list(partitions)
        self.checkpoint = checkpoint
        self.run = run


def _consumed(query: BackfillQuery, bounds: dict[Partition, tuple[int, int]]) -> dict[Partition, int]:
    """Per partition: where the query's checkpoint says it is (a partition it never had a batch for: at the
    log start, which is where it would begin)."""
    positions = checkpoint_positions(query.checkpoint)
    return {tp: positions.get(tp, bounds[tp][0]) for tp in query.partitions}


def _behind(query: BackfillQuery, bounds: dict[Partition, tuple[int, int]], fed: set[str]) -> list[Partition]:
    """The partitions of fed topics that hold records the query has not consumed."""
    consumed = _consumed(query, bounds)
    return [tp for tp in query.partitions if tp[0] in fed and consumed[tp] < bounds[tp][1]]


def run_to_fixed_point(queries: Sequence[BackfillQuery], fed: set[str], offsets: KafkaPositions,
                       max_rounds: int = DEFAULT_MAX_ROUNDS) -> int:
    """Run `queries` (in data-flow order) until each has consumed its input to the end and no topic in
    `fed` holds records a reader of it has not consumed; returns the number of passes. Raises
    `BackfillIncompleteError` when a run ended short of its input's end, or after `max_rounds` passes."""
    ran_once: set[str] = set()
    for round_number in range(1, max_rounds + 1):
        ran = False
        for query in queries:
            bounds = offsets.bounds(query.partitions)
            if query.name in ran_once:
                behind = _behind(query, bounds, fed)
                if not behind:
                    continue
                log.info("backfill pass %d: %s runs again for %s", round_number, query.name,
                         ", ".join(f"{t}-{p}" for t, p in behind))
            query.run()
            ran_once.add(query.name)
            ran = True
            consumed = _consumed(query, bounds)
            short = [(tp, consumed[tp], bounds[tp][1]) for tp in query.partitions if consumed[tp] < bounds[tp][1]]
            if short:
                raise BackfillIncompleteError(
                    f"query {query.name} stopped before the end of its input: "
                    + ", ".join(f"{t}-{p} at offset {at} of {end}" for (t, p), at, end in short)
                    + " (stopped from outside, or its input could not be read); the backfill is not done")
        if not ran:
            log.info("backfill done after %d passes", round_number)
            return round_number
    growing = [f"{t}-{p}" for query in queries for t, p in _behind(query, offsets.bounds(query.partitions), fed)]
    raise BackfillIncompleteError(
        f"the backfill found no end after {max_rounds} passes over its queries: each pass wrote new records "
        f"to topics the topology reads again ({', '.join(sorted(set(growing))) or 'none left now'}): a loop "
        f"that keeps feeding itself, or input still being written round a loop; raise {MAX_ROUNDS_KEY} if it "
        "does end")
