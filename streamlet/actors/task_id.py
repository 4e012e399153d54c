"""`TaskId`: the identity of a task, (sub-topology, partition), printed "s_p" as Kafka Streams prints it.

A NamedTuple so that it is hashable, ordered (sub-topology first, then partition) and equal to the
plain `(subtopology, partition)` tuples that other runtime modules already use as task keys.
"""

from __future__ import annotations

from typing import NamedTuple


class TaskId(NamedTuple):
    subtopology: int
    partition: int

    def __str__(self) -> str:
        return f"{self.subtopology}_{self.partition}"

    @classmethod
    def parse(cls, text: str) -> TaskId:
        """The inverse of `str()`: "1_3" -> TaskId(1, 3) (state directories are named this way)."""
        sub, sep, part = text.partition("_")
        if not sep or not sub.isdigit() or not part.isdigit():
            raise ValueError(f"not a task id: {text!r} (expected '<subtopology>_<partition>')")
        return cls(int(sub), int(part))
