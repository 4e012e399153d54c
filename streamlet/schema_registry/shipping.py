"""Schema'd serdes in many processes: the Spark engine pickles its topology, serdes included, to every
Python worker for every micro-batch, and those workers (like several instances of an application)
register the same schemas at the same moment.

A configured serde holds a registry client (HTTP connections, locks) and confluent-kafka's serializers,
which neither pickle nor belong in another process. A serde's configuration state is pickled without them,
with the settings it was configured with; the copy configures itself again where it is unpickled, from
the process's registry client (one per registry, caching schemas and ids: `client`). Every copy of one
serde that reaches a process (one per batch on a Spark worker) takes the serializers the first copy made
there: a serde is configured once per worker process, not once per batch, and its caches carry over.
"""

from __future__ import annotations

import threading
import uuid
from collections.abc import Mapping
from typing import Any

from confluent_kafka.schema_registry.avro import AvroSerializer
from confluent_kafka.schema_registry.error import SchemaRegistryError
from confluent_kafka.serialization import SerializationContext

from streamlet.serdes import is_serde_setting

_RUNTIME = ("serializer", "deserializer")
"""The attributes made by configuring, left out of a pickle and shared by the copies in one process."""

_lock = threading.Lock()
_made: dict[tuple[str, tuple[tuple[str, str], ...], bool], dict[str, Any]] = {}
"""(serde token, settings, is_key) -> the runtime attributes the first copy in this process made."""


def _settings(config: Mapping[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in config.items() if is_serde_setting(key)}


def _key(token: str, settings: Mapping[str, Any], is_key: bool) -> tuple[str, tuple[tuple[str, str], ...], bool]:
    return token, tuple(sorted((k, repr(v)) for k, v in settings.items())), is_key


class ShipsConfiguration:
    """Mixin for a serde's configuration state that may be pickled to another process (see the module).

    The class calls `reuse(config, is_key)` first in its `configure` (True: a copy of the same serde made
    the runtime attributes in this process already, and they are set), `kept(config, is_key)` last, and
    keeps its runtime attributes in `serializer` and `deserializer`; its `configure(config, is_key, by_hand)`
    is what an unpickled copy calls.
    """

    token: str
    """Names the serde; its copies carry the same token."""
    settings: dict[str, Any] | None = None
    """The serde settings (`schema.registry.*`, ...) it was last configured with; None before."""
    shipped: bool = False
    """True for a copy made by unpickling."""
    is_key: bool
    by_hand: bool

    def init_shipping(self) -> None:
        self.token = uuid.uuid4().hex
        self.settings = None
        self.shipped = False

    def configure(self, config: Mapping[str, Any], is_key: bool, by_hand: bool) -> None:
        raise NotImplementedError

    def reuse(self, config: Mapping[str, Any], is_key: bool) -> bool:
        if not self.shipped:
            return False
        with _lock:
            made = _made.get(_key(self.token, _settings(config), is_key))
        if made is None:
            return False
        for name, value in made.items():
            setattr(self, name, value)
        return True

    def kept(self, config: Mapping[str, Any], is_key: bool) -> None:
        self.settings = _settings(config)
        if self.shipped:
            with _lock:
                _made.setdefault(_key(self.token, self.settings, is_key),
                                 {name: getattr(self, name) for name in _RUNTIME})

    def __getstate__(self) -> dict[str, Any]:
        state = {name: value for name, value in self.__dict__.items() if name not in _RUNTIME}
        state["shipped"] = True
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        for name in _RUNTIME:
            setattr(self, name, None)
        if self.settings is not None:
            self.configure(self.settings, self.is_key, self.by_hand)


class ConcurrentAvroSerializer(AvroSerializer):
    """confluent-kafka's `AvroSerializer`, tolerating another process's registration of the same subject.

    Two processes writing the first record of a new subject at once both register its schema. Confluent's
    registry answers both with the id; Apicurio's answers the second with HTTP 409 ("artifact already
    exists"), found on the Spark engine with two workers writing one changelog topic. On a 409 the record
    is serialized once more: the subject exists by then, and registering the same schema again gives its
    id. A schema the registry refuses as incompatible (also a 409) is refused again, and that error stands.
    """

    def __call__(self, obj: object, ctx: SerializationContext | None = None) -> bytes | None:
        try:
            return super().__call__(obj, ctx)
        except SchemaRegistryError as exc:
            if exc.http_status_code != 409:
                raise
            return super().__call__(obj, ctx)
