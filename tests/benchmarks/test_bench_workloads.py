"""The benchmark's input data: event times a windowed changelog keeps for the whole run."""

from __future__ import annotations

import time

import pytest

from benchmarks import workloads as wl
from benchmarks.systems import FULL_RECORDS
from examples.bench_topologies_windows_join import window_count_topology

LONGEST_RUN_MS = 2 * 3_600_000  # `make bench` takes under 45 minutes; twice that and more as margin


def _window_changelog_retention_ms() -> int:
    """What the window_count application asks of its store's changelog topic (`retention.ms`)."""
    topology = window_count_topology()
    configs = [b.logging_config for b in topology.store_builders.values() if b.logging_enabled]
    assert len(configs) == 1
    assert "delete" in configs[0]["cleanup.policy"]  # compact,delete: the broker expires old windows
    return int(configs[0]["retention.ms"])


def test_every_benchmark_record_outlives_the_window_changelog_retention_during_a_run() -> None:
    # A record whose timestamp is older than retention.ms is deleted from the changelog by the broker;
    # an instance that takes the task over would then restore incomplete counts (the wrong 2-worker
    # window_count row of an earlier run). The oldest record of a run is the users table's.
    oldest = min(ts for _k, _v, ts in wl.users())
    newest = wl.BASE_TS + (FULL_RECORDS - 1) * wl.EVENT_SPACING_MS
    now = int(time.time() * 1000)
    assert now + LONGEST_RUN_MS - oldest < _window_changelog_retention_ms()
    assert newest <= now  # no event from the future: event time and wall-clock time stay comparable
    assert oldest < wl.BASE_TS


def test_base_ts_is_a_whole_minute_a_few_hours_back() -> None:
    now = 1_795_000_123_456
    base = wl._base_ts(now)
    assert base % 60_000 == 0
    assert 0 <= now - wl.EVENT_TIME_LEAD_MS - base < 60_000


@pytest.mark.parametrize("workload", ["session_count", "stream_join"])
def test_the_expected_output_of_the_issue_16_workloads_is_what_the_driver_writes(
        workload: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The checker's expectation (computed directly from the generator) against streamlet's topology on
    the driver, one partition: the final sessions and the joined pairs, nothing missing or extra."""
    from benchmarks.apps import streamlet_app
    from streamlet import Serdes
    from streamlet.testing.test_driver import TopologyTestDriver

    monkeypatch.setenv("BENCH_INPUT", "events")
    monkeypatch.setenv("BENCH_OUTPUT", "out")
    records = 20_000  # 2 minutes of event time: sessions (30 s gap) close well before the end
    with TopologyTestDriver(getattr(streamlet_app, workload)(), {"application.id": workload}) as driver:
        events = driver.create_input_topic("events", Serdes.Bytes(), Serdes.Bytes())
        for key, value, ts in wl.events(records):
            events.pipe_input(key, value, ts)
        output = driver.create_output_topic("out", Serdes.Bytes(), Serdes.Bytes()).read_key_values_to_list()
    tracker = wl.Expected(workload, records, partitions=1).tracker()
    for kv in output:
        tracker.add(kv.key, kv.value)
    check = tracker.check()
    assert check.correct, check.detail
    assert tracker.complete and check.outputs > 20
