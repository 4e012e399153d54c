"""What the live page shows, as one JSON document (`/status.json`), read from the running client.

Tasks with their role (active, restoring with its progress, standby), every assigned partition's lag,
the last minutes of throughput, latency and lag (one point a second, from `StreamsMetrics.history`),
and the totals of processed, dead-lettered and skipped records.
"""

from __future__ import annotations

from typing import Any

from streamlet.metrics.streams_metrics import partition_lags


def status(streams: Any) -> dict[str, Any]:
    """The live page's data for `streams` (a `KafkaStreams`)."""
    sup = streams._supervisor
    tasks: list[dict[str, Any]] = []
    lags: list[dict[str, Any]] = []
    if sup is not None and sup.tasks is not None:
        manager = sup.tasks
        for actor in manager.actors.values():
            task = actor.task
            tasks.append({"task": task.task_id, "role": "active", "processed": task.processed,
                          "partitions": sorted(f"{t}-{task.partition}" for t in task.sources_by_topic)})
        progress = manager.reader.progress()
        for task, _sender, partitions in manager.restoring.values():
            restored, remaining = progress.get(task.task_id, (0, None))
            tasks.append({"task": task.task_id, "role": "restoring", "restored": restored, "remaining": remaining,
                          "partitions": sorted(f"{t}-{p}" for t, p in partitions)})
        if sup.standbys is not None:
            tasks.extend({"task": str(task_id), "role": "standby"} for task_id in sup.standbys.tasks)
        lags = [{"topic": topic, "partition": partition, "lag": lag}
                for (topic, partition), lag in sorted(partition_lags(sup).items())]
    totals = streams.metrics
    history = [[p.at_ms, round(p.process_rate, 3), round(p.e2e_latency_avg_ms, 3), p.lag]
               for p in streams.streams_metrics.history]
    return {"application_id": streams.config.application_id, "state": streams.state.name,
            "thread_id": streams.streams_metrics.thread_id,
            "tasks": sorted(tasks, key=lambda t: (t["role"] != "active", t["task"])), "lag": lags,
            "history": history,
            "totals": {"processed": totals.get("records-processed", 0),
                       "dead_lettered": totals.get("records-dead-lettered", 0),
                       "skipped": totals.get("records-skipped", 0)}}
