"""A Spark task's progress in the metadata of its committed offsets, in Kafka Streams' format.

Under exactly-once a Spark task commits its input offsets to the group `application.id` itself (see
`exactly_once`), and with them, per partition, Kafka Streams' `TopicPartitionMetadata`
(`streamlet.kafka.commit_metadata`): the partition's time and the task's processor metadata (where an
`on_window_close` aggregation keeps its last emit). That is what Kafka Streams and the asyncio runtime
read when they take the application over, and what a Spark task reads when Kafka is ahead of its Spark
state (a replayed batch, a fresh checkpoint, a move from the other engine).

A Spark task carries more from batch to batch than Kafka Streams commits (`TaskProgress`): when each
punctuation is next due, the null-key round robin, a windowed aggregation's observed stream time. Those
go into the same map, under `streamlet:` keys that no Kafka Streams processor looks up, each a 64-bit
integer:

    streamlet:at                      the offset committed with this partition's metadata (the stamp)
    streamlet:stream-punctuation:<i>  when the i-th stream-time schedule is next due (-1: cancelled)
    streamlet:wall-punctuation:<i>    the same for wall-clock schedules
    streamlet:round-robin:<topic>     the partition the topic's last null-keyed record went to
    streamlet:progress:<processor>    what the processor carries between batches (`CarriesProgress`)

Kafka Streams keeps keys it does not know and commits them again, merged over the task's partitions
(the larger value per key), and the asyncio runtime leaves them out. So they are used only when every
input partition's stamp equals its committed offset, i.e. when a Spark task wrote every one of these
commits; otherwise the task continues as after any restart: partition and stream times and processor
metadata from the commit, punctuations as its processors schedule them anew, observed times afresh.

Before issue 23 the Spark engine committed its `TaskProgress` as JSON instead; such metadata is still read.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping

from streamlet.actors.task_progress import TaskProgress
from streamlet.kafka.commit_metadata import (
    NO_TIMESTAMP,
    STAMP_KEY,
    STREAMLET_KEY_PREFIX,
    TopicPartitionMetadata,
    fit_to_limit,
    is_streamlet_key,
    merge_processor_metadata,
)

log = logging.getLogger(__name__)

Partition = tuple[str, int]
_STREAM = STREAMLET_KEY_PREFIX + "stream-punctuation:"
_WALL = STREAMLET_KEY_PREFIX + "wall-punctuation:"
_ROUND_ROBIN = STREAMLET_KEY_PREFIX + "round-robin:"
_PROGRESS = STREAMLET_KEY_PREFIX + "progress:"


def _partition(key: str) -> Partition:
    topic, _, partition = key.rpartition(":")
    return topic, int(partition)


def progress_metadata(progress: TaskProgress, offsets: Mapping[Partition, int]) -> dict[Partition, str]:
    """The metadata to commit with each of `offsets` (see the module docstring)."""
    partition_times = {_partition(key): t for key, t in progress.partition_times.items()}
    extras: dict[str, int] = {}
    for prefix, times in ((_STREAM, progress.stream_punctuations), (_WALL, progress.wall_punctuations)):
        extras.update((f"{prefix}{i}", t) for i, t in enumerate(times))
    extras.update((f"{_ROUND_ROBIN}{topic}", p) for topic, p in progress.round_robin.items())
    extras.update((f"{_PROGRESS}{name}", carried) for name, carried in progress.processors.items()
                  if type(carried) is int)  # anything else is not carried through Kafka
    shared = {**progress.processor_metadata, **extras}
    return {tp: fit_to_limit(TopicPartitionMetadata(partition_times.get(tp, NO_TIMESTAMP),
                                                    {**shared, STAMP_KEY: offset}), where=f"{tp[0]}-{tp[1]}")
            for tp, offset in offsets.items()}


def committed_progress(metadata: Mapping[Partition, str],
                       offsets: Mapping[Partition, int | None]) -> TaskProgress | None:
    """What a task continues from, out of the metadata committed with its partitions' `offsets` (None:
    nothing was committed with metadata)."""
    texts = {tp: text for tp, text in metadata.items() if text and offsets.get(tp) is not None}
    if not texts:
        return None
    first = next(iter(texts.values()))
    if first.lstrip().startswith("{"):
        return _legacy(first)
    decoded = {tp: TopicPartitionMetadata.decode(text, f"{tp[0]}-{tp[1]}") for tp, text in sorted(texts.items())}
    merged: dict[str, int] = {}
    for meta in decoded.values():
        merge_processor_metadata(merged, meta.processor_metadata)
    times = {f"{t}:{p}": meta.partition_time for (t, p), meta in decoded.items()
             if meta.partition_time != NO_TIMESTAMP}
    progress = TaskProgress(stream_time=max(times.values(), default=NO_TIMESTAMP), partition_times=times,
                            processor_metadata={k: v for k, v in merged.items() if not is_streamlet_key(k)})
    stamped = [tp for tp, offset in offsets.items() if offset is not None]
    if all(tp in decoded and decoded[tp].processor_metadata.get(STAMP_KEY) == offsets[tp] for tp in stamped):
        _add_extras(progress, decoded[stamped[0]].processor_metadata)
    return progress


def _add_extras(progress: TaskProgress, entries: Mapping[str, int]) -> None:
    """streamlet's own entries of one partition's metadata into `progress`."""
    stream: dict[int, int] = {}
    wall: dict[int, int] = {}
    for key, value in entries.items():
        if key.startswith(_STREAM) and key[len(_STREAM):].isdigit():
            stream[int(key[len(_STREAM):])] = value
        elif key.startswith(_WALL) and key[len(_WALL):].isdigit():
            wall[int(key[len(_WALL):])] = value
        elif key.startswith(_ROUND_ROBIN):
            progress.round_robin[key[len(_ROUND_ROBIN):]] = value
        elif key.startswith(_PROGRESS):
            progress.processors[key[len(_PROGRESS):]] = value
    progress.stream_punctuations = [stream[i] for i in sorted(stream)]
    progress.wall_punctuations = [wall[i] for i in sorted(wall)]


def _legacy(text: str) -> TaskProgress | None:
    """The `TaskProgress` JSON the Spark engine committed before issue 23 (the same on every partition)."""
    try:
        return TaskProgress.from_bytes(text.encode())
    except (ValueError, TypeError) as exc:
        log.warning("committed offset metadata that looks like the Spark engine's old progress could not be "
                    "read (%s); taken as none", exc)
        return None

