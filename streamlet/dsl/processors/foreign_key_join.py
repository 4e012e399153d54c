"""The processors of the foreign-key table join (KIP-213), one per step of Kafka Streams' algorithm.

Left table L (key K, value V), right table R (key KO), `fk = extractor(V)`:

1. `SubscriptionSend` (after L): each change of a left row subscribes the row to its new foreign key
   and, if the key changed, unsubscribes it from the old one — records keyed by the foreign key,
   carrying an instruction, the primary key, its partition and a hash of the new left value.
2. (subscription topic, partitioned like R) `SubscriptionReceive` keeps the subscriptions in a store
   keyed by (fk, pk) and hands each on; `SubscriptionJoin` looks the foreign key up in R and answers
   according to the instruction.
3. `ForeignTableJoin` (after R): a change of a right row answers every subscription to its key (a
   prefix scan of the store).
4. (response topic, partitioned like L: back to the subscriber's partition) `ResponseJoin` drops an
   answer whose hash is not the hash of the left row's current value (the row changed since; a newer
   answer is on its way), else emits `joiner(left, right)` — or a tombstone.

The store holds serialized subscriptions (their format is fk_wire's) in a timestamped key-value
store of bytes, as Kafka Streams' subscription store does (change-logged, never cached).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from streamlet.dsl.change import Change
from streamlet.dsl.processors.fk_wire import (
    DELETE_KEY_AND_PROPAGATE,
    DELETE_KEY_NO_PROPAGATE,
    PROPAGATE_NULL_IF_NO_FK_VAL_AVAILABLE,
    PROPAGATE_ONLY_IF_FK_VAL_AVAILABLE,
    CombinedKey,
    Hash,
    SubscriptionResponseWrapper,
    SubscriptionWrapper,
    combined_key_prefix,
    decode_subscription,
    encode_subscription,
    murmur3_hash128,
    split_combined_key,
)
from streamlet.dsl.processors.forwarding import log_skipped, timestamped_store
from streamlet.dsl.processors.value_getters import ValueGetter, ValueGetterSupplier
from streamlet.processor import Processor, ProcessorContext
from streamlet.record import Record
from streamlet.serdes import Serde
from streamlet.stores.api import ValueAndTimestamp
from streamlet.stores.keyvalue.api import TimestampedKeyValueStore

ValueJoiner = Callable[[Any, Any], Any]


def _serde(given: Serde[Any] | None, default: Any, what: str) -> Serde[Any]:
    serde = given if given is not None else default
    if serde is None:
        raise RuntimeError(f"the foreign-key join needs a {what} serde: give one or configure the default")
    return serde() if isinstance(serde, type) else serde


class SubscriptionSendSupplier:
    """Step 1's processor. `extractor(value)` gives a row's foreign key, or `extractor(key, value)` when
    `sees_key` (KIP-1104)."""

    def __init__(self, extractor: Callable[..., Any], subscription_topic: str, foreign_key_serde: Serde[Any] | None,
                 value_serde: Serde[Any] | None, left: bool, sees_key: bool = False) -> None:
        self.extractor = extractor
        self.sees_key = sees_key
        self.topic = subscription_topic
        self.foreign_key_serde = foreign_key_serde
        self.value_serde = value_serde
        self.left = left
        self.versioned_semantics = False  # set when the left table is versioned

    def __call__(self) -> Processor:
        return SubscriptionSend(self)


class SubscriptionSend(Processor):
    """Step 1: a left row's change -> (un)subscription records keyed by foreign key."""

    def __init__(self, spec: SubscriptionSendSupplier) -> None:
        self._spec = spec
        self._hash: Hash | None = None

    def init(self, context: ProcessorContext) -> None:
        super().init(context)
        self._fk_ser = _serde(self._spec.foreign_key_serde, context.key_serde, "key").serializer
        self._value_ser = _serde(self._spec.value_serde, context.value_serde, "value").serializer
        self._fk_topic = f"{context.application_id}-{self._spec.topic}-fk"
        self._vh_topic = f"{context.application_id}-{self._spec.topic}-vh"
        self._forward = context.forwarder()

    def _same_key(self, a: Any, b: Any) -> bool:
        return self._fk_ser.serialize(self._fk_topic, a) == self._fk_ser.serialize(self._fk_topic, b)

    def process(self, record: Record) -> None:
        change: Change = record.value
        self._hash = None
        if self._spec.versioned_semantics and not change.is_latest:
            return  # Kafka Streams: an out-of-order update of a versioned table is skipped (KIP-914)
        new, old = change.new_value, change.old_value
        hashed = False
        extract = self._spec.extractor
        if self._spec.sees_key:
            key_value_extract, key = extract, record.key

            def extract(value: Any) -> Any:
                return key_value_extract(key, value)

        def send(foreign_key: Any, instruction: int) -> None:
            nonlocal hashed
            if not hashed:
                self._hash = None if new is None else murmur3_hash128(
                    self._value_ser.serialize(self._vh_topic, new) or b"")
                hashed = True
            meta = self.context.record_metadata()
            wrapper = SubscriptionWrapper(self._hash, instruction, record.key, -1 if meta is None else meta.partition)
            self._forward(record.with_key(foreign_key).with_value(wrapper))

        if self._spec.left:
            if old is not None:
                old_fk = extract(old)
                new_fk = None if new is None else extract(new)
                if old_fk is not None and not self._same_key(new_fk, old_fk):
                    send(old_fk, DELETE_KEY_NO_PROPAGATE)
                send(new_fk, PROPAGATE_NULL_IF_NO_FK_VAL_AVAILABLE)
            elif new is not None:
                send(extract(new), PROPAGATE_NULL_IF_NO_FK_VAL_AVAILABLE)
            return
        if old is not None:
            old_fk = extract(old)
            new_fk = None if new is None else extract(new)
            if old_fk is None and new_fk is None:
                log_skipped(self.context, "null foreign key")
            elif old_fk is None:
                send(new_fk, PROPAGATE_ONLY_IF_FK_VAL_AVAILABLE)
            elif new_fk is None:
                send(old_fk, DELETE_KEY_AND_PROPAGATE)
            elif not self._same_key(new_fk, old_fk):
                send(old_fk, DELETE_KEY_NO_PROPAGATE)
                send(new_fk, PROPAGATE_NULL_IF_NO_FK_VAL_AVAILABLE)
            else:
                send(new_fk, PROPAGATE_ONLY_IF_FK_VAL_AVAILABLE)
        elif new is not None:
            new_fk = extract(new)
            if new_fk is None:
                log_skipped(self.context, "null foreign key")
            else:
                send(new_fk, PROPAGATE_ONLY_IF_FK_VAL_AVAILABLE)


class _CombinedKeys:
    """Kafka Streams' CombinedKeySchema: (fk, pk) <-> store key bytes."""

    def __init__(self, context: ProcessorContext, topic: str, fk_serde: Serde[Any] | None,
                 pk_serde: Serde[Any] | None) -> None:
        self._fk = _serde(fk_serde, context.key_serde, "key")
        self._pk = _serde(pk_serde, context.key_serde, "key")
        self._fk_topic = f"{context.application_id}-{topic}-fk"
        self._pk_topic = f"{context.application_id}-{topic}-pk"

    def prefix(self, foreign_key: Any) -> bytes:
        return combined_key_prefix(self._fk.serializer.serialize(self._fk_topic, foreign_key) or b"")

    def to_bytes(self, foreign_key: Any, primary_key: Any) -> bytes:
        return self.prefix(foreign_key) + (self._pk.serializer.serialize(self._pk_topic, primary_key) or b"")

    def primary_key(self, data: bytes) -> Any:
        return self._pk.deserializer.deserialize(self._pk_topic, split_combined_key(data)[1])

    def encode(self, wrapper: SubscriptionWrapper) -> bytes:
        return encode_subscription(wrapper, self._pk.serializer.serialize(self._pk_topic, wrapper.primary_key) or b"")

    def decode(self, data: bytes) -> SubscriptionWrapper:
        h, instruction, pk, partition, version = decode_subscription(data)
        return SubscriptionWrapper(h, instruction, self._pk.deserializer.deserialize(self._pk_topic, pk),
                                   -1 if partition is None else partition, version)


class _SubscriptionStoreUser:
    """What the two processors over the subscription store share: the store and the key format."""

    versioned_semantics = False  # (the foreign table's side) set when the right table is versioned

    def __init__(self, store_name: str, subscription_topic: str, fk_serde: Serde[Any] | None,
                 pk_serde: Serde[Any] | None) -> None:
        self.store_name = store_name
        self.topic = subscription_topic
        self.fk_serde = fk_serde
        self.pk_serde = pk_serde


class SubscriptionReceiveSupplier(_SubscriptionStoreUser):
    def __call__(self) -> Processor:
        return SubscriptionReceive(self)


class _OverSubscriptions(Processor):
    def __init__(self, spec: _SubscriptionStoreUser) -> None:
        self._spec = spec

    def init(self, context: ProcessorContext) -> None:
        super().init(context)
        self._store: TimestampedKeyValueStore = timestamped_store(context, self._spec.store_name)
        self._keys = _CombinedKeys(context, self._spec.topic, self._spec.fk_serde, self._spec.pk_serde)
        self._forward = context.forwarder()


class SubscriptionReceive(_OverSubscriptions):
    """Step 2a: keep (or drop) the subscription in the store; pass it on with the one it replaces."""


    def process(self, record: Record) -> None:
        wrapper: SubscriptionWrapper = record.value
        if record.key is None and wrapper.instruction != PROPAGATE_NULL_IF_NO_FK_VAL_AVAILABLE:
            log_skipped(self.context, "null foreign key")
            return
        new = ValueAndTimestamp(wrapper, record.timestamp)
        old = None
        if record.key is not None:
            key = self._keys.to_bytes(record.key, wrapper.primary_key)
            old = self._store.get(key)
            if wrapper.instruction in (DELETE_KEY_AND_PROPAGATE, DELETE_KEY_NO_PROPAGATE):
                self._store.delete(key)
            else:
                self._store.put(key, ValueAndTimestamp(self._keys.encode(wrapper), record.timestamp))
        self._forward(record.with_key(CombinedKey(record.key, wrapper.primary_key)).with_value(Change(new, old)))


class SubscriptionJoinSupplier:
    def __init__(self, foreign: ValueGetterSupplier) -> None:
        self.foreign = foreign

    def __call__(self) -> Processor:
        return SubscriptionJoin(self.foreign())


class SubscriptionJoin(Processor):
    """Step 2b: answer a subscription with the foreign row, as its instruction says."""

    def __init__(self, foreign: ValueGetter) -> None:
        self._foreign = foreign

    def init(self, context: ProcessorContext) -> None:
        super().init(context)
        self._foreign.init(context)
        self._forward = context.forwarder()

    def process(self, record: Record) -> None:
        key: CombinedKey = record.key
        subscription: ValueAndTimestamp = record.value.new_value
        wrapper: SubscriptionWrapper = subscription.value
        found = None if key.foreign_key is None else self._foreign.get(key.foreign_key)
        timestamp = subscription.timestamp if found is None else max(subscription.timestamp, found.timestamp)
        instruction = wrapper.instruction
        if instruction == DELETE_KEY_NO_PROPAGATE:
            return
        if instruction == PROPAGATE_ONLY_IF_FK_VAL_AVAILABLE and found is None:
            return
        value = None if instruction == DELETE_KEY_AND_PROPAGATE or found is None else found.value
        response = SubscriptionResponseWrapper(wrapper.hash, value, wrapper.primary_partition)
        self._forward(Record(key.primary_key, response, timestamp, record.headers))


class ForeignTableJoinSupplier(_SubscriptionStoreUser):
    def __call__(self) -> Processor:
        return ForeignTableJoin(self)


class ForeignTableJoin(_OverSubscriptions):
    """Step 3: a right row's change answers every subscription to its key (in primary-key byte order)."""


    def process(self, record: Record) -> None:
        if record.key is None:
            log_skipped(self.context, "null key")
            return
        if self._spec.versioned_semantics and not record.value.is_latest:
            return  # Kafka Streams: an out-of-order update of a versioned table is skipped (KIP-914)
        prefix = self._keys.prefix(record.key)
        new_value = record.value.new_value
        matches = []
        with self._store.range(prefix, None) as entries:
            for entry in entries:
                if not entry.key.startswith(prefix):
                    break
                matches.append(entry)
        for entry in matches:
            wrapper = self._keys.decode(entry.value.value)
            response = SubscriptionResponseWrapper(wrapper.hash, new_value, wrapper.primary_partition)
            self._forward(record.with_key(self._keys.primary_key(entry.key)).with_value(response))


class ResponseJoinSupplier:
    def __init__(self, primary: ValueGetterSupplier, value_serde: Serde[Any] | None, subscription_topic: str,
                 joiner: ValueJoiner, left: bool) -> None:
        self.primary = primary
        self.value_serde = value_serde
        self.topic = subscription_topic
        self.joiner = joiner
        self.left = left

    def __call__(self) -> Processor:
        return ResponseJoin(self, self.primary())


class ResponseJoin(Processor):
    """Step 4: join an answer with the left row's current value, unless the answer is stale."""

    def __init__(self, spec: ResponseJoinSupplier, primary: ValueGetter) -> None:
        self._spec = spec
        self._primary = primary

    def init(self, context: ProcessorContext) -> None:
        super().init(context)
        self._primary.init(context)
        self._value_ser = _serde(self._spec.value_serde, context.value_serde, "value").serializer
        self._vh_topic = f"{context.application_id}-{self._spec.topic}-vh"
        self._forward = context.forwarder()

    def process(self, record: Record) -> None:
        response: SubscriptionResponseWrapper = record.value
        current = self._primary.get(record.key)
        current_hash = None if current is None else murmur3_hash128(
            self._value_ser.serialize(self._vh_topic, current.value) or b"")
        if response.hash != current_hash:
            return  # stale: the left row changed after this answer was asked for
        if response.foreign_value is None and (not self._spec.left or current is None):
            result = None
        else:
            result = self._spec.joiner(None if current is None else current.value, response.foreign_value)
        self._forward(record.with_value(result))
