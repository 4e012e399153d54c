"""WordCount with topic names from the environment, so each test gets topics of its own: `TARGET` for
`streamlet run`, `topic_env` for its environment, `settings` for an instance."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

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


TARGET = "tests.integration.wordcount_app:topology"
"""This module's WordCount, as `streamlet run` loads it."""


def topic_env(inp: str, out: str) -> dict[str, str]:
    return {"WORDCOUNT_INPUT": inp, "WORDCOUNT_OUTPUT": out}


def settings(bootstrap: str, app_id: str, state_dir: Path) -> dict[str, Any]:
    return {
        "bootstrap.servers": bootstrap,
        "application.id": app_id,
        "state.dir": state_dir,
        "commit.interval.ms": 200,
        "default.key.serde": "String",
        "default.value.serde": "String",
    }
