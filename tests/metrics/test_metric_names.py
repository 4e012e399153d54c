"""Streamlet's built-in metric names against Kafka Streams 4.4.0's (MetricsCheck in tests/java/streams4): the
client, thread, task, processor-node, state-store and record-cache metrics at DEBUG level of a word count
into a cached persistent store, as "group name tag-keys". Every difference must be listed below with its
reason; a name Kafka Streams gains or streamlet loses fails the test.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.helpers.kafka import produce, read_until
from tests.metrics.small_app import small_app
from tests.streams4_java import run_check

pytestmark = [pytest.mark.anyio, pytest.mark.broker]

def _words(text: str) -> list[str]:
    return text.split()


_ROCKSDB = "RocksDB's own statistics (memtables, SST files, compaction, block cache): streamlet's persistent " \
           "stores are LevelDB, which keeps no such statistics"
_STORE_OPS = "a store operation streamlet does not time yet (only put, get and restore are)"
_STATE = "rocksdb-state-id,task-id,thread-id"
_ROCKSDB_NAMES = _words(
    "background-errors block-cache-capacity block-cache-data-hit-ratio block-cache-filter-hit-ratio "
    "block-cache-index-hit-ratio block-cache-pinned-usage block-cache-usage bytes-read-compaction-rate "
    "bytes-read-rate bytes-read-total bytes-written-compaction-rate bytes-written-rate bytes-written-total "
    "compaction-pending compaction-time-avg compaction-time-max compaction-time-min cur-size-active-mem-table "
    "cur-size-all-mem-tables estimate-num-keys estimate-pending-compaction-bytes estimate-table-readers-mem "
    "live-sst-files-size mem-table-flush-pending memtable-bytes-flushed-rate memtable-bytes-flushed-total "
    "memtable-flush-time-avg memtable-flush-time-max memtable-flush-time-min memtable-hit-ratio "
    "num-deletes-active-mem-table num-deletes-imm-mem-tables num-entries-active-mem-table "
    "num-entries-imm-mem-tables num-immutable-mem-table num-live-versions num-running-compactions "
    "num-running-flushes number-file-errors-total number-open-files size-all-mem-tables total-sst-files-size "
    "write-stall-duration-avg write-stall-duration-total")
_STORE_OP_NAMES = _words(
    "all-latency-avg all-latency-max all-rate commit-latency-avg commit-latency-max commit-rate "
    "delete-latency-avg delete-latency-max delete-rate flush-latency-avg flush-latency-max flush-rate "
    "get-latency-max iterator-duration-avg iterator-duration-max num-open-iterators oldest-iterator-open-since-ms "
    "prefix-scan-latency-avg prefix-scan-latency-max prefix-scan-rate put-all-latency-avg put-all-latency-max "
    "put-all-rate put-if-absent-latency-avg put-if-absent-latency-max put-if-absent-rate range-latency-avg "
    "range-latency-max range-rate restore-latency-avg restore-latency-max record-e2e-latency-avg "
    "record-e2e-latency-max record-e2e-latency-min uncommitted-bytes")

ONLY_KAFKA_STREAMS: dict[str, str] = {
    **{f"stream-state-metrics {n} {_STATE}": _ROCKSDB for n in _ROCKSDB_NAMES},
    **{f"stream-state-metrics {n} {_STATE}": _STORE_OPS for n in _STORE_OP_NAMES},
    "stream-processor-node-metrics process-rate processor-node-id,task-id,thread-id":
        "streamlet hands records from node to node by direct calls: counting them per node would cost every hop",
    "stream-processor-node-metrics process-total processor-node-id,task-id,thread-id":
        "as process-rate: per-node counts are not kept",
}
"""Kafka Streams 4.4.0's names streamlet does not report, and why."""

ONLY_STREAMLET: dict[str, str] = {
    "stream-state-metrics restore-total rocksdb-state-id,task-id,thread-id":
        "Kafka Streams 4.x counts restored records per task (stream-task-metrics restore-total, reported too); "
        "the per-store count is kept under its old name for dashboards built on streamlet",
}
"""Names streamlet reports that Kafka Streams 4.4.0 does not, and why they stay."""


def _lines(metrics: Any) -> set[str]:
    return {f"{m.name.group} {m.name.name} {','.join(sorted(k for k, _ in m.name.tags))}" for m in metrics
            if m.name.group.startswith("stream-")}


async def test_metric_names_match_kafka_streams(kafka_broker: Any, tmp_path: Path) -> None:
    java = set(run_check("MetricsCheck").split("\n")) - {""}
    bootstrap = kafka_broker.bootstrap_servers
    app = await small_app(bootstrap, tmp_path, "metric-names", counting=True, **{"metrics.recording.level": "DEBUG"})
    streams, words, counted = app.streams, app.source, app.sink
    await streams.start()
    try:
        await produce(bootstrap, words, [(b"a", b"x"), (b"b", b"y"), (b"a", b"z")])
        await read_until(bootstrap, counted, lambda rs: len(rs) >= 2, timeout=60)
        with anyio.fail_after(30):  # the cache is read once a get went through it
            while not any(m.name.group == "stream-record-cache-metrics" for m in streams.streams_metrics.metrics()):
                await produce(bootstrap, words, [(b"a", b"x")])
                await anyio.sleep(0.5)
        ours = _lines(streams.streams_metrics.metrics())
    finally:
        await streams.close()
    assert sorted(java - ours - set(ONLY_KAFKA_STREAMS)) == []
    assert sorted(ours - java - set(ONLY_STREAMLET)) == []
    assert sorted(set(ONLY_KAFKA_STREAMS) - (java - ours)) == [], "listed as missing but reported now"
    assert sorted(set(ONLY_STREAMLET) - (ours - java)) == [], "listed as streamlet's own but not (or no longer) so"
