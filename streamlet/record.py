"""Records and key-value pairs: the values that flow between processor nodes.

`Record` is immutable, like Kafka Streams' `Record`: the `with_*` methods return a new record, so a
processor can forward a changed copy without disturbing what its siblings see. It is a NamedTuple, not
a frozen dataclass, because every node of the hot path builds one: a tuple is built in C, where a frozen
dataclass sets each field through `object.__setattr__` (WordCount spent ~9% of its time there).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, NamedTuple

_new = tuple.__new__  # builds a NamedTuple without the Python-level __new__ frame (half the cost)

Headers = tuple[tuple[str, bytes], ...]
"""Kafka record headers as an immutable sequence of (name, value) pairs; names may repeat."""


class KeyValue(NamedTuple):
    """A key and a value, as Kafka Streams' `KeyValue`."""

    key: Any
    value: Any


class Record(NamedTuple):
    """One record: key, value, timestamp (ms since the epoch) and headers."""

    key: Any
    value: Any
    timestamp: int = 0
    headers: Headers = ()

    def with_key(self, key: Any) -> Record:
        """A copy with another key (records are immutable)."""
        return _new(Record, (key, self[1], self[2], self[3]))

    def with_value(self, value: Any) -> Record:
        """A copy with another value."""
        return _new(Record, (self[0], value, self[2], self[3]))

    def with_timestamp(self, timestamp: int) -> Record:
        """A copy with another timestamp (ms, not negative)."""
        if timestamp < 0:
            raise ValueError(f"a record timestamp must not be negative, got {timestamp}")
        return Record(self.key, self.value, timestamp, self.headers)

    def with_headers(self, headers: Headers | list[tuple[str, bytes]] | None) -> Record:
        """A copy with these headers, `(name, bytes)` pairs, replacing the old ones."""
        return Record(self.key, self.value, self.timestamp, tuple(headers or ()))


@dataclass(frozen=True, slots=True)
class RecordMetadata:
    """Where the record being processed came from (`ProcessorContext.record_metadata()`)."""

    topic: str
    partition: int
    offset: int
