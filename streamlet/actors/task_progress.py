"""`TaskProgress`: a task's position outside its stores, as plain data that survives a rebuilt task.

The asyncio runtime keeps a task alive between batches, so this lives in its objects. An engine that
builds the task afresh for every batch on whichever worker gets it (Spark) must carry it in its own
state instead, or stream-time punctuations would fire anew, and timestamp extractors would see no
partition time, at every batch.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

import orjson


@dataclass(slots=True)
class TaskProgress:
    stream_time: int = -1
    partition_times: dict[str, int] = field(default_factory=dict)
    """'topic:partition' -> that input partition's time, in the order the task first saw them."""
    stream_punctuations: list[int] = field(default_factory=list)
    wall_punctuations: list[int] = field(default_factory=list)
    round_robin: dict[str, int] = field(default_factory=dict)

    def to_bytes(self) -> bytes:
        return orjson.dumps(asdict(self))

    @classmethod
    def from_bytes(cls, data: bytes) -> TaskProgress:
        return cls(**orjson.loads(data))
