"""`Change`: what flows between KTable nodes — the new value and, when asked for, the old one.

A KTable update is not just a value: downstream table operations need to know what it replaces
(to retract it from an aggregate, or to avoid forwarding a tombstone for a key that was never
emitted). Kafka Streams sends the old value only when a downstream node asked for it; otherwise
`old_value` is None. `KTable.to_stream()` unwraps a change to its new value.

`is_latest` is False only for an update a versioned table stored as an older version of its key
(an out-of-order record): Kafka Streams' table-table joins, foreign-key joins and table groupings
downstream of a versioned table drop such updates (KIP-914); everything else passes them on.
"""

from __future__ import annotations

from typing import Any, NamedTuple


class Change(NamedTuple):
    new_value: Any
    old_value: Any = None
    is_latest: bool = True
