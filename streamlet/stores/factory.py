"""`Stores`: the public factory of store suppliers and builders, named as Kafka Streams' `Stores`.

Suppliers say where the bytes live (LevelDB or memory); builders add the serdes, logging and
caching. Window, session and versioned stores will join here, on the same layers.
"""

from __future__ import annotations

import re
from typing import Any

from streamlet.errors import TopologyError
from streamlet.stores.api import KeyValueBytesStoreSupplier
from streamlet.stores.builders import KeyValueStoreBuilder, TimestampedKeyValueStoreBuilder
from streamlet.stores.leveldb.supplier import LevelDBKeyValueBytesStoreSupplier
from streamlet.stores.memory.supplier import InMemoryKeyValueBytesStoreSupplier

_LEGAL_NAME = re.compile(r"[a-zA-Z0-9._-]{1,249}")


def validate_store_name(name: str) -> str:
    """A store name becomes a directory and part of a topic name: Kafka's topic-name rules apply."""
    if not isinstance(name, str) or not _LEGAL_NAME.fullmatch(name) or name in (".", ".."):
        raise TopologyError(
            f"invalid state store name {name!r}: use 1-249 characters among ASCII letters, digits, "
            f"'.', '_' and '-'"
        )
    return name


class Stores:
    @staticmethod
    def persistent_key_value_store(name: str) -> KeyValueBytesStoreSupplier:
        """A LevelDB store in `<state.dir>/<application.id>/<task>/<name>`."""
        return LevelDBKeyValueBytesStoreSupplier(validate_store_name(name))

    @staticmethod
    def persistent_timestamped_key_value_store(name: str) -> KeyValueBytesStoreSupplier:
        """A LevelDB store meant for `timestamped_key_value_store_builder` (the builder picks the format)."""
        return LevelDBKeyValueBytesStoreSupplier(validate_store_name(name), timestamped=True)

    @staticmethod
    def in_memory_key_value_store(name: str) -> KeyValueBytesStoreSupplier:
        return InMemoryKeyValueBytesStoreSupplier(validate_store_name(name))

    @staticmethod
    def key_value_store_builder(
        supplier: KeyValueBytesStoreSupplier, key_serde: Any = None, value_serde: Any = None
    ) -> KeyValueStoreBuilder:
        """Serdes: `Serde` instances, classes, names, or None for the configured defaults."""
        return KeyValueStoreBuilder(supplier, key_serde, value_serde)

    @staticmethod
    def timestamped_key_value_store_builder(
        supplier: KeyValueBytesStoreSupplier, key_serde: Any = None, value_serde: Any = None
    ) -> TimestampedKeyValueStoreBuilder:
        return TimestampedKeyValueStoreBuilder(supplier, key_serde, value_serde)
