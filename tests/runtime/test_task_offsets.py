"""The task offsets a streams group member reports, and when (Kafka Streams 4.4's client's schedule)."""

from __future__ import annotations

import json
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from streamlet.actors.state_manager import CHECKPOINT_FILE
from streamlet.actors.task_id import TaskId
from streamlet.kafka.assignor import HostTasks
from streamlet.runtime.streams_membership import endpoint_host_map
from streamlet.runtime.task_offsets import LONG_MAX, TaskOffsetReport, last_applied, local_task_offsets, offset_sum

T0, T1 = TaskId(0, 0), TaskId(1, 0)


@given(st.lists(st.integers(min_value=0, max_value=LONG_MAX - 1), max_size=4))
def test_a_sum_is_the_plain_sum_or_pinned_at_long_max(offsets: list[int]) -> None:
    assert offset_sum(offsets) == min(sum(offsets), LONG_MAX)


def test_an_unknown_end_offset_pins_the_sum() -> None:
    assert offset_sum([3, None]) == LONG_MAX


def test_a_copy_counts_the_last_record_it_applied() -> None:
    assert last_applied([10, 0, 5]) == 9 + 4  # a changelog nothing was applied from is left out


def test_local_offsets_come_from_checkpointed_task_directories(tmp_path: Path) -> None:
    (tmp_path / "0_0").mkdir()
    (tmp_path / "0_0" / CHECKPOINT_FILE).write_text(json.dumps({"a-changelog:0": 11, "b-changelog:0": 3}))
    (tmp_path / "1_0").mkdir()  # no checkpoint: wiped when the task opens, nothing to count
    (tmp_path / "7_0").mkdir()  # not a sub-topology of this topology
    (tmp_path / "7_0" / CHECKPOINT_FILE).write_text(json.dumps({"x:0": 5}))
    (tmp_path / "kafka-streams-process-metadata").write_text("{}")
    assert local_task_offsets(tmp_path, {0, 1}) == {T0: 10 + 2}
    assert local_task_offsets(tmp_path / "missing", {0}) == {}


class _Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_a_join_sends_everything_and_later_only_what_changed_when_due() -> None:
    state = ({T0: 5}, {T0: 9})
    clock = _Clock()
    report = TaskOffsetReport(lambda: state, clock)
    report.configure(15_000, 100)
    assert report.next(joining=True, assignment_changed=True, warmups=()) == ({T0: 5}, {T0: 9})
    state = ({T0: 7}, {T0: 9})
    clock.now = 14
    assert report.next(joining=False, assignment_changed=False, warmups=()) == (None, None)  # not due yet
    assert report.next(joining=False, assignment_changed=True, warmups=()) == ({T0: 7}, None)  # ends unchanged
    clock.now = 20
    assert report.next(joining=False, assignment_changed=False, warmups=()) == (None, None)  # nothing changed
    state = ({T0: 8}, {T0: 12})
    clock.now = 29
    assert report.next(joining=False, assignment_changed=False, warmups=()) == ({T0: 8}, {T0: 12})  # interval


def test_a_warm_up_that_caught_up_is_reported_at_once() -> None:
    state = ({T1: 0}, {T1: 1000})
    clock = _Clock()
    report = TaskOffsetReport(lambda: state, clock)
    report.configure(60_000, 100)
    report.next(joining=True, assignment_changed=True, warmups=())
    state = ({T1: 500}, {T1: 1000})
    assert report.next(joining=False, assignment_changed=False, warmups={T1}) == (None, None)  # lag 500
    state = ({T1: 950}, {T1: 1000})
    assert report.next(joining=False, assignment_changed=False, warmups={T1}) == ({T1: 950}, None)  # lag 50


def test_after_a_reset_the_next_due_report_is_full() -> None:
    state = ({T0: 5}, {T0: 9})
    report = TaskOffsetReport(lambda: state, _Clock())
    report.next(joining=True, assignment_changed=True, warmups=())
    report.reset()  # the heartbeat carrying it failed
    assert report.next(joining=False, assignment_changed=False, warmups=()) == ({T0: 5}, {T0: 9})


def test_the_brokers_endpoints_become_a_host_map_of_tasks() -> None:
    subs = {"in": 0, "app-counts-repartition": 1}
    endpoints = [  # a Java instance with two stream threads is two members at one endpoint
        ("a", 1, [("in", 0), ("app-counts-repartition", 0)], [("app-counts-repartition", 1)]),
        ("a", 1, [("in", 1)], []),
        ("b", 2, [("app-counts-repartition", 1), ("other-topic", 0)], [("app-counts-repartition", 0)]),
    ]
    assert endpoint_host_map(endpoints, subs) == (
        HostTasks("a:1", (TaskId(0, 0), TaskId(0, 1), TaskId(1, 0)), (TaskId(1, 1),)),
        HostTasks("b:2", (TaskId(1, 1),), (TaskId(1, 0),)),
    )
