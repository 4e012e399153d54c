"""Static membership, client ids and what a restarted instance says it waits for, on the real broker.

Three WordCount instances (exactly_once_v2, OS processes) run in one group; one of them is restarted five
or more times (SIGTERM, or kill -9) within the session timeout while input flows. The broker's own
description of the group (DescribeGroups, StreamsGroupDescribe) is read all along: no other member's
assignment may change, the restarted one gets its own back, and every word's count updates are exactly
1..n. The client ids the broker shows follow Kafka Streams' form, one per instance.
"""

from __future__ import annotations

import asyncio
import re
import time
from pathlib import Path
from typing import Any

import pytest

from tests.helpers.app_process import AppProcess
from tests.helpers.group_members import Group, describe, settled
from tests.integration.chaos import run_chaos
from tests.integration.topologies import STREAMS

_UUID = "[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"


class _Watch:
    """Polls the group's description while the restarts go on; keeps every member's assignment seen."""

    def __init__(self, bootstrap: str, group: str, streams: bool) -> None:
        self.bootstrap, self.group, self.streams = bootstrap, group, streams
        self.seen: list[Group] = []

    async def settled(self, instances: int, timeout: float = 180) -> Group:
        """The group once it is stable with `instances` members, each assigned something."""
        return await settled(self.bootstrap, self.group, self.streams, instances, timeout)

    async def run(self) -> None:
        while True:
            self.seen.append(await describe(self.bootstrap, self.group, self.streams))
            await asyncio.sleep(0.3)


def _restart_one(watch: _Watch, kinds: list[str], report: dict[str, Any]) -> Any:
    """A chaos disruption: once the group settled, restart instance 0 once per entry of `kinds` ("kill":
    kill -9, "stop": SIGTERM), each time waiting until it runs tasks again, while `watch` records."""

    async def disrupt(apps: list[AppProcess], _rng: Any, _seconds: float, log: Any) -> int:
        baseline = await watch.settled(len(apps))
        report["baseline"] = baseline
        victim = apps[0]
        report["victim"] = _main_consumer_client_id(victim.log_text())
        watcher = asyncio.create_task(watch.run())
        try:
            for k, kind in enumerate(kinds):
                started = victim.log_text().count("started on")
                if kind == "kill":
                    victim.kill()
                else:
                    assert victim.stop() == 0
                log(f"[static] {kind} #{k + 1} of {victim.log_path.name}")
                victim.start()
                deadline = time.monotonic() + 120
                while victim.log_text().count("started on") <= started:
                    assert time.monotonic() < deadline, victim.log_text()[-3000:]
                    await asyncio.sleep(0.2)
                await asyncio.sleep(1.0)
        finally:
            watcher.cancel()
        report["final"] = await watch.settled(len(apps))
        return len(kinds)

    return disrupt


def _main_consumer_client_id(log: str) -> str:
    """The main consumer's client id an instance logged at its start."""
    found = re.search(r"as client id (\S+-StreamThread-\d+-consumer)", log)
    assert found, log[-3000:]
    return found.group(1)


def _assert_no_assignment_moved(baseline: Group, seen: list[Group], final: Group, victim: str,
                                streams: bool) -> None:
    """Every description shows each instance (by its client id, which carries the instance's process id
    and so stays across restarts) with its baseline assignment; `victim` is the restarted one's.

    A classic group stays Stable: no rebalance at all. A streams group reports Reconciling while the
    restarted member, handed its own tasks back at once, has not yet confirmed that it owns them; the
    assignments themselves (what the broker has each member run) never change."""
    expected = {m.client_id: m.assigned for m in baseline.members}
    assert len(expected) == len(baseline.members) and victim in expected, baseline
    assert seen, "the group was never described during the restarts"
    for group in seen:
        # Every member the broker lists (the restarted one included, whose place the broker keeps) holds its
        # baseline assignment.
        assert group.state.lower() in (("stable", "reconciling") if streams else ("stable",)), group
        for member in group.members:
            assert member.client_id in expected, (member, group)
            assert member.assigned == expected[member.client_id], (member, baseline)
        assert {m.client_id for m in group.members if m.client_id != victim} == set(expected) - {victim}, group
    assert {m.client_id: m.assigned for m in final.members} == expected


def _assert_client_ids(group: Group, app_id: str, user_client_id: str | None = None) -> None:
    """Kafka Streams' form `<client.id or application.id-process id>-StreamThread-<n>-consumer`, one per instance."""
    prefix = re.escape(user_client_id) if user_client_id else f"{re.escape(app_id)}-{_UUID}"
    ids = [m.client_id for m in group.members]
    assert all(re.fullmatch(f"{prefix}-StreamThread-1-consumer", i) for i in ids), ids
    if user_client_id is None:
        assert len(set(ids)) == len(ids), ids


async def _restart_run(bootstrap: str, tmp_path: Path, streams: bool, kinds: list[str], static: bool = True) -> None:
    """Three instances, instance 0 restarted once per entry of `kinds`: no assignment moves, output exact."""
    report: dict[str, Any] = {}
    watch = _Watch(bootstrap, "", streams)
    restart = _restart_one(watch, kinds, report)

    async def disrupt(apps: list[AppProcess], rng: Any, seconds: float, log: Any) -> int:
        watch.group = str(apps[0].settings["application.id"])
        return await restart(apps, rng, seconds, log)

    settings = {"session.timeout.ms": 30000, **(STREAMS if streams else {})}
    result = await run_chaos(bootstrap, tmp_path, words=30_000, disrupt=disrupt, guarantee="exactly_once_v2",
                             produce_seconds=25, seed=5, extra_settings=settings, instances=3,
                             instance_settings=lambda i: {"group.instance.id": f"static-{i}"} if static else {})
    assert result.disruptions == len(kinds)
    assert result.check.exact, result.check.summary()
    baseline, final = report["baseline"], report["final"]
    _assert_client_ids(final, watch.group)
    victim = report["victim"]
    _assert_no_assignment_moved(baseline, watch.seen, final, victim, streams)
    if static:
        # The broker knows the members as static: group.instance.id with the worker's number appended.
        instances = {m.instance_id or m.member_id[:-37] for m in final.members}  # classic: "<instance id>-<uuid>"
        assert instances == {"static-0-1", "static-1-1", "static-2-1"}, final
    for text in result.logs:
        assert "lost the connection to the Kafka broker" not in text


@pytest.mark.anyio
@pytest.mark.broker
async def test_classic_static_members_restart_without_moving_any_task(kafka_broker: Any, tmp_path: Path) -> None:
    await _restart_run(kafka_broker.bootstrap_servers, tmp_path, False, ["kill", "stop"] * 3)


@pytest.mark.anyio
@pytest.mark.broker
@pytest.mark.usefixtures("streams_groups")
async def test_streams_group_static_members_closed_and_restarted_keep_their_tasks(kafka_broker: Any,
                                                                                   tmp_path: Path) -> None:
    # A clean close leaves with epoch -2: the broker keeps the member's tasks until it is back.
    await _restart_run(kafka_broker.bootstrap_servers, tmp_path, True, ["stop"] * 5)


@pytest.mark.anyio
@pytest.mark.broker
@pytest.mark.usefixtures("streams_groups")
async def test_streams_group_member_killed_and_restarted_keeps_its_tasks(kafka_broker: Any, tmp_path: Path) -> None:
    # A Kafka 4.4 broker refuses a static member whose killed predecessor has not timed out
    # (UNRELEASED_INSTANCE_ID); a dynamic member rejoins under its kept member id and gets its tasks back.
    await _restart_run(kafka_broker.bootstrap_servers, tmp_path, True, ["kill"] * 5, static=False)


@pytest.mark.anyio
@pytest.mark.broker
async def test_after_kill_9_the_log_says_it_waits_for_the_previous_members_session(kafka_broker: Any,
                                                                                  tmp_path: Path) -> None:
    # A dynamic member restarted after kill -9 joins while the group still counts the member it was: the
    # coordinator holds its JoinGroup until that session expired. With request.timeout.ms shorter than the
    # wait, aiokafka reports the held join as a timed-out request ("marking coordinator dead"); the broker
    # answered all along, and the log must say what the member waits for, not that the broker is lost.
    async def kill_once(apps: list[AppProcess], _rng: Any, _seconds: float, log: Any) -> int:
        victim = apps[0]
        started = victim.log_text().count("started on")
        victim.kill()
        log("[restart] kill -9 of app-0")
        victim.start()
        await victim.wait_for_log("waiting for the previous member's session to expire", timeout=60)
        deadline = time.monotonic() + 120
        while victim.log_text().count("started on") <= started:
            assert time.monotonic() < deadline, victim.log_text()[-3000:]
            await asyncio.sleep(0.2)
        return 1

    result = await run_chaos(kafka_broker.bootstrap_servers, tmp_path, words=5_000, disrupt=kill_once,
                             guarantee="at_least_once", produce_seconds=8, seed=3,
                             extra_settings={"session.timeout.ms": 20000,
                                             "main.consumer.request.timeout.ms": 6000})
    assert result.check.no_loss, result.check.summary()
    restarted = result.logs[0]
    assert "waiting for the previous member's session to expire (session.timeout.ms=20000)" in restarted
    assert "the group coordinator held this member's join longer than request.timeout.ms" in restarted
    assert "RequestTimedOutError" in restarted  # the case of the misleading line did happen
    assert "lost the connection to the Kafka broker" not in restarted
    assert "answers again" not in restarted


@pytest.mark.anyio
@pytest.mark.broker
@pytest.mark.usefixtures("streams_groups")
async def test_a_killed_static_member_of_a_streams_group_waits_for_its_old_session(kafka_broker: Any,
                                                                                  tmp_path: Path) -> None:
    # What a Kafka 4.4 broker does with a static member killed without leaving: the restarted one is refused
    # (UNRELEASED_INSTANCE_ID) until the old session expired; it waits, says for what, then runs again.
    async def kill_once(apps: list[AppProcess], _rng: Any, _seconds: float, log: Any) -> int:
        victim = apps[0]
        await victim.wait_for_log("running active tasks", timeout=120)
        started = victim.log_text().count("started on")
        victim.kill()
        log("[restart] kill -9 of app-0")
        victim.start()
        await victim.wait_for_log("waiting for the previous member with group.instance.id 'static-0-1'", timeout=60)
        deadline = time.monotonic() + 150
        while victim.log_text().count("started on") <= started:
            assert time.monotonic() < deadline, victim.log_text()[-3000:]
            await asyncio.sleep(0.2)
        return 1

    result = await run_chaos(kafka_broker.bootstrap_servers, tmp_path, words=10_000, disrupt=kill_once,
                             guarantee="exactly_once_v2", produce_seconds=10, seed=4, extra_settings=STREAMS,
                             instance_settings=lambda i: {"group.instance.id": f"static-{i}"})
    assert result.check.exact, result.check.summary()
    assert "UNRELEASED_INSTANCE_ID" not in result.logs[1]  # only the restarted instance was refused
    assert "lost the connection to the Kafka broker" not in result.logs[0]


@pytest.mark.anyio
@pytest.mark.broker
async def test_workers_are_distinct_members_with_their_own_client_and_instance_ids(kafka_broker: Any,
                                                                                  tmp_path: Path) -> None:
    # `--workers 2` with one group.instance.id: each worker is a static member `<id>-<n>` whose client id
    # carries its own number, as Kafka Streams' threads do.
    from tests.integration.test_workers import two_worker_wordcount

    run = await two_worker_wordcount(kafka_broker, tmp_path, "static-workers", 100, 2,
                                     {"group.instance.id": "pod-7"})
    run.app.start()
    try:
        await run.app.wait_for_log("to RUNNING", timeout=120)
        group = await _Watch(run.bootstrap, str(run.app.settings["application.id"]), False).settled(2)
    finally:
        assert run.app.stop() == 0
    instances = sorted(m.instance_id or m.member_id[:-37] for m in group.members)
    assert instances == ["pod-7-1", "pod-7-2"], group
    app_id = re.escape(str(run.app.settings["application.id"]))
    numbers = sorted(re.fullmatch(f"{app_id}-{_UUID}-StreamThread-(\\d)-consumer", m.client_id).group(1)  # type: ignore[union-attr]
                     for m in group.members)
    assert numbers == ["1", "2"], group
