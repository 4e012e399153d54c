"""The merge node of a cogrouped aggregation (Kafka Streams' KTablePassThrough).

Each cogrouped stream has its own aggregate processor, all writing one shared store; their updates
meet here and go on unchanged. Asking this table for old values asks every aggregate processor.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from streamlet.processor import Processor, ProcessorContext
from streamlet.record import Record


class CogroupMergeSupplier:
    """Makes the pass-through processors; `parents` are the aggregate suppliers feeding the shared store,
    `grace_ms` the windows' grace (what `until_window_closes` waits for), None unless windowed."""

    def __init__(self, parents: Sequence[Any], store_name: str, windowed: bool, grace_ms: int | None) -> None:
        self.parents = list(parents)
        self.store_name = store_name
        self.windowed = windowed
        self.grace_ms = grace_ms
        self.queryable_name: str | None = None

    def enable_sending_old_values(self, force_materialization: bool) -> bool:
        """An aggregation is always materialized: every parent sends old values from now on."""
        for parent in self.parents:
            parent.enable_sending_old_values()
        return True

    def __call__(self) -> Processor:
        return _PassThrough()


class _PassThrough(Processor):
    def init(self, context: ProcessorContext) -> None:
        super().init(context)
        self._forward = context.forwarder()

    def process(self, record: Record) -> None:
        self._forward(record)
