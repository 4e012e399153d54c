"""The benchmark's workloads on Quix Streams 3.28.1 (a Python peer; runs in its own venv).

    <quix venv>/bin/python benchmarks/peers/quix_app.py --workload W --bootstrap B --app-id A --input T
        --output O --guarantee at_least_once|exactly_once_v2 --commit-ms N --state-dir D [--table T2]

One `Application` (consumer group = the app id, `auto_offset_reset="earliest"`, `processing_guarantee`
"at-least-once" / "exactly-once" from --guarantee, `commit_interval = --commit-ms / 1000`, `state_dir`)
and one StreamingDataFrame per workload, run with `app.run()`; Quix stops gracefully on SIGTERM.

How each workload is written (the idiomatic StreamingDataFrame way):
  * pipe           — `filter` (kind != "view") → `apply` (the mapped dict) → `to_topic` (JSON serializer).
  * wordcount_*    — `apply(split, expand=True)` → `group_by(word)` (Quix's repartition topic) →
                     a stateful `apply` counting per key in the RocksDB state store (change-logged) →
                     `to_topic` with an 8-byte big-endian long serializer. One output per update.
  * window_count   — `tumbling_window(60_000).agg(count=Count(), ts=MaxTimestamp()).current()`: event
                     time is the record timestamp (Quix windows always use it). Quix stamps a window's
                     result with the window start, so a small custom aggregator keeps the newest record
                     timestamp of the window (= the current record's, the input is in order) and
                     `set_timestamp` puts it back on the output (the latency measure needs the input
                     record's timestamp). The output key `"<user>@<start ms>"` is set by `to_topic(key=)`.
  * join           — `events.join_asof(users, how="inner")`: Quix's stream-table ("enrichment") join.
                     Users are written to the join's state store as they are read; events look up the
                     latest user record at or before their timestamp (users are stamped 1 h before
                     every event). Quix aligns the two topics by timestamp when a join is present, so
                     the (older) users are read before the events that need them.

Every output keeps the timestamp of the input record it came from: Quix produces with the current
message's timestamp by default (also through the `group_by` repartition topic); only window results are
restamped (above).

Settings (and why): everything is Quix's default but the contract's facts: `commit_every=0` (commit on
the interval only), librdkafka's own batching defaults (linger.ms 5, batch sizes), `loglevel="WARNING"`
(no per-record logging). JSON is Quix's built-in (de)serializer. Internal topics (the `group_by`
repartition topic, changelogs) are created by Quix itself; the repartition topic copies the source
topic's config (so its retention follows the input's).
"""

from __future__ import annotations

import argparse
import struct
from typing import Any

from quixstreams import Application
from quixstreams.dataframe.windows import aggregations as agg
from quixstreams.models.serializers import SerializationContext, Serializer

from benchmarks.run_args import parse_run_args

_long = struct.Struct(">q").pack


class LongSerializer(Serializer):
    """A count as an 8-byte big-endian signed long (Kafka's LongSerializer). Quix's "int" is 4 bytes."""

    def __call__(self, value: int, ctx: SerializationContext) -> bytes:
        return _long(value)


class WindowCountSerializer(Serializer):
    """The count of a window result `{"key": ..., "count": n}` as an 8-byte long (the key goes to the
    message key through `to_topic(key=...)`)."""

    def __call__(self, value: dict[str, Any], ctx: SerializationContext) -> bytes:
        return _long(value["count"])


class MaxTimestamp(agg.Aggregator):
    """The newest record timestamp seen in the window."""

    def initialize(self) -> int:
        return 0

    def agg(self, old: int, new: Any, timestamp: int) -> int:
        return timestamp if timestamp > old else old

    def result(self, value: int) -> int:
        return value

    def merge(self, a: int, b: int) -> int:
        return max(a, b)


def count(word: str, state: Any) -> int:
    n: int = state.get("count", 0) + 1
    state.set("count", n)
    return n


def build(args: argparse.Namespace) -> Application:
    app = Application(
        broker_address=args.bootstrap,
        consumer_group=args.app_id,
        auto_offset_reset="earliest",
        processing_guarantee="exactly-once" if args.guarantee.startswith("exactly_once") else "at-least-once",
        commit_interval=args.commit_ms / 1000,
        state_dir=args.state_dir,
        loglevel="WARNING",
    )
    workload = args.workload
    if workload == "pipe":
        source = app.topic(args.input, key_deserializer="bytes", value_deserializer="json")
        output = app.topic(args.output, key_serializer="bytes", value_serializer="json")
        sdf = app.dataframe(source)
        sdf = sdf.filter(lambda ev: ev["kind"] != "view")
        sdf = sdf.apply(lambda ev: {"id": ev["id"], "user": ev["user"], "amount_cents": ev["amount"] * 100})
        sdf = sdf.to_topic(output)
    elif workload.startswith("wordcount"):
        source = app.topic(args.input, key_deserializer="bytes", value_deserializer="str")
        output = app.topic(args.output, key_serializer="str", value_serializer=LongSerializer())
        sdf = app.dataframe(source)
        sdf = sdf.apply(lambda line: line.lower().split(), expand=True)
        sdf = sdf.group_by(lambda word: word, name="word", key_serializer="str", key_deserializer="str",
                           value_serializer="str", value_deserializer="str")
        sdf = sdf.apply(count, stateful=True)
        sdf = sdf.to_topic(output)
    elif workload == "window_count":
        source = app.topic(args.input, key_deserializer="str", value_deserializer="bytes")
        output = app.topic(args.output, key_serializer="str", value_serializer=WindowCountSerializer())
        sdf = app.dataframe(source)
        sdf = sdf.tumbling_window(60_000).agg(count=agg.Count(), ts=MaxTimestamp()).current()
        sdf = sdf.set_timestamp(lambda value, key, timestamp, headers: value["ts"])
        sdf = sdf.apply(lambda value, key, timestamp, headers: {"key": f"{key}@{value['start']}",
                                                                 "count": value["count"]}, metadata=True)
        sdf = sdf.to_topic(output, key=lambda value: value["key"])
    elif workload == "join":
        if not args.table:
            raise SystemExit("join needs --table")
        events = app.dataframe(app.topic(args.input, key_deserializer="str", value_deserializer="json"))
        users = app.dataframe(app.topic(args.table, key_deserializer="str", value_deserializer="json"))
        output = app.topic(args.output, key_serializer="str", value_serializer="json")
        sdf = events.join_asof(users, how="inner", on_merge=lambda ev, user: {
            "id": ev["id"], "user": ev["user"], "amount": ev["amount"], "region": user["region"]})
        sdf = sdf.to_topic(output)
    else:
        raise SystemExit(f"unknown workload {workload!r}")
    return app


def main() -> None:
    args = parse_run_args()
    build(args).run()


if __name__ == "__main__":
    main()
