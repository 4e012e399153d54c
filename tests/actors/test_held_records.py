"""Records a deserializer cannot read for a reason that is no record's fault (a `RetriableError`: the
schema registry unreachable) are held, in order, never handed to the handler, retried after a growing wait,
and fail the task once the failure has lasted `task.timeout.ms`."""

from __future__ import annotations

from typing import Any

import pytest

from streamlet.actors.partition_group import PartitionGroup, RawRecord
from streamlet.actors.processor_node import SourceNode
from streamlet.errors import RetriableError
from streamlet.serdes import Deserializer, Serdes

TOPIC = "in"


class Flaky(Deserializer[str]):
    """Raises a RetriableError for b"needs-registry" while `down`."""

    def __init__(self) -> None:
        super().__init__()
        self.down = True

    def deserialize(self, topic: str | None, data: bytes | None) -> str | None:
        if data == b"needs-registry" and self.down:
            raise RetriableError("the registry cannot be reached")
        return None if data is None else data.decode()


def _records(values: list[bytes], start: int = 0) -> list[RawRecord]:
    return [RawRecord(TOPIC, 0, start + i, 1000 + start + i, None, v) for i, v in enumerate(values)]


def _group(clock: list[int], handled: list[Any]) -> tuple[PartitionGroup, Flaky]:
    flaky = Flaky()
    source = SourceNode("src", [TOPIC], Serdes.Bytes().deserializer, flaky, None)
    group = PartitionGroup({TOPIC: source}, lambda raw, exc: handled.append(raw) or True)
    group.retry_backoff_ms, group.retry_backoff_max_ms, group.retry_timeout_ms = 100, 400, 10_000
    group.now_ms = lambda: clock[0]
    return group, flaky


def _drain(group: PartitionGroup) -> list[tuple[str, int]]:
    out = []
    while (taken := group.next_run(100)) is not None:
        out += [(record.value, offset) for record, offset, _raw in taken[1]]
    return out


@pytest.fixture
def clock() -> list[int]:
    return [1_000_000]


def test_held_records_wait_in_order_and_resume(clock: list[int]) -> None:
    handled: list[Any] = []
    group, flaky = _group(clock, handled)
    assert group.add_records(TOPIC, 0, _records([b"a", b"needs-registry", b"b"])) == 1
    assert _drain(group) == []  # the task waits: nothing is processed while records are held
    assert group.add_records(TOPIC, 0, _records([b"c"], start=3)) == 0  # queued behind the held ones
    assert group.buffered_in(TOPIC, 0) == 4  # the fetch pauses on these too
    deadlines = []
    for _ in range(4):  # still down: the wait doubles up to its maximum
        deadline = group.held_deadline()
        assert deadline is not None
        deadlines.append(deadline - clock[0])
        clock[0] = deadline
        group.retry_held()
    assert deadlines == [100, 200, 400, 400]
    flaky.down = False
    clock[0] = group.held_deadline() or 0
    group.retry_held()
    assert group.held_deadline() is None
    assert _drain(group) == [("a", 0), ("needs-registry", 1), ("b", 2), ("c", 3)]
    assert handled == [] and group.skipped == 0


def test_a_retry_before_its_time_does_nothing(clock: list[int]) -> None:
    group, flaky = _group(clock, [])
    group.add_records(TOPIC, 0, _records([b"needs-registry"]))
    flaky.down = False
    group.retry_held()  # not due yet
    assert group.held_deadline() is not None and _drain(group) == []


def test_the_failure_fails_the_task_after_task_timeout(clock: list[int]) -> None:
    group, _flaky = _group(clock, [])
    group.add_records(TOPIC, 0, _records([b"needs-registry"]))
    clock[0] += 10_000
    with pytest.raises(RetriableError) as failure:
        group.retry_held()
    assert "task.timeout.ms (10000 ms)" in str(failure.value.__notes__)
