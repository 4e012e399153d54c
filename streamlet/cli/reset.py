"""`streamlet reset`: Kafka Streams' application reset tool, for reprocessing input from scratch.

An application's progress lives in three places, and a reset clears all three, as Kafka Streams'
`kafka-streams-application-reset` plus `KafkaStreams.cleanUp()` do:

- the consumer group `application.id`'s committed offsets on the source topics: moved to the earliest
  offset (default), to the first offset at or after a time (`--to-datetime`), or to a given offset
  (`--to-offset`, clamped to what each partition holds);
- the internal topics (repartition and changelog topics, named `<application.id>-...`): deleted, so
  that the next run creates them empty (a changelog left behind would restore the old counts);
- the local state directories (`<state.dir>/<application.id>`): wiped (`clean_up`).

The application must be stopped: the tool refuses while the group has active members, since a running
instance would commit its old positions over the reset ones. Offsets are committed with a group-less
consumer (assign, not subscribe), which the coordinator accepts only for an empty group.
"""

from __future__ import annotations

import logging
import shutil
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import anyio
from aiokafka import AIOKafkaConsumer, TopicPartition
from aiokafka.errors import CoordinatorLoadInProgressError, GroupCoordinatorNotAvailableError
from aiokafka.structs import OffsetAndMetadata

from streamlet.config import StreamsConfig
from streamlet.errors import StreamsError
from streamlet.kafka.client_settings import ClientRole, client_kwargs, start_client
from streamlet.kafka.topic_manager import (
    admin_client,
    changelog_topic_name,
    describe_partition_counts,
    internal_topic_name,
    user_topics,
)
from streamlet.runtime.instance_id import state_root
from streamlet.topology import Topology

log = logging.getLogger(__name__)


class ApplicationRunningError(StreamsError):
    """The reset tool refuses to touch a group that still has members: stop every instance first."""


@dataclass
class ResetPlan:
    """What a reset does (and, with `--dry-run`, only shows)."""

    application_id: str
    offsets: dict[TopicPartition, int] = field(default_factory=dict)
    """Source partition -> the offset the group will resume from."""
    internal_topics: list[str] = field(default_factory=list)
    """Internal topics that exist and will be deleted."""
    state_dirs: list[Path] = field(default_factory=list)
    """Local state directories that exist and will be wiped."""

    def describe(self) -> str:
        """The plan as lines a person reads before (or instead of) running it."""
        lines = [f"reset of application {self.application_id!r}:"]
        lines += [f"  offset {tp.topic}-{tp.partition} -> {offset}" for tp, offset in sorted(self.offsets.items())]
        lines += [f"  delete internal topic {topic}" for topic in self.internal_topics]
        lines += [f"  wipe local state {path}" for path in self.state_dirs]
        if len(lines) == 1:
            lines.append("  nothing to do")
        return "\n".join(lines)


async def plan_reset(topology: Topology, config: StreamsConfig | Mapping[str, Any], *,
                     to_datetime: datetime | None = None, to_offset: int | None = None,
                     state_dirs: list[Path] | None = None) -> ResetPlan:
    """Work out the reset without changing anything; raises ApplicationRunningError while the group
    has members. `state_dirs` defaults to this config's `<state.dir>/<application.id>`."""
    config = StreamsConfig.of(config)
    app_id = config.application_id
    plan = ResetPlan(app_id)
    async with admin_client(client_kwargs(config, ClientRole.ADMIN)) as admin:
        await _require_inactive_group(admin, app_id)
        sources, _sinks = user_topics(topology)
        internal = {internal_topic_name(app_id, name) for name in topology.internal_topics}
        internal |= {changelog_topic_name(app_id, store) for store, builder in topology.store_builders.items()
                     if builder.logging_enabled}
        existing = await describe_partition_counts(admin, sources | internal)
    plan.internal_topics = sorted(t for t in internal if t in existing)
    parts = [TopicPartition(t, p) for t in sorted(sources) if t in existing for p in range(existing[t])]
    if parts:
        plan.offsets = await _target_offsets(config, parts, to_datetime, to_offset)
    dirs = state_dirs if state_dirs is not None else [state_root(config, app_id)]
    plan.state_dirs = [d for d in dirs if d.exists()]
    return plan


async def apply_reset(plan: ResetPlan, config: StreamsConfig | Mapping[str, Any]) -> None:
    """Carry out `plan`: commit the offsets, delete the internal topics, wipe the local state."""
    config = StreamsConfig.of(config)
    if plan.offsets:
        consumer = AIOKafkaConsumer(**client_kwargs(config, ClientRole.MAIN_CONSUMER), group_id=plan.application_id,
                                    enable_auto_commit=False)
        await start_client(consumer, client_kwargs(config, ClientRole.MAIN_CONSUMER))
        try:
            consumer.assign(list(plan.offsets))
            await consumer.commit({tp: OffsetAndMetadata(offset, "") for tp, offset in plan.offsets.items()})
        finally:
            await consumer.stop()
    if plan.internal_topics:
        async with admin_client(client_kwargs(config, ClientRole.ADMIN)) as admin:
            await admin.delete_topics(plan.internal_topics)
    for path in plan.state_dirs:
        shutil.rmtree(path, ignore_errors=True)
    log.info("%s\ndone", plan.describe())


async def _require_inactive_group(admin: Any, group: str, timeout_s: float = 30.0) -> None:
    described = await _describe_group(admin, group, timeout_s)
    for response in described:
        for entry in response.to_object()["groups"]:
            members = entry.get("members") or []
            if entry.get("group") == group and members:
                raise ApplicationRunningError(
                    f"application {group!r} still has {len(members)} running instance(s) "
                    f"(group state {entry.get('state')}); stop every instance before resetting it")


async def _describe_group(admin: Any, group: str, timeout_s: float) -> Any:
    """The group's description. A cluster where no group was ever used answers "coordinator not
    available" while it creates its offsets topic: a retriable error, retried for `timeout_s`."""
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            return await admin.describe_consumer_groups([group])
        except (GroupCoordinatorNotAvailableError, CoordinatorLoadInProgressError):
            if time.monotonic() > deadline:
                raise
            await anyio.sleep(0.5)


async def _target_offsets(config: StreamsConfig, parts: list[TopicPartition], to_datetime: datetime | None,
                          to_offset: int | None) -> dict[TopicPartition, int]:
    """Where each source partition will resume: earliest, at a time, or at an offset within range."""
    consumer = AIOKafkaConsumer(**client_kwargs(config, ClientRole.MAIN_CONSUMER), group_id=None,
                                enable_auto_commit=False)
    await start_client(consumer, client_kwargs(config, ClientRole.MAIN_CONSUMER))
    try:
        earliest = await consumer.beginning_offsets(parts)
        latest = await consumer.end_offsets(parts)
        if to_offset is not None:
            return {tp: min(max(to_offset, earliest[tp]), latest[tp]) for tp in parts}
        if to_datetime is not None:
            millis = int(to_datetime.timestamp() * 1000)
            found = await consumer.offsets_for_times({tp: millis for tp in parts})
            return {tp: found[tp].offset if found.get(tp) is not None else latest[tp] for tp in parts}
        return dict(earliest)
    finally:
        await consumer.stop()
