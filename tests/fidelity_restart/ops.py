"""The ops the restart suite adds to tests/fidelity's vocabulary, on streamlet: `punctuate` (a processor with a
stream-time punctuator), the twin of `RestartOps` in tests/java/fidelity.

tests/fidelity has no punctuator op: its driver-against-driver comparison pipes records and reads output in one
uninterrupted run, where a punctuation schedule is plain stream time. What happens to a schedule across a restart
(the partition time restored from the committed offsets, or not) is what this suite asks, so the op lives here;
every other op goes to `tests.fidelity.topology.apply` unchanged.
"""

from __future__ import annotations

from functools import partial
from typing import Any

from streamlet.dsl import KStream, StreamsBuilder
from streamlet.processor import Processor, ProcessorContext, PunctuationType
from streamlet.record import Record
from streamlet.serdes import Serdes
from streamlet.stores import Stores
from tests.fidelity import topology as fidelity

_STRING = Serdes.String()


class _Counting(Processor):
    """Counts records per key in a store and passes every record on; every `interval` ms of stream time it
    forwards one record, key "P", value "{punctuation time}:{key=count,...}" (the store's entries in its order),
    stamped with the punctuation time."""

    def __init__(self, store_name: str, interval: int) -> None:
        self._store_name = store_name
        self._interval = interval

    def init(self, context: ProcessorContext) -> None:
        super().init(context)
        self._store: Any = context.get_state_store(self._store_name)
        context.schedule(self._interval, PunctuationType.STREAM_TIME, self._punctuate)

    def process(self, record: Record) -> None:
        if record.key is not None:
            count = self._store.get(record.key)
            self._store.put(record.key, str(1 if count is None else int(count) + 1))
        self.context.forward(record)

    def _punctuate(self, timestamp: int) -> None:
        with self._store.all() as entries:
            text = ",".join(f"{kv.key}={kv.value}" for kv in entries)
        self.context.forward(Record("P", f"{timestamp}:{text}", timestamp))


def apply(builder: StreamsBuilder, current: Any, op: dict[str, Any]) -> Any:
    """One op of the restart suite's vocabulary on the current DSL object (see `RestartOps.apply`)."""
    if op["op"] != "punctuate":
        return fidelity.apply(builder, current, op)
    store = op["store"]
    name = store["name"]
    supplier = (Stores.in_memory_key_value_store(name) if store.get("type") == "in_memory"
                else Stores.persistent_key_value_store(name))
    sb = Stores.key_value_store_builder(supplier, _STRING, _STRING).with_caching_disabled()
    sb = sb.with_logging_enabled() if store.get("logging", True) else sb.with_logging_disabled()
    builder.add_state_store(sb)
    assert isinstance(current, KStream)
    return current.process(partial(_Counting, name, op["interval"]), name)


def build(case: dict[str, Any]) -> Any:
    """The case's topology, built with streamlet's DSL."""
    builder = StreamsBuilder()
    current: Any = None
    for op in case["ops"]:
        current = apply(builder, current, op)
    return builder.build()
