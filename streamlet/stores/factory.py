"""`Stores`: the public factory of store suppliers and builders, named as Kafka Streams' `Stores`.

Suppliers say where the bytes live (LevelDB or memory); builders add the serdes, logging and
caching. Window, session and versioned stores are built on the same layers (`streamlet.stores.window`,
`streamlet.stores.session`, `streamlet.stores.versioned`).
"""

from __future__ import annotations

import re
from datetime import timedelta
from typing import Any

from streamlet.durations import to_millis
from streamlet.errors import TopologyError
from streamlet.stores.keyvalue.api import KeyValueBytesStoreSupplier
from streamlet.stores.keyvalue.builders import (
    KeyValueStoreBuilder,
    TimestampedKeyValueStoreBuilder,
    TimestampedKeyValueStoreWithHeadersBuilder,
)
from streamlet.stores.leveldb.headers import LevelDBKeyValueHeadersBytesStoreSupplier
from streamlet.stores.leveldb.supplier import LevelDBKeyValueBytesStoreSupplier
from streamlet.stores.leveldb.versioned import LevelDBVersionedBytesStoreSupplier
from streamlet.stores.memory.supplier import InMemoryKeyValueBytesStoreSupplier
from streamlet.stores.memory.versioned import InMemoryVersionedBytesStoreSupplier
from streamlet.stores.session.api import SessionBytesStoreSupplier
from streamlet.stores.session.builders import SessionStoreBuilder, SessionStoreWithHeadersBuilder
from streamlet.stores.session.headers import SessionHeadersBytesStoreSupplier
from streamlet.stores.versioned.api import VersionedBytesStoreSupplier
from streamlet.stores.versioned.builders import VersionedKeyValueStoreBuilder
from streamlet.stores.versioned.segmented import default_segment_interval_ms
from streamlet.stores.window.api import WindowBytesStoreSupplier
from streamlet.stores.window.builders import (
    TimestampedWindowStoreBuilder,
    TimestampedWindowStoreWithHeadersBuilder,
    WindowStoreBuilder,
)
from streamlet.stores.window.headers import LevelDBWindowHeadersBytesStoreSupplier
from streamlet.stores.window.suppliers import InMemoryWindowBytesStoreSupplier, LevelDBWindowBytesStoreSupplier

_LEGAL_NAME = re.compile(r"[a-zA-Z0-9._-]{1,249}")


def validate_store_name(name: str) -> str:
    """A store name becomes a directory and part of a topic name: Kafka's topic-name rules apply."""
    if not isinstance(name, str) or not _LEGAL_NAME.fullmatch(name) or name in (".", ".."):
        raise TopologyError(
            f"invalid state store name {name!r}: use 1-249 characters among ASCII letters, digits, "
            f"'.', '_' and '-'"
        )
    return name


def _window_shape(name: str, retention: timedelta | int, window_size: timedelta | int) -> tuple[str, int, int]:
    """Kafka Streams' checks on a window store's retention and window size."""
    retention_ms, size_ms = to_millis(retention), to_millis(window_size)
    if retention_ms < 0:
        raise TopologyError(f"the retention period of window store {name!r} cannot be negative, got {retention_ms}")
    if size_ms < 0:
        raise TopologyError(f"the window size of window store {name!r} cannot be negative, got {size_ms}")
    if size_ms > retention_ms:
        raise TopologyError(f"the retention period of window store {name!r} must be no smaller than its window "
                            f"size; got retention={retention_ms} and window size={size_ms}")
    return validate_store_name(name), retention_ms, size_ms


def _session_retention(name: str, retention: timedelta | int) -> int:
    retention_ms = to_millis(retention)
    if retention_ms < 0:
        raise TopologyError(f"the retention period of session store {name!r} cannot be negative, got {retention_ms}")
    return retention_ms


def _versioned_shape(name: str, history_retention: timedelta | int,
                     segment_interval: timedelta | int | None) -> tuple[str, int, int]:
    """Kafka Streams' checks: a history retention of at least 0, a segment interval of at least 1 ms."""
    history_ms = to_millis(history_retention)
    if history_ms < 0:
        raise TopologyError(f"the history retention of versioned store {name!r} cannot be negative, got {history_ms}")
    segment_ms = default_segment_interval_ms(history_ms) if segment_interval is None else to_millis(segment_interval)
    if segment_ms < 1:
        raise TopologyError(f"the segment interval of versioned store {name!r} must be positive, got {segment_ms}")
    return validate_store_name(name), history_ms, segment_ms


class Stores:
    """Factories for store suppliers and builders, named as Kafka Streams' `Stores`: pick a supplier (LevelDB or
    in-memory; key-value, window, session or versioned), then pass it to `Materialized(supplier)` for the DSL,
    or wrap it in a builder with serdes for `Topology.add_state_store`."""

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
        """A key-value store held in memory; rebuilt from its changelog when its task starts."""
        return InMemoryKeyValueBytesStoreSupplier(validate_store_name(name))

    @staticmethod
    def persistent_versioned_key_value_store(name: str, history_retention: timedelta | int,
                                             segment_interval: timedelta | int | None = None
                                             ) -> VersionedBytesStoreSupplier:
        """A LevelDB versioned store keeping each key's older versions for `history_retention` (timedelta or
        ms) of stream time, in segments of `segment_interval` (Kafka Streams' default from the retention).
        Reads as of an older time find only a latest version that already applied; writes older than
        that (the grace period) are refused. Use it with `versioned_key_value_store_builder`, or in
        `Materialized` for a versioned table. Changing either setting needs the local state wiped."""
        return LevelDBVersionedBytesStoreSupplier(*_versioned_shape(name, history_retention, segment_interval))

    @staticmethod
    def in_memory_versioned_key_value_store(name: str, history_retention: timedelta | int,
                                            segment_interval: timedelta | int | None = None
                                            ) -> VersionedBytesStoreSupplier:
        """The versioned store held in memory (Kafka Streams has only the persistent one): the same rules and
        answers, rebuilt from its changelog when its task starts."""
        return InMemoryVersionedBytesStoreSupplier(*_versioned_shape(name, history_retention, segment_interval))

    @staticmethod
    def versioned_key_value_store_builder(
        supplier: VersionedBytesStoreSupplier, key_serde: Any = None, value_serde: Any = None
    ) -> VersionedKeyValueStoreBuilder:
        """A builder of versioned stores (`VersionedKeyValueStore`) with these serdes (never cached)."""
        return VersionedKeyValueStoreBuilder(supplier, key_serde, value_serde)

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
        """A builder of key-value stores whose values carry a timestamp (`ValueAndTimestamp`), as the DSL's
        aggregations use."""
        return TimestampedKeyValueStoreBuilder(supplier, key_serde, value_serde)

    @staticmethod
    def persistent_timestamped_key_value_store_with_headers(name: str) -> KeyValueBytesStoreSupplier:
        """A LevelDB store meant for `timestamped_key_value_store_with_headers_builder`."""
        return LevelDBKeyValueHeadersBytesStoreSupplier(validate_store_name(name))

    @staticmethod
    def timestamped_key_value_store_with_headers_builder(
        supplier: KeyValueBytesStoreSupplier, key_serde: Any = None, value_serde: Any = None
    ) -> TimestampedKeyValueStoreWithHeadersBuilder:
        """A builder of key-value stores whose values carry the timestamp and the headers of the record that wrote
        them (`ValueTimestampHeaders`); the changelog records carry those headers. Any key-value supplier
        (LevelDB or in-memory) will do."""
        return TimestampedKeyValueStoreWithHeadersBuilder(supplier, key_serde, value_serde)

    @staticmethod
    def persistent_window_store(name: str, retention: timedelta | int, window_size: timedelta | int,
                                retain_duplicates: bool = False) -> WindowBytesStoreSupplier:
        """A LevelDB window store keeping windows for `retention` (timedelta or ms) of stream time."""
        return LevelDBWindowBytesStoreSupplier(*_window_shape(name, retention, window_size), retain_duplicates)

    @staticmethod
    def persistent_timestamped_window_store(name: str, retention: timedelta | int, window_size: timedelta | int,
                                            retain_duplicates: bool = False) -> WindowBytesStoreSupplier:
        """The same LevelDB window store, meant for `timestamped_window_store_builder`."""
        return Stores.persistent_window_store(name, retention, window_size, retain_duplicates)

    @staticmethod
    def persistent_timestamped_window_store_with_headers(
        name: str, retention: timedelta | int, window_size: timedelta | int, retain_duplicates: bool = False
    ) -> WindowBytesStoreSupplier:
        """A LevelDB window store meant for `timestamped_window_store_with_headers_builder`."""
        return LevelDBWindowHeadersBytesStoreSupplier(*_window_shape(name, retention, window_size), retain_duplicates)

    @staticmethod
    def timestamped_window_store_with_headers_builder(
        supplier: WindowBytesStoreSupplier, key_serde: Any = None, value_serde: Any = None
    ) -> TimestampedWindowStoreWithHeadersBuilder:
        """A builder of window stores whose values carry the timestamp and the headers of the record that wrote
        them (`ValueTimestampHeaders`); the changelog records carry those headers. Any window supplier (LevelDB
        or in-memory) will do."""
        return TimestampedWindowStoreWithHeadersBuilder(supplier, key_serde, value_serde)

    @staticmethod
    def in_memory_window_store(name: str, retention: timedelta | int, window_size: timedelta | int,
                               retain_duplicates: bool = False) -> WindowBytesStoreSupplier:
        """A window store held in memory, keeping windows for `retention`; `window_size` is the windows' size."""
        return InMemoryWindowBytesStoreSupplier(*_window_shape(name, retention, window_size), retain_duplicates)

    @staticmethod
    def persistent_session_store(name: str, retention: timedelta | int) -> SessionBytesStoreSupplier:
        """A LevelDB session store keeping sessions for `retention` (timedelta or ms) after they end."""
        return SessionBytesStoreSupplier(LevelDBKeyValueBytesStoreSupplier(validate_store_name(name)),
                                         _session_retention(name, retention))

    @staticmethod
    def in_memory_session_store(name: str, retention: timedelta | int) -> SessionBytesStoreSupplier:
        """A session store held in memory, keeping sessions for `retention`; rebuilt from its changelog when its
        task starts."""
        return SessionBytesStoreSupplier(InMemoryKeyValueBytesStoreSupplier(validate_store_name(name)),
                                         _session_retention(name, retention))

    @staticmethod
    def persistent_session_store_with_headers(name: str, retention: timedelta | int) -> SessionBytesStoreSupplier:
        """A LevelDB session store meant for `session_store_with_headers_builder`."""
        return SessionHeadersBytesStoreSupplier(LevelDBKeyValueBytesStoreSupplier(validate_store_name(name)),
                                                _session_retention(name, retention))

    @staticmethod
    def session_store_with_headers_builder(
        supplier: SessionBytesStoreSupplier, key_serde: Any = None, value_serde: Any = None
    ) -> SessionStoreWithHeadersBuilder:
        """A builder of session stores whose aggregates carry the headers of the record that wrote them
        (`AggregationWithHeaders`); the changelog records carry those headers. Any session supplier (LevelDB or
        in-memory) will do."""
        return SessionStoreWithHeadersBuilder(supplier, key_serde, value_serde)

    @staticmethod
    def session_store_builder(
        supplier: SessionBytesStoreSupplier, key_serde: Any = None, value_serde: Any = None
    ) -> SessionStoreBuilder:
        """A builder of session stores with these serdes."""
        return SessionStoreBuilder(supplier, key_serde, value_serde)

    @staticmethod
    def window_store_builder(
        supplier: WindowBytesStoreSupplier, key_serde: Any = None, value_serde: Any = None
    ) -> WindowStoreBuilder:
        """A builder of window stores with these serdes."""
        return WindowStoreBuilder(supplier, key_serde, value_serde)

    @staticmethod
    def timestamped_window_store_builder(
        supplier: WindowBytesStoreSupplier, key_serde: Any = None, value_serde: Any = None
    ) -> TimestampedWindowStoreBuilder:
        """A builder of window stores whose values carry a timestamp (`ValueAndTimestamp`)."""
        return TimestampedWindowStoreBuilder(supplier, key_serde, value_serde)
