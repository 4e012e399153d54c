"""The benchmark's WordCount: the example topology reading the benchmark's topics."""

from __future__ import annotations

import os

from examples.wordcount import split_words
from streamlet import Consumed, Grouped, Materialized, Produced, Serdes, StreamsBuilder, Topology


def topology() -> Topology:
    builder = StreamsBuilder()
    (
        builder.stream(os.environ["BENCH_INPUT"], Consumed(key_serde=Serdes.Bytes(), value_serde=Serdes.String()))
        .flat_map_values(split_words)
        .group_by(lambda _k, w: w, Grouped(key_serde=Serdes.String(), value_serde=Serdes.String()))
        .count(Materialized("counts-store"))
        .to_stream()
        .to(os.environ["BENCH_OUTPUT"], Produced(key_serde=Serdes.String(), value_serde=Serdes.Long()))
    )
    return builder.build()
