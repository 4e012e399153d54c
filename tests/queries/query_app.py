"""The application interactive-query tests run: per-key counts and per-key counts in 1-minute windows.

Topics come from the environment (QUERY_INPUT), so each test, and each process of a test, reads its own.
"""

from __future__ import annotations

import os
from datetime import timedelta

from streamlet import Consumed, Grouped, Materialized, Serdes, StreamsBuilder, TimeWindows, Topology

WINDOW_MS = 60_000


def topology() -> Topology:
    """`counts` (timestamped key-value) and `windowed-counts` (timestamped window) over QUERY_INPUT."""
    builder = StreamsBuilder()
    grouped = builder.stream(os.environ.get("QUERY_INPUT", "query-input"),
                             Consumed(key_serde=Serdes.String(), value_serde=Serdes.String())) \
        .group_by_key(Grouped(key_serde=Serdes.String(), value_serde=Serdes.String()))
    grouped.count(Materialized("counts"))
    grouped.windowed_by(TimeWindows.of_size_with_no_grace(timedelta(milliseconds=WINDOW_MS))) \
        .count(Materialized("windowed-counts"))
    return builder.build()
