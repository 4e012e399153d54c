"""A task's progress outside its stores survives a rebuilt task (what the Spark engine relies on)."""

from __future__ import annotations

from streamlet.actors.punctuation_queue import PunctuationQueue
from streamlet.actors.task_progress import TaskProgress


def _fire_times(queue: PunctuationQueue, clock: list[int]) -> list[tuple[str, int]]:
    fired: list[tuple[str, int]] = []
    for now in clock:
        queue.may_punctuate(now, lambda sched, at: fired.append((sched.node, at)))
    return fired


def test_punctuation_schedules_resume_where_they_were() -> None:
    def made() -> PunctuationQueue:
        queue = PunctuationQueue()
        queue.schedule("a", 10, lambda _t: None, 0)
        queue.schedule("b", 7, lambda _t: None, 0)
        return queue

    alive = made()
    _fire_times(alive, [3, 15, 22])
    rebuilt = made()
    rebuilt.restore_next_times(alive.next_times())
    later = [25, 29, 31, 40, 58]  # at 25 nothing is due any more: a fresh queue would fire both
    expected = _fire_times(alive, later)
    assert expected[0] == ("b", 29)
    assert _fire_times(rebuilt, later) == expected


def test_a_cancelled_schedule_stays_cancelled() -> None:
    queue = PunctuationQueue()
    queue.schedule("a", 10, lambda _t: None, 0).cancel()
    queue.schedule("b", 10, lambda _t: None, 5)
    rebuilt = PunctuationQueue()
    rebuilt.schedule("a", 10, lambda _t: None, 0)
    rebuilt.schedule("b", 10, lambda _t: None, 0)
    rebuilt.restore_next_times(queue.next_times())
    assert _fire_times(rebuilt, [5]) == [("b", 5)]


def test_progress_round_trips_through_bytes() -> None:
    progress = TaskProgress(stream_time=42, partition_times={"t:0": 41, "u:0": 40}, stream_punctuations=[50, -1],
                            wall_punctuations=[1_000], round_robin={"out": 2}, processors={"agg": 42})
    assert TaskProgress.from_bytes(progress.to_bytes()) == progress
    assert list(TaskProgress.from_bytes(progress.to_bytes()).partition_times) == ["t:0", "u:0"]
