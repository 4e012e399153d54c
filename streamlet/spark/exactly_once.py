"""One task's micro-batch under exactly-once: what to skip, what to restore, and one transaction.

At the start (`ExactlyOnceBatch(...)`) the task's transaction begins and the group's committed
offsets for its input partitions are read. Input below them was committed already (by an earlier
attempt of this batch, or by the asyncio runtime) and is skipped. If Kafka's offsets are ahead of
what the task's Spark state reflects (`SparkPosition`), the state is brought forward first
(`catch_up`) and the task progress committed with the offsets replaces Spark's. At the end
(`commit`) the task's output, changelog records included, and its next input offsets (with its
progress as their metadata, in Kafka Streams' format: see `commit_progress`) go into one transaction.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

import orjson

from streamlet.actors.stream_task import StreamTask
from streamlet.actors.task_progress import TaskProgress
from streamlet.spark.commit_progress import committed_progress, progress_metadata
from streamlet.spark.plan import ENGINE_KEY_PREFIX, SubTopologyPlan
from streamlet.spark.rows import ByPartition
from streamlet.spark.transactions import Committed, Drained, Offsets, TaskTransactions, task_transactions

FAIL_ONCE_KEY = f"{ENGINE_KEY_PREFIX}test.fail.once.file"
"""Tests only: a path. If no file is there when a task commits output, the task creates it, sends part
of its output in its transaction and fails before committing (a task failing mid-batch)."""


class InjectedTaskFailure(RuntimeError):
    """The failure `FAIL_ONCE_KEY` asks for."""


@dataclass
class SparkPosition:
    """What a task's Spark state reflects: the next input offsets and, per changelog partition, the
    offset after the last changelog record the state holds (kept in the task's Spark state)."""

    inputs: dict[str, int] = field(default_factory=dict)
    changelogs: dict[str, int] = field(default_factory=dict)

    def to_bytes(self) -> bytes:
        return orjson.dumps({"inputs": self.inputs, "changelogs": self.changelogs})

    @classmethod
    def from_bytes(cls, data: bytes | None) -> SparkPosition:
        if not data:
            return cls()
        raw = orjson.loads(data)
        return cls(dict(raw["inputs"]), dict(raw["changelogs"]))


class ExactlyOnceBatch:
    """One task's batch under exactly-once (see the module docstring)."""

    def __init__(self, plan: SubTopologyPlan, partition: int, txn: TaskTransactions | None = None) -> None:
        self._plan = plan
        self.inputs = [(topic, partition) for topic in plan.source_topics]
        self._txn = txn or task_transactions(plan.client_settings(), plan.subtopology_id, partition)
        self.committed: Committed = self._txn.begin(self.inputs)

    def behind(self, position: SparkPosition) -> bool:
        """Whether Kafka has committed input past what the Spark state reflects."""
        return any(o is not None and o > position.inputs.get(f"{t}:{p}", -1)
                   for (t, p), o in self.committed.offsets.items())

    def unprocessed(self, found: ByPartition) -> ByPartition:
        """`found` without the records below the committed offsets."""
        kept: ByPartition = {}
        for tp, records in found.items():
            start = self.committed.offsets.get(tp)
            rest = records if start is None else [r for r in records if r.offset >= start]
            if rest:
                kept[tp] = rest
        return kept

    def committed_progress(self) -> TaskProgress | None:
        """The task progress committed with the offsets (None: none, nothing committed)."""
        return committed_progress(self.committed.metadata, self.committed.offsets)

    def next_offsets(self, consumed: Offsets) -> Offsets:
        """The offsets to commit: what the task consumed now, else what was committed before."""
        result: Offsets = {}
        for tp in self.inputs:
            offset = consumed.get(tp, self.committed.offsets.get(tp))
            if offset is not None:
                result[tp] = offset
        return result

    def _maybe_fail(self, drained: Drained) -> None:
        marker = self._plan.settings.get(FAIL_ONCE_KEY)
        if not marker or not any(drained.values()):
            return
        path = Path(str(marker))
        try:
            fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
        except FileExistsError:
            return
        os.close(fd)
        keys = sorted(k for k, v in drained.items() if v)
        part = {k: drained[k][: max(1, len(drained[k]) // 2)] for k in keys[: max(1, len(keys) // 2)]}
        self._txn.send(part)
        raise InjectedTaskFailure(f"injected failure of task {self._plan.subtopology_id}_{self.inputs[0][1]} "
                                  f"after sending part of its output ({FAIL_ONCE_KEY})")

    def commit(self, drained: Drained, consumed: Offsets, progress: TaskProgress) -> Offsets:
        """Send the output and commit it with the next input offsets (and `progress` as their metadata);
        returns the acknowledged end offsets of what this producer wrote."""
        self._maybe_fail(drained)
        acked = self._txn.send(drained)
        offsets = self.next_offsets(consumed)
        self._txn.commit(offsets, progress_metadata(progress, offsets))
        return acked

    def abort(self) -> None:
        self._txn.drop()

    def position_after(self, before: SparkPosition, consumed: Offsets, acked: Offsets,
                       changelogs: list[tuple[str, int]]) -> SparkPosition:
        """The Spark state's position once this batch is committed."""
        logs = dict(before.changelogs)
        for topic, partition in changelogs:
            end = acked.get((topic, partition))
            where = f"{topic}:{partition}"
            if end is not None and end > logs.get(where, -1):
                logs[where] = end
        return SparkPosition({f"{t}:{p}": o for (t, p), o in self.next_offsets(consumed).items()}, logs)


def abandon(task: StreamTask, batch: ExactlyOnceBatch | None) -> None:
    """A task's batch failed: its unsent output is dropped, the task closed dirty and, under
    exactly-once, its producer dropped (the next attempt's start aborts the open transaction)."""
    task.collector.discard()
    task.close(clean=False)
    if batch is not None:
        batch.abort()
