"""WordCount with topic names from the environment, so each test gets topics of its own."""

from __future__ import annotations

import os

from examples.wordcount import split_words
from streamlet import Consumed, Grouped, Materialized, Produced, Serdes, StreamsBuilder, Topology


def topology() -> Topology:
    inp = os.environ.get("WORDCOUNT_INPUT", "streams-plaintext-input")
    out = os.environ.get("WORDCOUNT_OUTPUT", "streams-wordcount-output")
    builder = StreamsBuilder()
    (
        builder.stream(inp, Consumed(key_serde=Serdes.String(), value_serde=Serdes.String()))
        .flat_map_values(split_words)
        .group_by(lambda _k, w: w, Grouped(key_serde=Serdes.String(), value_serde=Serdes.String()))
        .count(Materialized("counts-store"))
        .to_stream()
        .to(out, Produced(key_serde=Serdes.String(), value_serde=Serdes.Long()))
    )
    return builder.build()
