"""The two KIP-447 requests that make one transaction per member safe, which aiokafka does not speak.

Exactly-once v2 shares one transactional producer among all of a member's tasks. Two things then
guard against a member that lost its partitions while still alive (a zombie):

* `TxnOffsetCommit` v3 carries the consumer group's generation and member id. The group
  coordinator refuses offsets from a member of an older generation, so the zombie's transaction
  can only be aborted. aiokafka sends v0, which carries neither; `fence_offset_commits` makes a
  transactional producer send v3 with the consumer's current group metadata instead.
* `OffsetFetch` v7 with `require_stable`: while some transaction holds pending offsets for a
  partition, the coordinator answers `UNSTABLE_OFFSET_COMMIT` instead of the last stable offset.
  `fetch_stable_offsets` retries until the previous owner's transaction is committed or aborted,
  so a new owner never starts from an offset that a pending commit is about to move, and never
  restores a changelog that such a commit is about to extend.

A third request serves members of a streams group (KIP-1071), which aiokafka's group coordinator
does not know: `OffsetCommit` v9, whose generation field carries the member epoch (a streams group
refuses non-transactional commits of older versions). For such a member, the functions here take
the member itself (`StreamsGroupMembership`) where they take a group consumer otherwise: it answers
the same few questions aiokafka's coordinator does (`_group_coordinator`).

The request layouts follow Kafka's `TxnOffsetCommitRequest.json`, `OffsetFetchRequest.json` and
`OffsetCommitRequest.json` (flexible versions: compact strings and arrays, tagged fields).
"""

from __future__ import annotations

import asyncio
import collections
import logging
import time
import types
from collections.abc import Callable, Iterable
from typing import Any

import aiokafka.errors as Errors
from aiokafka import AIOKafkaConsumer
from aiokafka.client import ConnectionGroup, CoordinationType
from aiokafka.protocol.api import Request, RequestStruct, Response
from aiokafka.protocol.types import (
    Boolean,
    CompactArray,
    CompactString,
    Int16,
    Int32,
    Int64,
    Schema,
    TaggedFields,
)
from aiokafka.structs import TopicPartition

log = logging.getLogger(__name__)

GroupMetadata = tuple[int, str, str | None]
"""(generation id, member id, group instance id) of the consumer whose offsets a transaction commits."""

UNSTABLE_OFFSET_COMMIT = 88
_COORDINATOR_MOVED = {14, 15, 16}  # COORDINATOR_LOAD_IN_PROGRESS, _NOT_AVAILABLE, NOT_COORDINATOR
# ILLEGAL_GENERATION, UNKNOWN_MEMBER_ID, FENCED_INSTANCE_ID; a streams group's FENCED_MEMBER_EPOCH and
# STALE_MEMBER_EPOCH (its commits must carry the member's current epoch).
_FENCED_MEMBER = {22, 25, 82, 110, 113}


def _per_topic(*partition_fields: tuple[str, Any]) -> CompactArray:
    """The per-topic, per-partition array every one of these requests and responses carries."""
    return CompactArray(
        ("name", CompactString("utf-8")),
        ("partitions", CompactArray(*partition_fields, ("tags", TaggedFields))),
        ("tags", TaggedFields))


class MemberFencedError(Errors.KafkaError):
    """The group does not take this member's offsets: its generation is over, so its partitions may
    be another member's now. The transaction must be aborted."""

    retriable = False


class TxnOffsetCommitResponse_v3(Response):
    API_KEY = 28
    API_VERSION = 3
    SCHEMA = Schema(
        ("throttle_time_ms", Int32),
        ("topics", _per_topic(("partition_index", Int32), ("error_code", Int16))),
        ("tags", TaggedFields),
    )


class TxnOffsetCommitRequest_v3(RequestStruct):
    FLEXIBLE_VERSION = True
    API_KEY = 28
    API_VERSION = 3
    RESPONSE_TYPE = TxnOffsetCommitResponse_v3
    SCHEMA = Schema(
        ("transactional_id", CompactString("utf-8")),
        ("group_id", CompactString("utf-8")),
        ("producer_id", Int64),
        ("producer_epoch", Int16),
        ("generation_id", Int32),
        ("member_id", CompactString("utf-8")),
        ("group_instance_id", CompactString("utf-8")),
        ("topics", _per_topic(("partition_index", Int32), ("committed_offset", Int64),
                              ("committed_leader_epoch", Int32), ("committed_metadata", CompactString("utf-8")))),
        ("tags", TaggedFields),
    )


class GroupFencedTxnOffsetCommit(Request[TxnOffsetCommitRequest_v3]):
    API_KEY = 28

    def __init__(self, transactional_id: str, group_id: str, producer_id: int, producer_epoch: int,
                 group: GroupMetadata, offsets: dict[str, list[tuple[int, int, str]]]) -> None:
        self._fields = (transactional_id, group_id, producer_id, producer_epoch, *group)
        self._offsets = offsets

    def build(self, request_struct_class: type[TxnOffsetCommitRequest_v3]) -> TxnOffsetCommitRequest_v3:
        topics: list[Any] = [(topic, [(p, offset, -1, metadata, {}) for p, offset, metadata in parts], {})
                             for topic, parts in self._offsets.items()]
        return request_struct_class(*self._fields, topics, {})


class OffsetFetchResponse_v7(Response):
    API_KEY = 9
    API_VERSION = 7
    SCHEMA = Schema(
        ("throttle_time_ms", Int32),
        ("topics", _per_topic(("partition_index", Int32), ("committed_offset", Int64),
                              ("committed_leader_epoch", Int32), ("metadata", CompactString("utf-8")),
                              ("error_code", Int16))),
        ("error_code", Int16),
        ("tags", TaggedFields),
    )


class OffsetFetchRequest_v7(RequestStruct):
    FLEXIBLE_VERSION = True
    API_KEY = 9
    API_VERSION = 7
    RESPONSE_TYPE = OffsetFetchResponse_v7
    SCHEMA = Schema(
        ("group_id", CompactString("utf-8")),
        ("topics", CompactArray(
            ("name", CompactString("utf-8")),
            ("partition_indexes", CompactArray(Int32)),
            ("tags", TaggedFields))),
        ("require_stable", Boolean),
        ("tags", TaggedFields),
    )


class StableOffsetFetch(Request[OffsetFetchRequest_v7]):
    API_KEY = 9

    def __init__(self, group_id: str, partitions: dict[str, list[int]]) -> None:
        self._group_id = group_id
        self._partitions = partitions

    def build(self, request_struct_class: type[OffsetFetchRequest_v7]) -> OffsetFetchRequest_v7:
        topics: list[Any] = [(topic, sorted(parts), {}) for topic, parts in sorted(self._partitions.items())]
        return request_struct_class(self._group_id, topics, True, {})


class OffsetCommitResponse_v9(Response):
    API_KEY = 8
    API_VERSION = 9
    SCHEMA = Schema(
        ("throttle_time_ms", Int32),
        ("topics", _per_topic(("partition_index", Int32), ("error_code", Int16))),
        ("tags", TaggedFields),
    )


class OffsetCommitRequest_v9(RequestStruct):
    FLEXIBLE_VERSION = True
    API_KEY = 8
    API_VERSION = 9
    RESPONSE_TYPE = OffsetCommitResponse_v9
    SCHEMA = Schema(
        ("group_id", CompactString("utf-8")),
        ("generation_id_or_member_epoch", Int32),
        ("member_id", CompactString("utf-8")),
        ("group_instance_id", CompactString("utf-8")),
        ("topics", _per_topic(("partition_index", Int32), ("committed_offset", Int64),
                              ("committed_leader_epoch", Int32), ("committed_metadata", CompactString("utf-8")))),
        ("tags", TaggedFields),
    )


class MemberEpochOffsetCommit(Request[OffsetCommitRequest_v9]):
    API_KEY = 8

    def __init__(self, group_id: str, member_epoch: int, member_id: str,
                 offsets: dict[str, list[tuple[int, int, str]]]) -> None:
        self._fields = (group_id, member_epoch, member_id, None)
        self._offsets = offsets

    def build(self, request_struct_class: type[OffsetCommitRequest_v9]) -> OffsetCommitRequest_v9:
        topics: list[Any] = [(topic, [(p, offset, -1, metadata, {}) for p, offset, metadata in parts], {})
                             for topic, parts in self._offsets.items()]
        return request_struct_class(*self._fields, topics, {})


async def commit_member_offsets(member: Any, offsets: dict[TopicPartition, Any]) -> None:
    """Commit `offsets` (TopicPartition -> OffsetAndMetadata) outside a transaction, stamped with the
    streams group member's epoch (OffsetCommit v9). A refusal for a stale epoch or an unknown member
    raises `CommitFailedError` (the member's tasks may be another member's now); a moving coordinator
    is looked up again and the commit retried once."""
    by_topic: dict[str, list[tuple[int, int, str]]] = collections.defaultdict(list)
    for tp, offset in sorted(offsets.items()):
        by_topic[tp.topic].append((tp.partition, offset.offset, offset.metadata))
    for attempt in range(2):
        request = MemberEpochOffsetCommit(member.group_id, member.generation, member.member_id, dict(by_topic))
        response = await member._send_req(request)
        codes = {code for _, parts, _ in response.topics for _, code, _ in parts} - {0}
        if not codes:
            return
        if codes & _COORDINATOR_MOVED and attempt == 0:
            member.coordinator_dead()
            continue
        if codes & _FENCED_MEMBER:
            raise Errors.CommitFailedError(
                f"the group refused the offsets of member {member.member_id} (epoch {member.generation}): "
                f"{Errors.for_code(min(codes & _FENCED_MEMBER)).__name__}")
        raise Errors.for_code(min(codes))(f"committing the offsets of {sorted(by_topic)} failed")


def _group_coordinator(group: Any) -> Any:
    """What speaks for the group: aiokafka's coordinator of a group consumer, or the streams group member
    itself (it has the same `group_id`, `generation`, `member_id`, `ensure_coordinator_known()`,
    `_send_req()` and `coordinator_dead()`)."""
    return group._coordinator if isinstance(group, AIOKafkaConsumer) else group


def consumer_group_metadata(consumer: Any) -> GroupMetadata:
    """The generation (member epoch) and member id the consumer (or streams group member) holds now
    (what Java's `groupMetadata()` returns)."""
    coordinator = _group_coordinator(consumer)
    return coordinator.generation, coordinator.member_id, getattr(coordinator, "_group_instance_id", None)


def fence_offset_commits(producer: Any, group_metadata: Callable[[], GroupMetadata]) -> None:
    """Make this transactional producer commit offsets with TxnOffsetCommit v3, stamped with what
    `group_metadata()` returns when the request is sent: the membership under which the commit was
    decided (Java passes it to `sendOffsetsToTransaction`), not whatever the consumer holds by then,
    since a membership reset in between would stamp generation -1, which the coordinator does not
    check. A refusal for a stale generation or unknown member, and metadata without a membership,
    become an abortable transaction error (`MemberFencedError`): the producer stays usable once the
    transaction is aborted."""
    sender = producer._sender

    async def do_txn_offset_commit(self: Any, offsets: dict[TopicPartition, Any], group_id: str) -> None:
        if not offsets:
            return
        try:
            node_id = await self._find_coordinator(CoordinationType.GROUP, group_id)
        except Errors.GroupAuthorizationFailedError as exc:
            _abortable_error(self._txn_manager, exc)
            return
        await _GroupFencedHandler(self, offsets, group_id, group_metadata).do(node_id)

    sender._do_txn_offset_commit = types.MethodType(do_txn_offset_commit, sender)


class _GroupFencedHandler:
    """aiokafka's TxnOffsetCommitHandler with v3 requests (see the module docstring)."""

    def __init__(self, sender: Any, offsets: dict[TopicPartition, Any], group_id: str,
                 group_metadata: Callable[[], GroupMetadata]) -> None:
        self._sender = sender
        self._offsets = offsets
        self._group_id = group_id
        self._group_metadata = group_metadata
        self._backoff = sender._retry_backoff

    async def do(self, node_id: int) -> bool:
        txn = self._sender._txn_manager
        by_topic: dict[str, list[tuple[int, int, str]]] = collections.defaultdict(list)
        for tp, offset in sorted(self._offsets.items()):
            by_topic[tp.topic].append((tp.partition, offset.offset, offset.metadata))
        group = self._group_metadata()
        if group[0] < 0 or not group[1]:
            # The coordinator checks neither generation -1 nor an empty member id: such a request would
            # commit the offsets of a member the group has dropped. Refused here instead.
            _abortable_error(txn, MemberFencedError(
                f"this member is out of the group (generation {group[0]}); its offsets are not committed"))
            return True
        request = GroupFencedTxnOffsetCommit(txn.transactional_id, self._group_id, txn.producer_id,
                                             txn.producer_epoch, group, dict(by_topic))
        try:
            response = await self._sender.client.send(node_id, request, group=ConnectionGroup.COORDINATION)
        except Errors.KafkaError as exc:
            log.warning("could not send TxnOffsetCommit to node %s: %r", node_id, exc)
            self._sender._coordinator_dead(CoordinationType.GROUP)
            await asyncio.sleep(self._backoff)
            return False
        for topic, partitions, _ in response.topics:
            for partition, code, _ in partitions:
                tp = TopicPartition(topic, partition)
                if code == 0:
                    txn.offset_committed(tp, self._offsets[tp].offset, self._group_id)
                elif code in _COORDINATOR_MOVED or code == 7:  # 7: REQUEST_TIMED_OUT
                    self._sender._coordinator_dead(CoordinationType.GROUP)
                    await asyncio.sleep(self._backoff)
                    return False
                elif code == 3:  # UNKNOWN_TOPIC_OR_PARTITION: metadata not there yet
                    await asyncio.sleep(self._backoff)
                    return False
                elif code in _FENCED_MEMBER:
                    error = Errors.for_code(code)
                    _abortable_error(txn, MemberFencedError(
                        f"the group refused this member's offsets ({error.__name__}, generation {group[0]})"))
                    return True
                elif code == 47:  # INVALID_PRODUCER_EPOCH
                    raise Errors.ProducerFenced()
                else:
                    _abortable_error(txn, Errors.for_code(code)())
                    return True
        return True


def _abortable_error(txn: Any, exc: Exception) -> None:
    """Fail the transaction so that it can only be aborted. The error reaches the caller through
    `send_offsets_to_transaction` or `commit_transaction`; the transaction's end-waiter keeps it too
    and is replaced unread by the abort, so it is marked seen here (else asyncio reports it).

    aiokafka's `error_transaction` also forgets the partitions and the group already added to the
    transaction on the broker; its abort then takes the transaction for an empty one and ends it
    locally without an EndTxn(ABORT), so the broker keeps it open, the producer's next transaction
    continues it, and that one's commit publishes the refused work. They are put back, so that the
    abort reaches the broker (tests/integration/test_fenced_abort.py)."""
    added_partitions, added_group = set(txn._txn_partitions), txn._txn_consumer_group
    txn.error_transaction(exc)
    txn._txn_partitions.update(added_partitions)
    txn._txn_consumer_group = added_group
    txn.wait_for_transaction_end().exception()


async def fetch_stable_offsets(consumer: Any, partitions: Iterable[tuple[str, int]],
                               timeout_s: float) -> dict[tuple[str, int], int | None]:
    """The group's committed offsets for `partitions` (None: nothing committed), once no transaction
    holds pending offsets for any of them. Waits at most `timeout_s` (the transaction timeout, after
    which the coordinator aborts a pending transaction itself, plus a margin)."""
    found = await fetch_stable_commits(consumer, partitions, timeout_s)
    return {tp: offset for tp, (offset, _metadata) in found.items()}


async def fetch_stable_commits(consumer: Any, partitions: Iterable[tuple[str, int]],
                               timeout_s: float) -> dict[tuple[str, int], tuple[int | None, str]]:
    """`fetch_stable_offsets` with each offset's committed metadata ('' where there is none)."""
    coordinator = _group_coordinator(consumer)
    by_topic: dict[str, list[int]] = collections.defaultdict(list)
    for topic, partition in partitions:
        by_topic[topic].append(partition)
    if not by_topic:
        return {}
    deadline = time.monotonic() + timeout_s
    backoff = 0.02
    while True:
        await coordinator.ensure_coordinator_known()
        response = await coordinator._send_req(StableOffsetFetch(coordinator.group_id, dict(by_topic)))
        codes = {response.error_code}
        result: dict[tuple[str, int], tuple[int | None, str]] = {}
        for topic, parts, _ in response.topics:
            for partition, offset, _, metadata, code, _ in parts:
                codes.add(code)
                result[(topic, partition)] = (offset if offset >= 0 else None, metadata or "")
        codes.discard(0)
        if not codes:
            return result
        if codes - {UNSTABLE_OFFSET_COMMIT} - _COORDINATOR_MOVED:
            code = min(codes - {UNSTABLE_OFFSET_COMMIT} - _COORDINATOR_MOVED)
            raise Errors.for_code(code)(f"fetching the committed offsets of {sorted(by_topic)} failed")
        if codes & _COORDINATOR_MOVED:
            coordinator.coordinator_dead()
        if time.monotonic() > deadline:
            raise Errors.KafkaTimeoutError(
                f"offsets of {sorted(by_topic)} still pending in another member's transaction after {timeout_s:.0f} s")
        await asyncio.sleep(backoff)
        backoff = min(backoff * 2, 0.5)
