"""The Kafka client side of a worker's per-record cost, in one process without a broker.

`benchmarks.hot_path` covers the tasks; this covers what a worker does per record around them: taking
fetched records out of aiokafka's fetch results (`getall` of a result marked by
`restore_records.always_hand_out_as_decoded`, as the main consumer's are) and appending task output to
aiokafka's batch builders (`RecordSender.send`). The fetch side decodes real record batches (aiokafka's
own builder, 500 records a batch, one fetch result per 10,000 records, taken 2,000 at a time as
`max.poll.records` does in the suite); the send side sends WordCount-like records (8 partitions, 2,000
records a call) to a producer stand-in that acknowledges every batch at once (no broker: the cost
measured is streamlet's and aiokafka's Python, not the network).

    python -m benchmarks.client_path [--records 200000] [--runs 5] [--instructions]

It prints CPU µs per record (min over runs) for each side and, with `--instructions` (valgrind's
callgrind; about 50x slower), instructions per record: a child over `--instruction-records` minus a
child over none. Run it in the checkouts to compare with `PYTHONPATH` set to each.
"""

from __future__ import annotations

import argparse
import asyncio
import re
import subprocess
import sys
import time
from types import SimpleNamespace
from typing import Any

SIDES = ("fetch", "send")
BATCH_RECORDS, RESULT_RECORDS, MAX_POLL_RECORDS = 500, 10_000, 2000


def _fetch_inputs(records: int) -> list[bytes]:
    from aiokafka.record.default_records import DefaultRecordBatchBuilder

    results, offset = [], 0
    while offset < records:
        data = b""
        for _ in range(RESULT_RECORDS // BATCH_RECORDS):
            if offset >= records:
                break
            builder = DefaultRecordBatchBuilder(2, 0, 0, -1, -1, -1, 1 << 20)
            for i in range(min(BATCH_RECORDS, records - offset)):
                builder.append(i, 1_700_000_000_000 + offset + i, f"w{(offset + i) % 10_000}".encode(),
                               b"the quick brown fox", [])
            batch = bytearray(builder.build())
            batch[0:8] = offset.to_bytes(8, "big")
            offset += min(BATCH_RECORDS, records - offset)
            data += bytes(batch)
        results.append(data)
    return results


def _fetch(inputs: list[bytes]) -> int:
    return asyncio.run(_fetch_in_loop(inputs))  # aiokafka's assignment state wants a running loop


async def _fetch_in_loop(inputs: list[bytes]) -> int:
    from aiokafka import TopicPartition
    from aiokafka.consumer.fetcher import FetchResult, PartitionRecords
    from aiokafka.consumer.subscription_state import Assignment
    from aiokafka.record.memory_records import MemoryRecords

    from streamlet.kafka.restore_records import _mark

    tp = TopicPartition("lines", 0)
    assignment = Assignment([tp])
    state = assignment.state_value(tp)
    state.reset_to(0)
    taken = 0
    for data in inputs:
        records = PartitionRecords(tp, MemoryRecords(data), [], state.position, None, None, True, 1)
        result = FetchResult(tp, assignment=assignment, partition_records=records, backoff=0)
        _mark(result)
        while result.has_more():
            taken += len(result.getall(MAX_POLL_RECORDS))
    return taken


def _send_inputs(records: int) -> list[dict[tuple[str, int], list[Any]]]:
    from streamlet.actors.record_collector import ProducedRecord

    out = [ProducedRecord(f"word{i % 10_000}".encode(), (i % 977).to_bytes(8, "big"), 1_700_000_000_000 + i, ())
           for i in range(records)]
    calls = []
    for start in range(0, records, MAX_POLL_RECORDS):
        chunk = out[start:start + MAX_POLL_RECORDS]
        calls.append({("counts", p): chunk[p::8] for p in range(8)})
    return calls


class _Producer:
    """Acknowledges each batch at once: what is measured is the appending, not a broker."""

    def create_batch(self) -> Any:
        from aiokafka.producer.message_accumulator import BatchBuilder

        return BatchBuilder(16_384, 0)

    async def send_batch(self, builder: Any, topic: str, *, partition: int) -> asyncio.Future[Any]:
        fut: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        fut.set_result(SimpleNamespace(offset=0))
        return fut


def _send(calls: list[dict[tuple[str, int], list[Any]]]) -> int:
    import anyio

    from streamlet.kafka.record_sender import RecordSender

    async def main() -> int:
        sender = RecordSender(_Producer())
        async with anyio.create_task_group() as tg:
            sender.bind(tg)
            for drained in calls:
                await sender.send(drained)
            await sender.flush()
        return sender.sent

    return asyncio.run(main())


def _run(side: str, records: int) -> tuple[int, float]:
    if side == "fetch":
        inputs: Any = _fetch_inputs(records)
        start = time.process_time()
        done = _fetch(inputs)
    else:
        inputs = _send_inputs(records)
        start = time.process_time()
        done = _send(inputs)
    return done, time.process_time() - start


def _instructions(side: str, records: int) -> int | None:
    counts = []
    for n in (records, 0):
        cmd = ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", sys.executable, "-m",
               "benchmarks.client_path", "--child", side, "--records", str(n)]
        proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
        found = re.search(r"Collected\s*:\s*(\d+)", proc.stderr)
        if proc.returncode != 0 or found is None:
            return None
        counts.append(int(found.group(1)))
    return (counts[0] - counts[1]) // records


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--records", type=int, default=200_000)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--instructions", action="store_true", help="also count instructions with callgrind")
    ap.add_argument("--instruction-records", type=int, default=40_000)
    ap.add_argument("--child", choices=SIDES, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        _run(args.child, args.records)
        return
    import streamlet

    print(f"streamlet from {streamlet.__file__}")
    for side in SIDES:
        results = [_run(side, args.records) for _ in range(args.runs)]
        done = {n for n, _ in results}
        best = min(s for _, s in results)
        line = f"{side}: {done} records per run; min {best / args.records * 1e6:.3f} CPU µs/record"
        if args.instructions:
            instr = _instructions(side, args.instruction_records)
            line += f"; {instr:,} instructions/record" if instr is not None else "; callgrind failed"
        print(line, flush=True)


if __name__ == "__main__":
    main()
