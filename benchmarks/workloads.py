"""The benchmark's workloads: their input data, their expected output, and the check of an output.

Every system under test (streamlet, Kafka Streams, faust-streaming, Quix Streams, the raw pipes) reads the
same pre-loaded input topics and must write the same output format, so one checker judges them all:

Input topics (8 partitions each unless told otherwise; written once per benchmark run):
  * `lines`  — WordCount input: key none, value UTF-8 text of `words_per_line` words (`w<n>`), round-robin.
  * `events` — key = user id as UTF-8 (`u<n>`), partitioned by Kafka's murmur2 of the key (as the Java
    client would), value = JSON `{"id": int, "user": str, "amount": int 0..999, "kind": "view"|"click"|"buy"}`,
    record timestamp = BASE_TS + id * EVENT_SPACING_MS (event time, increasing within every partition;
    BASE_TS is a few hours before the run started, see below).
  * `users`  — the table of the join: key = user id, value = JSON `{"user": str, "region": "region-<k>"}`,
    one record per user, timestamp BASE_TS - 1 h (older than every event), partitioned like `events`.
  * `events_avro` — the `events` in Avro (the Avro workloads' input): the same keys, timestamps and fields,
    the value an `Event` record (EVENT_SCHEMA) in Confluent's wire format (magic byte 0, the schema's 4-byte
    id, the Avro body); the schema is registered once, under `<topic>-value`, before the topic is written.
  * `updates` — the table_agg input: key = row id as UTF-8 (`k<n>`), partitioned by murmur2, value = JSON
    `{"group": "g<j>", "amount": int 0..999}`, timestamp as the events'. Later updates of a row move it
    to another group (random), so the aggregation's subtractor runs.

Key cardinality (`python -m benchmarks --keys N`). Without `--keys`, the input is today's, record for
record: WordCount draws from 10,000 words, the events from 1,000 users, the users table has those 1,000
rows, table_agg has 10,000 rows in 1,000 groups. With `--keys N`, every workload's keyspace is N: the
vocabulary is N words, the events' users and the users table's rows are N, table_agg has N rows in
max(1, N // 10) groups. The first N draws then walk all N keys once in a scattered order (an affine
permutation `(i * a + b) mod N`, so no two neighbouring records share a key and writes are not sorted),
later ones are uniform over the N keys: every key occurs once the input has N draws (WordCount: N / 3
lines), so the state is N keys, not "about N".

Workloads (what each system's application computes; output topics are fresh per run, 8 partitions):
  * `pipe`           — events → parse JSON, keep `kind != "view"`, map to
                       `{"id": id, "user": user, "amount_cents": amount * 100}` (JSON), same key.
  * `wordcount_alos` — lines → split on whitespace, count per word, at-least-once, commit interval 1000 ms;
                       output key = word (UTF-8), value = count as 8-byte big-endian signed long.
  * `wordcount_eos`  — the same, exactly-once (`exactly_once_v2`), commit interval 100 ms, read `read_committed`.
  * `window_count`   — events → count per user in tumbling 1-minute event-time windows (no grace; input is
                       in order); output key = `"<user>@<window start ms>"` (UTF-8), value = 8-byte long count.
  * `join`           — events (stream) inner-joined with users (table) by key; output key = user, value =
                       JSON `{"id": id, "user": user, "amount": amount, "region": region}`.
  * `session_count`  — events → count per user in session windows (inactivity gap SESSION_GAP_MS, no grace),
                       only final results (`suppress(untilWindowCloses(unbounded()))`); output key =
                       `"<user>@<session start ms>-<session end ms>"`, value = 8-byte long count. A session
                       comes out once its task's stream time (the newest event of its partition) has passed
                       its end by the gap; sessions still open at the end of the input never do.
  * `table_agg`      — updates as a KTable (store `agg-table`), `group_by` the row's group, `aggregate` from
                       0 with adder `sum + amount` and subtractor `sum - amount` (store `group-sums`); output
                       key = group (UTF-8), value = the group's sum as 8-byte long. A scale workload: not
                       in the default suite, streamlet and Kafka Streams only. Use `--records` >= 2 x keys
                       so that rows move between groups.
  * `stream_join`    — events split by kind, clicks inner-joined with views of the same user within
                       STREAM_JOIN_WINDOW_MS either way (a KStream-KStream join, no grace: the input is in
                       order); output key = user, value = JSON `{"id": click id * 2^21 + view id, "user",
                       "click": click id, "view": view id}`, one record per matching pair.
  * `pipe_avro`      — `pipe` on `events_avro`: values read and written with the registry's Avro serdes
                       (GenericRecord / dicts); keep `kind != "view"`, map to an `EventCents` record
                       (CENTS_SCHEMA: id, user, amount_cents), same key. Judged as `pipe`, on the decoded values,
                       and every output value must be written with CENTS_SCHEMA.
  * `window_count_avro` — `window_count` on `events_avro`, every value read with the Avro serde (the count does
                       not use it, as the JSON window_count does not); the output is window_count's.
                       The two Avro workloads are not in the default suite: streamlet and Kafka Streams only,
                       with a schema registry the runner starts (Apicurio, streamlet.testing.local_registry).

Outputs that update (the counts) are judged by the last value per key; outputs that don't (pipe, join) by
the set of ids, with every value checked and duplicates counted. A run whose final output differs from the
expected one is reported with `correct: false`, so a fast wrong answer never counts.

The check stays exact at millions of keys without a Python object per key: the counts (WordCount,
window_count, table_agg) are kept as 8-byte integers in `array('q')` by an integer code of the key (the
word's number, window number x users + user, the group's number), 16-24 bytes a key with what the output
brought, about 250 MB at 10M keys; pipe and join keep each event's user, amount and kind in arrays (7-11
bytes an event) and one byte an id for how often it came. Only session_count and stream_join (not scale
workloads) keep dicts.
"""

from __future__ import annotations

import base64
import bisect
import functools
import io
import json
import math
import os
import random
import struct
import time
from array import array
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import orjson

EVENT_SPACING_MS = 6  # 1,000,000 events span 100 minutes: 100 windows
EVENT_TIME_LEAD_MS = 3 * 3_600_000
"""How far before the run's start the events begin (the users table one hour earlier still)."""


def _base_ts(now_ms: int) -> int:
    """The first event's time: a whole minute, EVENT_TIME_LEAD_MS before `now_ms`.

    Event times must be recent, not a fixed date. A windowed store's changelog is `compact,delete` with
    `retention.ms` = the store's retention + 1 day (as in Kafka Streams), and the broker expires records
    by their timestamps: with events from a fixed date in the past it deleted window counts from the
    changelog mid-run, so an instance that took a task over (streamlet with 2 workers) restored
    incomplete counts and its output was wrong. One value per benchmark process: the pre-loaded input
    and the expected results are both computed from it."""
    start = now_ms - EVENT_TIME_LEAD_MS
    return start - start % 60_000


BASE_TS = _base_ts(int(time.time() * 1000))
USERS = 1000
REGIONS = 7
KINDS = ("view", "click", "buy")

WORDS = 10_000
"""WordCount's vocabulary without `--keys`."""
TABLE_ROWS = 10_000
"""table_agg's rows without `--keys`."""

WORKLOADS = ("pipe", "wordcount_alos", "wordcount_eos", "window_count", "join", "session_count", "stream_join")
"""The suite (`make bench`)."""
SCALE_WORKLOADS = ("wordcount_eos", "wordcount_alos", "table_agg", "window_count", "join")
"""The workloads that keep state by key, run at `--keys N` (`make bench-scale`)."""
AVRO_WORKLOADS = ("pipe_avro", "window_count_avro")
"""The workloads on Avro values through a schema registry (not in the suite: `--workloads pipe_avro,...`)."""
ALL_WORKLOADS = (*WORKLOADS, "table_agg", *AVRO_WORKLOADS)
BASE_OF = {"pipe_avro": "pipe", "window_count_avro": "window_count"}
"""The JSON workload each Avro workload computes (its expected output is that one's)."""

#: Which input topic (logical name) each workload reads; `join` also reads the `users` table.
INPUT_OF = {"pipe": "events", "wordcount_alos": "lines", "wordcount_eos": "lines", "window_count": "events",
            "join": "events", "session_count": "events", "stream_join": "events", "table_agg": "updates",
            "pipe_avro": "events_avro", "window_count_avro": "events_avro"}
#: Workloads whose latency run would not measure the system: why.
NO_LATENCY = {"session_count": "a final session count comes out only once the 30 s inactivity gap has passed "
                               "in event time, so its delay is the gap, not the system"}
SESSION_GAP_MS = 30_000
STREAM_JOIN_WINDOW_MS = 10_000
PAIR_ID_SHIFT = 21  # pair id = click id << 21 | view id: unique for up to 2,097,152 events
GUARANTEE_OF = {"wordcount_eos": "exactly_once_v2"}  # everything else: at_least_once
COMMIT_MS_OF = {"wordcount_eos": 100}  # everything else: 1000


def guarantee(workload: str) -> str:
    return GUARANTEE_OF.get(workload, "at_least_once")


def commit_ms(workload: str) -> int:
    return COMMIT_MS_OF.get(workload, 1000)


# --- input data ---------------------------------------------------------------------------------------

class _Spread:
    """Draw `i` < `keys` of the scale input: a permutation of range(keys) that scatters neighbours
    (`(i * a + b) mod keys`, `a` coprime to `keys`)."""

    def __init__(self, keys: int) -> None:
        self.keys = keys
        a = max(1, round(keys * 0.6180339887))  # the golden ratio's step: neighbours land far apart
        while math.gcd(a, keys) != 1:
            a += 1
        self.a = a

    def __call__(self, i: int) -> int:
        return (i * self.a + 40_503) % self.keys


@functools.lru_cache(maxsize=8)
def _walk(keys: int) -> _Spread:
    return _Spread(keys)


def word_numbers(n: int, words_per_line: int = 3, keys: int | None = None, seed: int = 1) -> Iterator[int]:
    """The numbers of the words of `n` lines, in order (`w<number>`)."""
    rng = random.Random(seed)
    if keys is None:  # today's input: a uniform choice among WORDS words, as `rng.choice(vocab)` draws it
        for _ in range(n * words_per_line):
            yield rng.choice(range(WORDS))
        return
    walk = _walk(keys)
    for j in range(n * words_per_line):
        yield walk(j) if j < keys else rng.randrange(keys)


def word_lines(n: int, words_per_line: int = 3, keys: int | None = None, seed: int = 1) -> Iterator[bytes]:
    """`n` lines of `words_per_line` words (`w<number>`) over the vocabulary (WORDS words, or `keys`)."""
    numbers = word_numbers(n, words_per_line, keys, seed)
    for _ in range(n):
        yield " ".join(f"w{next(numbers)}" for _ in range(words_per_line)).encode()


def user_key(n: int) -> bytes:
    return f"u{n}".encode()


def _draw_event(i: int, rng: random.Random, keys: int | None) -> tuple[int, int, str]:
    """Event `i`'s (user number, amount, kind), drawn from `rng` as the suite always has."""
    if keys is None:
        user = rng.randrange(USERS)
    else:
        drawn = rng.randrange(keys)
        user = _walk(keys)(i) if i < keys else drawn
    return user, rng.randrange(1000), rng.choice(KINDS)


def event(i: int, rng: random.Random, keys: int | None = None) -> tuple[bytes, dict[str, Any]]:
    """Event number `i`: (key, value as a dict), its user among USERS users, or `keys` (the first `keys`
    events then walk every user once)."""
    number, amount, kind = _draw_event(i, rng, keys)
    user = f"u{number}"
    return user.encode(), {"id": i, "user": user, "amount": amount, "kind": kind}


def event_fields(n: int, keys: int | None = None, seed: int = 2) -> Iterator[tuple[int, int, str]]:
    """(user number, amount, kind) of each of `n` events: `events` without building the records."""
    rng = random.Random(seed)
    for i in range(n):
        yield _draw_event(i, rng, keys)


def events(n: int, seed: int = 2, keys: int | None = None) -> Iterator[tuple[bytes, bytes, int]]:
    """(key, JSON value, timestamp) of `n` events over USERS users, or `keys`."""
    rng = random.Random(seed)
    for i in range(n):
        key, value = event(i, rng, keys)
        yield key, orjson.dumps(value), BASE_TS + i * EVENT_SPACING_MS


EVENT_SCHEMA: dict[str, Any] = {
    "type": "record", "name": "Event", "namespace": "io.streamlet.bench",
    "fields": [{"name": "id", "type": "long"}, {"name": "user", "type": "string"},
               {"name": "amount", "type": "int"}, {"name": "kind", "type": "string"}]}
"""The Avro events' value schema (the JSON event's fields)."""
CENTS_SCHEMA: dict[str, Any] = {
    "type": "record", "name": "EventCents", "namespace": "io.streamlet.bench",
    "fields": [{"name": "id", "type": "long"}, {"name": "user", "type": "string"},
               {"name": "amount_cents", "type": "long"}]}
"""pipe_avro's output value schema (the JSON pipe's output fields)."""


def schema_text(schema: dict[str, Any]) -> str:
    """A schema's JSON text as Java's Avro `Schema.toString()` writes it (compact, in field order): the text
    both systems' serializers register, so a registry that ids schemas by content gives both one id."""
    return json.dumps(schema, separators=(",", ":"))


class EventEncoder:
    """Writes an event as Confluent-framed Avro: magic byte 0, `schema_id` (4 bytes, big-endian), then the
    body by fastavro's schemaless writer (no registry round trip per record)."""

    def __init__(self, schema_id: int) -> None:
        import fastavro

        self.header = b"\0" + schema_id.to_bytes(4, "big")
        self.schema = fastavro.parse_schema(EVENT_SCHEMA)
        self.write = fastavro.schemaless_writer
        self.buffer = io.BytesIO()

    def __call__(self, event: dict[str, Any]) -> bytes:
        buffer = self.buffer
        buffer.seek(0)
        buffer.truncate()
        buffer.write(self.header)
        self.write(buffer, self.schema, event)
        return buffer.getvalue()


@functools.lru_cache(maxsize=4)
def event_encoder(schema_id: int) -> EventEncoder:
    return EventEncoder(schema_id)


def avro_events(n: int, schema_id: int, keys: int | None = None) -> Iterator[tuple[bytes, bytes, int]]:
    """(key, Confluent-framed Avro value, timestamp) of `n` events: `events` record for record, the value
    written with EVENT_SCHEMA registered under `schema_id`."""
    encode = EventEncoder(schema_id)
    for i, (number, amount, kind) in enumerate(event_fields(n, keys)):
        user = f"u{number}"
        yield user.encode(), encode({"id": i, "user": user, "amount": amount, "kind": kind}), \
            BASE_TS + i * EVENT_SPACING_MS


def region_of(user: str) -> str:
    return f"region-{int(user[1:]) % REGIONS}"


def users(keys: int | None = None) -> Iterator[tuple[bytes, bytes, int]]:
    """The join's table: one row per user (USERS, or `keys`)."""
    for n in range(USERS if keys is None else keys):
        user = f"u{n}"
        yield user.encode(), orjson.dumps({"user": user, "region": region_of(user)}), BASE_TS - 3_600_000


def groups_of(rows: int) -> int:
    """table_agg's groups for `rows` table rows."""
    return max(1, rows // 10)


def update_numbers(n: int, keys: int | None = None, seed: int = 3) -> Iterator[tuple[int, int, int]]:
    """(row, group, amount) of table_agg's `n` updates over `keys` rows (TABLE_ROWS without)."""
    rows = TABLE_ROWS if keys is None else keys
    groups = groups_of(rows)
    rng = random.Random(seed)
    walk = _walk(rows)
    for i in range(n):
        drawn = rng.randrange(rows)
        yield walk(i) if i < rows else drawn, rng.randrange(groups), rng.randrange(1000)


def update_record(row: int, group: int, amount: int, value_bytes: int = 0) -> tuple[bytes, bytes]:
    """One table_agg update; with `value_bytes` its JSON value is padded to about that many bytes by a `pad`
    field the applications ignore (the table's store keeps each row's value: `--value-bytes` sizes the state).
    The pad is random base64, so neither LevelDB's nor RocksDB's compression shrinks the state below its size."""
    value = b'{"group":"g%d","amount":%d}' % (group, amount)
    if value_bytes > len(value) + 9:
        pad = value_bytes - len(value) - 9
        value = value[:-1] + b',"pad":"' + base64.b64encode(os.urandom(pad))[:pad] + b'"}'
    return f"k{row}".encode(), value


def updates(n: int, keys: int | None = None, seed: int = 3,
            value_bytes: int = 0) -> Iterator[tuple[bytes, bytes, int]]:
    """(key, JSON value, timestamp) of table_agg's `n` updates (values padded to `value_bytes`, see
    `update_record`)."""
    for i, (row, group, amount) in enumerate(update_numbers(n, keys, seed)):
        yield *update_record(row, group, amount, value_bytes), BASE_TS + i * EVENT_SPACING_MS


def input_records(kind: str, n: int, keys: int | None = None, schema_id: int | None = None,
                  value_bytes: int = 0) -> Iterator[tuple[bytes | None, bytes, int]]:
    """The records of input topic `kind` (lines, events, events_avro, users, updates): `n` of them (users: one
    per user); `events_avro` needs the id its schema was registered under; `value_bytes` pads the updates'."""
    if kind == "events_avro":
        if schema_id is None:
            raise ValueError("events_avro needs the id of its registered schema")
        return avro_events(n, schema_id, keys)
    if kind == "lines":
        return ((None, v, BASE_TS) for v in word_lines(n, keys=keys))
    if kind == "events":
        return events(n, keys=keys)
    if kind == "users":
        return users(keys)
    if kind == "updates":
        return updates(n, keys, value_bytes=value_bytes)
    raise ValueError(f"unknown input {kind!r}")


# --- expected results and checking ----------------------------------------------------------------------

def split_words(line: str) -> list[str]:
    return line.lower().split()


@dataclass
class Check:
    """The verdict on one system's output."""

    correct: bool
    outputs: int
    duplicates: int = 0
    detail: str = ""
    extra: dict[str, Any] = field(default_factory=dict)


MISSING = -(1 << 63)
"""In a `Counts` array: no output expected (or, on the tracker's side, none seen) for that key."""
WRONG = MISSING + 1
"""On the tracker's side: the key's latest value is not an 8-byte long (a tombstone, another size)."""


class Counts:
    """The expected 8-byte values of an updating output by an integer code of the key, as 8-byte ints:
    dense (code = slot, MISSING where no output is expected) or sparse (sorted `codes` beside `wants`)."""

    def __init__(self, wants: array, codes: array | None = None) -> None:
        self.wants, self.codes = wants, codes
        self.size = len(wants) - wants.count(MISSING)

    def slot(self, code: int) -> int | None:
        """Where `code`'s expected value is, or None if no output is expected for it."""
        if self.codes is None:
            return code if 0 <= code < len(self.wants) and self.wants[code] != MISSING else None
        i = bisect.bisect_left(self.codes, code)
        return i if i < len(self.codes) and self.codes[i] == code else None

    @staticmethod
    def dense(size: int) -> array:
        return array("q", [MISSING]) * size


def _number(text: bytes, prefix: bytes = b"") -> int | None:
    """n of `prefix` + n written in decimal the one way `str(n)` writes it, else None."""
    if not text.startswith(prefix):
        return None
    digits = text[len(prefix):]
    if not digits.isdigit() or (len(digits) > 1 and digits[:1] == b"0"):
        return None
    return int(digits)


WINDOW_MS = 60_000
"""window_count's tumbling window."""


class Expected:
    """What a workload's output must be; built from the same generators as the input (`keys`: the
    `--keys` knob, None for today's input)."""

    def __init__(self, workload: str, records: int, words_per_line: int = 3, partitions: int = 8,
                 keys: int | None = None, schema_of: Callable[[int], str | None] | None = None) -> None:
        self.workload = workload
        self.records = records
        self.keys = keys
        # An Avro output's values are decoded (pipe_avro); `schema_of` says which schema an id is (the registry).
        self.decode: AvroValues | None = None
        if workload == "pipe_avro":
            if schema_of is None:
                raise ValueError("pipe_avro's checker needs schema_of: the registry's schema of an id")
            self.decode = AvroValues(CENTS_SCHEMA, schema_of)
        workload = BASE_OF.get(workload, workload)  # an Avro workload's output is its JSON twin's
        self.counts: Counts | None = None  # wordcount, window_count, table_agg
        self.latest: dict[bytes, bytes] = {}  # session_count
        self.by_id: dict[int, tuple[bytes, dict[str, Any]]] = {}  # stream_join
        self.columns: _EventColumns | None = None  # pipe, join
        if workload.startswith("wordcount"):
            wants = array("q", [0]) * (WORDS if keys is None else keys)
            for w in word_numbers(records, words_per_line, keys):
                wants[w] += 1
            for w, n in enumerate(wants):
                if n == 0:
                    wants[w] = MISSING
            self.counts = Counts(wants)
        elif workload == "window_count":
            self.counts = _window_counts(records, keys)
        elif workload == "table_agg":
            self.counts = _group_sums(records, keys)
        elif workload == "session_count":
            self.latest = _final_sessions(records, partitions, keys)
        elif workload == "stream_join":
            self.by_id = _joined_pairs(records, keys)
        elif workload in ("pipe", "join"):
            self.columns = _EventColumns(workload, records, keys)
        else:
            raise ValueError(f"unknown workload {workload!r}")

    @property
    def updating(self) -> bool:
        """True for outputs judged by the last value per key."""
        return self.counts is not None or self.workload == "session_count"

    def code(self, key: bytes) -> int | None:
        """The integer code of an output key of a `counts` workload, None for a key it never writes."""
        if self.workload.startswith("wordcount"):
            return _number(key, b"w")
        if self.workload == "table_agg":
            return _number(key, b"g")
        user, _, start = key.partition(b"@")  # window_count: <user>@<window start ms>
        u, ms = _number(user, b"u"), _number(start)
        users_n = USERS if self.keys is None else self.keys
        if u is None or ms is None or u >= users_n or ms < BASE_TS or (ms - BASE_TS) % WINDOW_MS:
            return None
        return (ms - BASE_TS) // WINDOW_MS * users_n + u

    @property
    def expected_ids(self) -> int:
        """How many ids a pipe, join or stream_join output must hold."""
        return self.columns.size if self.columns is not None else len(self.by_id)

    def want_of(self, i: int) -> tuple[bytes, dict[str, Any]] | None:
        """(key, value) the output record with id `i` must have; None if there must be none."""
        return self.columns.want_of(i) if self.columns is not None else self.by_id.get(i)

    def tracker(self) -> Tracker:
        return Tracker(self)


def _window_counts(records: int, keys: int | None) -> Counts:
    """Per (user, window): code window number x users + user, in order (windows come one after another)."""
    users_n = USERS if keys is None else keys
    codes, wants = array("q"), array("q")
    window, counter = 0, dict[int, int]()
    for i, (user, _amount, _kind) in enumerate(event_fields(records, keys)):
        w = i * EVENT_SPACING_MS // WINDOW_MS  # BASE_TS is a whole minute
        if w != window:
            for u in sorted(counter):
                codes.append(window * users_n + u)
                wants.append(counter[u])
            window, counter = w, {}
        counter[user] = counter.get(user, 0) + 1
    for u in sorted(counter):
        codes.append(window * users_n + u)
        wants.append(counter[u])
    return Counts(wants, codes)


def _group_sums(records: int, keys: int | None) -> Counts:
    """Each group's sum over the rows whose latest update is in it; 0 for a group rows only left."""
    rows = TABLE_ROWS if keys is None else keys
    latest = array("q", [-1]) * rows  # group * 1000 + amount of each row's latest update
    touched = bytearray(groups_of(rows))
    for row, group, amount in update_numbers(records, keys):
        latest[row] = group * 1000 + amount
        touched[group] = 1
    wants = Counts.dense(len(touched))
    for g, t in enumerate(touched):
        if t:
            wants[g] = 0
    for packed in latest:
        if packed >= 0:
            g, amount = divmod(packed, 1000)
            wants[g] += amount
    return Counts(wants)


class _EventColumns:
    """Every event's user, amount and kind in arrays (7 bytes an event): pipe's and join's expected output."""

    def __init__(self, workload: str, records: int, keys: int | None) -> None:
        self.workload = workload
        self.users, self.amounts, self.kinds = array("I"), array("H"), bytearray()
        for user, amount, kind in event_fields(records, keys):
            self.users.append(user)
            self.amounts.append(amount)
            self.kinds.append(KINDS.index(kind))
        self.size = records - self.kinds.count(0) if workload == "pipe" else records  # pipe drops the views

    def want_of(self, i: int) -> tuple[bytes, dict[str, Any]] | None:
        if not 0 <= i < len(self.kinds) or (self.workload == "pipe" and self.kinds[i] == 0):
            return None
        user = f"u{self.users[i]}"
        if self.workload == "pipe":
            return user.encode(), {"id": i, "user": user, "amount_cents": self.amounts[i] * 100}
        return user.encode(), {"id": i, "user": user, "amount": self.amounts[i], "region": region_of(user)}


def _final_sessions(records: int, partitions: int, keys: int | None = None) -> dict[bytes, bytes]:
    """The sessions whose final count comes out: per user, events at most SESSION_GAP_MS apart form one
    session [first, last]; it is emitted once the stream time of its partition (the newest event there)
    is at least its end plus the gap (the grace period of a session's suppression is gap + grace)."""
    from streamlet.partitioner import default_partition

    open_sessions: dict[bytes, list[int]] = {}  # user -> [start, end, count]
    closed: list[tuple[bytes, int, int, int]] = []
    newest = [0] * partitions
    for key, _value, ts in events(records, keys=keys):
        p = default_partition(key, partitions)
        newest[p] = max(newest[p], ts)
        s = open_sessions.get(key)
        if s is not None and ts - s[1] <= SESSION_GAP_MS:
            s[1], s[2] = ts, s[2] + 1
        else:
            if s is not None:
                closed.append((key, s[0], s[1], s[2]))
            open_sessions[key] = [ts, ts, 1]
    closed += [(k, s[0], s[1], s[2]) for k, s in open_sessions.items()]
    return {key + f"@{start}-{end}".encode(): struct.pack(">q", n) for key, start, end, n in closed
            if end + SESSION_GAP_MS <= newest[default_partition(key, partitions)]}


def _joined_pairs(records: int, keys: int | None = None) -> dict[int, tuple[bytes, dict[str, Any]]]:
    """Every (click, view) pair of one user at most STREAM_JOIN_WINDOW_MS apart, by pair id."""
    rng = random.Random(2)
    by_user: dict[bytes, dict[str, list[tuple[int, int]]]] = {}
    for i in range(records):
        key, ev = event(i, rng, keys)
        if ev["kind"] in ("click", "view"):
            by_user.setdefault(key, {"click": [], "view": []})[ev["kind"]].append((i, BASE_TS + i * EVENT_SPACING_MS))
    pairs: dict[int, tuple[bytes, dict[str, Any]]] = {}
    for key, kinds in by_user.items():
        views = kinds["view"]  # in time order
        view_times = [ts for _, ts in views]
        for click, click_ts in kinds["click"]:
            first = bisect.bisect_left(view_times, click_ts - STREAM_JOIN_WINDOW_MS)
            last = bisect.bisect_right(view_times, click_ts + STREAM_JOIN_WINDOW_MS)
            for view, _ in views[first:last]:
                pid = click << PAIR_ID_SHIFT | view
                pairs[pid] = (key, {"id": pid, "user": key.decode(), "click": click, "view": view})
    return pairs


class AvroValues:
    """Decodes the Confluent-framed Avro values of an output that must be written with `schema`: the id of
    every value's schema is looked up once (`schema_of(id)`: the registered schema's text, None if unknown)
    and must be `schema`; a value written otherwise, or whose body is not exactly one record of it, raises
    ValueError. Decoding makes one dict per value, compared and dropped; nothing is kept per record."""

    def __init__(self, schema: dict[str, Any], schema_of: Callable[[int], str | None]) -> None:
        import fastavro

        self.want = schema
        self.schema = fastavro.parse_schema(schema)
        self.read = fastavro.schemaless_reader
        self.schema_of = schema_of
        self.verdicts: dict[int, bool] = {}  # schema id -> it is `schema`

    def __call__(self, data: bytes | None) -> Any:
        if data is None or len(data) < 5 or data[0] != 0:
            raise ValueError("not Confluent's wire format (magic byte 0, a 4-byte schema id, the body)")
        schema_id = int.from_bytes(data[1:5], "big")
        verdict = self.verdicts.get(schema_id)
        if verdict is None:
            text = self.schema_of(schema_id)
            verdict = self.verdicts[schema_id] = text is not None and json.loads(text) == self.want
        if not verdict:
            raise ValueError(f"written with schema id {schema_id}, which is not {self.want['name']}")
        body = io.BytesIO(data)
        body.seek(5)
        try:
            value = self.read(body, self.schema, None)
        except Exception as exc:  # fastavro's errors on a short or malformed body: EOFError, struct.error, ...
            raise ValueError(f"not a {self.want['name']} record: {type(exc).__name__}: {exc}") from exc
        if body.tell() != len(data):
            raise ValueError(f"{len(data) - body.tell()} bytes after the {self.want['name']} record")
        return value


def registry_schemas(url: str) -> Callable[[int], str | None]:
    """The schema text a registry (Confluent's API at `url`) has under an id, None if it has none."""
    import urllib.error
    import urllib.request

    def schema_of(schema_id: int) -> str | None:
        try:
            with urllib.request.urlopen(f"{url}/schemas/ids/{schema_id}", timeout=10) as response:
                return str(json.load(response)["schema"])
        except urllib.error.HTTPError as exc:
            if exc.code == 404:
                return None
            raise
    return schema_of


def register_schema(url: str, subject: str, schema: dict[str, Any]) -> int:
    """Register an Avro schema under `subject` with a registry (Confluent's API at `url`); returns its id."""
    import urllib.request

    request = urllib.request.Request(f"{url}/subjects/{subject}/versions", method="POST",
                                     data=json.dumps({"schema": schema_text(schema)}).encode(),
                                     headers={"Content-Type": "application/vnd.schemaregistry.v1+json"})
    with urllib.request.urlopen(request, timeout=30) as response:
        return int(json.load(response)["id"])


class Tracker:
    """Follows an output topic record by record and says when the expected output is complete.

    `add` is called for every output record in arrival order; `complete` turns true at the record that
    makes the output whole (the run's end time); `check` gives the verdict on everything seen."""

    def __init__(self, expected: Expected) -> None:
        self.expected = expected
        self.outputs = 0
        counts = expected.counts
        self.got = array("q") if counts is None else Counts.dense(len(counts.wants))  # latest value by slot
        self.latest: dict[bytes, bytes] = {}  # session_count
        self.matching = 0  # keys whose latest value equals the expected one (updating workloads)
        self.seen_dense = bytearray(expected.records if expected.columns is not None else 0)  # pipe, join
        self.seen: dict[int, int] = {}  # id -> times seen (stream_join)
        self.distinct = 0  # expected ids seen at least once
        self.duplicates = 0
        self.wrong: list[str] = []
        self.unexpected = 0

    def _unexpected(self, what: str) -> None:
        self.unexpected += 1
        if len(self.wrong) < 5:
            self.wrong.append(what)

    def add(self, key: bytes | None, value: bytes | None) -> None:
        self.outputs += 1
        exp = self.expected
        if exp.counts is not None:
            slot = None if key is None else exp.counts.slot(c) if (c := exp.code(key)) is not None else None
            if slot is None:
                return self._unexpected(f"unexpected key {key!r}")
            want = exp.counts.wants[slot]
            got = int.from_bytes(value, "big", signed=True) if value is not None and len(value) == 8 else WRONG
            old = self.got[slot]
            self.got[slot] = got
            self.matching += (got == want) - (old == want)
            return
        if exp.updating:
            want_bytes = exp.latest.get(key) if key is not None else None
            if key is None or want_bytes is None:
                return self._unexpected(f"unexpected key {key!r}")
            old_bytes = self.latest.get(key)
            self.latest[key] = value or b""
            self.matching += (value == want_bytes) - (old_bytes == want_bytes)
            return
        try:
            got_value = orjson.loads(value or b"") if exp.decode is None else exp.decode(value)
            i = int(got_value["id"])
        except (orjson.JSONDecodeError, KeyError, TypeError, ValueError) as exc:
            return self._unexpected(f"unreadable value {value!r}: {exc}")
        want_kv = exp.want_of(i)
        if want_kv is None or want_kv[0] != key or want_kv[1] != got_value:
            return self._unexpected(f"id {i}: got {key!r} {got_value}, expected {want_kv}")
        times = self.seen_dense[i] if exp.columns is not None else self.seen.get(i, 0)
        if times:
            self.duplicates += 1
        else:
            self.distinct += 1
        if exp.columns is not None:
            self.seen_dense[i] = min(times + 1, 255)
        else:
            self.seen[i] = times + 1

    @property
    def complete(self) -> bool:
        exp = self.expected
        if exp.counts is not None:
            return self.matching == exp.counts.size
        if exp.updating:
            return self.matching == len(exp.latest)
        return self.distinct == exp.expected_ids

    def check(self) -> Check:
        exp = self.expected
        if exp.updating:
            missing = (exp.counts.size if exp.counts is not None else len(exp.latest)) - self.matching
            correct = missing == 0 and self.unexpected == 0
            detail = "" if correct else f"{missing} keys missing or wrong, {self.unexpected} unexpected"
            return Check(correct, self.outputs, 0, "; ".join([detail, *self.wrong]).strip("; "))
        missing = exp.expected_ids - self.distinct
        correct = missing == 0 and self.unexpected == 0 and self.duplicates == 0
        detail = "" if correct else f"{missing} missing, {self.duplicates} duplicates, {self.unexpected} wrong"
        return Check(correct, self.outputs, self.duplicates, "; ".join([detail, *self.wrong]).strip("; "))
