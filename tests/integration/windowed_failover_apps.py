"""Topologies whose output depends on stream time, for the failover tests of issue #16: a session-windowed
count with `suppress(until_window_closes)` and a stream-stream outer join. Topic names come from the
environment, so that the same function runs in-process (the driver's expectation) and as `streamlet run`."""

from __future__ import annotations

import os
from datetime import timedelta

from streamlet import (
    BufferConfig,
    Consumed,
    JoinWindows,
    Materialized,
    Produced,
    Serdes,
    SessionWindows,
    StreamsBuilder,
    Suppressed,
    Topology,
)
from streamlet.windowed import Windowed

S = Serdes.String()


def window_key(wk: Windowed, count: int | None) -> tuple[str, str | None]:
    return f"{wk.key}@{wk.window.start}-{wk.window.end}", None if count is None else str(count)


def session_final_counts() -> Topology:
    """Clicks per user session (5 s inactivity gap, 2 s grace), only each session's final count."""
    builder = StreamsBuilder()
    (builder.stream(os.environ["SW_INPUT"], Consumed(S, S))
     .group_by_key()
     .windowed_by(SessionWindows.of_inactivity_gap_and_grace(timedelta(seconds=5), timedelta(seconds=2)))
     .count(Materialized("session-counts"))
     .suppress(Suppressed.until_window_closes(BufferConfig.unbounded()))
     .to_stream()
     .map(window_key)
     .to(os.environ["SW_OUTPUT"], Produced(S, S)))
    return builder.build()


def outer_joined(left: str | None, right: str | None) -> str:
    return f"{left}+{right}"


def clicks_outer_join_views() -> Topology:
    """Each click with the views of its key within 3 s either way (1 s grace), and unmatched ones alone."""
    builder = StreamsBuilder()
    clicks = builder.stream(os.environ["OJ_LEFT"], Consumed(S, S))
    views = builder.stream(os.environ["OJ_RIGHT"], Consumed(S, S))
    (clicks.outer_join(views, outer_joined,
                       JoinWindows.of_time_difference_and_grace(timedelta(seconds=3), timedelta(seconds=1)))
     .to(os.environ["OJ_OUTPUT"], Produced(S, S)))
    return builder.build()
