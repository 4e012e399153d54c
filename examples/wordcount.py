"""WordCount, the seeds' first Kafka Streams example, in streamlet.

Run it against a broker with:
    streamlet run examples.wordcount:topology --set bootstrap.servers=127.0.0.1:9092 \
        --set application.id=wordcount-application

Lines from `streams-plaintext-input` are split into lower-cased words; a count per word is kept in
the LevelDB store `counts-store` (backed by the changelog `<application.id>-counts-store-changelog`)
and every update goes to `streams-wordcount-output` as String key / Long value.
"""

from __future__ import annotations

import re

from streamlet import Consumed, Grouped, Materialized, Produced, Serdes, StreamsBuilder, Topology

INPUT_TOPIC = "streams-plaintext-input"
OUTPUT_TOPIC = "streams-wordcount-output"

_NON_WORD = re.compile(r"\W+", re.ASCII)


def split_words(line: str) -> list[str]:
    """Java's `line.toLowerCase().split("\\\\W+")`: a leading empty string stays, trailing ones go."""
    lowered = line.lower()
    parts = _NON_WORD.split(lowered)
    if len(parts) == 1:  # no separator at all: Java returns the whole string, even ""
        return parts
    while parts and parts[-1] == "":
        parts.pop()
    return parts


def topology() -> Topology:
    builder = StreamsBuilder()
    lines = builder.stream(INPUT_TOPIC, Consumed(key_serde=Serdes.String(), value_serde=Serdes.String()))
    counts = (
        lines.flat_map_values(split_words)
        .group_by(lambda _key, word: word, Grouped(key_serde=Serdes.String(), value_serde=Serdes.String()))
        .count(Materialized("counts-store"))
    )
    counts.to_stream().to(OUTPUT_TOPIC, Produced(key_serde=Serdes.String(), value_serde=Serdes.Long()))
    return builder.build()
