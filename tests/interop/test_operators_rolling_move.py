"""A rolling move of the stateful operators between Kafka Streams 4.4.0 (Java) and streamlet, in one streams group.

The `operators` application (tests/interop/apps.py, twin of Apps.java: an emit-final tumbling-window
count, a session-window count, a stream-stream inner join and a foreign-key table join) runs on a
streams group (`group.protocol=streams`, KIP-1071, Kafka 4.2+), whose broker hands each member, Java
or Python, its own tasks: every topic has 2 partitions, so each operator's tasks really split between
instances. Under exactly_once_v2, with no record cache, while the input arrives (a sixth of it during
each step): two Kafka Streams instances run it; each is closed in turn (leaving the group) and a
streamlet instance started in its place; one streamlet instance is killed with kill -9 and started
again on its state directory; the other is stopped and a Kafka Streams instance takes its place. One
Java and one streamlet instance then run it to the end. The reference is one uninterrupted Kafka
Streams instance over the same input (`operator_runs.run`, as the offline tests make it).

What each operator is compared on (the offline move's comparisons, `test_operators_move`):
- session count and emit-final windowed count (`__emit.interval.ms.kstreams.windowed.aggregation__`
  = 0): record for record, in order, per output partition and source key. A source key's records
  come from one task, processing one input partition in offset order, and under exactly-once a moved
  task resumes at the committed offsets with the committed state (and, for emit-final, the close time
  of the last emitted window, from the commit metadata), so that sequence is deterministic: a lost or
  repeated update, or a window emitted twice, changes it. How two tasks' records interleave in an
  output partition depends on timing, so it is not compared.
- stream-stream join: the multiset of results, each pair exactly once. The task reads two topics whose
  interleaving depends on fetches (and here on the cut of the input into slices), which orders the
  results differently; with an inner join and a grace longer than the input's span, the set of pairs
  does not depend on it.
- foreign-key join: the final table (each key's last result). Its intermediate results go through
  the subscription and response topics, whose timing decides which of them are emitted.
- every store's changelog, key by key (`changelog_view`): each key's last value and timestamp; the
  join stores as the multiset of their puts (their keys end in a per-instance sequence number). The
  foreign-key join's result store by value only: a result takes the timestamp of the side whose
  update produced it (the order's when the order came after its product, the product's when the
  product came later), and which came later across the two topics depends on how the input was cut
  and fetched, not on the engine: with the input in six slices, an order of the first slice meets a
  product of the second, where the reference, which read the first half at once, met it the other way.
"""

from __future__ import annotations

import asyncio
import re
import time
from collections import Counter
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from tests.interop.kafka_streams_app import java_available
from tests.interop.operator_runs import (
    INPUT_ROLES,
    Input,
    Instance,
    RunResult,
    Runs,
    as_text,
    changelog_view,
    collect,
    latest,
    make_input,
    new_application,
    per_source_key,
    produce_input,
    run,
    wait_processed,
)

pytestmark = [
    pytest.mark.anyio, pytest.mark.broker, pytest.mark.usefixtures("streams_groups"),
    pytest.mark.skipif(not java_available(), reason="needs Java 17 and Maven"),
]

STEPS = 6  # input slices: before the moves, during each of the four, after them
STEP_SECONDS = 6.0
STREAMS_GROUP = {"group.protocol": "streams"}
REFERENCE_SESSION_TIMEOUT_MS = 20000  # the reference closes once, at the end: its value does not matter
_STREAMLET_TASKS = re.compile(r"running active tasks \d")


def slices(first: Input, second: Input, count: int) -> list[Input]:
    """The whole input (both halves, each role in its order) cut into `count` consecutive slices."""
    whole = {role: first[role] + second[role] for role in INPUT_ROLES}
    return [{role: records[len(records) * i // count:len(records) * (i + 1) // count]
             for role, records in whole.items()} for i in range(count)]


async def _streamlet_takes_tasks(instance: Instance, seen: int, timeout: float = 120.0) -> None:
    """Until the streamlet `instance` logged more than `seen` assignments with active tasks."""
    deadline = time.monotonic() + timeout
    while len(_STREAMLET_TASKS.findall(instance.log_text())) <= seen:
        if not instance.running():
            raise AssertionError(f"{instance.name} exited:\n{instance.log_text()[-3000:]}")
        if time.monotonic() > deadline:
            raise TimeoutError(f"{instance.name} was handed no active task in {timeout}s:\n"
                               f"{instance.log_text()[-3000:]}")
        await asyncio.sleep(0.5)


async def rolling_run(bootstrap: str, tmp: Path, first: Input, second: Input) -> RunResult:
    """The rolling move described in the module docstring; its steps, timed, are in `logs["events"]`."""
    began = time.monotonic()
    app_id, topics = await new_application(bootstrap, "rolling")
    parts = slices(first, second, STEPS)
    events: list[str] = []
    instances: list[Instance] = []

    def note(what: str) -> None:
        events.append(f"{time.monotonic() - began:6.1f}s {what}")

    def start(engine: str, name: str) -> Instance:
        instance = Instance(engine, bootstrap, app_id, topics, tmp, name=name, settings=STREAMS_GROUP).start()
        instances.append(instance)
        note(f"{name} started")
        return instance

    async def during(step: int, move: Callable[[], Awaitable[None]]) -> None:
        """Produce the step's slice of the input while the move happens."""
        producing = asyncio.create_task(produce_input(bootstrap, topics, parts[step], STEP_SECONDS))
        try:
            await move()
        finally:
            await producing
        note(f"input slice {step} produced")

    async def nothing() -> None:
        return None

    async def java_to_streamlet(java: Instance, name: str) -> None:
        await asyncio.sleep(1)
        await java.stop(leave_group=True)
        note(f"{java.name} closed")
        python = start("streamlet", name)
        await _streamlet_takes_tasks(python, 0)
        note(f"{name} running active tasks")

    async def kill_and_restart(python: Instance) -> None:
        await asyncio.sleep(1)
        seen = len(_STREAMLET_TASKS.findall(python.log_text()))
        python.kill()
        note(f"kill -9 of {python.name}")
        await asyncio.sleep(1)
        python.start()
        note(f"{python.name} restarted")
        await _streamlet_takes_tasks(python, seen)
        note(f"{python.name} running active tasks again")

    async def streamlet_to_java(python: Instance) -> None:
        await asyncio.sleep(1)
        await python.stop()
        note(f"{python.name} stopped")
        java = start("java", "java-2")
        assert java.java is not None
        await java.java.wait_for_active_tasks(120)
        note("java-2 running active tasks")

    try:
        javas = [start("java", "java-0"), start("java", "java-1")]
        for java in javas:
            assert java.java is not None
            await java.java.wait_for_line("STATE RUNNING", 180)
            await java.java.wait_for_active_tasks(120)
        note("two Kafka Streams instances running active tasks")
        await during(0, nothing)
        await during(1, lambda: java_to_streamlet(javas[0], "streamlet-0"))
        await during(2, lambda: java_to_streamlet(javas[1], "streamlet-1"))
        await during(3, lambda: kill_and_restart(instances[2]))
        await during(4, lambda: streamlet_to_java(instances[3]))
        await during(5, nothing)  # Kafka Streams and streamlet together to the end
        await wait_processed(bootstrap, app_id, topics)
        note("input processed")
    finally:
        for instance in instances:
            if instance.running():
                await instance.stop(leave_group=True)
    result = await collect(bootstrap, app_id, topics, instances, began)
    result.logs["events"] = "\n".join(events)
    return result


@pytest.fixture(scope="module")
def runs(kafka_broker: Any, tmp_path_factory: pytest.TempPathFactory) -> Runs:
    """The reference (Kafka Streams alone, uninterrupted) and the rolling move, over the same input."""
    bootstrap, tmp = kafka_broker.bootstrap_servers, tmp_path_factory.mktemp("rolling-operators")
    first, second = make_input()

    async def reference() -> RunResult:
        return await run(bootstrap, tmp, "java", "java", first, second,
                         java_session_timeout_ms=REFERENCE_SESSION_TIMEOUT_MS)

    return Runs(tmp, {"reference": reference, "rolling": lambda: rolling_run(bootstrap, tmp, first, second)})


async def both(runs: Runs) -> tuple[RunResult, RunResult]:
    rolling = await runs.get("rolling")
    print(rolling.logs["events"])
    return await runs.get("reference"), rolling


def assert_changelogs_equal(reference: RunResult, rolling: RunResult, stores: tuple[str, ...],
                            values_only: tuple[str, ...] = ()) -> None:
    """Each store's changelog as `changelog_view` sees it; those in `values_only`, each key's last value."""
    for store in stores:
        assert reference.changelogs[store], f"{store}: the reference wrote no changelog"
        if store in values_only:
            assert latest(rolling.changelogs[store], with_timestamp=False) == \
                latest(reference.changelogs[store], with_timestamp=False), store
        else:
            assert changelog_view(store, rolling.changelogs[store]) == \
                changelog_view(store, reference.changelogs[store]), store


async def test_every_instance_ran_tasks_and_none_failed(runs: Runs) -> None:
    """The move was real: each instance was handed active tasks, none failed; the kill -9 happened."""
    _, rolling = await both(runs)
    assert set(rolling.logs) == {"java-0", "java-1", "streamlet-0", "streamlet-1", "java-2", "events"}
    for name, log in rolling.logs.items():
        if name.startswith("streamlet"):
            assert _STREAMLET_TASKS.search(log) and "Traceback" not in log, log[-3000:]
        elif name.startswith("java"):
            assert "Assigning active tasks {" in log and "FAILED" not in log, log[-3000:]
    assert "kill -9 of streamlet-0" in rolling.logs["events"]
    assert len(_STREAMLET_TASKS.findall(rolling.logs["streamlet-0"])) >= 2  # before the kill and after


async def test_session_window_count(runs: Runs) -> None:
    reference, rolling = await both(runs)
    assert reference.outputs["sess-out"], "the reference produced no sessions"
    assert per_source_key(rolling.outputs["sess-out"]) == per_source_key(reference.outputs["sess-out"])
    assert_changelogs_equal(reference, rolling, ("session-counts",))


async def test_windowed_count_emitted_on_window_close(runs: Runs) -> None:
    reference, rolling = await both(runs)
    assert reference.outputs["win-out"], "the reference closed no window"
    assert per_source_key(rolling.outputs["win-out"]) == per_source_key(reference.outputs["win-out"])
    assert_changelogs_equal(reference, rolling, ("window-counts",))


async def test_stream_stream_join(runs: Runs) -> None:
    reference, rolling = await both(runs)
    assert reference.outputs["join-out"], "the reference joined nothing"
    assert Counter(as_text(rolling.outputs["join-out"])) == Counter(as_text(reference.outputs["join-out"]))
    assert_changelogs_equal(reference, rolling, ("clicks-views-this-join-store", "clicks-views-other-join-store"))


async def test_foreign_key_join(runs: Runs) -> None:
    reference, rolling = await both(runs)
    final = latest(reference.outputs["fk-out"], with_timestamp=False)
    assert len(final) >= 50, final  # every order but the deleted one and those of the deleted product
    assert latest(rolling.outputs["fk-out"], with_timestamp=False) == final
    assert_changelogs_equal(reference, rolling, ("orders-store", "products-store", "order-product-store",
                                                 "order-product-subscription-store"),
                            values_only=("order-product-store",))

