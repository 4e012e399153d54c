"""The per-record folds of `aggregate`, `reduce` and `count` into a timestamped store, compiled.

They are apart from their suppliers (`aggregate.py`) because the suppliers travel with a pickled topology
(the Spark engine) and a mypyc-compiled class does not survive pickle, while these processors are only
ever built on the worker that runs them: so this module can be in `streamlet._compiled.HOT_MODULES`
(WordCount's count runs here once per word). The rules they follow are in `aggregate.py`'s docstring.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final

from streamlet.dsl.change import Change
from streamlet.dsl.processors.forwarding import TimestampedTupleForwarder, log_skipped, timestamped_store
from streamlet.processor import Processor, ProcessorContext
from streamlet.record import Record
from streamlet.stores.api import ValueAndTimestamp
from streamlet.stores.keyvalue.api import TimestampedKeyValueStore
from streamlet.stores.keyvalue.timestamped import TypedTimestampedKeyValueStore

_new: Final = tuple.__new__  # a NamedTuple built without its Python-level __new__ frame (hot path)
_ValueAndTimestamp: Final = ValueAndTimestamp  # Final: a C static when compiled, not a dict look-up per use

Initializer = Callable[[], Any]
Aggregator = Callable[[Any, Any, Any], Any]
Reducer = Callable[[Any, Any], Any]


class _TimestampedFold(Processor):
    """What `aggregate` and `reduce` share: the store, and the update stored then sent on (at once without a
    cache; with one, the cache sends it at its flush)."""

    _store: TimestampedKeyValueStore
    _typed: TypedTimestampedKeyValueStore | None
    """`_store` when it is the DSL's own store class: compiled, called directly, not through Python's call protocol."""
    _forwarder: TimestampedTupleForwarder

    def __init__(self, store_name: str, send_old_values: bool) -> None:
        self._store_name = store_name
        self._send_old_values = send_old_values

    def init(self, context: ProcessorContext) -> None:
        super().init(context)
        store = self._store = timestamped_store(context, self._store_name)
        self._typed = store if type(store) is TypedTimestampedKeyValueStore else None
        self._forwarder = TimestampedTupleForwarder(self._store, context, self._send_old_values)
        self._caching = self._forwarder.caching  # with a cache, updates go downstream at its flush

    def process(self, record: Record) -> None:
        key, value = record.key, record.value
        if key is None or value is None:
            log_skipped(self.context, "null key or value")
            return
        typed = self._typed
        stored = typed.get(key) if typed is not None else self._store.get(key)
        timestamp = record.timestamp
        if stored is not None and stored[1] > timestamp:
            timestamp = stored[1]  # the aggregate carries the largest timestamp folded into it
        self._fold(record, stored, timestamp)

    def _fold(self, record: Record, stored: ValueAndTimestamp | None, timestamp: int) -> None:
        """Fold `record` into the key's `stored` aggregate (None: none yet) and `_update` with the result."""
        raise NotImplementedError

    def _update(self, record: Record, new: Any, old: Any, timestamp: int) -> None:
        key = record.key
        typed = self._typed
        if typed is not None:
            typed.put(key, _new(_ValueAndTimestamp, (new, timestamp)))
        else:
            self._store.put(key, _new(_ValueAndTimestamp, (new, timestamp)))
        if not self._caching:
            self._forwarder.maybe_forward(
                Record(key, Change(new, old if self._send_old_values else None), timestamp, record.headers)
            )


class StreamAggregate(_TimestampedFold):
    """KStreamAggregate: folds each record into its key's stored aggregate (a timestamped store)."""

    def __init__(self, store_name: str, initializer: Initializer, aggregator: Aggregator,
                 send_old_values: bool, counting: bool = False) -> None:
        super().__init__(store_name, send_old_values)
        self._initializer = initializer
        self._aggregator = aggregator
        # `count()` (the supplier knows its initializer and aggregator): the fold inline (0, then +1)
        # instead of a Python call per record.
        self._counting = counting

    def _fold(self, record: Record, stored: ValueAndTimestamp | None, timestamp: int) -> None:
        old = (0 if self._counting else self._initializer()) if stored is None else stored[0]
        new = old + 1 if self._counting else self._aggregator(record.key, record.value, old)
        self._update(record, new, old, timestamp)


class StreamReduce(_TimestampedFold):
    """KStreamReduce: the key's first value, then each next one reduced into it (a timestamped store)."""

    def __init__(self, store_name: str, reducer: Reducer, send_old_values: bool) -> None:
        super().__init__(store_name, send_old_values)
        self._reducer = reducer

    def _fold(self, record: Record, stored: ValueAndTimestamp | None, timestamp: int) -> None:
        if stored is None:
            self._update(record, record.value, None, timestamp)
        else:
            self._update(record, self._reducer(stored[0], record.value), stored[0], timestamp)
