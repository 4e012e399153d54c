"""`on_window_close` aggregations for the restart tests of issue 23 (test_emit_final_restart.py): a tumbling
count and a session count, each sending every window's final result once. Topic names come from the
environment, so that the same function runs in-process (the driver's expectation) and as `streamlet run`."""

from __future__ import annotations

import os
from datetime import timedelta

from streamlet import (
    Consumed,
    EmitStrategy,
    Materialized,
    Produced,
    Serdes,
    SessionWindows,
    StreamsBuilder,
    TimeWindows,
    Topology,
)
from tests.integration.windowed_failover_apps import window_key

S = Serdes.String()


def tumbling_final_counts() -> Topology:
    """Records per key in 10 s windows, no grace, only each window's final count (store kept 1 h)."""
    builder = StreamsBuilder()
    (builder.stream(os.environ["EF_INPUT"], Consumed(S, S))
     .group_by_key()
     .windowed_by(TimeWindows.of_size_with_no_grace(timedelta(seconds=10)))
     .emit_strategy(EmitStrategy.on_window_close())
     .count(Materialized("tumbling-counts", retention=timedelta(hours=1)))
     .to_stream()
     .map(window_key)
     .to(os.environ["EF_OUTPUT"], Produced(S, S)))
    return builder.build()


def graced_final_counts() -> Topology:
    """Records per key in 10 s windows with 5 s of grace, only each window's final count (store kept 1 h):
    a window closes when stream time passes its end by the grace, so out-of-order records still count."""
    builder = StreamsBuilder()
    (builder.stream(os.environ["EF_INPUT"], Consumed(S, S))
     .group_by_key()
     .windowed_by(TimeWindows.of_size_and_grace(timedelta(seconds=10), timedelta(seconds=5)))
     .emit_strategy(EmitStrategy.on_window_close())
     .count(Materialized("graced-counts", retention=timedelta(hours=1)))
     .to_stream()
     .map(window_key)
     .to(os.environ["EF_OUTPUT"], Produced(S, S)))
    return builder.build()


def session_final_counts() -> Topology:
    """Clicks per user session (5 s inactivity gap, no grace), only each session's final count (store kept
    one day), as a new user's sessionization app does."""
    builder = StreamsBuilder()
    (builder.stream(os.environ["EF_INPUT"], Consumed(S, S))
     .group_by_key()
     .windowed_by(SessionWindows.of_inactivity_gap_with_no_grace(timedelta(seconds=5)))
     .emit_strategy(EmitStrategy.on_window_close())
     .count(Materialized("session-counts", retention=timedelta(days=1)))
     .to_stream()
     .map(window_key)
     .to(os.environ["EF_OUTPUT"], Produced(S, S)))
    return builder.build()
