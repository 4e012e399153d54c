"""`make demo`: WordCount end to end on a real Kafka broker, as in the Kafka Streams quickstart.

It starts a fresh local Apache Kafka broker, creates the quickstart's two topics, runs
`examples/wordcount.py` with `python -m streamlet run` in its own process, writes the three
quickstart lines, and prints every update the app writes to `streams-wordcount-output`
(String word, Long count) as `word<TAB>count`. Then it stops the app with SIGTERM (a clean close)
and the broker. Exit code 0 only if all 11 updates arrived and the app exited cleanly.
"""

from __future__ import annotations

import asyncio
import os
import signal
import struct
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
from aiokafka.admin import AIOKafkaAdminClient, NewTopic

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from streamlet.testing.local_broker import LocalKafkaBroker  # noqa: E402 - after the path fix-up

INPUT_TOPIC = "streams-plaintext-input"
OUTPUT_TOPIC = "streams-wordcount-output"
LINES = ["all streams lead to kafka", "hello kafka streams", "join kafka summit"]
EXPECTED_UPDATES = 11  # one per word occurrence: 5 + 3 + 3
TIMEOUT_S = 90.0


class DemoError(Exception):
    """The demo did not produce the expected output; the message says what to look at."""


def say(message: str) -> None:
    print(f"[demo] {message}", file=sys.stderr, flush=True)


async def create_topics(bootstrap: str) -> None:
    # One partition each, so that the output order is the order the lines were written in.
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
    await admin.start()
    try:
        await admin.create_topics([NewTopic(INPUT_TOPIC, 1, 1), NewTopic(OUTPUT_TOPIC, 1, 1)])
    finally:
        await admin.close()


async def produce_lines(bootstrap: str) -> None:
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, acks="all")
    await producer.start()
    try:
        for line in LINES:
            await producer.send_and_wait(INPUT_TOPIC, key=None, value=line.encode("utf-8"))
    finally:
        await producer.stop()


async def consume_counts(bootstrap: str, app: subprocess.Popen[bytes]) -> list[tuple[str, int]]:
    consumer = AIOKafkaConsumer(OUTPUT_TOPIC, bootstrap_servers=bootstrap, auto_offset_reset="earliest",
                                enable_auto_commit=False, group_id=None)
    await consumer.start()
    counts: list[tuple[str, int]] = []
    try:
        deadline = time.monotonic() + TIMEOUT_S
        while len(counts) < EXPECTED_UPDATES:
            if app.poll() is not None:
                raise DemoError(f"the WordCount app exited early with code {app.returncode}")
            if time.monotonic() > deadline:
                raise DemoError(f"only {len(counts)} of {EXPECTED_UPDATES} updates arrived on {OUTPUT_TOPIC} "
                                f"within {TIMEOUT_S:.0f}s")
            batch = await consumer.getmany(timeout_ms=250)
            for records in batch.values():
                for record in records:
                    word = record.key.decode("utf-8") if record.key is not None else ""
                    (count,) = struct.unpack(">q", record.value)  # Serdes.Long: 8-byte big-endian
                    counts.append((word, count))
    finally:
        await consumer.stop()
    return counts


def start_app(bootstrap: str, state_dir: Path, log_path: Path) -> subprocess.Popen[bytes]:
    command = [
        sys.executable, "-m", "streamlet", "run", "examples.wordcount:topology",
        "--set", f"bootstrap.servers={bootstrap}",
        "--set", "application.id=wordcount-demo",
        "--set", "statestore.cache.max.bytes=0",  # no caching: one output record per input word
        "--set", "commit.interval.ms=100",
        "--set", f"state.dir={state_dir}",
    ]
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")]))
    with open(log_path, "wb") as log_file:
        return subprocess.Popen(command, cwd=REPO, env=env, stdin=subprocess.DEVNULL, stdout=log_file,
                                stderr=subprocess.STDOUT)


def stop_app(app: subprocess.Popen[bytes], timeout: float = 60.0) -> int:
    if app.poll() is None:
        app.send_signal(signal.SIGTERM)
        try:
            app.wait(timeout)
        except subprocess.TimeoutExpired:
            app.kill()
            app.wait()
    return app.returncode


def tail(path: Path, lines: int = 40) -> str:
    return "\n".join(path.read_text(errors="replace").splitlines()[-lines:]) if path.exists() else ""


def main() -> int:
    with tempfile.TemporaryDirectory(prefix="streamlet-demo-") as scratch:
        work = Path(scratch)
        log_path = work / "wordcount-app.log"
        say("starting a local Apache Kafka broker ...")
        with LocalKafkaBroker() as broker:
            bootstrap = broker.bootstrap_servers
            say(f"broker ready at {bootstrap}; creating {INPUT_TOPIC} and {OUTPUT_TOPIC}")
            asyncio.run(create_topics(bootstrap))
            app = start_app(bootstrap, work / "state", log_path)
            say(f"started `streamlet run examples.wordcount:topology` (pid {app.pid})")
            try:
                asyncio.run(produce_lines(bootstrap))
                say(f"wrote {len(LINES)} lines to {INPUT_TOPIC}; reading {OUTPUT_TOPIC}:")
                counts = asyncio.run(consume_counts(bootstrap, app))
            except DemoError as exc:
                stop_app(app)
                print(f"demo failed: {exc}; last lines of the app's log:\n{tail(log_path)}", file=sys.stderr)
                return 1
            for word, count in counts:
                print(f"{word}\t{count}", flush=True)
            code = stop_app(app)
            if code != 0:
                print(f"demo failed: the app exited with code {code} after SIGTERM; last lines of its log:\n"
                      f"{tail(log_path)}", file=sys.stderr)
                return 1
            say("the app closed cleanly; stopping the broker")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
