"""Runs a `FixedKeyProcessor` (`KStream.process_values`) as an ordinary processor node.

The runtimes know one kind of processor; rather than teach each of them a second one, a fixed-key
processor is wrapped: the wrapper hands it each input as a `FixedKeyRecord` and gives it a context
whose `forward` accepts only `FixedKeyRecord`s, turning them back into `Record`s for the children.
Everything else the context offers is the node's own context, unchanged.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any

from streamlet.config import StreamsConfig
from streamlet.processor import (
    Cancellable,
    FixedKeyProcessor,
    FixedKeyProcessorContext,
    FixedKeyProcessorSupplier,
    FixedKeyRecord,
    Processor,
    ProcessorContext,
    PunctuationType,
    Punctuator,
)
from streamlet.record import Record, RecordMetadata
from streamlet.stores.api import StateStore

_new = tuple.__new__  # a NamedTuple built without its Python-level __new__ frame (hot path)


def _as_record(record: Any) -> Record:
    if type(record) is not FixedKeyRecord:
        raise TypeError(f"a fixed-key processor forwards FixedKeyRecords (made from its input with "
                        f"with_value/with_timestamp/with_headers), got {record!r}")
    return _new(Record, record)


class _FixedKeyContext(FixedKeyProcessorContext):
    """The node's context seen through the fixed-key API."""

    def __init__(self, inner: ProcessorContext) -> None:
        self._inner = inner

    def forward(self, record: Any, child_name: str | None = None) -> None:
        self._inner.forward(_as_record(record), child_name)

    def forwarder(self) -> Callable[[Any], None]:
        forward = self._inner.forwarder_in_record_context()  # a restamped record restamps the context too

        def forward_fixed(record: Any) -> None:
            forward(_as_record(record))

        return forward_fixed

    def schedule(self, interval: timedelta | int, punctuation_type: PunctuationType,
                 callback: Punctuator, start_time: datetime | int | None = None) -> Cancellable:
        return self._inner.schedule(interval, punctuation_type, callback, start_time)

    def get_state_store(self, name: str) -> StateStore:
        return self._inner.get_state_store(name)

    def commit(self) -> None:
        self._inner.commit()

    @property
    def application_id(self) -> str:
        return self._inner.application_id

    @property
    def task_id(self) -> str:
        return self._inner.task_id

    @property
    def app_config(self) -> StreamsConfig:
        return self._inner.app_config

    def record_metadata(self) -> RecordMetadata | None:
        return self._inner.record_metadata()

    def current_stream_time_ms(self) -> int:
        return self._inner.current_stream_time_ms()

    def current_system_time_ms(self) -> int:
        return self._inner.current_system_time_ms()


class FixedKeyProcessorAdapter(Processor):
    """The node processor of `process_values`: one new user processor per task, from the supplier."""

    def __init__(self, supplier: FixedKeyProcessorSupplier) -> None:
        processor = supplier()
        if not isinstance(processor, FixedKeyProcessor):
            raise TypeError(f"process_values() needs a supplier of FixedKeyProcessors, and it returned {processor!r}"
                            " (for a Processor, use process())")
        self._processor = processor

    def init(self, context: ProcessorContext) -> None:
        super().init(context)
        self._processor.init(_FixedKeyContext(context))
        self._process = self._processor.process

    def process(self, record: Record) -> None:
        self._process(_new(FixedKeyRecord, record))

    def close(self) -> None:
        self._processor.close()
