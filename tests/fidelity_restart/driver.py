"""Runs a restart case on both systems against the real broker and says where their outputs part.

A case (see strategies.py) becomes a script of steps (`script`): write input while the application is down, start
it, wait until it has consumed and committed everything (`quiesce`), write input while it runs (one transaction),
close it cleanly or kill it with SIGKILL, and so on. Each system runs the same script on its own topics (the
case's topic names with a per-run prefix) under its own application id, both at once (two cores: one JVM, one
Python process). Then every output topic is read `read_committed` and compared record for record: key and value
bytes, timestamp, order (one partition per topic).

Why the script is deterministic (so that any difference is the engines'): every topic has one partition; input a
task reads from several partitions is either all there when it starts or arrives in one transaction, so it is
merged by timestamp as Kafka Streams merges it (no two topics share a timestamp, strategies._untie); caches are
off; wall-clock emission intervals are 0; a punctuator's task polls one record at a time (Kafka Streams checks
stream-time punctuation between batches whose size depends on timing); kills happen either after `quiesce` (the
commit point is then exactly known) or right after a batch was written while it runs (in generated cases at
once: nothing of it committed; a later kill makes the output depend on where the commit fell, on Kafka Streams
too, see strategies.restart_cases). A task that reads a repartition topic beside another partition would race
its upstream task: for those topologies `max.task.idle.ms` is raised on both systems (`IDLE_MS`), so that Kafka
Streams waits for the upstream's commits; even so, whether its idle clocks have run out when later input comes
depends on how long the task sat idle, which is why the generator leaves such topologies out unless asked
(strategies.WITH_IDLE).
"""

from __future__ import annotations

import asyncio
import copy
import json
import shutil
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from streamlet.config import OUTER_JOIN_EMIT_INTERVAL_MS, WINDOWED_AGGREGATION_EMIT_INTERVAL_MS
from streamlet.testing.local_broker import default_kafka_version
from streamlet.topology_description import SourceDescription
from tests.fidelity.harness import readable
from tests.fidelity_restart import broker_io
from tests.fidelity_restart.broker_io import Out
from tests.fidelity_restart.ops import build
from tests.fidelity_restart.strategies import Case, all_ops, needs_idle, source_topics
from tests.fidelity_restart.systems import App, KafkaStreamsApp, StreamletApp
from tests.helpers.kafka import set_group_config

HOUR = 3_600_000
IDLE_MS = 2000
"""`max.task.idle.ms` for a topology with a task reading a repartition topic and another partition."""
START_TIMEOUT = 120.0
ROLLING_SLICES = 3
"""Phase 2 of a rolling run is written in this many transactions: the first before the first instance leaves, the
others `ROLLING_PAUSE` apart as it has left (`run_rolling`)."""
ROLLING_PAUSE = 1.0
CACHED_PAUSE_MS = 4000
"""With the record cache on (`case["caching"]`) an instance commits only when it closes (what a cache forwards
depends on when commits happen, so the commit interval is longer than any run): it runs this long on input that is
all there when it starts, then closes, and the step "consumed" checks that it had taken everything."""

Step = dict[str, Any]


def script(case: Case) -> list[Step]:
    """The steps of a case's run, from its stop point (see strategies.py)."""
    phase1, total = case["phase1"], len(case["inputs"])
    stop = case["stop"]
    at = stop.get("at", phase1)
    kind = stop["kind"]
    steps: list[Step]
    if kind == "none":  # a control: everything, no restart
        return [{"do": "write", "from": 0, "to": total}, {"do": "start"}, {"do": "quiesce"}, {"do": "close"}]
    if kind == "rolling":  # what run_rolling does (it runs its own steps), for a report
        return [{"do": "write", "from": 0, "to": phase1}, {"do": "start"}, {"do": "quiesce"}, {"do": "start second"},
                {"do": f"write_txn x{ROLLING_SLICES} of [{phase1}:{total}], the first closing leaving the group "
                       "after the first of them"},
                {"do": "quiesce"}, {"do": "close"}]
    if kind == "live":  # a control: phase 2 written while the first instance runs, no restart
        return [{"do": "write", "from": 0, "to": phase1}, {"do": "start"}, {"do": "quiesce"},
                {"do": "write_txn", "from": phase1, "to": total}, {"do": "quiesce"}, {"do": "close"}]
    if case.get("caching"):  # commits only at the closes: no quiesce (it waits for commits), a pause instead
        return [{"do": "write", "from": 0, "to": phase1}, {"do": "start"}, {"do": "sleep", "ms": CACHED_PAUSE_MS},
                {"do": "close"}, {"do": "consumed"}, {"do": "write", "from": phase1, "to": total}, {"do": "start"},
                {"do": "sleep", "ms": CACHED_PAUSE_MS}, {"do": "close"}, {"do": "consumed"}]
    if kind == "close":
        steps = [{"do": "write", "from": 0, "to": phase1}, {"do": "start"}, {"do": "quiesce"}, {"do": "close"}]
    elif kind == "kill":
        steps = [{"do": "write", "from": 0, "to": at}, {"do": "start"}, {"do": "quiesce"}, {"do": "kill"},
                 {"do": "write", "from": at, "to": phase1}]
    else:
        steps = [{"do": "write", "from": 0, "to": at}, {"do": "start"}, {"do": "quiesce"},
                 {"do": "write_txn", "from": at, "to": phase1}, {"do": "sleep", "ms": stop["delay_ms"]},
                 {"do": "kill"}]
    if stop["p2_running"]:
        steps += [{"do": "start"}, {"do": "quiesce"}, {"do": "write_txn", "from": phase1, "to": total},
                  {"do": "quiesce"}, {"do": "close"}]
    else:
        steps += [{"do": "write", "from": phase1, "to": total}, {"do": "start"}, {"do": "quiesce"}, {"do": "close"}]
    return steps


def renamed(case: Case, prefix: str) -> Case:
    """The case with every topic name prefixed (each system run writes and reads its own topics)."""
    out = copy.deepcopy(case)
    for op in all_ops(out["ops"]):
        if "topic" in op:
            op["topic"] = prefix + op["topic"]
    out["outputs"] = [prefix + t for t in case["outputs"]]
    return out


def consumed_topics(case: Case, application_id: str) -> list[str]:
    """The topics the application's group consumes: its sub-topologies' sources, internal ones named as both
    systems name them (`<application.id>-<name>`)."""
    external = set(source_topics(case["ops"]))
    topics: set[str] = set()
    for sub in build(case).describe().subtopologies:
        for node in sub.nodes:
            if isinstance(node, SourceDescription):
                topics.update(t if t in external else f"{application_id}-{t}" for t in node.topics)
    return sorted(topics)


def settings(case: Case, application_id: str, bootstrap: str, state_dir: Path) -> dict[str, Any]:
    """Kafka Streams' settings for a run, the same on both systems (serde names aside)."""
    return {
        "application.id": application_id,
        "bootstrap.servers": bootstrap,
        "processing.guarantee": case["guarantee"],
        "state.dir": str(state_dir),
        "commit.interval.ms": 300_000 if case.get("caching") else 100,
        # Kafka Streams refuses a transaction timeout below the commit interval (the broker allows 15 minutes).
        **({"producer.transaction.timeout.ms": 600_000} if case.get("caching") else {}),
        "statestore.cache.max.bytes": 10 * 1024 * 1024 if case.get("caching") else 0,
        **({"num.standby.replicas": 1} if case.get("standby") else {}),
        "session.timeout.ms": 6000,
        "heartbeat.interval.ms": 1000,
        "num.stream.threads": 1,
        "max.task.idle.ms": IDLE_MS if needs_idle(case) else 0,
        OUTER_JOIN_EMIT_INTERVAL_MS: 0,
        WINDOWED_AGGREGATION_EMIT_INTERVAL_MS: 0,
        # One record per poll where a punctuator runs: Kafka Streams checks stream-time punctuation between the
        # batches it processes, whose size depends on timing (strategies._punctuator_reads_one_partition).
        **({"max.poll.records": 1} if any(op["op"] == "punctuate" for op in case["ops"]) else {}),
    }


_SERDES = {
    "kafka-streams": "org.apache.kafka.common.serialization.Serdes$StringSerde",
    "streamlet": "String",
}


@dataclass
class SystemRun:
    """One system's run of a case: what its output topics hold (timestamps relative to the base), whether it
    failed, how long the run took and where its log is."""

    system: str
    outputs: dict[str, list[Out]] = field(default_factory=dict)
    failure: str | None = None
    seconds: float = 0.0
    log: str = ""
    steps: list[tuple[str, float]] = field(default_factory=list)  # each step and how long it took
    pause: dict[str, float | None] = field(default_factory=dict)  # a rolling swap's pause (`swap_pause`)


async def _wait_running(app: App) -> None:
    deadline = time.monotonic() + START_TIMEOUT
    while not app.running():
        if not app.alive():
            raise RuntimeError(f"{app.name} stopped before RUNNING: {app.failure()}\n{app.log_tail()}")
        if time.monotonic() > deadline:
            raise TimeoutError(f"{app.name} not RUNNING after {START_TIMEOUT:.0f}s\n{app.log_tail()}")
        await asyncio.sleep(0.1)


_SHORT = {"kafka-streams": "ks", "streamlet": "sl"}


def _new_app(system: str, case_file: Path, config: dict[str, Any], workdir: Path, run: str, position: int) -> App:
    """One system's application for a run, with its own serde names, state directory and log (named after the
    system, and for a handoff after the run and the app's place in it too: other runs share the directory)."""
    name = system if run == system else f"{run.replace('>', '-then-')}.{position}.{system}"
    mine = {**config, "state.dir": str(workdir / f"{name}-state"),
            "default.key.serde": _SERDES[system], "default.value.serde": _SERDES[system]}
    return (KafkaStreamsApp if system == "kafka-streams" else StreamletApp)(case_file, mine, workdir / f"{name}.log")


async def run_system(system: str, case: Case, bootstrap: str, workdir: Path, base: int) -> SystemRun:
    """The case's script on one system (`"streamlet"` or `"kafka-streams"`), on fresh topics and state; or, for
    `"<first>><then>"` (a handoff, e.g. `"kafka-streams>streamlet"`), on the first system until the stop and on
    the other one from the restart on: same application id, topics, changelogs and committed offsets, each with
    its own state directory (neither reads the other's local files), as in a move from one to the other."""
    began = time.monotonic()
    tag = uuid.uuid4().hex[:8]
    systems = system.split(">")
    prefix = f"rs-{tag}-{'2'.join(_SHORT[s] for s in systems)}-"
    mine = renamed(case, prefix)
    application_id = f"{prefix}app"
    workdir.mkdir(parents=True, exist_ok=True)
    case_file = workdir / f"{system.replace('>', '-then-')}-case.json"
    case_file.write_text(json.dumps(mine))
    config = settings(mine, application_id, bootstrap, workdir)
    apps = [_new_app(s, case_file, config, workdir, system, i) for i, s in enumerate(systems)]
    app = apps[0]
    log_path = apps[-1].log_path
    inputs = [(prefix + t, k, v, base + ts) for t, k, v, ts in case["inputs"]]
    await broker_io.create_topics(bootstrap, dict.fromkeys([*source_topics(mine["ops"]), *mine["outputs"]], 1))
    consumed = consumed_topics(mine, application_id)
    run = SystemRun(system, log=str(log_path))
    live = started = False
    try:
        for step in script(case):
            do = step["do"]
            step_began = time.monotonic()
            if do in ("write", "write_txn"):
                await broker_io.write_records(bootstrap, inputs[step["from"]:step["to"]], do == "write_txn")
            elif do == "start":
                if started:  # what the stopped instance left in the group
                    await broker_io.evict_members(bootstrap, application_id)
                    app = apps[-1]  # a handoff: the other system from the restart on
                app.start()
                live = started = True
                await _wait_running(app)
            elif do == "quiesce":
                await broker_io.quiesce(bootstrap, application_id, consumed, mine["outputs"], app.alive)
            elif do == "sleep":
                await asyncio.sleep(step["ms"] / 1000)
            elif do == "consumed":  # after a close of a cached case: it must have taken all its input before
                try:
                    await broker_io.quiesce(bootstrap, application_id, consumed, mine["outputs"], lambda: True,
                                            timeout=10)
                except TimeoutError as e:
                    raise RuntimeError(f"not all input consumed in {CACHED_PAUSE_MS} ms before the close") from e
            elif do == "kill":
                app.kill()
                live = False
            elif do == "close":
                code = await asyncio.to_thread(app.close)
                live = False
                if code != 0:
                    raise RuntimeError(f"{system} exited with {code} after a close: {app.failure()}")
            run.steps.append((_step_text(step), round(time.monotonic() - step_began, 2)))
    except (RuntimeError, TimeoutError) as e:
        run.failure = app.failure() or str(e).splitlines()[0]
        if live:
            await asyncio.to_thread(app.close)
    raw = await broker_io.read_topics(bootstrap, mine["outputs"])
    run.outputs = {t[len(prefix):]: [Out(r.key, r.value, r.timestamp - base) for r in records]
                   for t, records in raw.items()}
    run.seconds = time.monotonic() - began
    return run


async def run_rolling(system: str, case: Case, bootstrap: str, workdir: Path, base: int) -> SystemRun:
    """A rolling swap in one streams group (`group.protocol=streams`, a Kafka 4.2+ broker): for `"<a>><b>"`,
    an instance of system a runs phase 1 to its end; an instance of system b joins the group (the group may hand it
    some tasks); phase 2 is written in `ROLLING_SLICES` transactions: the first is taken and committed (by a, or by
    b for tasks it was given), then a closes leaving the group (its tasks go to b, each restored from its
    changelogs, resuming at its committed offsets; the step list says what a had committed when it left), and the
    others are written `ROLLING_PAUSE` apart while b takes the tasks over.
    The same application id, topics and commits throughout; b ends the run with a clean close.

    The cut is thus the end of the first slice, whatever the timing: with a's close while that slice was still
    coming, which records a processed before it left depended on timing, and so did the output, on Kafka Streams
    too (a join's stream time, for one, is not carried over: case 5151-h5). `run.pause` says what the swap cost
    (`swap_pause`)."""
    began = time.monotonic()
    first, then = system.split(">")
    prefix = f"rr-{uuid.uuid4().hex[:8]}-{_SHORT[first]}2{_SHORT[then]}-"
    mine = renamed(case, prefix)
    application_id = f"{prefix}app"
    workdir.mkdir(parents=True, exist_ok=True)
    run_name = f"rolling-{system}"
    case_file = workdir / f"{run_name.replace('>', '-then-')}-case.json"
    case_file.write_text(json.dumps(mine))
    config = {**settings(mine, application_id, bootstrap, workdir), "group.protocol": "streams"}
    a, b = (_new_app(s, case_file, config, workdir, run_name, i) for i, s in enumerate((first, then)))
    inputs = [(prefix + t, k, v, base + ts) for t, k, v, ts in case["inputs"]]
    phase1, total = case["phase1"], len(inputs)
    cuts = [phase1 + (total - phase1) * i // ROLLING_SLICES for i in range(ROLLING_SLICES + 1)]
    await broker_io.create_topics(bootstrap, dict.fromkeys([*source_topics(mine["ops"]), *mine["outputs"]], 1))
    if case.get("standby"):  # a streams group's standbys are the group's config (the client setting is ignored)
        broker = SimpleNamespace(version=default_kafka_version(), bootstrap_servers=bootstrap)
        await asyncio.to_thread(set_group_config, broker, application_id, "streams.num.standby.replicas", "1")
    consumed = consumed_topics(mine, application_id)
    run = SystemRun(system, log=str(b.log_path))
    running: list[App] = []
    arrivals: list[float] = []  # when each output record became readable (broker_io.watch_arrivals)
    watcher: asyncio.Task[None] | None = None
    leave: list[float] = []  # when the first instance began to close leaving the group, and when it was gone

    async def note(what: str, began_step: float) -> None:
        run.steps.append((what, round(time.monotonic() - began_step, 2)))

    async def close_first() -> None:
        leave.append(time.monotonic())
        code = await asyncio.to_thread(a.close_leaving)
        leave.append(time.monotonic())
        running.remove(a)
        if code != 0:
            raise RuntimeError(f"{first} exited with {code} after a close: {a.failure()}")
        taken = await broker_io.committed(bootstrap, application_id, consumed)
        run.steps.append((f"{first} left having committed {taken} of {consumed}", 0.0))

    try:
        step = time.monotonic()
        await broker_io.write_records(bootstrap, inputs[:phase1], False)  # the topics are there: watch the output
        watcher = asyncio.create_task(broker_io.watch_arrivals(bootstrap, mine["outputs"], arrivals))
        a.start()
        running.append(a)
        await _wait_running(a)
        await broker_io.quiesce(bootstrap, application_id, consumed, mine["outputs"], a.alive)
        await note(f"write[0:{phase1}] start({first}) quiesce", step)
        step = time.monotonic()
        b.start()
        running.append(b)
        await _wait_running(b)
        await note(f"start({then})", step)
        step = time.monotonic()
        # The first slice taken and committed before the first instance leaves: where it leaves (the cut) is then a
        # function of the case, not of how far it got in the moment before its close (case 5151-h5).
        await broker_io.write_records(bootstrap, inputs[cuts[0]:cuts[1]], True)
        await broker_io.quiesce(bootstrap, application_id, consumed, mine["outputs"], a.alive)
        await note(f"write_txn[{cuts[0]}:{cuts[1]}] quiesce", step)
        step = time.monotonic()
        await close_first()
        for i in range(1, ROLLING_SLICES):  # the rest comes while the second instance takes the tasks over
            if i > 1:
                await asyncio.sleep(ROLLING_PAUSE)
            await broker_io.write_records(bootstrap, inputs[cuts[i]:cuts[i + 1]], True)
        await note(f"close-leave({first}) write_txn x{ROLLING_SLICES - 1}", step)
        step = time.monotonic()
        await broker_io.quiesce(bootstrap, application_id, consumed, mine["outputs"], b.alive)
        code = await asyncio.to_thread(b.close)
        running.remove(b)
        if code != 0:
            raise RuntimeError(f"{then} exited with {code} after a close: {b.failure()}")
        await note("quiesce close", step)
    except (RuntimeError, TimeoutError) as e:
        run.failure = a.failure() or b.failure() or str(e).splitlines()[0]
        for live in running:
            await asyncio.to_thread(live.close)
    if watcher is not None:
        watcher.cancel()
        await asyncio.gather(watcher, return_exceptions=True)
    if len(leave) == 2:
        run.pause = swap_pause(arrivals, leave[0], leave[1])
    raw = await broker_io.read_topics(bootstrap, mine["outputs"])
    run.outputs = {t[len(prefix):]: [Out(r.key, r.value, r.timestamp - base) for r in records]
                   for t, records in raw.items()}
    run.seconds = time.monotonic() - began
    return run


def swap_pause(arrivals: list[float], leaving: float, gone: float) -> dict[str, float | None]:
    """What a rolling swap cost, from when output records became readable (`arrivals`, wall-clock seconds) and when
    the first instance began to close leaving the group (`leaving`) and was gone (`gone`), in seconds: `close` the
    leaving instance's close; `resume` from its being gone to the first output after (the second instance's: the
    rest of phase 2 is written from then on, `run_rolling`); `first_after` the two together, the pause a
    downstream reader sees; `gap` from the last output before the instance was gone to that first one after
    (it includes the harness's wait for the first slice's commit). None where there was no output on that side."""
    before = [t for t in arrivals if t <= gone]
    after = [t for t in arrivals if t > gone]
    return {"close": round(gone - leaving, 3),
            "resume": round(after[0] - gone, 3) if after else None,
            "first_after": round(after[0] - leaving, 3) if after else None,
            "gap": round(after[0] - before[-1], 3) if before and after else None}


def base_timestamp() -> int:
    """Event times start at a whole hour one to two hours ago: recent enough for topic retention, in the past
    for the broker's timestamp checks, and aligned with every window size the generator uses."""
    return (int(time.time() * 1000) // HOUR - 1) * HOUR


@dataclass
class Comparison:
    """A case run on both systems."""

    case: Case
    kafka_streams: SystemRun
    streamlet: SystemRun
    difference: str | None
    base: int

    @property
    def seconds(self) -> float:
        return max(self.kafka_streams.seconds, self.streamlet.seconds)


async def compare_case(case: Case, bootstrap: str, workdir: Path, keep: Callable[[str | None], bool] | None = None,
                       system: str = "streamlet", rolling: bool = False) -> Comparison:
    """Run `case` on Kafka Streams and on `system` at once and compare (`system` may be a handoff, see
    `run_system`: its output must be that of Kafka Streams handing over to a new Kafka Streams instance without
    local state); the work directory is removed unless `keep(difference)`."""
    base = base_timestamp()
    # A handoff starts the second system without local state: it restores from the changelogs, which is not what
    # a restart on the same state directory does (a window store restored from its changelog knows the stream
    # time its records reached, one reopened from disk does not); Kafka Streams does the same handoff to itself.
    reference = "kafka-streams" if ">" not in system else "kafka-streams>kafka-streams"
    runner = run_rolling if rolling else run_system  # rolling: `system` is a handoff "<a>><b>" (run_rolling)
    theirs, ours = await asyncio.gather(runner(reference, case, bootstrap, workdir, base),
                                        runner(system, case, bootstrap, workdir, base))
    diff = difference(case, theirs, ours, base)
    if keep is None or not keep(diff):
        shutil.rmtree(workdir, ignore_errors=True)
    return Comparison(case, theirs, ours, diff, base)


# -- reading a difference ------------------------------------------------------------------------------------------

def _rows(records: list[Out], base: int, start: int, stop: int) -> list[str]:
    return [f"    {i}: {readable(r.key, base)} -> {readable(r.value, base)} @ {r.timestamp}"
            for i, r in enumerate(records[start:stop], start)]


def difference(case: Case, theirs: SystemRun, ours: SystemRun, base: int = 0) -> str | None:
    """None when streamlet's output equals Kafka Streams' (and neither failed, or both did); else a report."""
    lines: list[str] = []
    if (theirs.failure is None) != (ours.failure is None):
        lines.append(f"failures differ: Kafka Streams {theirs.failure!r}, streamlet {ours.failure!r}")
    elif theirs.failure is not None:
        return None  # both failed: what each committed before it stopped depends on timing
    for topic in case["outputs"]:
        a, b = theirs.outputs.get(topic, []), ours.outputs.get(topic, [])
        if a == b:
            continue
        first = next((i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), min(len(a), len(b)))
        lines.append(f"{topic}: records differ from record {first} on ({len(a)} from Kafka Streams, {len(b)} from "
                     f"streamlet)")
        lines += ["  Kafka Streams:", *_rows(a, base, max(0, first - 2), first + 8)]
        lines += ["  streamlet:", *_rows(b, base, max(0, first - 2), first + 8)]
    if not lines:
        return None
    return "\n".join(lines)


def describe_case(case: Case) -> str:
    """The case as text: ops, stop point, script and input (timestamps relative), for a report."""
    phase1 = case["phase1"]
    inputs = [f"  {i}{' (phase 2)' if i >= phase1 else ''}: {r}" for i, r in enumerate(case["inputs"])]
    return "\n".join(["ops: " + json.dumps(case["ops"]), f"guarantee: {case['guarantee']}",
                      "stop: " + json.dumps(case["stop"]),
                      "script: " + " ".join(_step_text(s) for s in script(case)), "inputs:", *inputs])


def _step_text(step: Step) -> str:
    do = step["do"]
    if do in ("write", "write_txn"):
        return f"{do}[{step['from']}:{step['to']}]"
    if do == "sleep":
        return f"sleep({step['ms']}ms)"
    return str(do)
