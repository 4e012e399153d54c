"""Restart cases: a topology of tests/fidelity's generator, two phases of input and a stop point between them.

The topology comes from `tests.fidelity.strategies.cases` (so every op it learns, this suite runs too), or, for the
kinds "window_focus" and "join_focus", from focused.py (a windowed aggregation or a stream-stream join right after
the source), adapted to a real broker where only a deterministic outcome can be compared:
- ops that write to topics named in code rather than in the description (`split`'s branches, `to_extractor`) or
  to files (`print`) are dropped: each system run needs its own topic names. All three are stateless.
- topologies that need `max.task.idle.ms` are left out unless `FIDELITY_RESTART_IDLE=1` (see `WITH_IDLE`).
- foreign-key joins are left out: their subscription and response topics form a loop between two tasks, and
  what each task has read from the other when it processes its own input depends on timing on a real broker.
- caches are off (`statestore.cache.max.bytes` 0: what a cache forwards depends on when commits happen), and a
  suppression buffer that would shut the application down when full emits early instead (or is unbounded, for
  final results): a client that dies leaves output that depends on its last commit.
- a global table's `Materialized` without a store name gets one (Kafka Streams 4.4.0 refuses it, `_adapted_ops`).
- a windowed aggregation's store sometimes keeps its windows for an hour (see `_retained`).
- with a kill -9, every store is change-logged (see `all_logged`).
- sometimes (always for the "punctuate" kind) a `punctuate` op, a processor with a stream-time punctuator, goes
  right after the source, when its task reads that one partition only (see `_punctuator_reads_one_partition`),
  never with a kill while a batch is in flight (a restarted task punctuates at once on its restored stream time,
  so where the last commit fell would show; the "punctuate" kind gets "kill" there, `_slot`).

Input: phase 1, then phase 2 whose records are often late relative to phase 1's stream time (some within grace,
some not) before moving on; timestamps are relative to a base the driver adds, and no two topics share one (see
`_untie`). Global-table records come first in
phase 1 and nowhere else: a global table is read by its own thread, so only what it holds before the stream
tasks start is deterministic (it is restored to the topic's end at every start).

The stop point (`stop`): "close" (a clean close after phase 1), "kill" (kill -9 once the first `at` records are
processed and committed, the rest of phase 1 written while it is down) and "kill_inflight" (the first `at`
records processed and committed, then the rest of phase 1 written in one transaction while it runs, and kill -9
`delay_ms` later, 0 in generated cases: what was processed but not committed must be aborted and done again,
see `restart_cases` for why not later). Kills only under
exactly_once_v2. `p2_running`: phase 2 is written while the restarted instance runs (in one transaction) rather
than before it starts. The driver also knows two controls without a restart, "none" and "live" (driver.script).
"""

from __future__ import annotations

import copy
import json
import os
import zlib
from collections.abc import Callable
from typing import Any, Protocol

from hypothesis import HealthCheck, Phase, assume, given, settings
from hypothesis import seed as hypothesis_seed
from hypothesis import strategies as st

from streamlet.topology_description import ProcessorDescription, SourceDescription
from tests.fidelity.strategies import KEYS
from tests.fidelity.strategies import cases as fidelity_cases
from tests.fidelity.versioned_strategies import table_cases as versioned_table_cases
from tests.fidelity_restart.focused import HOUR, join_pipelines, windowed_pipelines

Case = dict[str, Any]
Draw = Any

KINDS = ("windowed", "window_focus", "stream_join", "join_focus", "table", "punctuate", "any")
"""What a case must contain: tests/fidelity's topologies with a windowed aggregation, a stream-stream join, a table
(`_WANTS`), a punctuator or anything; or a short windowed aggregation or stream-stream join (focused.py)."""
ROTATION = ("windowed", "window_focus", "stream_join", "join_focus", "window_focus", "table", "punctuate", "any")
"""The kinds `generate` gives in turn: windowed operations and joins more often than the others."""
STOPS = ("close", "kill", "kill_inflight")

HANDOFF_KINDS = ("suppress", "versioned", "cogroup", "sliding", "table_join", "outer_join", "global", "caching",
                 "standby", "at_least_once")
"""What a handoff case (`generate_handoff`) must contain: a suppression, a versioned table (versioned_strategies'
table cases), a cogroup, a sliding window, a table-table join, a left or outer stream-stream join (focused.py's,
so that it matches before the stop), a global table; or any topology run with the record cache on (`caching`:
commits only at the stops, see driver.settings), with a standby replica configured (`standby`), or under
at_least_once (clean closes only: after a kill, at-least-once output depends on where the last commit fell)."""

WITH_IDLE = os.environ.get("FIDELITY_RESTART_IDLE") == "1"
"""Also topologies with a task that reads a repartition topic beside another partition (see `needs_idle`): they
need `max.task.idle.ms` > 0 (the driver sets 2000 ms on both systems), and even then Kafka Streams waits for the
upstream task's records only while the partition's idle clock runs, which started when the task first found it
empty, so input that comes after a pause is not waited for; off unless `FIDELITY_RESTART_IDLE=1`."""
_DROPPED = frozenset({"split", "to_extractor", "print"})
_VALUE = st.one_of(st.none(), st.text(alphabet="0123456789", min_size=1, max_size=3))


def _nested(op: dict[str, Any]) -> list[dict[str, Any]]:
    """The ops inside an op (the other side of a join, the other streams of a cogroup)."""
    inner: list[dict[str, Any]] = []
    for field in ("other", "table"):
        if isinstance(op.get(field), list):
            inner += op[field]
    for other in op.get("others", []):
        inner += other["ops"]
    return inner


def all_ops(ops: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Every op of a case, nested ones included."""
    found: list[dict[str, Any]] = []
    for op in ops:
        found.append(op)
        found += all_ops(_nested(op))
    return found


def source_topics(ops: list[dict[str, Any]]) -> list[str]:
    """The input topics the case reads (streams, tables, merges, global tables), sorted."""
    return sorted({op["topic"] for op in all_ops(ops) if op["op"] in ("stream", "table", "merge", "global_join")})


def _windowed(case: Case) -> bool:
    return any(op["op"] == "windowed_by" or (op["op"] == "cogroup" and op.get("window")) for op in case["ops"])


_WANTS: dict[str, Callable[[Case], bool]] = {
    "windowed": _windowed,
    "stream_join": lambda c: any(op["op"] == "stream_join" for op in c["ops"]),
    "table": lambda c: c["ops"][0]["op"] == "table" or any(
        op["op"] in ("to_table", "table_join", "table_group_by", "join_table") for op in c["ops"]),
    "punctuate": lambda c: c["ops"][0]["op"] == "stream",
    "any": lambda c: True,
}


def _sliding_window(case: Case) -> bool:
    return any((op["op"] == "windowed_by" or op["op"] == "cogroup") and (op.get("window") or {}).get("type") ==
               "sliding" for op in all_ops(case["ops"]))


_HANDOFF_WANTS: dict[str, Callable[[Case], bool]] = {
    "suppress": lambda c: any(op["op"] == "suppress" for op in all_ops(c["ops"])),
    "cogroup": lambda c: any(op["op"] == "cogroup" for op in all_ops(c["ops"])),
    "sliding": _sliding_window,
    "table_join": lambda c: any(op["op"] == "table_join" for op in all_ops(c["ops"])),
    "global": lambda c: any(op["op"] == "global_join" for op in all_ops(c["ops"])),
}


def versioned(ops: list[dict[str, Any]]) -> bool:
    """A versioned store among the ops."""
    return any(isinstance(op.get("store"), dict) and op["store"].get("versioned") for op in all_ops(ops))


def handoff_kinds(case: Case) -> list[str]:
    """Every kind of `HANDOFF_KINDS` a case covers (a case drawn for one kind often covers others too)."""
    covered = [kind for kind, wants in _HANDOFF_WANTS.items() if wants(case)]
    if versioned(case["ops"]):
        covered.append("versioned")
    if any(op["op"] == "stream_join" and op["kind"] != "join" for op in all_ops(case["ops"])):
        covered.append("outer_join")
    covered += [flag for flag in ("caching", "standby") if case.get(flag)]
    if case["guarantee"] == "at_least_once":
        covered.append("at_least_once")
    return [kind for kind in HANDOFF_KINDS if kind in covered]


def _usable(case: Case) -> bool:
    return not any(op["op"] == "fk_join" for op in all_ops(case["ops"]))


def _adapted_ops(ops: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The ops as the module docstring says, and a global table's `Materialized` without a store name given one:
    Kafka Streams 4.4.0 refuses `globalTable(topic, consumed, Materialized.with(...))` when building the topology
    ("Global stores must pass in suppliers with exactly one store but got 0"; 3.9.1 accepts it, and so does
    4.4.0 without a Materialized or with a named one), so such a case would only show that refusal."""
    kept = []
    for op in ops:
        if op["op"] in _DROPPED:
            continue
        if op["op"] == "global_join" and isinstance(op.get("store"), dict) and op["store"].get("name") is None:
            op = {**op, "store": {**op["store"], "name": "global-store"}}  # Kafka Streams 4.4.0 needs it (_adapted_ops)
        if op["op"] == "suppress" and op["buffer"]["kind"] != "unbounded" and op["buffer"]["when_full"] == "shut_down":
            op = dict(op)
            op["buffer"] = ({"kind": "unbounded"} if op["kind"] == "until_window_closes"
                            else {**op["buffer"], "when_full": "emit"})
        kept.append(op)
    return kept


@st.composite
def _retained(draw: Draw, ops: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Sometimes a windowed aggregation's store keeps its windows for an hour (`Materialized.with_retention`).

    With the default retention (window size plus grace) a window leaves the store as it closes, so nothing closed
    before a restart is there to be emitted again after it; with a long one, what the application remembers of
    its last emission across the restart decides."""
    out, windowed = [], False
    for op in ops:
        windowed = windowed or op["op"] == "windowed_by"
        is_windowed_agg = (windowed and op["op"] in ("count", "reduce", "aggregate")) or \
            (op["op"] == "cogroup" and op.get("window"))
        if is_windowed_agg and draw(st.booleans()):
            store = op.get("store") or {"name": None, "type": None, "caching": False, "logging": True}
            op = {**op, "store": {**store, "retention": HOUR}}
        if op["op"] in ("count", "reduce", "aggregate", "cogroup"):
            windowed = False
        out.append(op)
    return out


@st.composite
def _punctuate(draw: Draw) -> dict[str, Any]:
    return {"op": "punctuate", "interval": draw(st.sampled_from([5, 10, 30])),
            "store": {"name": "punct", "type": draw(st.sampled_from(["persistent", "in_memory"])),
                      "logging": draw(st.integers(0, 3)) != 0}}


def all_logged(ops: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The ops with every store change-logged: what a store without changelog holds after a kill -9 is not defined
    on Kafka Streams (RocksDB runs without a write-ahead log: case 4242-38 came back without the run's updates four
    times and once otherwise, `--recheck`), so it cannot be compared; after a clean close it is defined, and such
    stores stay in those cases."""
    ops = copy.deepcopy(ops)
    for op in all_ops(ops):
        if isinstance(op.get("store"), dict):
            op["store"]["logging"] = True
    return ops


def needs_idle(case: Case) -> bool:
    """A task reads a repartition topic and another partition: it must wait for its upstream task's commits
    (`max.task.idle.ms`), or what it merges depends on timing."""
    from tests.fidelity_restart.ops import build

    external = set(source_topics(case["ops"]))
    try:
        subtopologies = build(case).describe().subtopologies
    except Exception:  # a topology both refuse to build: the screen drops it
        return False
    for sub in subtopologies:
        sources = [t for node in sub.nodes if isinstance(node, SourceDescription) for t in node.topics]
        if len(sources) > 1 and any(t not in external for t in sources):
            return True
    return False


def _punctuator_reads_one_partition(ops: list[dict[str, Any]]) -> bool:
    """The punctuator's task reads one partition only.

    Kafka Streams checks stream-time punctuation between the batches its loop processes, not after each record
    (the batch grows while nothing punctuates or commits, and commits follow the wall clock), so which records a
    punctuation sees depends on timing; with `max.poll.records` 1 (the driver sets it for these cases) a task with
    one input partition gets one record between two checks, as a TopologyTestDriver does. With several partitions
    a poll can still leave more than one record processable."""
    from tests.fidelity_restart.ops import build

    try:
        subtopologies = build({"ops": ops}).describe().subtopologies
    except Exception:  # a topology both refuse to build: the screen drops it
        return False
    for sub in subtopologies:
        if any(isinstance(n, ProcessorDescription) and "punct" in n.stores for n in sub.nodes):
            return sum(len(n.topics) for n in sub.nodes if isinstance(n, SourceDescription)) == 1
    return False


@st.composite
def _record(draw: Draw, topics: list[str], ts: int) -> list[Any]:
    key = draw(st.one_of(st.sampled_from(KEYS), st.none())) if draw(st.integers(0, 9)) == 0 else \
        draw(st.sampled_from(KEYS))
    value = draw(_VALUE)
    if key is None and value is None:  # aiokafka cannot send a record with neither
        value = "0"
    return [draw(st.sampled_from(topics)), key, value, ts]


@st.composite
def _inputs(draw: Draw, topics: list[str]) -> tuple[list[list[Any]], int, int]:
    """(records, records in phase 1, global-table records at its start)."""
    streams = [t for t in topics if t != "glb"] or topics
    records: list[list[Any]] = []
    globals_ = draw(st.integers(1, 4)) if "glb" in topics else 0
    for _ in range(globals_):
        records.append(draw(_record(["glb"], 0)))
    ts = draw(st.integers(0, 20))
    for _ in range(draw(st.integers(3, 24))):
        ts = max(0, ts + draw(st.integers(-25, 30)))
        records.append(draw(_record(streams, ts)))
    phase1 = len(records)
    high = max([r[3] for r in records[globals_:]])
    ts = high - draw(st.integers(0, 40)) if draw(st.booleans()) else ts
    for i in range(draw(st.integers(1, 16))):
        if i:
            ts = ts + draw(st.integers(-40, 30))
        records.append(draw(_record(streams, max(0, ts))))
    _untie(records[globals_:])
    return records, phase1, globals_


def _untie(records: list[list[Any]]) -> None:
    """Move a record's timestamp up until no record of another topic has it.

    A task reading several partitions takes the one whose head record is oldest; between equal heads Kafka Streams'
    choice depends on the order its queues entered a heap, i.e. on timing, so ties across topics would make the
    output differ from run to run on Kafka Streams itself. Ties within one topic are kept (offset order decides)."""
    owner: dict[int, str] = {}
    for record in records:
        topic, ts = record[0], record[3]
        while owner.get(ts, topic) != topic:
            ts += 1
        record[3] = ts
        owner.setdefault(ts, topic)


@st.composite
def restart_cases(draw: Draw, kind: str | None = None, stop_kind: str | None = None) -> Case:
    """A restart case of `kind` (one of `KINDS`) stopped by `stop_kind` (one of `STOPS`), each drawn when None."""
    kind = draw(st.sampled_from(KINDS)) if kind is None else kind
    stop_kind = draw(st.sampled_from(STOPS)) if stop_kind is None else stop_kind
    if kind == "versioned":
        ops = _adapted_ops(draw(versioned_table_cases())["ops"])
    elif kind == "outer_join":
        ops = draw(join_pipelines().filter(
            lambda ops: any(op["op"] == "stream_join" and op["kind"] != "join" for op in ops)))
    elif kind in _HANDOFF_WANTS:
        wants = _HANDOFF_WANTS[kind]
        ops = _adapted_ops(draw(fidelity_cases().filter(lambda c: _usable(c) and wants(
            {"ops": _adapted_ops(c["ops"])})))["ops"])
    elif kind in ("caching", "standby", "at_least_once"):
        ops = _adapted_ops(draw(fidelity_cases().filter(_usable))["ops"])
    elif kind == "window_focus":
        ops = _adapted_ops(draw(windowed_pipelines()))
    elif kind == "join_focus":
        ops = draw(join_pipelines())
    else:
        wants = _WANTS[kind]
        base = draw(fidelity_cases().filter(lambda c: _usable(c) and wants(c)))
        ops = draw(_retained(_adapted_ops(base["ops"])))
    # No punctuator with a kill while a batch is in flight: a restarted task punctuates at once on its restored
    # stream time, before the batch's uncommitted rest, so where the commit fell shows in the output (case 4242-94).
    # No punctuator with the record cache either: a punctuation's output is forwarded at once, the cache's at the
    # commit, and which comes first depends on the loop's batches.
    punctuated = kind == "punctuate" or (kind not in HANDOFF_KINDS and draw(st.integers(0, 5)) == 0)
    if ops[0]["op"] == "stream" and stop_kind != "kill_inflight" and punctuated:
        at = 2 if len(ops) > 1 and ops[1]["op"] == "merge" else 1
        with_punctuator = [*ops[:at], draw(_punctuate()), *ops[at:]]
        if _punctuator_reads_one_partition(with_punctuator):
            ops = with_punctuator
        else:
            assume(kind != "punctuate")
    assume(WITH_IDLE or not needs_idle({"ops": ops}))
    if stop_kind in ("kill", "kill_inflight"):
        ops = all_logged(ops)
    outputs = ["out", "tap"] if any(op["op"] == "to" and op["topic"] == "tap" for op in ops) else ["out"]
    records, phase1, globals_ = draw(_inputs(source_topics(ops)))
    if kind == "caching":  # the cache's output only at the commits of the clean closes (driver.settings)
        assume(stop_kind == "close" and not _repartitioned({"ops": ops}))
    if kind == "at_least_once":
        assume(stop_kind == "close")
    guarantee = "at_least_once" if stop_kind == "close" and (kind == "at_least_once" or (
        kind not in HANDOFF_KINDS and draw(st.integers(0, 3)) == 3)) else "exactly_once_v2"
    stop: dict[str, Any] = {"kind": stop_kind}
    if stop_kind == "close":
        stop["at"] = phase1
        stop["p2_running"] = draw(st.booleans())
        if kind == "caching":  # the second instance's input is all there when it starts (driver.script)
            stop["p2_running"] = False
    elif stop_kind == "kill":
        stop["at"] = draw(st.integers(max(globals_, 1), phase1))
        stop["p2_running"] = draw(st.booleans())
    else:
        stop["at"] = draw(st.integers(globals_, phase1 - 1))
        # At once: a later kill lands before or after the batch's commit depending on timing, and what comes out
        # after the restart depends on where the last commit fell, on Kafka Streams too (join time trackers,
        # windowed aggregations' and suppressions' observed stream times and punctuation schedules start again;
        # case 4242-187, an outer join: equal at 0 ms and at 3000 ms, different at 400 ms, each system repeating
        # itself). `--stop` still takes any delay.
        stop["delay_ms"] = 0
        stop["p2_running"] = True  # written while down, phase 2 would merge with a rest that depends on the cut
    case = {"kind": kind, "ops": ops, "outputs": outputs, "inputs": records, "phase1": phase1,
            "guarantee": guarantee, "stop": stop}
    if kind in ("caching", "standby"):
        case[kind] = True
    return case


def _repartitioned(case: Case) -> bool:
    """The topology reads a topic of its own (a repartition): what an upstream task writes becomes readable at its
    commit, which a cached case makes only at a clean close (see driver.settings)."""
    from tests.fidelity_restart.ops import build

    external = set(source_topics(case["ops"]))
    try:
        subtopologies = build(case).describe().subtopologies
    except Exception:  # a topology both refuse to build: the screen drops it
        return False
    return any(t not in external for sub in subtopologies for node in sub.nodes
               if isinstance(node, SourceDescription) for t in node.topics)


class _Screen(Protocol):
    output_at: list[int]

    def check(self, case: Case) -> tuple[bool, str | None]: ...


def has_output_around_move(case: Case, output_at: list[int]) -> bool:
    """The case's topology wrote output (on a TopologyTestDriver, `output_at`: the input index each output record
    came after) both in phase 1 and after the first third of phase 2, where a rolling run's first instance has
    left (driver.run_rolling writes phase 2 in three slices and closes the first instance after the first one):
    a case whose filters leave nothing there compares nothing across the move."""
    phase1, total = case["phase1"], len(case["inputs"])
    moved = phase1 + (total - phase1) // 3
    return any(i < phase1 for i in output_at) and any(i >= moved for i in output_at)


def generate(count: int, seed: int, screen: _Screen | None = None) -> list[Case]:
    """`count` distinct cases drawn with Hypothesis from `seed` (the same seed gives the same cases), of the kinds
    in `ROTATION` in turn and, per round of kinds, the stop points of `STOPS` in turn, each with "id" =
    "<seed>-<index>". With `screen` (screen.py), only cases that run without error on Kafka Streams'
    TopologyTestDriver, each with "drivers": whether the two drivers agree on it."""
    slots = [_slot(ROTATION[i % len(ROTATION)], STOPS[i // len(ROTATION) % len(STOPS)]) for i in range(count)]
    shapes: set[str] = set()  # topology and input of the cases taken: each slot draws others (the simplest first)
    per_slot: dict[tuple[str, str], list[Case]] = {}
    for slot in dict.fromkeys(slots):
        per_slot[slot] = _screened(*slot, slots.count(slot), seed, screen, frozenset(shapes))
        shapes.update(_shape(case) for case in per_slot[slot])
    found: list[Case] = []
    taken = dict.fromkeys(per_slot, 0)
    for slot in slots:
        if taken[slot] < len(per_slot[slot]):
            found.append({**per_slot[slot][taken[slot]], "id": f"{seed}-{len(found)}"})
            taken[slot] += 1
    return found


def generate_handoff(count: int, seed: int, screen: _Screen | None = None, with_output: bool = False) -> list[Case]:
    """`count` distinct handoff cases from `seed`: the kinds of `HANDOFF_KINDS` in turn and, per round of kinds,
    the stop points of `STOPS` in turn ("close" where a kind allows nothing else), ids "<seed>-h<index>".
    `with_output` (needs `screen`): only cases whose topology writes output before and after the move
    (`has_output_around_move` on Kafka Streams' driver), ids "<seed>-w<index>"."""
    slots = []
    for i in range(count):
        kind, stop = HANDOFF_KINDS[i % len(HANDOFF_KINDS)], STOPS[i // len(HANDOFF_KINDS) % len(STOPS)]
        slots.append((kind, "close" if kind in ("caching", "at_least_once") else stop))
    per_slot = {slot: _screened(*slot, slots.count(slot), seed, screen, frozenset(), with_output)
                for slot in dict.fromkeys(slots)}
    found: list[Case] = []
    taken = dict.fromkeys(per_slot, 0)
    for slot in slots:
        if taken[slot] < len(per_slot[slot]):
            found.append({**per_slot[slot][taken[slot]], "id": f"{seed}-{'w' if with_output else 'h'}{len(found)}"})
            taken[slot] += 1
    return found


def _slot(kind: str, stop_kind: str) -> tuple[str, str]:
    """A punctuator's case is not killed with a batch in flight (see `restart_cases`): "kill" instead."""
    return (kind, "kill") if kind == "punctuate" and stop_kind == "kill_inflight" else (kind, stop_kind)


def case_by_id(case_id: str, screen: _Screen | None = None) -> Case:
    """The case `generate` gave the id "<seed>-<index>" (`generate_handoff` "<seed>-h<index>"), with the same
    `screen` or none."""
    seed_text, index_text = case_id.split("-")
    seed, index = int(seed_text), int(index_text.lstrip("hw"))
    if index_text[0] in "hw":
        return generate_handoff(index + 1, seed, screen, with_output=index_text[0] == "w")[index]
    return generate(index + 1, seed, screen)[index]


def _shape(case: Case) -> str:
    return json.dumps([case["ops"], case["inputs"]])


def _screened(kind: str, stop_kind: str, n: int, seed: int, screen: _Screen | None, taken: frozenset[str],
              with_output: bool = False) -> list[Case]:
    if screen is None:
        if with_output:
            raise ValueError("cases with output around the move are picked on the drivers: a screen is needed")
        return _generate_slot(kind, stop_kind, n, seed, taken)
    screened: dict[str, Case | None] = {}
    usable: list[Case] = []
    # The same seed draws the same first cases: only the new ones are screened. Most generated topologies filter
    # much of their input away, so cases with output around the move take more drawing.
    for factor in (1.3, 2, 4, 8, 16, 32) if with_output else (1.3, 2, 4):
        for case in _generate_slot(kind, stop_kind, int(n * factor) + 1, seed, taken):
            text = json.dumps(case, sort_keys=True)
            if text not in screened:
                ok, diff = screen.check(case)
                ok = ok and (not with_output or has_output_around_move(case, screen.output_at))
                screened[text] = {**case, "drivers": "differ" if diff else "agree"} if ok else None
        usable = [case for case in screened.values() if case is not None]
        if len(usable) >= n:
            break
    return usable[:n]


def _generate_slot(kind: str, stop_kind: str, count: int, seed: int, taken: frozenset[str]) -> list[Case]:
    found: list[Case] = []
    seen: set[str] = set()

    @settings(max_examples=count * 3, phases=[Phase.generate], database=None, deadline=None,
              suppress_health_check=list(HealthCheck))
    @given(restart_cases(kind, stop_kind))
    @hypothesis_seed(zlib.crc32(f"{seed}/{kind}/{stop_kind}".encode()))  # each slot its own draws
    def collect(case: Case) -> None:
        text = json.dumps(case, sort_keys=True)
        if len(found) < count and text not in seen and _shape(case) not in taken:
            seen.add(text)
            found.append(case)

    if count:
        collect()
    return found
