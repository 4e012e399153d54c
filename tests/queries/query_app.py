"""The applications interactive-query tests run: per-key counts, per-key counts in 1-minute windows and
(`all_store_types`) per-key counts per session of activity.

Topics come from the environment (QUERY_INPUT), so each test, and each process of a test, reads its own.
"""

from __future__ import annotations

import os
from datetime import timedelta

from streamlet import (
    Consumed,
    Grouped,
    KGroupedStream,
    Materialized,
    Serdes,
    SessionWindows,
    StreamsBuilder,
    TimeWindows,
    Topology,
)

WINDOW_MS = 60_000
SESSION_GAP_MS = 10_000


def _counts(builder: StreamsBuilder) -> KGroupedStream:
    """`counts` (timestamped key-value) and `windowed-counts` (timestamped window) over QUERY_INPUT."""
    grouped = builder.stream(os.environ.get("QUERY_INPUT", "query-input"),
                             Consumed(key_serde=Serdes.String(), value_serde=Serdes.String())) \
        .group_by_key(Grouped(key_serde=Serdes.String(), value_serde=Serdes.String()))
    grouped.count(Materialized("counts"))
    grouped.windowed_by(TimeWindows.of_size_with_no_grace(timedelta(milliseconds=WINDOW_MS))) \
        .count(Materialized("windowed-counts"))
    return grouped


def topology() -> Topology:
    """`counts` and `windowed-counts` over QUERY_INPUT."""
    builder = StreamsBuilder()
    _counts(builder)
    return builder.build()


def all_store_types() -> Topology:
    """`topology()` and a session store, `sessions`: counts per session of activity (10 s inactivity gap),
    kept for 10 minutes (by default only for the gap plus grace)."""
    builder = StreamsBuilder()
    _counts(builder).windowed_by(SessionWindows.of_inactivity_gap_with_no_grace(
        timedelta(milliseconds=SESSION_GAP_MS))).count(Materialized("sessions", retention=timedelta(minutes=10)))
    return builder.build()
