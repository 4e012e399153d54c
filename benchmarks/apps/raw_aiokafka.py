"""The Python ceiling: the `pipe` workload hand-written on aiokafka, with no framework at all.

Reads the input in batches, parses, filters and maps each event, writes the results to the same partition
of the output with the producer's batch API, and commits the input offsets once the output is
acknowledged — the least work any Python stream processor on aiokafka can do for this workload.
"""

from __future__ import annotations

import argparse
import asyncio
import signal

import orjson
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition

from benchmarks.run_args import parse_run_args


async def run(args: argparse.Namespace) -> None:
    consumer = AIOKafkaConsumer(args.input, bootstrap_servers=args.bootstrap, group_id=args.app_id,
                                auto_offset_reset="earliest", enable_auto_commit=False, max_poll_records=5000)
    producer = AIOKafkaProducer(bootstrap_servers=args.bootstrap, acks="all", max_batch_size=1 << 20, linger_ms=5)
    await consumer.start()
    await producer.start()
    stopping = asyncio.Event()
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stopping.set)
    loads, dumps = orjson.loads, orjson.dumps
    try:
        while not stopping.is_set():
            batches = await consumer.getmany(timeout_ms=200, max_records=5000)
            futures = []
            offsets = {}
            for tp, records in batches.items():
                builder = producer.create_batch()
                for r in records:
                    ev = loads(r.value)
                    if ev["kind"] == "view":
                        continue
                    value = dumps({"id": ev["id"], "user": ev["user"], "amount_cents": ev["amount"] * 100})
                    if builder.append(key=r.key, value=value, timestamp=r.timestamp) is None:
                        futures.append(await producer.send_batch(builder, args.output, partition=tp.partition))
                        builder = producer.create_batch()
                        builder.append(key=r.key, value=value, timestamp=r.timestamp)
                if builder.record_count():
                    futures.append(await producer.send_batch(builder, args.output, partition=tp.partition))
                offsets[TopicPartition(tp.topic, tp.partition)] = records[-1].offset + 1
            if futures:
                await asyncio.gather(*futures)
            if offsets:
                await consumer.commit(offsets)
    finally:
        await producer.stop()
        await consumer.stop()


def main() -> None:
    args = parse_run_args()
    if args.workload != "pipe":
        raise SystemExit(f"the raw pipe only does the pipe workload, not {args.workload}")
    asyncio.run(run(args))


if __name__ == "__main__":
    main()
