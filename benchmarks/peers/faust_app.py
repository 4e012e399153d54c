"""The benchmark's workloads on faust-streaming 0.15.3 (a Python peer; runs in its own venv).

    <faust venv>/bin/python benchmarks/peers/faust_app.py --workload W --bootstrap B --app-id A --input T
        --output O --guarantee at_least_once|exactly_once_v2 --commit-ms N --state-dir D [--table T2]

The app is built from the command line and a `faust.Worker` is started programmatically (no `faust`
CLI); it runs until SIGTERM (mode's worker stops the app on it). The consumer group is the app id
(faust's `id`), the input is read from the earliest offset, offsets are committed to Kafka by faust.

How each workload is written (idiomatic faust, one agent per stage):
  * pipe           — an agent on the input: parse JSON, drop `view`, send the mapped JSON to the output.
  * wordcount_*    — faust's own word-count pattern: one agent splits lines and sends each word, keyed by
                     the word, to an internal repartition topic (`<app id>-words`); a second agent on that
                     topic counts in a `Table` (change-logged) and sends every new count to the output.
                     The same code serves both guarantees (`processing_guarantee` from --guarantee).
  * window_count   — a `Table(...).tumbling(60, expires=None).relative_to_stream()`: event time = the
                     Kafka record timestamp (faust's `message.timestamp`). `expires` stays None on
                     purpose: faust 0.15.3's window cleanup (`_del_old_keys`) judges staleness against
                     the wall clock (`time.time()`), so with `expires` set, every window of this
                     historical input would be dropped mid-count at the next cleanup and counts would
                     restart from zero (wrong results). No expiry keeps every window in memory (1000
                     users x 100 windows at 1M events: fine).
  * join           — faust's idiom for a table fed from a topic: an agent on the users topic writes
                     each row into a `Table` (change-logged to its own topic), and the event agent
                     looks the user up there. Both agents run at once, so an event whose user is not
                     in the table yet waits for it (up to 30 s; then, inner-join semantics, it is
                     dropped); the number of waits is logged at shutdown. (The users topic used to be
                     the table's changelog itself, as Kafka Streams does for a source KTable; with it
                     faust 0.15.3 finished recovery and then, in most runs, never delivered a single
                     event to the join agent: 0 outputs in 2 minutes, nothing in its log.)

Every output is sent with `timestamp=` the input record's timestamp (faust takes seconds as a float and
converts to ms; the repartition hop carries it through, too).

Settings (and why):
  * `store="memory://"` — the venv has no RocksDB binding (faust's rocksdb store needs python-rocksdb /
    faust-streaming-rocksdict, not in the pinned requirement); tables are change-logged to Kafka as usual.
  * `web_enabled=False` — no web server (no port clashes between concurrent runs).
  * `processing_guarantee` from --guarantee: "exactly_once" makes faust use its TransactionManager (one
    transactional producer per assigned partition group, `read_committed` consumer).
  * `broker_commit_interval = --commit-ms / 1000`; `broker_commit_every` left at faust's default (10,000).
  * `stream_buffer_maxsize=16384` — faust's docs name this the throughput knob (default 4096); a larger
    prefetch buffer is their recommendation for throughput, well short of their "131,072" example
    (measured: no significant difference here either way).
  * `producer_linger_ms=5`, `producer_max_batch_size=256 KiB` — ordinary batching for a high-rate
    producer (faust's defaults: 0 ms, 16 KiB); the same linger the raw aiokafka pipe uses.
  * `topic_partitions=8`, `topic_replication_factor=1` — internal topics match the inputs (one broker).
  * The worker's terminal spinner is switched off (`worker.spinner = None`): at log level WARNING faust
    installs it and sets the root logger to DEBUG so that every debug log call (several per record in
    faust and aiokafka) builds a LogRecord to turn the spinner; ~20% of the CPU of a headless worker.
  * WordCount's repartition topic is created before the worker starts (see `precreate`), with no time
    retention (its records carry the input's event timestamps, hours old; Kafka Streams' repartition
    topics have retention -1 too).
  * JSON with the stdlib `json` module (the pinned venv has no orjson); output values are bytes (`raw`).
  * FAUST_LOGLEVEL (environment) overrides the log level, for debugging only.
"""

from __future__ import annotations

import argparse
import asyncio
import atexit
import json
import logging
import os
import struct
import sys
from pathlib import Path

import faust

from benchmarks.run_args import parse_run_args

log = logging.getLogger("faust_app")
_long = struct.Struct(">q").pack


def build(args: argparse.Namespace) -> faust.App:
    state_dir = Path(args.state_dir).resolve()
    state_dir.mkdir(parents=True, exist_ok=True)
    app = faust.App(
        args.app_id,
        broker=f"kafka://{args.bootstrap}",
        store="memory://",
        datadir=str(state_dir),
        processing_guarantee="exactly_once" if args.guarantee.startswith("exactly_once") else "at_least_once",
        broker_commit_interval=args.commit_ms / 1000,
        consumer_auto_offset_reset="earliest",
        web_enabled=False,
        stream_buffer_maxsize=16384,
        producer_linger_ms=5,
        producer_max_batch_size=256 * 1024,
        topic_partitions=8,
        topic_replication_factor=1,
        key_serializer="raw",
        value_serializer="raw",
    )
    source = app.topic(args.input, key_serializer="raw", value_serializer="raw")
    output = app.topic(args.output, key_serializer="raw", value_serializer="raw")
    workload = args.workload

    if workload == "pipe":
        @app.agent(source)
        async def pipe(stream: faust.StreamT) -> None:
            loads, dumps = json.loads, json.dumps
            async for event in stream.events():
                ev = loads(event.value)
                if ev["kind"] == "view":
                    continue
                value = dumps({"id": ev["id"], "user": ev["user"], "amount_cents": ev["amount"] * 100},
                              separators=(",", ":")).encode()
                await output.send(key=event.key, value=value, timestamp=event.message.timestamp)

    elif workload.startswith("wordcount"):
        # The repartition topic keeps its records (no time retention), as Kafka Streams' repartition topics
        # do: they carry the input's event timestamps, which may be older than the broker's retention.
        words = app.topic(f"{args.app_id}-words", key_serializer="raw", value_serializer="raw", internal=True,
                          config={"retention.ms": "-1"})
        counts = app.Table("counts", default=int, key_type=bytes)  # key raw bytes, value JSON

        @app.agent(source)
        async def split(stream: faust.StreamT) -> None:
            async for event in stream.events():
                ts = event.message.timestamp
                for word in event.value.decode().lower().split():
                    await words.send(key=word.encode(), value=b"", timestamp=ts)

        @app.agent(words)
        async def count(stream: faust.StreamT) -> None:
            async for event in stream.events():
                word = event.key
                n = counts[word] + 1
                counts[word] = n
                await output.send(key=word, value=_long(n), timestamp=event.message.timestamp)

    elif workload == "window_count":
        windows = (app.Table("window-counts", default=int, key_type=str)  # JSON (windowed keys are tuples)
                   .tumbling(60, expires=None).relative_to_stream())

        @app.agent(source)
        async def window_count(stream: faust.StreamT) -> None:
            async for event in stream.events():
                user = event.key.decode()
                windows[user] += 1
                n = windows[user].current()
                ts = event.message.timestamp
                ts_ms = round(ts * 1000)
                key = f"{user}@{ts_ms - ts_ms % 60_000}".encode()
                await output.send(key=key, value=_long(n), timestamp=ts)

    elif workload == "join":
        if not args.table:
            raise SystemExit("join needs --table")
        users = app.Table("users", key_type=bytes, value_type=bytes)  # raw JSON bytes, parsed on lookup
        waits = [0]

        @app.agent(app.topic(args.table, key_serializer="raw", value_serializer="raw"))
        async def load_users(stream: faust.StreamT) -> None:
            async for event in stream.events():
                users[event.key] = event.value

        @app.agent(source)
        async def join(stream: faust.StreamT) -> None:
            loads, dumps = json.loads, json.dumps
            async for event in stream.events():
                ev = loads(event.value)
                user = users.get(event.key)
                if user is None:
                    waits[0] += 1
                    for _ in range(3000):
                        await asyncio.sleep(0.01)
                        user = users.get(event.key)
                        if user is not None:
                            break
                    else:
                        continue
                value = dumps({"id": ev["id"], "user": ev["user"], "amount": ev["amount"],
                               "region": loads(user)["region"]}, separators=(",", ":")).encode()
                await output.send(key=event.key, value=value, timestamp=event.message.timestamp)

        atexit.register(lambda: print(f"join: {waits[0]} events waited for their user", file=sys.stderr))

    else:
        raise SystemExit(f"unknown workload {workload!r}")
    return app


async def precreate(bootstrap: str, topics: dict[str, dict[str, str]]) -> None:
    """Create the internal repartition topic before the worker subscribes. faust declares it itself at
    start-up, but the consumer's first metadata snapshot races with the creation: the topic is then
    left out of the first assignment ("Ignoring missing topic") and nothing is consumed from it until
    the next metadata refresh and rebalance (minutes). Creating it first is what faust's docs advise
    for production anyway (topics created ahead of deployment)."""
    from aiokafka import AIOKafkaConsumer
    from aiokafka.admin import AIOKafkaAdminClient, NewTopic
    from aiokafka.errors import TopicAlreadyExistsError

    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
    await admin.start()
    try:
        try:
            await admin.create_topics([NewTopic(t, 8, 1, topic_configs=c) for t, c in topics.items()])
        except TopicAlreadyExistsError:
            pass
    finally:
        await admin.close()
    consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap)
    await consumer.start()
    try:
        for _ in range(100):
            await consumer._client.force_metadata_update()
            if all(consumer.partitions_for_topic(t) for t in topics):
                break
            await asyncio.sleep(0.1)
    finally:
        await consumer.stop()


def main() -> None:
    args = parse_run_args()
    app = build(args)
    if args.workload.startswith("wordcount"):
        asyncio.run(precreate(args.bootstrap, {f"{args.app_id}-words": {"retention.ms": "-1"}}))
    worker = faust.Worker(app, loglevel=os.environ.get("FAUST_LOGLEVEL", "warning"))
    # The terminal progress spinner (on by default at levels >= WARNING) sets the root logger to DEBUG so
    # that every debug message turns it: pure overhead for a headless worker (~20% CPU), so it is off.
    worker.spinner = None
    worker.execute_from_commandline()


if __name__ == "__main__":
    main()
