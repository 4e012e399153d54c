"""The KStream operations that keep no state: one record in, zero or more records out.

Each output record is the input record with a new key and/or value, so its timestamp and headers
carry over, as in Kafka Streams. The callables are bound once in `__init__` and `forward` once in
`init`, keeping `process` to a couple of attribute reads per record.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, Final

from streamlet.processor import Processor, ProcessorContext
from streamlet.record import Record

_new: Final = tuple.__new__  # a NamedTuple built without its Python-level __new__ frame (hot path)
_Record: Final = Record  # Final: a C static when compiled, not a dict look-up per use

Predicate = Callable[[Any, Any], Any]
KeyValueMapper = Callable[[Any, Any], Any]
ValueMapper = Callable[[Any], Any]
ForeachAction = Callable[[Any, Any], Any]


class _Forwarding(Processor):
    """Forwards with `forwarder_and_guard`: each `process` catches its children's errors in its own frame
    (free until something raises) and hands them to `_failed`, which handles them at the child that raised
    (Kafka Streams handles a processing error at the failing node), instead of a guarding frame per hop."""

    _forward: Callable[[Record], None]
    _failed: Callable[[Record, Exception], None]

    def init(self, context: ProcessorContext) -> None:
        super().init(context)
        self._forward, self._failed = context.forwarder_and_guard()


class StreamFilter(_Forwarding):
    """Forwards records the predicate accepts (or rejects, for `filter_not`)."""

    def __init__(self, predicate: Predicate, negate: bool = False) -> None:
        self._predicate = predicate
        self._negate = negate

    def process(self, record: Record) -> None:
        if bool(self._predicate(record.key, record.value)) is not self._negate:
            try:
                self._forward(record)
            except Exception as exc:
                self._failed(record, exc)


class PassThrough(_Forwarding):
    """Forwards every record: `merge`, and the filter in front of a repartition sink."""

    def process(self, record: Record) -> None:
        try:
            self._forward(record)
        except Exception as exc:
            self._failed(record, exc)


class DropNullKeys(_Forwarding):
    """The filter in front of a repartition sink: Kafka Streams 3.9 does not write a record without a key
    there, unless a left join reads the repartitioned stream (see repartition.py)."""

    def process(self, record: Record) -> None:
        if record.key is not None:
            try:
                self._forward(record)
            except Exception as exc:
                self._failed(record, exc)


class StreamMap(_Forwarding):
    """`map`: the mapper returns a new `(key, value)` (a `KeyValue` or a 2-tuple)."""

    def __init__(self, mapper: KeyValueMapper) -> None:
        self._mapper = mapper

    def process(self, record: Record) -> None:
        key, value = self._mapper(record.key, record.value)
        out = _new(_Record, (key, value, record.timestamp, record.headers))
        try:
            self._forward(out)
        except Exception as exc:
            self._failed(out, exc)


class StreamSelectKey(_Forwarding):
    """`select_key` and `group_by`'s key selector: a new key, the same value."""

    def __init__(self, key_selector: KeyValueMapper) -> None:
        self._key_selector = key_selector

    def process(self, record: Record) -> None:
        value = record[1]
        out = _new(_Record, (self._key_selector(record[0], value), value, record[2], record[3]))
        try:
            self._forward(out)
        except Exception as exc:
            self._failed(out, exc)


class StreamMapValues(_Forwarding):
    """`map_values`: a new value from the value alone."""

    def __init__(self, mapper: ValueMapper) -> None:
        self._mapper = mapper

    def process(self, record: Record) -> None:
        out = record.with_value(self._mapper(record.value))
        try:
            self._forward(out)
        except Exception as exc:
            self._failed(out, exc)


class StreamFlatMap(_Forwarding):
    """`flat_map`: the mapper returns an iterable of `(key, value)` pairs, each forwarded."""

    def __init__(self, mapper: Callable[[Any, Any], Iterable[Any]]) -> None:
        self._mapper = mapper

    def process(self, record: Record) -> None:
        forward, ts, headers = self._forward, record.timestamp, record.headers
        for key, value in self._mapper(record.key, record.value):
            out = _new(_Record, (key, value, ts, headers))
            try:
                forward(out)
            except Exception as exc:
                self._failed(out, exc)


class StreamFlatMapValues(_Forwarding):
    """`flat_map_values`: the mapper returns an iterable of values, each forwarded with the same key."""

    def __init__(self, mapper: Callable[[Any], Iterable[Any]]) -> None:
        self._mapper = mapper

    def process(self, record: Record) -> None:
        forward, key, ts, headers = self._forward, record.key, record.timestamp, record.headers
        for value in self._mapper(record.value):
            out = _new(_Record, (key, value, ts, headers))
            try:
                forward(out)
            except Exception as exc:
                self._failed(out, exc)


class StreamPeek(_Forwarding):
    """`peek`: call the action, then forward the record unchanged."""

    def __init__(self, action: ForeachAction) -> None:
        self._action = action

    def process(self, record: Record) -> None:
        self._action(record.key, record.value)
        try:
            self._forward(record)
        except Exception as exc:
            self._failed(record, exc)


class StreamForeach(Processor):
    """`foreach`: call the action; a terminal node, nothing is forwarded."""

    def __init__(self, action: ForeachAction) -> None:
        self._action = action

    def process(self, record: Record) -> None:
        self._action(record.key, record.value)
