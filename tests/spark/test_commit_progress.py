"""A Spark task's progress in its committed offsets' metadata (`streamlet.spark.commit_progress`): Kafka
Streams' part read by anyone, streamlet's own entries only where a Spark task wrote every partition's
commit, and the JSON the engine committed before issue 23."""

from __future__ import annotations

from streamlet.actors.task_progress import TaskProgress
from streamlet.kafka.commit_metadata import STAMP_KEY, TopicPartitionMetadata, decode_committed
from streamlet.spark.commit_progress import committed_progress, progress_metadata

A, B = ("in", 0), ("other", 0)


def _progress() -> TaskProgress:
    return TaskProgress(stream_time=90, partition_times={"in:0": 90, "other:0": 40},
                        stream_punctuations=[100, -1], wall_punctuations=[5000], round_robin={"out": 2},
                        processors={"KSTREAM-AGGREGATE-0000000001": 88, "legacy": [1, 2]},
                        processor_metadata={"counts-store": 80})


def test_a_spark_commit_reads_back_whole() -> None:
    offsets = {A: 12, B: 4}
    progress = committed_progress(progress_metadata(_progress(), offsets), offsets)
    expected = _progress()
    expected.processors = {"KSTREAM-AGGREGATE-0000000001": 88}  # only integers go through Kafka
    assert progress == expected


def test_kafka_streams_reads_partition_times_and_its_processor_metadata() -> None:
    offsets = {A: 12, B: 4}
    times, merged = decode_committed(progress_metadata(_progress(), offsets))
    assert times == {A: 90, B: 40}
    assert merged["counts-store"] == 80


def test_without_every_stamp_streamlet_entries_are_left_out() -> None:
    metadata = progress_metadata(_progress(), {A: 12, B: 4})
    moved_on = {A: 15, B: 4}  # another runtime processed "in" since, carrying the entries along
    progress = committed_progress(metadata, moved_on)
    assert progress == TaskProgress(stream_time=90, partition_times={"in:0": 90, "other:0": 40},
                                    processor_metadata={"counts-store": 80})


def test_the_asyncio_runtimes_commit_has_times_and_processor_metadata_only() -> None:
    metadata = {A: TopicPartitionMetadata(30, {"counts-store": 20}).encode(), B: ""}
    progress = committed_progress(metadata, {A: 3, B: 1})
    assert progress == TaskProgress(stream_time=30, partition_times={"in:0": 30},
                                    processor_metadata={"counts-store": 20})
    assert STAMP_KEY not in progress.processor_metadata


def test_nothing_committed_is_no_progress() -> None:
    assert committed_progress({}, {A: None}) is None
    assert committed_progress({A: ""}, {A: 3}) is None


def test_the_json_committed_before_issue_23_is_still_read() -> None:
    legacy = TaskProgress(stream_time=9, partition_times={"in:0": 9}, stream_punctuations=[10],
                          processors={"agg": [9, 0]}).to_bytes().decode()
    legacy = legacy.replace(',"processor_metadata":{}', "")  # written before that field existed
    progress = committed_progress({A: legacy}, {A: 7})
    assert progress is not None
    assert (progress.stream_time, progress.stream_punctuations, progress.processors) == (9, [10], {"agg": [9, 0]})
