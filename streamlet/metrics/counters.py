"""The cumulative counters the hot path bumps: a few additions per batch, never per record.

The poll loop and the task actors only add to these; rates, averages and maxima over a time window
are derived from them later, when metrics are read (see `sampler`), so measuring costs the
processing path two clock reads and a handful of additions per batch.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field


@dataclass(slots=True)
class TaskCounters:
    """One active task: processing time, batches, and the end-to-end latency of the records it
    processed (record timestamp to processing time, from each batch's first and last record)."""

    process_ns: int = 0
    batches: int = 0
    max_record_latency_ns: int = 0  # since the last sample: the slowest per-record time of one batch
    e2e_sum_ms: float = 0.0
    e2e_count: int = 0
    e2e_min_ms: float = float("inf")  # since the last sample
    e2e_max_ms: float = 0.0  # since the last sample

    def record_batch(self, elapsed_ns: int, processed: int, first_ts: int | None, last_ts: int, now_ms: int) -> None:
        """One processed batch: `processed` records in `elapsed_ns`; the timestamps of the first and
        last record the batch brought (`first_ts` None when it brought none: no latency sample)."""
        self.process_ns += elapsed_ns
        self.batches += 1
        if processed:
            per_record = elapsed_ns // processed
            if per_record > self.max_record_latency_ns:
                self.max_record_latency_ns = per_record
        if processed and first_ts is not None:
            oldest, newest = now_ms - first_ts, now_ms - last_ts
            if first_ts > last_ts:
                oldest, newest = newest, oldest
            self.e2e_sum_ms += (oldest + newest) / 2 * processed
            self.e2e_count += processed
            self.e2e_min_ms = min(self.e2e_min_ms, newest)
            self.e2e_max_ms = max(self.e2e_max_ms, oldest)

    def reset_extremes(self) -> None:
        """Start the next sample's maxima and minima afresh."""
        self.max_record_latency_ns = 0
        self.e2e_min_ms = float("inf")
        self.e2e_max_ms = 0.0


@dataclass(slots=True)
class ThreadCounters:
    """The group member's loop ("stream thread" in Kafka Streams): time in poll and commit."""

    started_ms: int = field(default_factory=lambda: int(time.time() * 1000))
    polls: int = 0
    poll_ns: int = 0
    poll_max_ns: int = 0  # since the last sample
    polled_records: int = 0
    poll_records_max: int = 0  # since the last sample: the most records one poll returned
    commits: int = 0
    commit_ns: int = 0
    commit_max_ns: int = 0  # since the last sample
    iterations: int = 0  # poll-loop rounds (Kafka Streams' runOnce)
    iteration_records_max: int = 0  # since the last sample: the most records processed in one round
    processed_seen: int = 0  # the tasks' processed count at the end of the last round

    def record_iteration(self, processed: int) -> None:
        """One poll-loop round ended with the tasks' processed count at `processed`: what they processed
        since the last round counts as this round's (Kafka Streams' process-records, recorded per runOnce)."""
        self.iterations += 1
        grown = processed - self.processed_seen
        self.processed_seen = processed
        if grown > self.iteration_records_max:
            self.iteration_records_max = grown

    @property
    def blocked_ns(self) -> int:
        """Time spent awaiting Kafka: in polls and in commits (the producer's flush, transaction and offset
        commit requests), Kafka Streams' blocked-time-ns-total."""
        return self.poll_ns + self.commit_ns

    def record_poll(self, elapsed_ns: int, records: int) -> None:
        """One consumer poll that took `elapsed_ns` and returned `records` records."""
        self.polls += 1
        self.poll_ns += elapsed_ns
        self.polled_records += records
        if records > self.poll_records_max:
            self.poll_records_max = records
        if elapsed_ns > self.poll_max_ns:
            self.poll_max_ns = elapsed_ns

    def record_commit(self, elapsed_ns: int) -> None:
        """One commit of all tasks that took `elapsed_ns`."""
        self.commits += 1
        self.commit_ns += elapsed_ns
        if elapsed_ns > self.commit_max_ns:
            self.commit_max_ns = elapsed_ns

    def reset_extremes(self) -> None:
        """Start the next sample's maxima afresh."""
        self.poll_max_ns = 0
        self.poll_records_max = 0
        self.commit_max_ns = 0
        self.iteration_records_max = 0
