"""`RepartitionPurger`: deletes the records of repartition topics that the application has committed.

A repartition topic is the application's own hand-off between two sub-topologies. Its records must stay
until they are processed — whatever their timestamps say: reprocessing last year's data must not lose the
hand-off to the broker's time-based retention — and may go once the offsets past them are committed. So,
as Kafka Streams does, repartition topics are created with `retention.ms=-1` and, every
`repartition.purge.interval.ms`, the records before each committed offset are deleted with the
DeleteRecords API. Purging is housekeeping: a failed attempt is logged and retried at the next interval.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable, Mapping
from typing import Any

log = logging.getLogger(__name__)


class RepartitionPurger:
    def __init__(self, bootstrap_kwargs: Mapping[str, Any], repartition_topics: Iterable[str],
                 interval_ms: int) -> None:
        self._kwargs = dict(bootstrap_kwargs)
        self._topics = frozenset(repartition_topics)
        self._interval_s = interval_ms / 1000
        self._last_run = time.monotonic()
        self._purged: dict[tuple[str, int], int] = {}
        self._admin: Any = None

    @property
    def enabled(self) -> bool:
        return bool(self._topics)

    async def maybe_purge(self, committed: Mapping[tuple[str, int], int]) -> int:
        """Delete up to the committed offsets once the interval has passed; returns partitions purged."""
        if not self._topics or time.monotonic() - self._last_run < self._interval_s:
            return 0
        self._last_run = time.monotonic()
        todo = {tp: o for tp, o in committed.items() if tp[0] in self._topics and self._purged.get(tp, -1) < o}
        if not todo:
            return 0
        from aiokafka import TopicPartition
        from aiokafka.admin import AIOKafkaAdminClient, RecordsToDelete

        try:
            if self._admin is None:
                self._admin = AIOKafkaAdminClient(**self._kwargs)
                await self._admin.start()
            await self._admin.delete_records({TopicPartition(t, p): RecordsToDelete(o) for (t, p), o in todo.items()})
        except Exception as exc:
            log.warning("purging repartition topics failed (retried in %.0f s): %r", self._interval_s, exc)
            return 0
        self._purged.update(todo)
        return len(todo)

    async def close(self) -> None:
        if self._admin is not None:
            admin, self._admin = self._admin, None
            try:
                await admin.close()
            except Exception:
                log.debug("closing the purger's admin client failed", exc_info=True)
