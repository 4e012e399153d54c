"""Where each store's partitions live: `HostInfo`, `StreamsMetadata`, `KeyQueryMetadata`.

Every member sends its `application.server` (host:port) in its group subscription, and the leader
hands every member the same host map in the assignment (see `streamlet.kafka.assignor`): the
active and standby tasks of each member. From it and the topology, any instance can tell which host
holds a key: the key's partition is the sink's choice (murmur2 of the serialized key modulo the
partitions of the store's source topics), and the task of that partition says the host.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from streamlet.actors.task_id import TaskId
from streamlet.errors import ConfigError
from streamlet.kafka.assignor import HostTasks
from streamlet.partitioner import default_partition
from streamlet.serdes import Serde, Serializer
from streamlet.topology import SubTopology, Topology


class HostInfo(NamedTuple):
    """An instance's `application.server`, as Kafka Streams' `HostInfo`."""

    host: str
    port: int

    @classmethod
    def parse(cls, endpoint: str) -> HostInfo:
        """`"host:port"` -> HostInfo; a ConfigError names what is wrong."""
        host, sep, port = endpoint.rpartition(":")
        if not sep or not host or not port.isdigit():
            raise ConfigError(f"application.server must be host:port, got {endpoint!r}")
        return cls(host.strip("[]"), int(port))

    @classmethod
    def unavailable(cls) -> HostInfo:
        """Kafka Streams' placeholder when no metadata is known."""
        return cls("unavailable", -1)

    def __str__(self) -> str:
        return f"{self.host}:{self.port}"


@dataclass(frozen=True)
class StreamsMetadata:
    """One instance: its endpoint, the stores and partitions it hosts actively and as standbys."""

    host_info: HostInfo
    state_store_names: frozenset[str] = frozenset()
    topic_partitions: frozenset[tuple[str, int]] = frozenset()
    standby_state_store_names: frozenset[str] = frozenset()
    standby_topic_partitions: frozenset[tuple[str, int]] = frozenset()

    def host(self) -> str:
        """The host part of `host_info` (Kafka Streams' accessor)."""
        return self.host_info.host

    def port(self) -> int:
        """The port part of `host_info` (Kafka Streams' accessor)."""
        return self.host_info.port


@dataclass(frozen=True)
class KeyQueryMetadata:
    """Where one key of one store lives: the active host, the standby hosts, and the partition."""

    active_host: HostInfo
    standby_hosts: frozenset[HostInfo] = field(default_factory=frozenset)
    partition: int = -1

    @classmethod
    def not_available(cls) -> KeyQueryMetadata:
        """Kafka Streams' NOT_AVAILABLE: the store is unknown or no assignment has been seen yet."""
        return cls(HostInfo.unavailable(), frozenset(), -1)


class _TopologyIndex:
    """The topology facts metadata needs: each task's partitions and stores, each store's sub-topology."""

    def __init__(self, topology: Topology, resolve_topic: Any, partition_counts: Mapping[str, int]) -> None:
        self._subs: dict[int, SubTopology] = {s.id: s for s in topology.sub_topologies()}
        self._resolve = resolve_topic
        self._counts = partition_counts

    def sources(self, sub: int) -> list[str]:
        return [self._resolve(t) for t in self._subs[sub].source_topics]

    def partitions(self, task: TaskId) -> set[tuple[str, int]]:
        return {(t, task.partition) for t in self.sources(task.subtopology) if task.partition < self._counts.get(t, 0)}

    def stores(self, task: TaskId) -> set[str]:
        sub = self._subs.get(task.subtopology)
        return set(sub.stores) if sub is not None else set()

    def store_subtopology(self, store: str) -> int | None:
        return next((s.id for s in self._subs.values() if store in s.stores), None)

    def partition_count(self, sub: int) -> int:
        return max((self._counts.get(t, 0) for t in self.sources(sub)), default=0)


def _one(index: _TopologyIndex, host: HostTasks) -> StreamsMetadata:
    def collect(tasks: Iterable[TaskId]) -> tuple[frozenset[str], frozenset[tuple[str, int]]]:
        stores: set[str] = set()
        parts: set[tuple[str, int]] = set()
        for task in tasks:
            stores |= index.stores(task)
            parts |= index.partitions(task)
        return frozenset(stores), frozenset(parts)

    active_stores, active_parts = collect(host.active)
    standby_stores, standby_parts = collect(host.standby)
    return StreamsMetadata(HostInfo.parse(host.endpoint), active_stores, active_parts, standby_stores, standby_parts)


class MetadataView:
    """Answers the metadata queries from the last assignment's host map (see the module docstring)."""

    def __init__(self, topology: Topology, hosts: Iterable[HostTasks], resolve_topic: Any,
                 partition_counts: Mapping[str, int]) -> None:
        self._index = _TopologyIndex(topology, resolve_topic, partition_counts)
        self._hosts = list(hosts)

    def all_clients(self) -> list[StreamsMetadata]:
        """Every instance that announced an `application.server`, by endpoint."""
        return [_one(self._index, h) for h in sorted(self._hosts, key=lambda h: h.endpoint)]

    def for_store(self, store: str) -> list[StreamsMetadata]:
        """The instances holding `store`, actively or as a standby."""
        return [m for m in self.all_clients() if store in m.state_store_names | m.standby_state_store_names]

    def for_key(self, store: str, key: Any, serializer: Serializer[Any] | Serde[Any]) -> KeyQueryMetadata:
        """The host of `key` in `store`: the partition is the default partitioner's for the key
        serialized by `serializer` (as the sink writing the store's input partitions it)."""
        sub = self._index.store_subtopology(store)
        if sub is None or not self._hosts:
            return KeyQueryMetadata.not_available()
        count = self._index.partition_count(sub)
        if count <= 0:
            return KeyQueryMetadata.not_available()
        if isinstance(serializer, Serde):
            serializer = serializer.serializer
        data = serializer.serialize(self._index.sources(sub)[0], key)
        if data is None:
            raise ValueError("query_metadata_for_key needs a key that serializes to bytes (not None)")
        task = TaskId(sub, default_partition(data, count))
        active = next((HostInfo.parse(h.endpoint) for h in self._hosts if task in h.active), HostInfo.unavailable())
        standbys = frozenset(HostInfo.parse(h.endpoint) for h in self._hosts if task in h.standby)
        return KeyQueryMetadata(active, standbys, task.partition)
