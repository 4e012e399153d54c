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
  * `stream_join`    — events split by kind, clicks inner-joined with views of the same user within
                       STREAM_JOIN_WINDOW_MS either way (a KStream-KStream join, no grace: the input is in
                       order); output key = user, value = JSON `{"id": click id * 2^21 + view id, "user",
                       "click": click id, "view": view id}`, one record per matching pair.

Outputs that update (the counts) are judged by the last value per key; outputs that don't (pipe, join) by
the set of ids, with every value checked and duplicates counted. A run whose final output differs from the
expected one is reported with `correct: false`, so a fast wrong answer never counts.
"""

from __future__ import annotations

import bisect
import random
import struct
import time
from collections import Counter
from collections.abc import Iterator
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

WORKLOADS = ("pipe", "wordcount_alos", "wordcount_eos", "window_count", "join", "session_count", "stream_join")

#: Which input topic (logical name) each workload reads; `join` also reads the `users` table.
INPUT_OF = {"pipe": "events", "wordcount_alos": "lines", "wordcount_eos": "lines", "window_count": "events",
            "join": "events", "session_count": "events", "stream_join": "events"}
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

def word_lines(n: int, words_per_line: int = 3, vocabulary: int = 10_000, seed: int = 1) -> Iterator[bytes]:
    rng = random.Random(seed)
    vocab = [f"w{i}" for i in range(vocabulary)]
    for _ in range(n):
        yield " ".join(rng.choice(vocab) for _ in range(words_per_line)).encode()


def user_key(n: int) -> bytes:
    return f"u{n}".encode()


def event(i: int, rng: random.Random) -> tuple[bytes, dict[str, Any]]:
    """Event number `i`: (key, value as a dict)."""
    user = f"u{rng.randrange(USERS)}"
    return user.encode(), {"id": i, "user": user, "amount": rng.randrange(1000), "kind": rng.choice(KINDS)}


def events(n: int, seed: int = 2) -> Iterator[tuple[bytes, bytes, int]]:
    """(key, JSON value, timestamp) of `n` events."""
    rng = random.Random(seed)
    for i in range(n):
        key, value = event(i, rng)
        yield key, orjson.dumps(value), BASE_TS + i * EVENT_SPACING_MS


def region_of(user: str) -> str:
    return f"region-{int(user[1:]) % REGIONS}"


def users() -> Iterator[tuple[bytes, bytes, int]]:
    for n in range(USERS):
        user = f"u{n}"
        yield user.encode(), orjson.dumps({"user": user, "region": region_of(user)}), BASE_TS - 3_600_000


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


class Expected:
    """What a workload's output must be; built from the same generators as the input."""

    def __init__(self, workload: str, records: int, words_per_line: int = 3, vocabulary: int = 10_000,
                 partitions: int = 8) -> None:
        self.workload = workload
        self.records = records
        if workload.startswith("wordcount"):
            counts = Counter(w for line in word_lines(records, words_per_line, vocabulary)
                             for w in split_words(line.decode()))
            self.latest: dict[bytes, bytes] = {w.encode(): struct.pack(">q", c) for w, c in counts.items()}
        elif workload == "window_count":
            windows: Counter[bytes] = Counter()
            for key, _value, ts in events(records):
                windows[key + b"@" + str(ts - ts % 60_000).encode()] += 1
            self.latest = {k: struct.pack(">q", c) for k, c in windows.items()}
        elif workload == "session_count":
            self.latest = _final_sessions(records, partitions)
        elif workload == "stream_join":
            self.by_id = _joined_pairs(records)
        elif workload in ("pipe", "join"):
            self.by_id: dict[int, tuple[bytes, dict[str, Any]]] = {}
            rng = random.Random(2)
            for i in range(records):
                key, ev = event(i, rng)
                if workload == "pipe":
                    if ev["kind"] != "view":
                        self.by_id[i] = (key, {"id": i, "user": ev["user"], "amount_cents": ev["amount"] * 100})
                else:
                    self.by_id[i] = (key, {"id": i, "user": ev["user"], "amount": ev["amount"],
                                           "region": region_of(ev["user"])})
        else:
            raise ValueError(f"unknown workload {workload!r}")

    @property
    def updating(self) -> bool:
        """True for outputs judged by the last value per key."""
        return self.workload.startswith("wordcount") or self.workload in ("window_count", "session_count")

    def tracker(self) -> Tracker:
        return Tracker(self)


def _final_sessions(records: int, partitions: int) -> dict[bytes, bytes]:
    """The sessions whose final count comes out: per user, events at most SESSION_GAP_MS apart form one
    session [first, last]; it is emitted once the stream time of its partition (the newest event there)
    is at least its end plus the gap (the grace period of a session's suppression is gap + grace)."""
    from streamlet.partitioner import default_partition

    open_sessions: dict[bytes, list[int]] = {}  # user -> [start, end, count]
    closed: list[tuple[bytes, int, int, int]] = []
    newest = [0] * partitions
    for key, _value, ts in events(records):
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


def _joined_pairs(records: int) -> dict[int, tuple[bytes, dict[str, Any]]]:
    """Every (click, view) pair of one user at most STREAM_JOIN_WINDOW_MS apart, by pair id."""
    rng = random.Random(2)
    by_user: dict[bytes, dict[str, list[tuple[int, int]]]] = {}
    for i in range(records):
        key, ev = event(i, rng)
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


class Tracker:
    """Follows an output topic record by record and says when the expected output is complete.

    `add` is called for every output record in arrival order; `complete` turns true at the record that
    makes the output whole (the run's end time); `check` gives the verdict on everything seen."""

    def __init__(self, expected: Expected) -> None:
        self.expected = expected
        self.outputs = 0
        self.latest: dict[bytes, bytes] = {}
        self.matching = 0  # keys whose latest value equals the expected one (updating workloads)
        self.seen: dict[int, int] = {}  # id -> times seen (pipe, join)
        self.wrong: list[str] = []
        self.unexpected = 0

    def add(self, key: bytes | None, value: bytes | None) -> None:
        self.outputs += 1
        exp = self.expected
        if exp.updating:
            want = exp.latest.get(key) if key is not None else None
            if want is None:
                self.unexpected += 1
                if len(self.wrong) < 5:
                    self.wrong.append(f"unexpected key {key!r}")
                return
            old = self.latest.get(key)
            if old == want:
                self.matching -= 1
            self.latest[key] = value or b""
            if value == want:
                self.matching += 1
            return
        try:
            got = orjson.loads(value or b"")
            i = int(got["id"])
        except (orjson.JSONDecodeError, KeyError, TypeError, ValueError):
            self.unexpected += 1
            if len(self.wrong) < 5:
                self.wrong.append(f"unreadable value {value!r}")
            return
        self.seen[i] = self.seen.get(i, 0) + 1
        want_kv = exp.by_id.get(i)
        if want_kv is None or want_kv[0] != key or want_kv[1] != got:
            self.unexpected += 1
            if len(self.wrong) < 5:
                self.wrong.append(f"id {i}: got {key!r} {got}, expected {want_kv}")

    @property
    def complete(self) -> bool:
        exp = self.expected
        if exp.updating:
            return self.matching == len(exp.latest)
        return len(self.seen) == len(exp.by_id)

    def check(self) -> Check:
        exp = self.expected
        if exp.updating:
            missing = len(exp.latest) - self.matching
            correct = missing == 0 and self.unexpected == 0
            detail = "" if correct else f"{missing} keys missing or wrong, {self.unexpected} unexpected"
            return Check(correct, self.outputs, 0, "; ".join([detail, *self.wrong]).strip("; "))
        duplicates = sum(n - 1 for n in self.seen.values())
        missing = len(exp.by_id) - len(self.seen)
        correct = missing == 0 and self.unexpected == 0 and duplicates == 0
        detail = "" if correct else f"{missing} missing, {duplicates} duplicates, {self.unexpected} wrong"
        return Check(correct, self.outputs, duplicates, "; ".join([detail, *self.wrong]).strip("; "))


