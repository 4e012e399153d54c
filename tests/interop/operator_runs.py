"""Runs of the `operators` application (tests/interop/apps.py and its Java twin) over two halves of input.

A run is a pair of engines: ("java", "java") is one uninterrupted Kafka Streams instance that takes
both halves, the reference; ("java", "streamlet") and ("streamlet", "java") move the application
between the two halves: the first instance processes the first half and closes cleanly, then, with no
pause, the second starts with the same application id. Each run has topics and an application id of
its own, and the same input. What a run leaves behind (`RunResult`) is read from the broker, with
read_committed: every output topic and every store changelog, in offset order.
"""

from __future__ import annotations

import asyncio
import json
import random
import re
import time
import traceback
import uuid
from collections import Counter
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from aiokafka import AIOKafkaConsumer, TopicPartition
from aiokafka.admin import AIOKafkaAdminClient
from aiokafka.errors import KafkaError

from streamlet.config import WINDOWED_AGGREGATION_EMIT_INTERVAL_MS
from tests.helpers.app_process import AppProcess
from tests.helpers.kafka import create_topics, producer, read_topic
from tests.interop.apps import OPERATOR_ROLES, TOPICS_ENV
from tests.interop.kafka_streams_app import KafkaStreamsApp

PARTITIONS = 2
INPUT_ROLES = ("win-in", "sess-in", "join-left", "join-right", "fk-orders", "fk-products")
OUTPUT_ROLES = ("win-out", "sess-out", "join-out", "fk-out")
STORES = ("window-counts", "session-counts", "clicks-views-this-join-store", "clicks-views-other-join-store",
          "orders-store", "products-store", "order-product-store", "order-product-subscription-store")
_JOIN_STORE = re.compile(r"clicks-views-(this|other)-join-store")
Record = tuple[int, bytes | None, bytes | None, int]
"""(partition, key, value, timestamp) of one record read back."""
Input = dict[str, list[tuple[str, str | None, int]]]
"""role -> [(key, value, timestamp)] in the order produced."""


@dataclass
class RunResult:
    """Everything one run left in its topics, in offset order per partition."""

    app_id: str
    outputs: dict[str, list[Record]] = field(default_factory=dict)
    changelogs: dict[str, list[Record]] = field(default_factory=dict)
    logs: dict[str, str] = field(default_factory=dict)
    seconds: float = 0.0


def make_input(seed: int = 2025) -> tuple[Input, Input]:
    """The two halves of the input, with event times of the last 20 minutes (Kafka 4 refuses times
    more than an hour ahead, and old ones fall to retention)."""
    rng = random.Random(seed)
    base = (int(time.time() * 1000) - 20 * 60_000) // 10_000 * 10_000
    first: Input = {role: [] for role in INPUT_ROLES}
    second: Input = {role: [] for role in INPUT_ROLES}

    def split(role: str, records: list[tuple[str, str | None, int]]) -> None:
        half = len(records) // 2
        first[role], second[role] = records[:half], records[half:]

    # Tumbling windows of 10 s, one record every 0.5 s: 12 windows for 6 keys.
    split("win-in", [(f"w{rng.randrange(6)}", f"v{i}", base + i * 500) for i in range(240)])
    # Sessions with a 5 s gap: 0-3 s between records of any key, so a key's sessions merge and split.
    t, sessions = base, []
    for i in range(240):
        t += rng.randrange(0, 3000)
        sessions.append((f"s{rng.randrange(6)}", f"v{i}", t))
    split("sess-in", sessions)
    # A join within 5 s either way.
    split("join-left", [(f"j{rng.randrange(8)}", f"click{i}", base + i * 1000 + rng.randrange(1000))
                        for i in range(120)])
    split("join-right", [(f"j{rng.randrange(8)}", f"view{i}", base + i * 1000 + rng.randrange(1000))
                         for i in range(120)])
    # Foreign-key join: orders "product:qty" against products; the second half adds orders, moves
    # some to other products, deletes an order and a product, and renames products.
    products = [(f"p{k}", f"name{k}-v1", base + k) for k in range(8)]
    orders = [(f"o{i}", f"p{rng.randrange(8)}:{i}", base + 100 + i) for i in range(30)]
    orders += [(f"o{i}", f"p{rng.randrange(8)}:{i}b", base + 200 + i) for i in range(5)]
    first["fk-products"], first["fk-orders"] = products, orders
    second["fk-orders"] = ([(f"o{i}", f"p{rng.randrange(8)}:{i}", base + 300 + i) for i in range(30, 60)]
                           + [(f"o{i}", f"p{(i + 3) % 8}:{i}c", base + 400 + i) for i in range(5, 15)]
                           + [("o15", None, base + 500)])
    second["fk-products"] = [(f"p{k}", f"name{k}-v2", base + 600 + k) for k in range(4)] + [("p7", None, base + 700)]
    return first, second


async def produce_input(bootstrap: str, topics: dict[str, str], records: Input, seconds: float = 0.0) -> None:
    """Write `records`, each role's in its order (so each input partition gets the same sequence however
    it is cut); with `seconds`, spread over about that long in acknowledged chunks, ten a second, each
    holding its share of every role: input that keeps arriving while instances come and go."""
    async with producer(bootstrap, idempotent=True) as p:
        chunks = max(1, int(seconds * 10))
        began = time.monotonic()
        for c in range(chunks):
            futures = [await p.send(topics[role], key=k.encode(), value=None if v is None else v.encode(),
                                    timestamp_ms=ts)
                       for role in INPUT_ROLES
                       for k, v, ts in records[role][len(records[role]) * c // chunks:
                                                     len(records[role]) * (c + 1) // chunks]]
            await asyncio.gather(*futures)
            await asyncio.sleep(max(0.0, began + seconds * (c + 1) / chunks - time.monotonic()))


async def read_committed(bootstrap: str, topic: str) -> list[Record]:
    """Every committed record of `topic` up to its last stable offsets, by partition then offset."""
    return [(r.partition, r.key, r.value, r.timestamp) for r in await read_topic(bootstrap, topic)]


async def wait_processed(bootstrap: str, app_id: str, topics: dict[str, str], quiet: float = 4.0,
                         timeout: float = 240.0, inputs: tuple[str, ...] = INPUT_ROLES,
                         outputs: tuple[str, ...] = OUTPUT_ROLES) -> None:
    """Until the group has committed every input partition (of the roles `inputs`) to its end and no output
    (of the roles `outputs`) has grown for `quiet` seconds (the foreign-key join's answers go through
    internal topics after the commit)."""
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
    await admin.start()
    probe = AIOKafkaConsumer(bootstrap_servers=bootstrap, group_id=None, isolation_level="read_committed")
    await probe.start()
    try:
        input_partitions = [TopicPartition(topics[r], p) for r in inputs for p in range(PARTITIONS)]
        output_partitions = [TopicPartition(topics[r], p) for r in outputs for p in range(PARTITIONS)]
        deadline = time.monotonic() + timeout
        last: dict[TopicPartition, int] = {}
        committed: dict[TopicPartition, Any] = {}
        still_since = time.monotonic()
        while time.monotonic() < deadline:
            try:
                committed = await admin.list_consumer_group_offsets(app_id)
            except KafkaError:  # the group's coordinator is not there yet (the offsets topic is young)
                await asyncio.sleep(0.5)
                continue
            ends = await probe.end_offsets(input_partitions)
            done = all((committed[tp].offset if tp in committed else 0) >= ends[tp] for tp in input_partitions)
            now_out = await probe.end_offsets(output_partitions)
            if now_out != last:
                last, still_since = now_out, time.monotonic()
            if done and time.monotonic() - still_since >= quiet:
                return
            await asyncio.sleep(0.5)
        raise TimeoutError(f"{app_id}: input not processed within {timeout}s (committed {committed})")
    finally:
        await probe.stop()
        await admin.close()


class Instance:
    """One instance of the `operators` application, Kafka Streams' or streamlet's. `name` sets its log and
    state directory apart from the application's other instances; `settings` are added to its own (such
    as `group.protocol`); `java_session_timeout_ms`, when given, is the Java consumer's session timeout.
    `app` names another interop application (Apps.java's name; its twin in tests/interop/apps.py has it with
    underscores)."""

    def __init__(self, engine: str, bootstrap: str, app_id: str, topics: dict[str, str], tmp: Path,
                 java_session_timeout_ms: int | None = None, name: str = "", settings: dict[str, Any] | None = None,
                 app: str = "operators") -> None:
        self.engine = engine
        self.name = name or engine
        common = {"bootstrap.servers": bootstrap, "application.id": app_id,
                  WINDOWED_AGGREGATION_EMIT_INTERVAL_MS: 0,  # final results after every record, not per second
                  "state.dir": tmp / f"{app_id}-{self.name}-state",
                  # both engines alike: a streams group refuses a member whose topology (internal topics'
                  # replication factor included) differs from the group's
                  "replication.factor": 1, **(settings or {})}
        self.log = tmp / f"{app_id}-{self.name}.log"
        if engine == "java":
            java = dict(common)
            if java_session_timeout_ms is not None:
                java["session.timeout.ms"] = java_session_timeout_ms
            self.java: KafkaStreamsApp | None = KafkaStreamsApp(app, topics, java, self.log)
        else:
            self.java = None
            self.py = AppProcess(f"tests.interop.apps:{app.replace('-', '_')}",
                                 {**common, "processing.guarantee": "exactly_once_v2", "statestore.cache.max.bytes": 0,
                                  # as Main.java: the foreign-key join's result store has no serdes of its own
                                  "default.key.serde": "String", "default.value.serde": "String"},
                                 self.log, env={TOPICS_ENV: json.dumps(topics)})

    def start(self) -> Instance:
        if self.java is not None:
            self.java.start()
        else:
            self.py.start()
        return self

    def running(self) -> bool:
        proc = self.java.proc if self.java is not None else self.py.proc
        return proc is not None and proc.poll() is None

    async def stop(self, leave_group: bool = False) -> None:
        """A clean close (a Kafka Streams instance leaves the group only with `leave_group`; a streamlet
        instance always does); it must succeed."""
        if self.java is not None:
            code = await self.java.close(leave_group=leave_group)
            assert code == 0 and "CLOSED" in self.java.lines, self.java.log_tail()
        else:
            code = self.py.stop()
            assert code == 0, self.py.log_text()[-3000:]

    def kill(self) -> None:
        """kill -9."""
        if self.java is not None:
            self.java.kill()
        else:
            self.py.kill()

    def log_text(self) -> str:
        return self.log.read_text(errors="replace")


async def new_application(bootstrap: str, kind: str) -> tuple[str, dict[str, str]]:
    """A fresh application id (`interop-ops-<kind>-...`) and topics of its own, `PARTITIONS` partitions each."""
    suffix = uuid.uuid4().hex[:8]
    topics = {role: f"{role}-{suffix}" for role in OPERATOR_ROLES}
    await create_topics(bootstrap, {t: PARTITIONS for t in topics.values()})
    return f"interop-ops-{kind}-{suffix}", topics


async def collect(bootstrap: str, app_id: str, topics: dict[str, str], instances: list[Instance],
                  began: float) -> RunResult:
    """What a finished run left: its outputs, its stores' changelogs and its instances' logs."""
    result = RunResult(app_id)
    for role in OUTPUT_ROLES:
        result.outputs[role] = await read_committed(bootstrap, topics[role])
    for store in STORES:
        result.changelogs[store] = await read_committed(bootstrap, f"{app_id}-{store}-changelog")
    result.logs = {i.name: i.log_text() for i in instances}
    result.seconds = time.monotonic() - began
    return result


async def run(bootstrap: str, tmp: Path, first_engine: str, second_engine: str, first: Input, second: Input,
              java_session_timeout_ms: int) -> RunResult:
    """One run: `first_engine` takes the first half; `second_engine` the second (the same instance
    when both are "java" and it is the reference)."""
    began = time.monotonic()
    app_id, topics = await new_application(bootstrap, f"{first_engine[0]}{second_engine[0]}")
    await produce_input(bootstrap, topics, first)
    first_instance = Instance(first_engine, bootstrap, app_id, topics, tmp, java_session_timeout_ms,
                              name=f"{first_engine}-0").start()
    instances = [first_instance]
    running: Instance | None = first_instance
    try:
        await wait_processed(bootstrap, app_id, topics)
        if first_engine != second_engine:
            running = None
            await first_instance.stop()
            running = Instance(second_engine, bootstrap, app_id, topics, tmp, java_session_timeout_ms,
                               name=f"{second_engine}-1")
            instances.append(running)
            running.start()  # at once: no pause after the first instance's close
        await produce_input(bootstrap, topics, second)
        await wait_processed(bootstrap, app_id, topics)
    finally:
        if running is not None:
            await running.stop()
    return await collect(bootstrap, app_id, topics, instances, began)


class Runs:
    """Runs of one test module, each made once and only when a test asks for it: `makers` maps a run's
    name to the coroutine function that makes it. A run that failed fails every test that asks for it
    (it is not made again); its traceback is left in `<tmp>/<name>-failure.txt`."""

    def __init__(self, tmp: Path, makers: dict[str, Callable[[], Awaitable[RunResult]]]) -> None:
        self.tmp = tmp
        self._makers = makers
        self._done: dict[str, RunResult | BaseException] = {}

    async def get(self, name: str) -> RunResult:
        """The run `name`, made at the first call."""
        if name not in self._done:
            try:
                self._done[name] = await self._makers[name]()
            except BaseException as exc:  # a cancellation inside a run too: it must not pass for the test's
                (self.tmp / f"{name}-failure.txt").write_text("".join(traceback.format_exception(exc)))
                self._done[name] = exc
        done = self._done[name]
        if isinstance(done, BaseException):
            raise AssertionError(f"the {name} run failed: {done!r}") from done
        return done


def as_text(records: list[Record]) -> list[tuple[int, str | None, str | None]]:
    """(partition, key, value) with the bytes decoded, for readable comparisons of String topics."""
    return [(p, None if k is None else k.decode(), None if v is None else v.decode()) for p, k, v, _ in records]


def per_source_key(records: list[Record]) -> dict[tuple[int, str], list[tuple[str, str | None]]]:
    """A windowed aggregation's output (keys "<key>@<start>-<end>") as one sequence per output partition
    and source key. The records of one source key come from one task, in its processing order, so each
    such sequence is deterministic; how the tasks' records interleave in a partition is not."""
    sequences: dict[tuple[int, str], list[tuple[str, str | None]]] = {}
    for partition, key, value in as_text(records):
        assert key is not None
        sequences.setdefault((partition, key.split("@")[0]), []).append((key, value))
    return sequences


def changelog_view(store: str, records: list[Record]) -> Any:
    """A store as its changelog holds it. Join stores keep duplicates under a per-instance sequence
    number (the key's last 4 bytes), which need not match across runs: compared as the multiset of
    (key without it, value, timestamp) of every put; other stores as each key's last value and timestamp."""
    if _JOIN_STORE.fullmatch(store):
        return Counter((k[:-4] if k is not None else None, v, ts) for _, k, v, ts in records)
    return latest(records)


def latest(records: list[Record], with_timestamp: bool = True) -> dict[bytes | None, Any]:
    """A compacted view: each key's last value (and timestamp), keys whose last value is a tombstone left out."""
    table: dict[bytes | None, Any] = {}
    for _, k, v, ts in records:
        table[k] = (v, ts) if with_timestamp else v
    return {k: v for k, v in table.items() if (v[0] if with_timestamp else v) is not None}
