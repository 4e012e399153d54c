"""`TaskProgress`: a task's position outside its stores, as plain data that survives a rebuilt task.

The asyncio runtime keeps a task alive between batches, so this lives in its objects. An engine that
builds the task afresh for every batch on whichever worker gets it (Spark) must carry it in its own
state instead, or stream-time punctuations would fire anew, and timestamp extractors would see no
partition time, at every batch.

`CommitTimes` is the part of it that Kafka Streams itself carries across restarts, in the metadata of
the committed offsets: partition times and processor metadata. Every engine commits it and restores it
when a task starts.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Protocol, runtime_checkable

import orjson


@runtime_checkable
class CarriesProgress(Protocol):
    """A processor that keeps a position of its own outside any store (the windowed aggregation's
    observed stream time, which closes windows). The asyncio runtime keeps the processor alive, so it
    never asks; an engine that rebuilds tasks per batch saves `carried_progress()` (JSON-able) and hands
    it back to the new processor's `resume_progress` right after its `init`."""

    def carried_progress(self) -> Any: ...

    def resume_progress(self, progress: Any) -> None: ...


@dataclass(frozen=True, slots=True)
class CommitTimes:
    """What a task commits with its offsets besides them, as Kafka Streams keeps it in each offset's
    metadata (`streamlet.kafka.commit_metadata`), and what a task starting reads back: each input
    partition's time, and the task's processor metadata, a map in which an `on_window_close` aggregation
    keeps, under its store's name, the window close time of its last emit."""

    partition_times: dict[tuple[str, int], int]
    processor_metadata: dict[str, int]


@dataclass(slots=True)
class TaskProgress:
    stream_time: int = -1
    partition_times: dict[str, int] = field(default_factory=dict)
    """'topic:partition' -> that input partition's time, in the order the task first saw them."""
    stream_punctuations: list[int] = field(default_factory=list)
    wall_punctuations: list[int] = field(default_factory=list)
    round_robin: dict[str, int] = field(default_factory=dict)
    processors: dict[str, Any] = field(default_factory=dict)
    """Processor node name -> what its `CarriesProgress.carried_progress()` returned."""
    processor_metadata: dict[str, int] = field(default_factory=dict)
    """The task's processor metadata (see `CommitTimes`); absent from progress saved before issue 23."""

    def to_bytes(self) -> bytes:
        return orjson.dumps(asdict(self))

    @classmethod
    def from_bytes(cls, data: bytes) -> TaskProgress:
        return cls(**orjson.loads(data))
