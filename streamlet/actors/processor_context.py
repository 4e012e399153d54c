"""`NodeContext`: the `ProcessorContext` a processor receives, one per node per task.

Giving each node its own context (rather than one context with a "current node" pointer, as Kafka
Streams does) makes `forward` a plain loop over this node's children and keeps punctuations and
cache flushes, which may run outside any `process` call, forwarding from the right node.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from streamlet.actors.processor_node import entry_point, guarded_entry, raw_after
from streamlet.config import StreamsConfig
from streamlet.durations import epoch_millis, to_millis
from streamlet.errors import InvalidStateStoreError, TopologyError
from streamlet.processor import Cancellable, ProcessorContext, PunctuationType, Punctuator
from streamlet.record import Record, RecordMetadata
from streamlet.stores.api import RecordContext, StateStore

if TYPE_CHECKING:
    from streamlet.actors.processor_node import ProcessorNode
    from streamlet.actors.stream_task import StreamTask


class NodeContext(ProcessorContext):
    def __init__(self, task: StreamTask, node: ProcessorNode) -> None:
        self._task = task
        self._node = node

    def forward(self, record: Record, child_name: str | None = None) -> None:
        """As Kafka Streams' `forward`: while the children process the record, the record context carries its
        timestamp and headers (what a store downstream writes to its changelog, what a sink sends)."""
        task = self._task
        current = task.record_ctx
        if record.timestamp != current.timestamp or record.headers != current.headers:
            raw = task.current_raw  # a new record context: what its sinks let go comes back after it
            task.record_ctx = current._replace(timestamp=record.timestamp, headers=record.headers)
            try:
                self._forward(record, child_name)
            finally:
                task.record_ctx = current
                task.current_raw = raw
            return
        self._forward(record, child_name)

    def _forward(self, record: Record, child_name: str | None) -> None:
        """Each child's errors are handled at that child (`Node.failed`), so a child the handler resumed
        on does not keep the later children from the record."""
        if child_name is None:
            task = self._task
            raw = start = task.current_raw
            for child, forward in self._node.child_entries:
                try:
                    forward(record)
                except Exception as exc:
                    child.failed(record, exc)
                raw = raw_after(task, child, raw)
            task.current_raw = start
            return
        named = self._node.children_by_name.get(child_name)
        if named is None:
            raise TopologyError(
                f"processor {self._node.name!r} has no child named {child_name!r}; "
                f"its children are {sorted(self._node.children_by_name)}"
            )
        try:
            entry_point(named)(record)
        except Exception as exc:
            named.failed(record, exc)

    def forwarder(self) -> Callable[[Record], None]:
        children = self._node.children
        if len(children) == 1:
            return guarded_entry(children[0])  # one call per record less than `forward`, on every hop
        return self.forward

    def current_record_context(self) -> RecordContext:
        """The whole context of the record being processed (topic, partition and offset included): a DSL
        processor that keeps records to process them later (the grace-period join's buffer) keeps it too."""
        return self._task.record_ctx

    def replay_in_record_context(self, context: RecordContext, action: Callable[[], None]) -> None:
        """Run `action` with `context` as the record context (what `record_metadata()`, downstream stores
        and sinks see), as Kafka Streams sets an evicted buffer entry's context before processing it."""
        task = self._task
        previous = task.record_ctx
        task.record_ctx = context
        try:
            action()
        finally:
            task.record_ctx = previous

    def forwarder_and_guard(self) -> tuple[Callable[[Record], None], Callable[[Record, Exception], None]]:
        children = self._node.children
        if len(children) == 1:  # the only child's own entry, its errors handled by its `failed`
            return entry_point(children[0]), children[0].failed
        return super().forwarder_and_guard()  # `forward` handles each child's errors itself

    def forwarder_in_record_context(self) -> Callable[[Record], None]:
        task = self._task
        children = self._node.children
        if len(children) != 1:
            forward = self.forward

            def forward_all_in_context(record: Record) -> None:
                current = task.record_ctx
                if record.timestamp == current.timestamp and record.headers == current.headers:
                    forward(record)
                    return
                raw = task.current_raw
                task.record_ctx = current._replace(timestamp=record.timestamp, headers=record.headers)
                try:
                    forward(record)
                finally:
                    task.record_ctx = current
                    task.current_raw = raw

            return forward_all_in_context
        child = children[0]
        entry, failed = entry_point(child), child.failed

        def forward_in_context(record: Record) -> None:  # the only child's errors caught here: no frame more
            current = task.record_ctx
            if record.timestamp == current.timestamp and record.headers == current.headers:
                try:
                    entry(record)
                except Exception as exc:
                    failed(record, exc)
                return
            raw = task.current_raw
            task.record_ctx = current._replace(timestamp=record.timestamp, headers=record.headers)
            try:
                entry(record)
            except Exception as exc:
                failed(record, exc)
            finally:
                task.record_ctx = current
                task.current_raw = raw

        return forward_in_context

    def schedule(
        self, interval: timedelta | int, punctuation_type: PunctuationType, callback: Punctuator,
        start_time: datetime | int | None = None,
    ) -> Cancellable:
        start = None if start_time is None else epoch_millis(start_time)
        return self._task.schedule(self._node, to_millis(interval), punctuation_type, callback, start)

    def get_state_store(self, name: str) -> StateStore:
        if name not in self._node.store_names:
            global_store = self._task.global_stores.get(name)
            if global_store is not None:  # a global store: any processor may read it, unconnected
                return global_store
            raise InvalidStateStoreError(
                f"processor {self._node.name!r} has no access to state store {name!r}; connect it with "
                f"Topology.add_state_store(builder, {self._node.name!r}) or process(..., {name!r})"
            )
        return self._task.stores[name]

    def commit(self) -> None:
        self._task.commit_requested = True

    @property
    def application_id(self) -> str:
        return self._task.application_id

    @property
    def task_id(self) -> str:
        return self._task.task_id

    @property
    def app_config(self) -> StreamsConfig:
        return self._task.config

    def record_metadata(self) -> RecordMetadata | None:
        rc = self._task.record_ctx
        if rc.topic is None:
            return None
        return RecordMetadata(rc.topic, rc.partition, rc.offset)

    def current_stream_time_ms(self) -> int:
        return self._task.stream_time

    def current_system_time_ms(self) -> int:
        return self._task.clock()

    @property
    def processor_metadata(self) -> dict[str, int]:
        """The task's processor metadata (Kafka Streams' `InternalProcessorContext.processorMetadata()`),
        committed with its offsets: not part of the `ProcessorContext` API, DSL processors look it up."""
        return self._task.processor_metadata
