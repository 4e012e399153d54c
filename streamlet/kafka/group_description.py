"""Who holds a consumer group: its state, protocol and members' client ids, as the broker describes it.

When the broker refuses a member's JoinGroup because the group's members speak another protocol
(error 23, a Kafka Streams application's lingering members), the error says nothing about those
members. An operator deciding whether to wait or to act needs to read which protocol holds the group
and which clients are in it (Kafka Streams names its consumers `<client.id>-StreamThread-<n>-consumer`),
so the waiting member asks the group's coordinator once in a while (DescribeGroups). Best effort: a
description that cannot be had is None, never an error of the application.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from streamlet.kafka.topic_manager import admin_client

log = logging.getLogger(__name__)

KAFKA_STREAMS_PROTOCOL = "stream"
"""The protocol (assignor) name Kafka Streams' consumers offer in a classic group (StreamsPartitionAssignor)."""


@dataclass(frozen=True)
class GroupDescription:
    """A consumer group as its coordinator describes it (Kafka's DescribeGroups)."""

    group: str
    state: str
    protocol_type: str
    protocol: str
    client_ids: tuple[str, ...]

    def summary(self) -> str:
        """One phrase for a log line: how many members, which protocol, which clients."""
        protocol = repr(self.protocol or "?")
        if self.protocol == KAFKA_STREAMS_PROTOCOL:
            protocol += " (Kafka Streams)"
        clients = ", ".join(sorted(set(self.client_ids))) or "none"
        return (f"{len(self.client_ids)} member(s) of protocol {protocol}, group state {self.state}, "
                f"client ids: {clients}")


async def describe_group(admin_kwargs: Mapping[str, Any], group: str, timeout: float = 10.0) -> GroupDescription | None:
    """Describe `group` with a short-lived admin client (`admin_kwargs`: the application's admin client
    settings); None when the coordinator does not answer within `timeout` or answers with an error."""
    try:
        async with asyncio.timeout(timeout), admin_client(admin_kwargs) as admin:
            responses = await admin.describe_consumer_groups([group])
    except Exception as exc:  # only for the log: the caller goes on without it
        log.debug("could not describe group %r: %s", group, exc)
        return None
    for response in responses:
        for entry in response.to_object()["groups"]:
            if entry.get("group") == group and not entry.get("error_code"):
                return GroupDescription(
                    group=group, state=str(entry.get("state") or ""),
                    protocol_type=str(entry.get("protocol_type") or ""), protocol=str(entry.get("protocol") or ""),
                    client_ids=tuple(str(m.get("client_id") or "") for m in entry.get("members") or ()))
    return None
