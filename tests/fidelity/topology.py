"""Builds a differential case's topology with streamlet's DSL and runs it on streamlet's driver.

The twin of `Runner.Ops` / `Runner.runCase` in java/: the same op vocabulary applied call for call, the
same configuration, the same reading of the output topics (raw bytes, after each input event), and a
result of the same shape, so the two results compare with `==`.
"""

from __future__ import annotations

import os
import tempfile
from functools import partial
from typing import Any

from streamlet.dsl import (
    Branched,
    BufferConfig,
    CogroupedKStream,
    Consumed,
    EmitStrategy,
    Grouped,
    JoinWindows,
    KGroupedStream,
    KGroupedTable,
    KStream,
    KTable,
    Materialized,
    Printed,
    Produced,
    SessionWindowedKStream,
    SessionWindows,
    SlidingWindowedKStream,
    SlidingWindows,
    StreamJoined,
    StreamsBuilder,
    Suppressed,
    TableJoined,
    TimeWindowedKStream,
    TimeWindows,
)
from streamlet.serdes import Serde, Serdes
from streamlet.stores import Stores, VersionedBytesStoreSupplier
from streamlet.testing import TopologyTestDriver
from streamlet.windowed_serdes import SessionWindowedSerde, TimeWindowedSerde
from tests.fidelity import functions as fn

Case = dict[str, Any]
Result = dict[str, Any]

_STRING = Serdes.String()
_BYTES = Serdes.Bytes()


def _versioned_supplier(store: dict[str, Any]) -> VersionedBytesStoreSupplier:
    """As `VersionedOps.supplier` (Kafka Streams has only the persistent one: "in_memory" is streamlet's)."""
    v = store["versioned"]
    factory = (Stores.in_memory_versioned_key_value_store if store.get("type") == "in_memory"
               else Stores.persistent_versioned_key_value_store)
    return factory(store["name"], v["history"], v.get("segment"))


def _materialized(store: dict[str, Any]) -> Materialized:
    if store.get("versioned") is not None:
        return Materialized.as_(_versioned_supplier(store), logging=store.get("logging", True),
                                caching=store.get("caching", True))
    return Materialized(store.get("name"), logging=store.get("logging", True), caching=store.get("caching", True),
                        store_type=store.get("type"), retention=store.get("retention"))


def _serde(spec: Any) -> Serde[Any]:
    if isinstance(spec, dict) and "session_windowed" in spec:
        return SessionWindowedSerde(_STRING)
    if isinstance(spec, dict):
        return TimeWindowedSerde(_STRING, spec["time_windowed"])
    return {"string": _STRING, "long": Serdes.Long()}[spec]


def _table_op(current: KTable, name: str, op: dict[str, Any]) -> KTable:
    store = op.get("store")
    m = None if store is None else _materialized(store)
    if name == "filter":
        return current.filter(fn.PREDICATES[op["fn"]], m)
    if name == "filter_not":
        return current.filter_not(fn.PREDICATES[op["fn"]], m)
    return current.map_values(fn.VALUE_MAPPERS[op["fn"]], m)


def _aggregate(current: KGroupedStream | KGroupedTable | TimeWindowedKStream | SessionWindowedKStream
               | SlidingWindowedKStream, kind: str, op: dict[str, Any]) -> KTable:
    store = op.get("store")
    m = None if store is None else _materialized(store)
    if kind == "count":
        return current.count(m)
    if isinstance(current, KGroupedTable):
        if kind == "reduce":
            return current.reduce(fn.REDUCERS[op["fn"]], fn.REDUCERS[op["sub"]], m)
        return current.aggregate(fn.INITIALIZERS[op["fn"]], fn.AGGREGATORS[op["fn"]], fn.AGGREGATORS[op["sub"]], m)
    if kind == "reduce":
        return current.reduce(fn.REDUCERS[op["fn"]], m)
    if isinstance(current, SessionWindowedKStream):
        return current.aggregate(fn.INITIALIZERS[op["fn"]], fn.AGGREGATORS[op["fn"]], fn.MERGERS[op["fn"]], m)
    return current.aggregate(fn.INITIALIZERS[op["fn"]], fn.AGGREGATORS[op["fn"]], m)


def _grouped(op: dict[str, Any]) -> Grouped:
    serde = _STRING if op.get("serdes") else None
    return Grouped(serde, serde, name=op.get("name"))


def _suppressed(op: dict[str, Any]) -> Suppressed:
    b = op["buffer"]
    if b["kind"] == "unbounded":
        buffer = BufferConfig.unbounded()
    else:
        buffer = BufferConfig.max_records(b["n"]) if b["kind"] == "max_records" else BufferConfig.max_bytes(b["n"])
        buffer = buffer.emit_early_when_full() if b["when_full"] == "emit" else buffer.shut_down_when_full()
    s = (Suppressed.until_window_closes(buffer) if op["kind"] == "until_window_closes"
         else Suppressed.until_time_limit(op["limit"], buffer))
    return s if op.get("name") is None else s.with_name(op["name"])


def _windows(w: dict[str, Any]) -> TimeWindows | SessionWindows | SlidingWindows:
    if w.get("type") == "sliding":
        return (SlidingWindows.of_time_difference_with_no_grace(w["diff"]) if w["grace"] is None
                else SlidingWindows.of_time_difference_and_grace(w["diff"], w["grace"]))
    if w.get("type") == "session":
        return (SessionWindows.of_inactivity_gap_with_no_grace(w["gap"]) if w["grace"] is None
                else SessionWindows.of_inactivity_gap_and_grace(w["gap"], w["grace"]))
    windows = (TimeWindows.of_size_with_no_grace(w["size"]) if w["grace"] is None
               else TimeWindows.of_size_and_grace(w["size"], w["grace"]))
    if w.get("advance") is not None:
        windows = windows.advance_by(w["advance"])
    return windows


def apply(builder: StreamsBuilder, current: Any, op: dict[str, Any]) -> Any:
    """One op of the vocabulary on the current DSL object (see `Runner.Ops.apply`)."""
    name = op["op"]
    if name == "stream":
        return builder.stream(op["topic"], Consumed(_STRING, _STRING))
    if name == "table":
        store = op.get("store")
        return builder.table(op["topic"], Consumed(_STRING, _STRING), None if store is None else _materialized(store))
    if name in ("filter", "filter_not", "map_values") and isinstance(current, KTable):
        return _table_op(current, name, op)
    if name == "filter":
        return current.filter(fn.PREDICATES[op["fn"]])
    if name == "filter_not":
        return current.filter_not(fn.PREDICATES[op["fn"]])
    if name == "map_values":
        return current.map_values(fn.VALUE_MAPPERS[op["fn"]])
    if name == "select_key":
        return current.select_key(fn.KEY_SELECTORS[op["fn"]])
    if name == "map":
        return current.map(fn.KEY_VALUE_MAPPERS[op["fn"]])
    if name == "flat_map_values":
        return current.flat_map_values(fn.FLAT_VALUE_MAPPERS[op["fn"]])
    if name == "flat_map":
        return current.flat_map(fn.FLAT_KEY_VALUE_MAPPERS[op["fn"]])
    if name == "peek":
        return current.peek(lambda k, v: None)
    if name == "merge":
        return current.merge(builder.stream(op["topic"], Consumed(_STRING, _STRING)))
    if name == "repartition":
        return current.repartition()
    if name == "to_stream":
        return current.to_stream()
    if name == "to":
        current.to(op["topic"], Produced(_serde(op["key"]), _serde(op["value"])))
        return current
    if name == "group_by_key":
        return current.group_by_key(_grouped(op))
    if name == "group_by":
        return current.group_by(fn.KEY_SELECTORS[op["fn"]], _grouped(op))
    if name == "stream_join":
        other = None
        for stream_op in op["other"]:
            other = apply(builder, other, stream_op)
        w = op["window"]
        windows = (JoinWindows.of_time_difference_with_no_grace(w["diff"]) if w["grace"] is None
                   else JoinWindows.of_time_difference_and_grace(w["diff"], w["grace"]))
        if w.get("before") is not None:
            windows = windows.before(w["before"])
        if w.get("after") is not None:
            windows = windows.after(w["after"])
        joined = StreamJoined(name=op.get("name"), store_name=op.get("store_name"),
                              this_store_supplier=_window_supplier(op.get("this_store")),
                              other_store_supplier=_window_supplier(op.get("other_store")),
                              store_type=op.get("store_type"), logging=op.get("logging", True))
        join = {"join": current.join, "left_join": current.left_join, "outer_join": current.outer_join}[op["kind"]]
        return join(other, fn.JOINERS[op["fn"]], windows, joined)
    if name == "split":
        split = current.split(op.get("name"))
        for i, branch in enumerate(op["branches"], 1):
            topic = f"br{i}"

            def sink(stream: KStream, topic: str = topic) -> None:
                stream.to(topic, Produced(_STRING, _STRING))

            split.branch(fn.PREDICATES[branch["fn"]], Branched.with_consumer(sink, branch.get("name")))
        branches = split.default_branch(Branched(op.get("default_name")))
        [default] = branches.values()
        return default
    if name == "to_table":
        store = op.get("store")
        return current.to_table(None if store is None else _materialized(store))
    if name == "table_join":
        other = None
        for table_op in op["table"]:
            other = apply(builder, other, table_op)
        store = op.get("store")
        join = {"join": current.join, "left_join": current.left_join, "outer_join": current.outer_join}[op["kind"]]
        return join(other, fn.JOINERS[op["fn"]], None if store is None else _materialized(store))
    if name == "table_group_by":
        return current.group_by(fn.KEY_VALUE_MAPPERS[op["fn"]], _grouped(op))
    if name == "suppress":
        return current.suppress(_suppressed(op))
    if name == "windowed_by":
        return current.windowed_by(_windows(op["window"]))
    if name == "emit_strategy":
        return current.emit_strategy(EmitStrategy.on_window_close() if op["kind"] == "on_window_close"
                                     else EmitStrategy.on_window_update())
    if name == "cogroup":
        return _cogroup(builder, current, op)
    if name in ("count", "reduce", "aggregate"):
        return _aggregate(current, name, op)
    if name == "join_table":
        table = None
        for table_op in op["table"]:
            table = apply(builder, table, table_op)
        assert isinstance(current, KStream) and isinstance(table, KTable)
        joiner = fn.JOINERS[op["fn"]]
        return current.left_join(table, joiner) if op["kind"] == "left_join" else current.join(table, joiner)
    if name == "global_join":
        store = op.get("store")
        global_table = builder.global_table(op["topic"], Consumed(_STRING, _STRING),
                                            None if store is None else _materialized(store))
        selector, joiner = fn.global_key_selector(op["key_fn"]), fn.JOINERS[op["fn"]]
        if op["kind"] == "left_join":
            return current.left_join(global_table, selector, joiner)
        return current.join(global_table, selector, joiner)
    if name == "fk_join":
        right = None
        for table_op in op["table"]:
            right = apply(builder, right, table_op)
        store = op.get("store")
        table_joined = TableJoined() if op.get("name") is None else TableJoined(name=op["name"])
        fk_join = current.left_join if op["kind"] == "left_join" else current.join
        return fk_join(right, fn.FOREIGN_KEYS[op["fk_fn"]], fn.JOINERS[op["fn"]], table_joined,
                       None if store is None else _materialized(store))
    if name in ("process_values", "to_extractor", "print"):
        return _small_op(builder, current, op)
    if name == "versioned_ops":  # the twin of `VersionedOps.apply`
        store = op["store"]
        sb = Stores.versioned_key_value_store_builder(_versioned_supplier(store), _STRING, _STRING)
        builder.add_state_store(sb.with_logging_enabled() if store.get("logging", True) else sb.with_logging_disabled())
        return current.process_values(partial(fn.VersionedCommands, store["name"]), store["name"])
    raise ValueError(f"unknown op {name!r}")


def _cogroup(builder: StreamsBuilder, current: KGroupedStream, op: dict[str, Any]) -> KTable:
    """`cogroup` of the current grouped stream with others, aggregated (per window if "window"); see
    `Runner.Ops.cogroup`."""
    cogrouped: CogroupedKStream = current.cogroup(fn.AGGREGATORS[op["fn"]])
    for other in op["others"]:
        grouped = None
        for stream_op in other["ops"]:
            grouped = apply(builder, grouped, stream_op)
        assert isinstance(grouped, KGroupedStream)
        cogrouped = cogrouped.cogroup(grouped, fn.AGGREGATORS[other["fn"]])
    store = op.get("store")
    m = None if store is None else _materialized(store)
    initializer = fn.INITIALIZERS["trail"]
    if op.get("window") is None:
        return cogrouped.aggregate(initializer, m, op.get("name"))
    windows = _windows(op["window"])
    merger = fn.MERGERS["trail"] if isinstance(windows, SessionWindows) else None
    return cogrouped.windowed_by(windows).aggregate(initializer, merger, m, op.get("name"))
_PRINT_FILES: list[str] = []
"""The files the current case's print ops write to, in op order (as `SmallOps.PRINT_FILES` in java/)."""


def _small_op(builder: StreamsBuilder, current: KStream, op: dict[str, Any]) -> KStream:
    """`process_values`, `to_extractor` and `print`: the twin of `SmallOps.apply`."""
    name = op["op"]
    if name == "process_values":
        store = op.get("store")
        if store is None:
            return current.process_values(fn.FIXED_KEY_PROCESSORS[op["fn"]])
        supplier = (Stores.in_memory_key_value_store(store["name"]) if store.get("type") == "in_memory"
                    else Stores.persistent_key_value_store(store["name"]))
        sb = Stores.key_value_store_builder(supplier, _STRING, _STRING)
        sb = sb.with_caching_enabled() if store.get("caching") else sb.with_caching_disabled()
        sb = sb.with_logging_enabled() if store.get("logging", True) else sb.with_logging_disabled()
        builder.add_state_store(sb)
        return current.process_values(partial(fn.Running, store["name"]), store["name"])
    if name == "to_extractor":
        current.to(fn.TOPIC_EXTRACTORS[op["fn"]], Produced(_STRING, _STRING))
        return current
    fd, path = tempfile.mkstemp(prefix="streamlet-fidelity-print-", suffix=".txt")
    os.close(fd)
    _PRINT_FILES.append(path)
    printed = Printed.to_file(path)
    if op.get("label") is not None:
        printed = printed.with_label(op["label"])
    if op.get("mapper") is not None:
        printed = printed.with_key_value_mapper(fn.PRINT_MAPPERS[op["mapper"]])
    current.print(printed)
    return current


def _read_printed(result: Result) -> None:
    """As `SmallOps.finishCase`: after the driver closed, the printed lines (if the case prints)."""
    if not _PRINT_FILES:
        return
    lines: list[str] = []
    for path in _PRINT_FILES:
        with open(path, encoding="utf-8") as f:
            lines += f.read().splitlines()
        os.unlink(path)
    _PRINT_FILES.clear()
    result["printed"] = lines


def _error(e: BaseException) -> str:
    return f"{type(e).__name__}: {e}"


def _compared(topic: str) -> bool:
    """As `Runner.compared`: every topic but the suppression buffers' changelogs (streamlet's own layout)."""
    return "KTABLE-SUPPRESS-STATE-STORE" not in topic and not topic.endswith("-sup-store-changelog")


def _window_supplier(spec: dict[str, Any] | None) -> Any:
    """As `Runner.windowSupplier`: a join side's own window store supplier, or None."""
    if spec is None:
        return None
    factory = Stores.in_memory_window_store if spec["kind"] == "in_memory" else Stores.persistent_window_store
    return factory(spec["name"], spec["retention"], spec["size"], retain_duplicates=spec["dup"])


def run_streamlet(case: Case) -> Result:
    """The case on streamlet's TopologyTestDriver, as `Runner.runCase` runs it on Kafka Streams'."""
    settings = case.get("config", {})
    for path in _PRINT_FILES:
        os.unlink(path)
    _PRINT_FILES.clear()
    try:
        builder = StreamsBuilder(settings["builder"]) if "builder" in settings else StreamsBuilder()
        current: Any = None
        for op in case["ops"]:
            current = apply(builder, current, op)
        topology = builder.build()
        describe = str(topology.describe())
    except Exception as e:  # a topology Kafka Streams may refuse too: compared by presence
        return {"build_error": _error(e)}
    result: Result = {"describe": describe, "records": []}
    records: list[list[Any]] = result["records"]
    config = {
        "application.id": "fidelity",
        "default.key.serde": "String",
        "default.value.serde": "String",
        "statestore.cache.max.bytes": case.get("config", {}).get("cache_max_bytes", 0),
        **settings.get("app", {}),
    }
    try:  # as Runner.runCase: a driver that cannot start (or close) fails the whole case
        driver = TopologyTestDriver(topology, config, initial_wall_clock_time=0)
    except Exception as e:
        return {"build_error": _error(e)}
    if case.get("stores"):  # which stores are persistent (P) or in memory (M)
        result["stores"] = {name: "P" if driver.get_state_store(name).persistent else "M"
                            for name in sorted(topology.store_builders)}
    try:
        _pipe_all(case, driver, result, records)
    finally:
        try:
            driver.close()
        except Exception as e:
            result = {"build_error": _error(e)}
    if "build_error" not in result:
        _read_printed(result)
    return result


def _pipe_all(case: Case, driver: TopologyTestDriver, result: Result, records: list[list[Any]]) -> None:
    """Every input event, reading the output topics after each; a processing error ends the case."""
    outputs = {t: driver.create_output_topic(t, _BYTES, _BYTES) for t in case["outputs"]}
    inputs: dict[str, Any] = {}
    index = 0
    try:
        for event in case["inputs"]:
            if "advance" in event:
                driver.advance_wall_clock_time(event["advance"])
            else:
                topic = event["topic"]
                if topic not in inputs:
                    inputs[topic] = driver.create_input_topic(topic, _STRING, _STRING)
                inputs[topic].pipe_input(event["key"], event["value"], event["ts"])
            if case.get("all_topics"):
                for t in driver.produced_topic_names():
                    if t not in outputs and _compared(t):
                        outputs[t] = driver.create_output_topic(t, _BYTES, _BYTES)
            for t, out in sorted(outputs.items()):
                for r in out.read_records_to_list():
                    records.append([index, t, None if r.key is None else r.key.hex(),
                                    None if r.value is None else r.value.hex(), r.timestamp])
            index += 1
    except Exception as e:
        result["error"] = _error(e)
        result["error_at"] = index
