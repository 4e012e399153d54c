"""Applications the Spark CLI tests start as `MODULE:FUNCTION` (topics named by environment variables,
since `streamlet spark run` calls FUNCTION without arguments and one broker serves every test)."""

from __future__ import annotations

import os

from streamlet.dsl import Consumed, Grouped, Materialized, Produced, StreamsBuilder
from streamlet.serdes import Serdes
from streamlet.topology import Topology

INPUT_ENV = "STREAMLET_SPARK_TEST_INPUT"
OUTPUT_ENV = "STREAMLET_SPARK_TEST_OUTPUT"


def wordcount() -> Topology:
    """The seed's WordCount (split on spaces), reading and writing the topics the environment names."""
    s = Serdes.String()
    builder = StreamsBuilder()
    (builder.stream(os.environ[INPUT_ENV], Consumed(s, s))
     .flat_map_values(lambda line: line.split())
     .group_by(lambda _key, word: word, Grouped(s, s))
     .count(Materialized("counts"))
     .to_stream().to(os.environ[OUTPUT_ENV], Produced(s, Serdes.Long())))
    return builder.build()


def endless_loop() -> Topology:
    """A loop without end: every value goes back to the topic it came from, one character longer."""
    s = Serdes.String()
    builder = StreamsBuilder()
    loop = os.environ[INPUT_ENV]
    builder.stream(loop, Consumed(s, s)).map_values(lambda v: v + "+").to(loop, Produced(s, s))
    return builder.build()
