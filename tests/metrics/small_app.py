"""The small applications the metrics tests run on the broker: input -> upper-cased values -> output, or a
count per key into a cached persistent store ("counts") -> output."""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from streamlet import Consumed, Materialized, Produced, Serdes, StreamsBuilder
from streamlet.runtime.kafka_streams import KafkaStreams
from streamlet.topology import Topology
from tests.helpers.kafka import create_topics


@dataclass(frozen=True)
class SmallApp:
    """A created (not started) client and its input and output topics."""

    streams: KafkaStreams
    source: str
    sink: str
    counting: bool = False
    settings: dict[str, Any] = field(default_factory=dict)


def _topology(source: str, sink: str, counting: bool) -> Topology:
    builder = StreamsBuilder()
    stream = builder.stream(source, Consumed(key_serde=Serdes.String(), value_serde=Serdes.String()))
    if counting:
        (stream.group_by_key().count(Materialized("counts")).to_stream()
         .to(sink, Produced(key_serde=Serdes.String(), value_serde=Serdes.Long())))
    else:
        stream.map_values(str.upper).to(sink, Produced(key_serde=Serdes.String(), value_serde=Serdes.String()))
    return builder.build()


async def small_app(bootstrap: str, tmp_path: Path, name: str, *, counting: bool = False, partitions: int = 1,
                    **config: object) -> SmallApp:
    """Creates `name`-in-<suffix> (`partitions` partitions) and `name`-out-<suffix>, and a client reading one
    into the other (upper-casing values, or `counting` per key), a 100 ms commit interval and `config` on top."""
    sfx = uuid.uuid4().hex[:8]
    source, sink = f"{name}-in-{sfx}", f"{name}-out-{sfx}"
    await create_topics(bootstrap, {source: partitions, sink: 1})
    settings = {"application.id": f"{name}-{sfx}", "bootstrap.servers": bootstrap, "state.dir": str(tmp_path),
                "commit.interval.ms": 100, **config}
    return SmallApp(KafkaStreams(_topology(source, sink, counting), settings), source, sink, counting, settings)


def restarted(app: SmallApp, **config: object) -> SmallApp:
    """A new client of `app`'s application (same id and topics), its settings with `config` on top (a fresh
    `state.dir` makes it restore its stores from their changelogs)."""
    settings = {**app.settings, **config}
    return SmallApp(KafkaStreams(_topology(app.source, app.sink, app.counting), settings), app.source, app.sink,
                    app.counting, settings)
