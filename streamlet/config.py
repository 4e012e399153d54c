"""`StreamsConfig`: Kafka Streams' configuration keys, dotted or snake_case, with its defaults.

Keys are stored in their dotted form so that a config printed or logged reads like a Java one.
Unknown keys are kept (they may be client settings passed through), but a known key with a bad value
fails fast, at construction, with the key's name.
"""

from __future__ import annotations

import importlib
import tempfile
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

from streamlet.dsl_store_settings import check_settings
from streamlet.errors import ConfigError
from streamlet.offset_reset import AutoOffsetReset
from streamlet.redaction import redact
from streamlet.serdes import Serde, resolve_serde

AT_LEAST_ONCE = "at_least_once"
OUTER_JOIN_EMIT_INTERVAL_MS = "__emit.interval.ms.kstreams.outer.join.spurious.results.fix__"
"""Kafka Streams' internal setting: how often (wall-clock ms) a left/outer stream join looks for late results."""
WINDOWED_AGGREGATION_EMIT_INTERVAL_MS = "__emit.interval.ms.kstreams.windowed.aggregation__"
"""Kafka Streams' internal setting: how often (wall-clock ms) an `on_window_close` aggregation emits."""
CACHE_ENTRY_OVERHEAD_BYTES = "__statestore.cache.entry.overhead.bytes__"
"""streamlet's internal setting: the bytes a record cache counts per entry for its Python objects beyond Kafka
Streams' estimate (default: `stores.cache.PYTHON_ENTRY_BYTES`, plus the key again); the TopologyTestDriver sets 0,
counting entries as Kafka Streams' driver does."""
EXACTLY_ONCE_V2 = "exactly_once_v2"
RETRY_BACKOFF = "schema.registry.retry.backoff.ms"
RETRY_BACKOFF_MAX = "schema.registry.retry.backoff.max.ms"
CLASSIC_GROUP = "classic"
STREAMS_GROUP = "streams"

DEFAULTS: dict[str, Any] = {
    "application.id": None,
    "bootstrap.servers": "127.0.0.1:9092",
    "default.key.serde": None,
    "default.value.serde": None,
    "default.timestamp.extractor": None,
    # Exception handlers (actors/error_handlers.py): None is the default handler (log_and_fail, fail); the
    # 4.x names win over the deprecated default.-prefixed ones, as in Kafka Streams.
    "deserialization.exception.handler": None,
    "default.deserialization.exception.handler": None,
    "processing.exception.handler": None,
    "processing.exception.handler.global.enabled": False,
    "production.exception.handler": None,
    "default.production.exception.handler": None,
    "errors.dead.letter.queue.topic.name": None,  # no dead-letter queue (<application.id>-dlq for dead_letter)
    "processing.guarantee": AT_LEAST_ONCE,
    "commit.interval.ms": None,  # 30000 under at_least_once, 100 under exactly_once_v2
    "statestore.cache.max.bytes": 10 * 1024 * 1024,
    "statestore.uncommitted.max.bytes": 64 * 1024 * 1024,
    "state.dir": None,  # resolved to <tmp>/streamlet, as Kafka Streams uses <tmp>/kafka-streams
    "num.standby.replicas": 0,
    "num.stream.threads": 1,
    "replication.factor": -1,
    "auto.offset.reset": "earliest",
    "max.poll.records": 1000,
    "poll.ms": 100,
    "session.timeout.ms": 45000,
    "heartbeat.interval.ms": 3000,
    "max.task.idle.ms": 0,
    # A partition whose task holds this many records not yet processed (a join waiting for its table)
    # is paused until the task works its queue down, as in Kafka Streams.
    "buffered.records.per.partition": 1000,
    "repartition.purge.interval.ms": 30000,
    "client.id": "",
    "transaction.timeout.ms": 10000,
    # How long the cluster may stay unreachable before that is a failure of the client (Kafka Streams'
    # task.timeout.ms): a member failing on a lost connection within it is replaced and waits for the
    # cluster instead. Also how long a member waits for a group still held by another protocol's
    # members (runtime/foreign_members.py).
    "task.timeout.ms": 300000,
    # How a task retries records it cannot read while the schema registry is unreachable (RetriableError,
    # actors/partition_group.py): the first wait, doubling up to the longest, for up to task.timeout.ms.
    "schema.registry.retry.backoff.ms": 100,
    "schema.registry.retry.backoff.max.ms": 1000,
    # What a failure of the running client does when no handler function is set (KafkaStreams.
    # set_uncaught_exception_handler): shutdown_client | replace_thread | shutdown_application.
    "uncaught.exception.handler": "shutdown_client",
    # host:port where this instance answers interactive queries (streamlet.http); announced to the
    # group so every instance knows which endpoint holds which partitions. "" = not announced.
    "application.server": "",
    # Which built-in metrics are recorded and reported: INFO or DEBUG (streamlet.metrics).
    "metrics.recording.level": "INFO",
    # Read by StreamsBuilder(config) (Kafka Streams' TopologyConfig): refuse a topology whose stores,
    # changelog or repartition topics have generated names (KIP-1111).
    "ensure.explicit.internal.resource.naming": False,
    # The backend of DSL stores whose operation names none (streamlet/dsl/store_suppliers.py): Kafka
    # Streams' built-in RocksDB (LevelDB here) or in-memory suppliers class; the older default.dsl.store
    # (rocksDB | in_memory) counts only in StreamsBuilder(config), as in Kafka Streams.
    "dsl.store.suppliers.class": "org.apache.kafka.streams.state.BuiltInDslStoreSuppliers$RocksDBDslStoreSuppliers",
    "default.dsl.store": "rocksDB",
    # KIP-1285: HEADERS keeps the DSL's key-value, window and session stores as stores with headers.
    "dsl.store.format": "DEFAULT",
    # At start-up, whether the internal topics the cluster already holds for the application id must be
    # the topology's (kafka/internal_topic_check.py): existing | exact | none.
    "internal.topics.check": "existing",
    # How the instance takes part in the application's group: classic (the consumer group protocol, a
    # member assigns the tasks; every broker) or streams (KIP-1071 streams groups, the broker assigns the
    # tasks; Kafka 4.2+ brokers with streams.version=1).
    "group.protocol": "classic",
    # OpenTelemetry spans (streamlet.telemetry, the otel extra): per record from a source topic, per
    # punctuation and per commit, with W3C trace context read from and written to record headers.
    "tracing.enabled": False,
    # The share of records without a trace context that start a trace (then subject to the SDK's sampler).
    "tracing.root.sample.ratio": 1.0,
    # Kafka Streams' metrics over OTLP too (streamlet.telemetry), beside /metrics.
    "metrics.otlp.enabled": False,
    # Kafka Streams' rocksdb.config.setter for the LevelDB stores (stores/leveldb/keyvalue.py): called with
    # each store's name and its mutable plyvel.DB options before the store opens.
    "leveldb.config.setter": None,
}
INTERNAL_TOPICS_CHECKS = ("existing", "exact", "none")

DESCRIPTIONS: dict[str, str] = {
    "application.id": "The application's name: the consumer group, the prefix of its internal topics and "
                      "transactional ids, and its directory under state.dir. Required.",
    "bootstrap.servers": "Kafka brokers to connect to, host:port[,host:port...].",
    "default.key.serde": "Serde for keys where the topology names none (a name such as String or Long, a "
                         "Serde class or instance).",
    "default.value.serde": "Serde for values where the topology names none.",
    "default.timestamp.extractor": "How a record's event time is read; default: the record's own timestamp "
                                   "(RecordTimestampExtractor).",
    "deserialization.exception.handler": "A record that cannot be deserialized: log_and_fail (default), "
                                         "log_and_continue, dead_letter or a handler callable "
                                         "(streamlet.error_handling).",
    "default.deserialization.exception.handler": "The deprecated name of deserialization.exception.handler "
                                                 "(ignored when both are set).",
    "production.exception.handler": "A record that cannot be produced: fail (default), continue or a handler "
                                    "callable.",
    "default.production.exception.handler": "The deprecated name of production.exception.handler (ignored when "
                                            "both are set).",
    "processing.exception.handler": "A record (or punctuation) whose processing raises: log_and_fail (default), "
                                    "log_and_continue, dead_letter or a handler callable.",
    "processing.exception.handler.global.enabled": "Whether processing.exception.handler also handles errors of "
                                                   "global stores' and tables' processors (default false: such "
                                                   "an error fails the instance), as Kafka Streams 4.x.",
    "errors.dead.letter.queue.topic.name": "When set, the built-in handlers send each failed record there, with "
                                           "__streams.errors.* headers saying why (KIP-1034); default none. "
                                           "The dead_letter handler setting defaults it to <application.id>-dlq. "
                                           "Created by the application.",
    "processing.guarantee": "at_least_once, or exactly_once_v2 (transactions; consumers read read_committed).",
    "commit.interval.ms": "How often progress is committed: 30000 under at_least_once, 100 under "
                          "exactly_once_v2 (the delay before output becomes visible).",
    "statestore.cache.max.bytes": "Record cache per instance, shared by its tasks' cached stores; repeated "
                                  "updates of a key are merged until a commit or eviction. 0 emits every update. "
                                  "Entries are counted as the memory they take (keys, values, record context and "
                                  "about 400 bytes of Python objects each), so a full cache holds about this much.",
    "statestore.uncommitted.max.bytes": "Under exactly_once_v2: writes of the open transaction that the persistent "
                                        "stores of an instance hold in memory (they reach disk only once it "
                                        "commits); past this many bytes a task commits early.",
    "state.dir": "Where local state stores live (<state.dir>/<application.id>/<task>/<store>); default "
                 "<tmp>/streamlet.",
    "num.standby.replicas": "Warm copies of each stateful task kept on other instances for fast failover.",
    "num.stream.threads": "Accepted for Kafka Streams compatibility; use `streamlet run --workers N` "
                          "(processes) for parallelism within one machine.",
    "replication.factor": "Replicas of the internal topics; -1 uses the broker's default.replication.factor.",
    "auto.offset.reset": "Where a source partition without a committed offset starts: earliest, latest, "
                         "by_duration:<ISO-8601 duration> (the first record at most that old, e.g. by_duration:PT1H) "
                         "or none (the instance fails); Consumed(offset_reset=...) sets it per topic.",
    "max.poll.records": "Most records one poll returns (the batch the tasks process between awaits).",
    "poll.ms": "How long a poll waits for records when there are none.",
    "session.timeout.ms": "How long the group waits for a silent instance before moving its tasks.",
    "heartbeat.interval.ms": "How often an instance tells the group it is alive.",
    "max.task.idle.ms": "How long a task reading several partitions (a join) waits for data on an empty one "
                        "before going on in timestamp order without it; 0 waits only for data the broker has; "
                        "-1 never waits, processing what it has buffered even while another input's records "
                        "are still on the broker (results may then be out of timestamp order).",
    "buffered.records.per.partition": "A partition whose task holds this many unprocessed records is paused "
                                      "until the task catches up.",
    "repartition.purge.interval.ms": "How often repartition records that are committed are deleted from the "
                                     "broker.",
    "client.id": "Prefix of the Kafka clients' ids (shows in broker logs and quotas).",
    "transaction.timeout.ms": "exactly_once_v2: how long the broker keeps an instance's open transaction "
                              "before aborting it (a crashed instance's work is discarded after this).",
    "task.timeout.ms": "How long the cluster may stay unreachable (refused connections, timed-out requests) "
                       "before that fails the client; within it a member that fails on a lost connection is "
                       "replaced and the replacement waits for the cluster. Also how long a member waits to "
                       "join a group still held by members of another protocol (a Kafka Streams application "
                       "closed a moment ago).",
    "schema.registry.retry.backoff.ms": "The schema'd serdes: how long a task first waits before it retries a "
                                        "record whose writer's schema could not be fetched because the registry "
                                        "is unreachable (refused connection, timeout, HTTP 5xx). Such a record is "
                                        "never handed to deserialization.exception.handler: the task holds it and "
                                        "the records after it, unprocessed and uncommitted, and retries, doubling "
                                        "the wait up to schema.registry.retry.backoff.max.ms, for up to "
                                        "task.timeout.ms, then fails.",
    "schema.registry.retry.backoff.max.ms": "The schema'd serdes: the longest wait between two retries of a "
                                            "record held while the schema registry is unreachable (see "
                                            "schema.registry.retry.backoff.ms).",
    "uncaught.exception.handler": "What a failure of the running instance does when no handler function is "
                                  "set: shutdown_client, replace_thread or shutdown_application.",
    "application.server": "host:port where this instance answers interactive queries over HTTP (streamlet "
                          "run --http); announced to the group so any instance can find a key's owner.",
    "metrics.recording.level": "Which built-in metrics are recorded: INFO (thread and task level) or DEBUG "
                               "(also processor nodes, state stores and the record cache).",
    "ensure.explicit.internal.resource.naming": "StreamsBuilder(config): building a topology whose state stores, "
                                                "changelog or repartition topics have generated names fails, "
                                                "naming them (KIP-1111); generated names change when the "
                                                "topology changes, orphaning the state kept under them.",
    "dsl.store.suppliers.class": "Where DSL stores whose operation names no store type or supplier live: "
                                 "org.apache.kafka.streams.state.BuiltInDslStoreSuppliers$RocksDBDslStoreSuppliers "
                                 "(default; LevelDB here) or ...$InMemoryDslStoreSuppliers (in memory, restored "
                                 "from the changelogs on every start). Read by StreamsBuilder(config) and by the "
                                 "application (KafkaStreams, the test driver); the builder's wins.",
    "default.dsl.store": "The deprecated form of dsl.store.suppliers.class: rocksDB (default) or in_memory. As in "
                         "Kafka Streams it counts only in StreamsBuilder(config), and dsl.store.suppliers.class "
                         "wins there when both are set.",
    "dsl.store.format": "DEFAULT or HEADERS (either case; Kafka Streams' KIP-1285): HEADERS keeps the key-value "
                        "stores of the DSL's aggregations and tables as timestamped key-value stores with headers, "
                        "and the stores of its windowed and session aggregations as window and session stores with "
                        "headers (their format, changelog and header-returning queries); read by the application.",
    "internal.topics.check": "At start-up, before any topic is created: existing (every internal topic the "
                             "cluster already holds for the application id, changelog or repartition, must be "
                             "one of the topology's, else the start is refused naming the first difference; a "
                             "first start and a topology that only adds operators pass), exact (also each of "
                             "the topology's must exist once the cluster holds any: for the first start after "
                             "moving from Kafka Streams) or none.",
    "group.protocol": "classic (the consumer group protocol; every broker) or streams (KIP-1071 streams groups: "
                      "the broker assigns the tasks; Kafka 4.2+ brokers). Kafka Streams instances of the same "
                      "application must use the same protocol.",
    "tracing.enabled": "OpenTelemetry spans (the otel extra): one per record taken from a source topic, per "
                       "punctuation and per commit, continuing the W3C trace context a record carries in its "
                       "traceparent header and writing the new span's context into the headers of what it "
                       "produces. The application's tracer provider, or the SDK's configured from the OTEL_* "
                       "environment (OTLP/HTTP exporter, OTEL_TRACES_SAMPLER). Off: no cost per record.",
    "tracing.root.sample.ratio": "With tracing.enabled: the share (0 to 1) of records arriving without a trace "
                                 "context that start a trace; the SDK's sampler then decides too (use "
                                 "parentbased_always_on with a ratio below 1: asking the SDK's sampler costs a span "
                                 "per record, a draw here nothing). Records with a context follow their producer's "
                                 "sampling decision.",
    "metrics.otlp.enabled": "Export the metrics /metrics serves over OTLP as well (the otel extra), under the same "
                            "names with their tags as attributes: through the application's meter provider, or "
                            "the SDK's configured from the OTEL_* environment (OTLP/HTTP, every "
                            "OTEL_METRIC_EXPORT_INTERVAL ms).",
    "leveldb.config.setter": "LevelDB's options per persistent store, as Kafka Streams' rocksdb.config.setter: "
                             "a function `(store_name, options)`, a class with `set_config(store_name, options, "
                             "configs)` (a new instance per store) or 'module:attr' naming either. It changes the "
                             "dict of plyvel.DB options in place before each store opens: write_buffer_size, "
                             "lru_cache_size (the block cache), block_size, compression ('snappy' or None), "
                             "bloom_filter_bits, max_open_files, max_file_size, block_restart_interval. The "
                             "dict starts with streamlet's defaults: bloom_filter_bits 10, write_buffer_size "
                             "16 MiB.",
}
"""What each of streamlet's own settings does (the documentation's configuration reference)."""

LEVELDB_SETTABLE_OPTIONS = ("write_buffer_size", "lru_cache_size", "block_size", "compression", "bloom_filter_bits",
                            "max_open_files", "max_file_size", "block_restart_interval")
"""The plyvel.DB options `leveldb.config.setter` may set (the others streamlet needs as they are)."""

LevelDBConfigSetter = Callable[[str, dict[str, Any], Mapping[str, Any]], None]
"""`leveldb.config.setter` in one shape: called with the store's name, its options and the configuration."""

_SETTER_FORMS = ("give a function (store_name, options), a class with set_config(store_name, options, configs), "
                 "or 'module:attr' naming one")


def leveldb_config_setter(value: Any) -> LevelDBConfigSetter | None:
    """`leveldb.config.setter` as one callable `(store_name, options, configs)`, or None when unset;
    raises ConfigError naming the setting when it names nothing usable."""
    if value is None or value == "":
        return None
    if isinstance(value, str):
        name = value.strip()
        module_name, sep, attr = name.partition(":")
        if not sep:
            module_name, _, attr = name.rpartition(".")
        try:
            value = getattr(importlib.import_module(module_name), attr)
        except (ImportError, AttributeError, ValueError) as exc:
            raise ConfigError(f"leveldb.config.setter: cannot import {name!r} ({type(exc).__name__}: {exc}); "
                              f"{_SETTER_FORMS}") from None
    if isinstance(value, type):
        if not callable(getattr(value, "set_config", None)):
            raise ConfigError(f"leveldb.config.setter: class {value.__qualname__} has no set_config(store_name, "
                              f"options, configs) method; {_SETTER_FORMS}")
        cls = value
        return lambda store, options, configs: cls().set_config(store, options, configs)
    method = getattr(value, "set_config", None)
    if callable(method):
        return lambda store, options, configs: method(store, options, configs)
    if callable(value):
        function = value
        return lambda store, options, configs: function(store, options)
    raise ConfigError(f"leveldb.config.setter: got a {type(value).__name__}, which cannot be called; {_SETTER_FORMS}")


def shown_default(key: str) -> str:
    """The default of setting `key` as the configuration reference shows it (derived defaults in words)."""
    if key == "commit.interval.ms":
        return "30000 (100 under exactly_once_v2)"
    if key == "state.dir":
        return "<tmp>/streamlet"
    value = DEFAULTS[key]
    if value is None:
        return "(none)"
    return repr(value) if isinstance(value, str) else str(value)


def settings_table() -> list[tuple[str, str, str]]:
    """(setting, default as shown, what it does) for every setting streamlet reads, by name: the one
    source of the configuration reference (docs/configuration.md) and of `help(StreamsConfig)`."""
    return [(key, shown_default(key), DESCRIPTIONS[key]) for key in sorted(DEFAULTS)]


MARKDOWN_BEGIN = "<!-- begin: generated from streamlet.config by `python docs/make_config_reference.py` -->"
MARKDOWN_END = "<!-- end: generated from streamlet.config -->"


def _markdown_text(text: str) -> str:
    """`text` for a Markdown table cell: its `backticked` spans stay code, everything else is escaped so
    that `<task>`, `__streams.errors.*` or `|` show as typed (on GitHub, in an editor and in the docs)."""
    import re

    out: list[str] = []
    for i, piece in enumerate(text.split("`")):
        if i % 2:
            out.append(f"`{piece}`")
            continue
        piece = re.sub(r"([\\*<>\[\]|])", r"\\\1", piece)
        out.append(re.sub(r"(?<![A-Za-z0-9])_|_(?![A-Za-z0-9])", r"\\_", piece))
    return "".join(out)


def markdown_reference() -> str:
    """The configuration reference as a Markdown table, between the marker comments the documentation's
    page keeps it in (`python docs/make_config_reference.py` writes it there)."""
    lines = [MARKDOWN_BEGIN, "", "| Setting | Default | What it does |", "|---|---|---|"]
    for key, default, description in settings_table():
        lines.append(f"| `{key}` | `{default}` | {_markdown_text(description)} |")
    return "\n".join([*lines, "", MARKDOWN_END]) + "\n"


def _text_reference() -> str:
    """The settings as `help(StreamsConfig)` lists them: name and default, then what it does, indented."""
    import textwrap

    entries = []
    for key, default, description in settings_table():
        wrapped = textwrap.fill(description.replace("`", ""), width=100, initial_indent=" " * 12,
                                subsequent_indent=" " * 12, break_on_hyphens=False)
        entries.append(f"        {key} (default: {default})\n{wrapped}")
    return "\n".join(entries)


_INT_KEYS = {
    "commit.interval.ms", "statestore.cache.max.bytes", "statestore.uncommitted.max.bytes",
    "num.standby.replicas", "num.stream.threads",
    "replication.factor", "max.poll.records", "poll.ms", "session.timeout.ms", "heartbeat.interval.ms",
    "max.task.idle.ms", "transaction.timeout.ms", "buffered.records.per.partition",
    "schema.registry.retry.backoff.ms", "schema.registry.retry.backoff.max.ms",
}


def normalize_key(key: str) -> str:
    """`application_id` -> `application.id`; dotted keys pass unchanged."""
    return key.replace("_", ".") if "." not in key else key


def _flag(key: str, value: Any) -> bool:
    """A true/false setting, given as a bool or as the text a properties file or `--set` gives."""
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text not in ("true", "false"):
        raise ConfigError(f"{key} must be true or false, got {value!r}")
    return text == "true"


class StreamsConfig(Mapping[str, Any]):
    """Configuration of a streams application; a read-only mapping of dotted keys.

    Every place that takes a configuration takes a plain dict as well; keys are dotted
    (`application.id`) or snake_case (`application_id`). Kafka client settings (`security.protocol`,
    `ssl.*`, `sasl.*`, `linger.ms`, ...) pass through to the clients, Kafka Streams' prefixes
    `consumer.`, `main.consumer.`, `restore.consumer.`, `producer.` and `admin.` aiming one at a
    single client. A known setting with a bad value fails here, naming the setting.
    """

    def __init__(self, mapping: Mapping[str, Any] | None = None, **kwargs: Any) -> None:
        values: dict[str, Any] = dict(DEFAULTS)
        given: set[str] = set()
        if isinstance(mapping, StreamsConfig):  # only what was set: derived defaults are derived again
            mapping = {key: mapping[key] for key in mapping.given_keys}
        for source in (mapping or {}, kwargs):
            for key, value in source.items():
                values[normalize_key(str(key))] = value
                given.add(normalize_key(str(key)))
        for key in _INT_KEYS:
            if values.get(key) is not None:
                try:
                    values[key] = int(values[key])
                except (TypeError, ValueError) as exc:
                    raise ConfigError(f"{key} must be an integer, got {values[key]!r}") from exc
        guarantee = str(values["processing.guarantee"]).lower()
        if guarantee == "exactly_once_beta":
            guarantee = EXACTLY_ONCE_V2
        if guarantee not in (AT_LEAST_ONCE, EXACTLY_ONCE_V2):
            raise ConfigError(
                f"processing.guarantee must be {AT_LEAST_ONCE} or {EXACTLY_ONCE_V2}, got {guarantee!r}"
            )
        values["processing.guarantee"] = guarantee
        protocol = str(values["group.protocol"]).lower()
        if protocol not in (CLASSIC_GROUP, STREAMS_GROUP):
            raise ConfigError(f"group.protocol must be {CLASSIC_GROUP} or {STREAMS_GROUP}, got {protocol!r}")
        values["group.protocol"] = protocol
        for flag in ("tracing.enabled", "metrics.otlp.enabled"):
            values[flag] = _flag(flag, values[flag])
        try:
            ratio = float(values["tracing.root.sample.ratio"])
        except (TypeError, ValueError):
            ratio = -1.0
        if not 0.0 <= ratio <= 1.0:
            raise ConfigError(f"tracing.root.sample.ratio must be a number from 0 to 1, got "
                              f"{values['tracing.root.sample.ratio']!r}")
        values["tracing.root.sample.ratio"] = ratio
        if values["commit.interval.ms"] is None:
            values["commit.interval.ms"] = 100 if guarantee == EXACTLY_ONCE_V2 else 30000
        if values["statestore.cache.max.bytes"] < 0:
            raise ConfigError("statestore.cache.max.bytes must not be negative")
        AutoOffsetReset.parse(values["auto.offset.reset"] or "earliest")  # refuses a policy it cannot read
        check = str(values["internal.topics.check"]).strip().lower()
        if check not in INTERNAL_TOPICS_CHECKS:
            raise ConfigError(f"internal.topics.check must be one of {', '.join(INTERNAL_TOPICS_CHECKS)}, "
                              f"got {values['internal.topics.check']!r}")
        values["internal.topics.check"] = check
        check_settings(values)
        leveldb_config_setter(values["leveldb.config.setter"])  # refuses a setter it cannot use, here
        if not values["state.dir"]:
            values["state.dir"] = str(Path(tempfile.gettempdir()) / "streamlet")
            given.discard("state.dir")
        self._values = values
        self._given = frozenset(given)

    @classmethod
    def of(cls, config: StreamsConfig | Mapping[str, Any] | None) -> StreamsConfig:
        """Every place that takes a config also takes a plain dict (or nothing)."""
        if isinstance(config, StreamsConfig):
            return config
        return cls(config)

    def __getitem__(self, key: str) -> Any:
        return self._values[normalize_key(key)]

    def __iter__(self) -> Iterator[str]:
        return iter(self._values)

    def __len__(self) -> int:
        return len(self._values)

    @property
    def given_keys(self) -> frozenset[str]:
        """The keys the application set (dotted), as opposed to defaults filled in here."""
        return self._given

    def get(self, key: str, default: Any = None) -> Any:
        """The value of `key` (dotted or snake_case), or `default`."""
        return self._values.get(normalize_key(key), default)

    def with_overrides(self, **overrides: Any) -> StreamsConfig:
        """A copy with some keys replaced; the copy remembers which keys the application set."""
        return StreamsConfig(self, **{normalize_key(key): value for key, value in overrides.items()})

    @property
    def application_id(self) -> str:
        """`application.id`; raises ConfigError when it is missing, as every runtime needs it."""
        app_id = self._values.get("application.id")
        if not app_id:
            raise ConfigError("application.id is required")
        return str(app_id)

    @property
    def streams_group(self) -> bool:
        """True under `group.protocol=streams` (KIP-1071: the broker assigns the tasks)."""
        return bool(self._values["group.protocol"] == STREAMS_GROUP)

    @property
    def exactly_once(self) -> bool:
        """True under `processing.guarantee=exactly_once_v2`."""
        return bool(self._values["processing.guarantee"] == EXACTLY_ONCE_V2)

    @property
    def leveldb_config_setter(self) -> LevelDBConfigSetter | None:
        """`leveldb.config.setter` as a callable `(store_name, options, configs)`, or None when unset."""
        return leveldb_config_setter(self._values["leveldb.config.setter"])

    def default_key_serde(self) -> Serde[Any] | None:
        """The `default.key.serde` as a `Serde` (a name such as "String", a class or an instance), or None."""
        return resolve_serde(self._values.get("default.key.serde"))

    def default_value_serde(self) -> Serde[Any] | None:
        """The `default.value.serde` as a `Serde`, or None."""
        return resolve_serde(self._values.get("default.value.serde"))

    def __repr__(self) -> str:
        """Secrets (passwords, sasl.jaas.config, keys, tokens) show as [hidden]: configs get logged."""
        return f"StreamsConfig({redact(self._values)!r})"


if StreamsConfig.__doc__ is not None:  # None under `python -OO`
    StreamsConfig.__doc__ += ("\n    The settings streamlet reads, with their defaults (dotted names)::\n\n"
                              + _text_reference() + "\n")
