"""`SubTopologyPlan`: everything a Spark worker needs to run one sub-topology's tasks, in one picklable object.

The driver resolves it once (topic names, partition counts, grouping keys, whether wall-clock
punctuators exist) so that workers never ask Kafka or Spark anything before they process a batch.
"""

from __future__ import annotations

import copyreg
import struct
from dataclasses import dataclass, field
from typing import Any

from streamlet.config import StreamsConfig
from streamlet.topology import SubTopology, Topology


def _reduce_struct(packer: struct.Struct) -> tuple[type[struct.Struct], tuple[str]]:
    return struct.Struct, (packer.format,)


# A plan (and with it the topology: serdes close over precompiled `struct.Struct`s) is pickled to every
# worker, and a Struct does not pickle by itself; it is rebuilt there from its format.
copyreg.pickle(struct.Struct, _reduce_struct)

ENGINE_KEY_PREFIX = "spark."
"""Settings of the Spark engine itself (checkpoint, trigger, master); kept from the Kafka clients."""
CHECKPOINT_KEY = "spark.checkpoint.location"
TRIGGER_KEY = "spark.trigger.interval.ms"
MASTER_KEY = "spark.master"
PARTITIONS_KEY = "spark.task.partitions"
"""Spark partitions a stateful sub-topology's tasks are spread over (its query's shuffle partitions; a
divisor of the task count keeps them even). Default: on a `local[N]` master, as few as keep its N cores
busy (`grouping.shuffle_partitions`); elsewhere one per task. The checkpoint fixes it once the query ran."""
MAX_OFFSETS_KEY = "spark.max.offsets.per.trigger"
"""Caps a micro-batch's input from the application's input topics (the connector's `maxOffsetsPerTrigger`):
smaller batches, lower latency. Queries reading repartition topics or several topics are not capped
(see `query`)."""


@dataclass
class SubTopologyPlan:
    topology: Topology
    subtopology_id: int
    settings: dict[str, Any]
    """The application's settings (a plain dict: it is pickled to every worker)."""
    partition_counts: dict[str, int]
    """Real topic name -> partitions, for every topic the application reads or writes."""
    task_keys: list[int]
    """task_keys[p]: the grouping key of task p (see `grouping.task_keys`)."""
    wall_clock: bool = False
    """The sub-topology schedules wall-clock punctuations: its query runs with processing-time timers."""
    source_topics: list[str] = field(default_factory=list)
    stateless: bool = False
    """Runs without Spark state, where the Kafka source's rows are (see `stateless`)."""
    upstream: SubTopologyPlan | None = None
    """A stateless sub-topology run in this plan's query, before its shuffle: what it writes to this plan's
    repartition topic reaches the tasks through the shuffle instead of Kafka (see `fused`)."""

    @property
    def reader(self) -> SubTopologyPlan:
        """The plan whose input this plan's query reads from Kafka: the upstream one when it runs in the query."""
        return self.upstream or self

    @property
    def query_sources(self) -> list[str]:
        """The topics this plan's query reads."""
        return self.reader.source_topics

    @property
    def query_id(self) -> str:
        """Names the query and its checkpoint: the sub-topology's id, or `upstream+this` for a fused pair."""
        if self.upstream is None:
            return str(self.subtopology_id)
        return f"{self.upstream.subtopology_id}+{self.subtopology_id}"

    @property
    def subtopology(self) -> SubTopology:
        return next(s for s in self.topology.sub_topologies() if s.id == self.subtopology_id)

    @property
    def reads_internal_topics(self) -> bool:
        """It reads a topic of the application's own (a repartition topic), not only the application's input."""
        return any(t in self.topology.internal_topics for t in self.subtopology.source_topics)

    @property
    def tasks(self) -> int:
        return len(self.task_keys)

    def config(self) -> StreamsConfig:
        return StreamsConfig(self.settings)

    def client_settings(self) -> dict[str, Any]:
        """The settings without the engine's own, for the Kafka clients (which would warn about them)."""
        return {k: v for k, v in self.settings.items() if not k.startswith(ENGINE_KEY_PREFIX)}

    def resolve_topic(self, name: str) -> str:
        if name in self.topology.internal_topics:
            return f"{self.settings['application.id']}-{name}"
        return name


def settings_key(settings: dict[str, Any]) -> str:
    """A hashable key for client settings: a Python worker keeps its Kafka clients per application
    settings (the sink's producer, the exactly-once transactions), made once and reused by its batches."""
    return repr(sorted((k, repr(v)) for k, v in settings.items()))
