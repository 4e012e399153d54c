"""`Position`: the input offsets a store has seen, per topic and partition (Kafka Streams' `Position`).

Every store of a task records which record last wrote it: at each write the typed store keeps the
current record context (`last_write`), and the task folds it into the store's `position` at the end
of each run of records from one partition, before a punctuation, and after the caches flush (see
`fold_position`). A record that does not write the store leaves its position alone, as in Kafka
Streams, whose stores update their position on every put with the record's topic, partition and
offset. Writes made by a punctuator carry no input record and count for nothing.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


class Position:
    """The offsets a store has seen: for each input topic, its partitions' last written-from offsets.

    Kafka Streams' `Position`. `with_component` and `merge` change this object and return it (as
    Java's do); `copy()` gives an independent one. Equal when their maps are equal."""

    __slots__ = ("_offsets",)

    def __init__(self, offsets: Mapping[str, Mapping[int, int]] | None = None) -> None:
        self._offsets: dict[str, dict[int, int]] = {
            topic: dict(partitions) for topic, partitions in (offsets or {}).items()}

    @staticmethod
    def empty_position() -> Position:
        """A position that has seen nothing."""
        return Position()

    @staticmethod
    def from_map(offsets: Mapping[str, Mapping[int, int]]) -> Position:
        """A position from `{topic: {partition: offset}}`."""
        return Position(offsets)

    def with_component(self, topic: str, partition: int, offset: int) -> Position:
        """Record `offset` for the partition (replacing what it had); returns this position."""
        self._offsets.setdefault(topic, {})[partition] = offset
        return self

    def merge(self, other: Position | None) -> Position:
        """Take the larger offset of each partition from `other`; returns this position."""
        if other is not None:
            for topic, partitions in other._offsets.items():
                mine = self._offsets.setdefault(topic, {})
                for partition, offset in partitions.items():
                    if offset > mine.get(partition, -1):
                        mine[partition] = offset
        return self

    def copy(self) -> Position:
        """An independent copy."""
        return Position(self._offsets)

    def get_topics(self) -> set[str]:
        """The topics with at least one partition."""
        return set(self._offsets)

    def get_partition_positions(self, topic: str) -> dict[int, int]:
        """`{partition: offset}` of `topic` (empty when unseen)."""
        return dict(self._offsets.get(topic, {}))

    def is_empty(self) -> bool:
        """Whether the position has seen nothing."""
        return not self._offsets

    def to_dict(self) -> dict[str, dict[int, int]]:
        """`{topic: {partition: offset}}`, a copy."""
        return {topic: dict(partitions) for topic, partitions in self._offsets.items()}

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Position) and self._offsets == other._offsets

    def __hash__(self) -> int:
        return hash(tuple(sorted((t, tuple(sorted(p.items()))) for t, p in self._offsets.items())))

    def __repr__(self) -> str:
        return f"Position{{position={self._offsets}}}"


def fold_position(store: Any) -> None:
    """Move a store's `last_write` (the record context of its last write, or None) into its
    `position`; stores that track no position are left alone."""
    ctx = getattr(store, "last_write", None)
    if ctx is None:
        return
    store.last_write = None
    if ctx.topic is not None and ctx.offset >= 0:
        store.position.with_component(ctx.topic, ctx.partition, ctx.offset)
