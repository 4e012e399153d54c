package io.streamlet.fidelity;

import java.io.BufferedReader;
import java.io.FileDescriptor;
import java.io.FileOutputStream;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;

import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.Serde;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.serialization.StringSerializer;
import org.apache.kafka.streams.KeyValue;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.TestInputTopic;
import org.apache.kafka.streams.TestOutputTopic;
import org.apache.kafka.streams.Topology;
import org.apache.kafka.streams.TopologyConfig;
import org.apache.kafka.streams.TopologyTestDriver;
import org.apache.kafka.streams.kstream.Aggregator;
import org.apache.kafka.streams.kstream.Branched;
import org.apache.kafka.streams.kstream.BranchedKStream;
import org.apache.kafka.streams.kstream.CogroupedKStream;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.GlobalKTable;
import org.apache.kafka.streams.kstream.EmitStrategy;
import org.apache.kafka.streams.kstream.Grouped;
import org.apache.kafka.streams.kstream.Initializer;
import org.apache.kafka.streams.kstream.KGroupedStream;
import org.apache.kafka.streams.kstream.KGroupedTable;
import org.apache.kafka.streams.kstream.KStream;
import org.apache.kafka.streams.kstream.KTable;
import org.apache.kafka.streams.kstream.JoinWindows;
import org.apache.kafka.streams.kstream.KeyValueMapper;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.Named;
import org.apache.kafka.streams.kstream.Merger;
import org.apache.kafka.streams.kstream.Predicate;
import org.apache.kafka.streams.kstream.Produced;
import org.apache.kafka.streams.kstream.Reducer;
import org.apache.kafka.streams.kstream.SessionWindowedKStream;
import org.apache.kafka.streams.kstream.SessionWindows;
import org.apache.kafka.streams.kstream.TableJoined;
import org.apache.kafka.streams.kstream.SlidingWindows;
import org.apache.kafka.streams.kstream.StreamJoined;
import org.apache.kafka.streams.kstream.Suppressed;
import org.apache.kafka.streams.kstream.TimeWindowedKStream;
import org.apache.kafka.streams.kstream.TimeWindows;
import org.apache.kafka.streams.kstream.ValueJoiner;
import org.apache.kafka.streams.kstream.ValueMapper;
import org.apache.kafka.streams.kstream.WindowedSerdes;
import org.apache.kafka.streams.state.BuiltInDslStoreSuppliers;
import org.apache.kafka.streams.state.Stores;
import org.apache.kafka.streams.state.WindowBytesStoreSupplier;
import org.apache.kafka.streams.test.TestRecord;

/**
 * Runs differential cases on Kafka Streams' own TopologyTestDriver, one JSON case per stdin line, one
 * JSON result per stdout line (the JVM stays up across cases).
 *
 * <p>A case is {@code {"config": {...}, "ops": [...], "inputs": [...], "outputs": [...]}}. {@code ops}
 * is a little stack-free program: each op applies to the current object (a KStream, KGroupedStream,
 * TimeWindowedKStream or KTable) and yields the next one; the named functions (predicates, mappers,
 * reducers, ...) are defined identically in tests/fidelity/functions.py. The result holds describe()
 * and every output record as {@code [input index, topic, key hex, value hex, timestamp]}, read after
 * each input event, so the moment a record is emitted is compared too.
 */
public final class Runner {

    private static final ObjectMapper JSON = new ObjectMapper();
    private static final Serde<String> STRING = Serdes.String();
    private static final HexFormat HEX = HexFormat.of();

    private Runner() {
    }

    public static void main(final String[] args) throws Exception {
        final PrintStream out = new PrintStream(new FileOutputStream(FileDescriptor.out), false, StandardCharsets.UTF_8);
        System.setOut(System.err);  // anything Kafka Streams prints must not break the protocol
        final BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        final Path stateRoot = Files.createTempDirectory("streamlet-fidelity-");
        String line;
        long n = 0;
        while ((line = in.readLine()) != null) {
            if (line.isBlank()) {
                continue;
            }
            ObjectNode result;
            try {
                result = runCase(JSON.readTree(line), stateRoot.resolve(Long.toString(n++)));
            } catch (final Throwable e) {
                result = JSON.createObjectNode();
                result.put("build_error", describeError(e));
            }
            out.println(JSON.writeValueAsString(result));
            out.flush();
        }
    }

    /** A case's raw settings (application id and bootstrap servers filled in), for StreamsConfig. */
    private static Properties settings(final JsonNode values) {
        final Properties props = new Properties();
        props.put(StreamsConfig.APPLICATION_ID_CONFIG, "fidelity");
        props.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, "dummy:1234");
        values.fields().forEachRemaining(e -> props.put(e.getKey(), e.getValue().asText()));
        return props;
    }

    /** A join side's own window store supplier: {"kind": "in_memory"|"persistent", name, retention, size, dup}. */
    private static WindowBytesStoreSupplier windowSupplier(final JsonNode spec) {
        final String name = spec.get("name").asText();
        final Duration retention = Duration.ofMillis(spec.get("retention").asLong());
        final Duration size = Duration.ofMillis(spec.get("size").asLong());
        final boolean dup = spec.get("dup").asBoolean();
        return "in_memory".equals(spec.get("kind").asText())
            ? Stores.inMemoryWindowStore(name, retention, size, dup)
            : Stores.persistentWindowStore(name, retention, size, dup);
    }

    private static String describeError(final Throwable e) {
        Throwable root = e;
        while (root.getCause() != null && root.getCause() != root) {
            root = root.getCause();
        }
        return root.getClass().getSimpleName() + ": " + root.getMessage();
    }

    static ObjectNode runCase(final JsonNode c, final Path stateDir) {
        final StreamsBuilder builder = c.path("config").has("builder")
            ? new StreamsBuilder(new TopologyConfig(new StreamsConfig(settings(c.path("config").get("builder")))))
            : new StreamsBuilder();
        SmallOps.startCase();
        Object current = null;
        for (final JsonNode op : c.get("ops")) {
            current = Ops.apply(builder, current, op);
        }
        final Topology topology = builder.build();
        final ObjectNode result = JSON.createObjectNode();
        result.put("describe", topology.describe().toString());
        final Properties props = new Properties();
        props.put(StreamsConfig.APPLICATION_ID_CONFIG, "fidelity");
        props.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, "dummy:1234");
        props.put(StreamsConfig.DEFAULT_KEY_SERDE_CLASS_CONFIG, Serdes.StringSerde.class);
        props.put(StreamsConfig.DEFAULT_VALUE_SERDE_CLASS_CONFIG, Serdes.StringSerde.class);
        props.put(StreamsConfig.STATE_DIR_CONFIG, stateDir.toString());
        final JsonNode config = c.path("config");
        props.put(StreamsConfig.STATESTORE_CACHE_MAX_BYTES_CONFIG, config.path("cache_max_bytes").asLong(0));
        if (config.has("app")) {
            props.putAll(settings(config.get("app")));
        }
        final ArrayNode records = result.putArray("records");
        try (TopologyTestDriver driver = new TopologyTestDriver(topology, props, Instant.ofEpochMilli(0))) {
            if (c.path("stores").asBoolean(false)) {  // which stores are persistent (P) or in memory (M)
                final ObjectNode stores = result.putObject("stores");
                new java.util.TreeMap<>(driver.getAllStateStores()).forEach(
                    (name, store) -> stores.put(name, store.persistent() ? "P" : "M"));
            }
            final Map<String, TestInputTopic<String, String>> inputs = new LinkedHashMap<>();
            final Map<String, TestOutputTopic<byte[], byte[]>> outputs = new LinkedHashMap<>();
            for (final JsonNode topic : c.get("outputs")) {
                outputs.put(topic.asText(), driver.createOutputTopic(topic.asText(), new ByteArrayDeserializer(),
                    new ByteArrayDeserializer()));
            }
            int index = 0;
            try {
                for (final JsonNode event : c.get("inputs")) {
                    if (event.has("advance")) {
                        driver.advanceWallClockTime(Duration.ofMillis(event.get("advance").asLong()));
                    } else {
                        final String topic = event.get("topic").asText();
                        final TestInputTopic<String, String> input = inputs.computeIfAbsent(topic,
                            t -> driver.createInputTopic(t, new StringSerializer(), new StringSerializer()));
                        input.pipeInput(text(event.get("key")), text(event.get("value")), event.get("ts").asLong());
                    }
                    if (c.path("all_topics").asBoolean(false)) {
                        for (final String topic : new java.util.TreeSet<>(driver.producedTopicNames())) {
                            if (compared(topic)) {
                                outputs.computeIfAbsent(topic, t -> driver.createOutputTopic(t,
                                    new ByteArrayDeserializer(), new ByteArrayDeserializer()));
                            }
                        }
                    }
                    drain(outputs, records, index);
                    index++;
                }
            } catch (final RuntimeException e) {
                result.put("error", describeError(e));
                result.put("error_at", index);
            }
        }
        SmallOps.finishCase(result);
        return result;
    }

    /**
     * With "all_topics", every topic written to is compared (internal ones too: repartition topics and
     * store changelogs) except the suppression buffers' changelogs (generated ones, and the one named "sup"),
     * whose value layout is streamlet's own.
     */
    static boolean compared(final String topic) {
        return !topic.contains("KTABLE-SUPPRESS-STATE-STORE") && !topic.endsWith("-sup-store-changelog");
    }

    private static String text(final JsonNode node) {
        return node == null || node.isNull() ? null : node.asText();
    }

    private static void drain(final Map<String, TestOutputTopic<byte[], byte[]>> outputs, final ArrayNode records,
                              final int index) {
        for (final Map.Entry<String, TestOutputTopic<byte[], byte[]>> e : new java.util.TreeMap<>(outputs).entrySet()) {
            while (!e.getValue().isEmpty()) {
                final TestRecord<byte[], byte[]> r = e.getValue().readRecord();
                final ArrayNode row = records.addArray();
                row.add(index);
                row.add(e.getKey());
                row.add(r.key() == null ? null : HEX.formatHex(r.key()));
                row.add(r.value() == null ? null : HEX.formatHex(r.value()));
                row.add(r.timestamp());
            }
        }
    }

    /** The operator vocabulary: one method per op, applied to the current DSL object. */
    @SuppressWarnings({"unchecked", "rawtypes"})
    static final class Ops {

        private Ops() {
        }

        static Object apply(final StreamsBuilder builder, final Object current, final JsonNode op) {
            final String name = op.get("op").asText();
            switch (name) {
                case "stream":
                    return builder.stream(op.get("topic").asText(), Consumed.with(STRING, STRING));
                case "table": {
                    final JsonNode store = op.get("store");
                    if (store == null || store.isNull()) {
                        return builder.table(op.get("topic").asText(), Consumed.with(STRING, STRING));
                    }
                    return builder.table(op.get("topic").asText(), Consumed.with(STRING, STRING),
                        (Materialized) materialized(store));
                }
                case "filter":
                case "filter_not": {
                    final Predicate p = Functions.predicate(op.get("fn").asText());
                    final boolean not = name.equals("filter_not");
                    if (current instanceof KStream) {
                        return not ? ((KStream) current).filterNot(p) : ((KStream) current).filter(p);
                    }
                    final KTable table = (KTable) current;
                    final JsonNode store = op.get("store");
                    if (store == null || store.isNull()) {
                        return not ? table.filterNot(p) : table.filter(p);
                    }
                    return not ? table.filterNot(p, materialized(store)) : table.filter(p, materialized(store));
                }
                case "map_values": {
                    final ValueMapper m = Functions.valueMapper(op.get("fn").asText());
                    if (current instanceof KStream) {
                        return ((KStream) current).mapValues(m);
                    }
                    final JsonNode store = op.get("store");
                    if (store == null || store.isNull()) {
                        return ((KTable) current).mapValues(m);
                    }
                    return ((KTable) current).mapValues(m, materialized(store));
                }
                case "select_key":
                    return ((KStream) current).selectKey(Functions.keySelector(op.get("fn").asText()));
                case "map":
                    return ((KStream) current).map(Functions.keyValueMapper(op.get("fn").asText()));
                case "flat_map_values":
                    return ((KStream) current).flatMapValues(Functions.flatValueMapper(op.get("fn").asText()));
                case "flat_map":
                    return ((KStream) current).flatMap(Functions.flatKeyValueMapper(op.get("fn").asText()));
                case "peek":
                    return ((KStream) current).peek((k, v) -> { });
                case "merge":
                    return ((KStream) current).merge(builder.stream(op.get("topic").asText(),
                        Consumed.with(STRING, STRING)));
                case "repartition":
                    return ((KStream) current).repartition();
                case "to_stream":
                    return ((KTable) current).toStream();
                case "to": {
                    ((KStream) current).to(op.get("topic").asText(), Produced.with(serde(op.get("key")),
                        serde(op.get("value"))));
                    return current;
                }
                case "group_by_key":
                    return ((KStream) current).groupByKey(grouped(op));
                case "group_by":
                    return ((KStream) current).groupBy(Functions.keySelector(op.get("fn").asText()), grouped(op));
                case "stream_join": {
                    Object stream = null;
                    for (final JsonNode streamOp : op.get("other")) {
                        stream = apply(builder, stream, streamOp);
                    }
                    final JsonNode w = op.get("window");
                    final Duration diff = Duration.ofMillis(w.get("diff").asLong());
                    JoinWindows windows = w.get("grace").isNull() ? JoinWindows.ofTimeDifferenceWithNoGrace(diff)
                        : JoinWindows.ofTimeDifferenceAndGrace(diff, Duration.ofMillis(w.get("grace").asLong()));
                    if (w.has("before") && !w.get("before").isNull()) {
                        windows = windows.before(Duration.ofMillis(w.get("before").asLong()));
                    }
                    if (w.has("after") && !w.get("after").isNull()) {
                        windows = windows.after(Duration.ofMillis(w.get("after").asLong()));
                    }
                    StreamJoined joined = StreamJoined.with(null, null, null);
                    if (text(op.get("name")) != null) {
                        joined = joined.withName(text(op.get("name")));
                    }
                    if (text(op.get("store_name")) != null) {
                        joined = joined.withStoreName(text(op.get("store_name")));
                    }
                    if (op.hasNonNull("this_store")) {
                        joined = joined.withThisStoreSupplier(windowSupplier(op.get("this_store")));
                    }
                    if (op.hasNonNull("other_store")) {
                        joined = joined.withOtherStoreSupplier(windowSupplier(op.get("other_store")));
                    }
                    if (op.hasNonNull("store_type")) {
                        joined = joined.withDslStoreSuppliers("in_memory".equals(op.get("store_type").asText())
                            ? BuiltInDslStoreSuppliers.IN_MEMORY : BuiltInDslStoreSuppliers.ROCKS_DB);
                    }
                    if (op.has("logging") && !op.get("logging").asBoolean()) {
                        joined = joined.withLoggingDisabled();
                    }
                    final ValueJoiner joiner = Functions.joiner(op.get("fn").asText());
                    final KStream left = (KStream) current;
                    switch (op.get("kind").asText()) {
                        case "left_join":
                            return left.leftJoin((KStream) stream, joiner, windows, joined);
                        case "outer_join":
                            return left.outerJoin((KStream) stream, joiner, windows, joined);
                        default:
                            return left.join((KStream) stream, joiner, windows, joined);
                    }
                }
                case "split": {
                    final String splitName = text(op.get("name"));
                    final BranchedKStream split = splitName == null ? ((KStream) current).split()
                        : ((KStream) current).split(Named.as(splitName));
                    int i = 0;
                    for (final JsonNode branch : op.get("branches")) {
                        final String topic = "br" + (++i);
                        final String branchName = text(branch.get("name"));
                        final java.util.function.Consumer<KStream<Object, Object>> sink =
                            s -> s.to(topic, (Produced) Produced.with(STRING, STRING));
                        split.branch(Functions.predicate(branch.get("fn").asText()),
                            branchName == null ? Branched.withConsumer(sink) : Branched.withConsumer(sink, branchName));
                    }
                    final String defaultName = text(op.get("default_name"));
                    final Map<String, KStream> branches = defaultName == null ? split.defaultBranch()
                        : split.defaultBranch(Branched.as(defaultName));
                    return branches.values().iterator().next();
                }
                case "to_table": {
                    final JsonNode store = op.get("store");
                    return store == null || store.isNull() ? ((KStream) current).toTable()
                        : ((KStream) current).toTable(materialized(store));
                }
                case "table_join": {
                    Object table = null;
                    for (final JsonNode tableOp : op.get("table")) {
                        table = apply(builder, table, tableOp);
                    }
                    final ValueJoiner joiner = Functions.joiner(op.get("fn").asText());
                    final KTable left = (KTable) current;
                    final KTable right = (KTable) table;
                    final JsonNode store = op.get("store");
                    final boolean hasStore = store != null && !store.isNull();
                    switch (op.get("kind").asText()) {
                        case "left_join":
                            return hasStore ? left.leftJoin(right, joiner, materialized(store)) : left.leftJoin(right, joiner);
                        case "outer_join":
                            return hasStore ? left.outerJoin(right, joiner, materialized(store)) : left.outerJoin(right, joiner);
                        default:
                            return hasStore ? left.join(right, joiner, materialized(store)) : left.join(right, joiner);
                    }
                }
                case "table_group_by":
                    return ((KTable) current).groupBy(Functions.keyValueMapper(op.get("fn").asText()), grouped(op));
                case "suppress":
                    return ((KTable) current).suppress(suppressed(op));
                case "emit_strategy": {
                    final EmitStrategy strategy = op.get("kind").asText().equals("on_window_close")
                        ? EmitStrategy.onWindowClose() : EmitStrategy.onWindowUpdate();
                    if (current instanceof SessionWindowedKStream) {
                        return ((SessionWindowedKStream) current).emitStrategy(strategy);
                    }
                    return ((TimeWindowedKStream) current).emitStrategy(strategy);
                }
                case "cogroup":
                    return cogroup(builder, (KGroupedStream) current, op);
                case "windowed_by": {
                    final JsonNode w = op.get("window");
                    if (w.path("type").asText("").equals("sliding")) {
                        return ((KGroupedStream) current).windowedBy(slidingWindows(w));
                    }
                    if (w.path("type").asText("").equals("session")) {
                        final Duration gap = Duration.ofMillis(w.get("gap").asLong());
                        return ((KGroupedStream) current).windowedBy(w.get("grace").isNull()
                            ? SessionWindows.ofInactivityGapWithNoGrace(gap)
                            : SessionWindows.ofInactivityGapAndGrace(gap, Duration.ofMillis(w.get("grace").asLong())));
                    }
                    final long size = w.get("size").asLong();
                    TimeWindows windows = w.get("grace").isNull() ? TimeWindows.ofSizeWithNoGrace(Duration.ofMillis(size))
                        : TimeWindows.ofSizeAndGrace(Duration.ofMillis(size), Duration.ofMillis(w.get("grace").asLong()));
                    if (w.has("advance") && !w.get("advance").isNull()) {
                        windows = windows.advanceBy(Duration.ofMillis(w.get("advance").asLong()));
                    }
                    return ((KGroupedStream) current).windowedBy(windows);
                }
                case "count":
                case "reduce":
                case "aggregate":
                    return aggregate(current, name, op);
                case "join_table": {
                    Object table = null;
                    for (final JsonNode tableOp : op.get("table")) {
                        table = apply(builder, table, tableOp);
                    }
                    final ValueJoiner joiner = Functions.joiner(op.get("fn").asText());
                    return op.get("kind").asText().equals("left_join")
                        ? ((KStream) current).leftJoin((KTable) table, joiner)
                        : ((KStream) current).join((KTable) table, joiner);
                }
                case "global_join": {
                    final JsonNode store = op.get("store");
                    final String topic = op.get("topic").asText();
                    final GlobalKTable global = store == null || store.isNull()
                        ? builder.globalTable(topic, Consumed.with(STRING, STRING))
                        : builder.globalTable(topic, Consumed.with(STRING, STRING), (Materialized) materialized(store));
                    final KeyValueMapper selector = Functions.globalKeySelector(op.get("key_fn").asText());
                    final ValueJoiner joiner = Functions.joiner(op.get("fn").asText());
                    return op.get("kind").asText().equals("left_join")
                        ? ((KStream) current).leftJoin(global, selector, joiner)
                        : ((KStream) current).join(global, selector, joiner);
                }
                case "fk_join": {
                    Object table = null;
                    for (final JsonNode tableOp : op.get("table")) {
                        table = apply(builder, table, tableOp);
                    }
                    final java.util.function.Function extractor = Functions.foreignKey(op.get("fk_fn").asText());
                    final ValueJoiner joiner = Functions.joiner(op.get("fn").asText());
                    final KTable left = (KTable) current;
                    final KTable right = (KTable) table;
                    final JsonNode store = op.get("store");
                    final boolean hasStore = store != null && !store.isNull();
                    final String joinName = text(op.get("name"));
                    final TableJoined tj = joinName == null ? TableJoined.with(null, null) : TableJoined.as(joinName);
                    final boolean leftJoin = op.get("kind").asText().equals("left_join");
                    if (hasStore) {
                        return leftJoin ? left.leftJoin(right, extractor, joiner, tj, materialized(store))
                            : left.join(right, extractor, joiner, tj, materialized(store));
                    }
                    return leftJoin ? left.leftJoin(right, extractor, joiner, tj) : left.join(right, extractor, joiner, tj);
                }
                case "process_values":
                case "to_extractor":
                case "print":
                    return SmallOps.apply(builder, current, op);
                case "versioned_ops":
                    return VersionedOps.apply(builder, current, op);
                default:
                    throw new IllegalArgumentException("unknown op " + name);
            }
        }

        /** {"diff": ms, "grace": ms|null}. */
        private static SlidingWindows slidingWindows(final JsonNode w) {
            final Duration diff = Duration.ofMillis(w.get("diff").asLong());
            return w.get("grace").isNull() ? SlidingWindows.ofTimeDifferenceWithNoGrace(diff)
                : SlidingWindows.ofTimeDifferenceAndGrace(diff, Duration.ofMillis(w.get("grace").asLong()));
        }

        /**
         * {"fn": aggregator, "others": [{"ops": [stream ops ending in a grouping], "fn": aggregator}],
         * "window": window|null, "store": store|null, "name": str|null}: the current grouped stream cogrouped
         * with the others, aggregated from the "trail" initializer (per window if "window").
         */
        private static Object cogroup(final StreamsBuilder builder, final KGroupedStream current, final JsonNode op) {
            CogroupedKStream c = current.cogroup(Functions.aggregator(op.get("fn").asText()));
            for (final JsonNode other : op.get("others")) {
                Object grouped = null;
                for (final JsonNode streamOp : other.get("ops")) {
                    grouped = apply(builder, grouped, streamOp);
                }
                c = c.cogroup((KGroupedStream) grouped, Functions.aggregator(other.get("fn").asText()));
            }
            final JsonNode store = op.get("store");
            final boolean hasStore = store != null && !store.isNull();
            final Materialized m = hasStore ? materialized(store) : Materialized.with(null, null);
            final String name = text(op.get("name"));
            final Initializer i = Functions.initializer("trail");
            final JsonNode w = op.get("window");
            if (w == null || w.isNull()) {
                return name == null ? c.aggregate(i, m) : c.aggregate(i, Named.as(name), m);
            }
            final String type = w.path("type").asText("");
            if (type.equals("session")) {
                final Duration gap = Duration.ofMillis(w.get("gap").asLong());
                final SessionWindows sw = w.get("grace").isNull() ? SessionWindows.ofInactivityGapWithNoGrace(gap)
                    : SessionWindows.ofInactivityGapAndGrace(gap, Duration.ofMillis(w.get("grace").asLong()));
                final Merger mg = Functions.merger("trail");
                return name == null ? c.windowedBy(sw).aggregate(i, mg, m)
                    : c.windowedBy(sw).aggregate(i, mg, Named.as(name), m);
            }
            if (type.equals("sliding")) {
                return name == null ? c.windowedBy(slidingWindows(w)).aggregate(i, m)
                    : c.windowedBy(slidingWindows(w)).aggregate(i, Named.as(name), m);
            }
            final long size = w.get("size").asLong();
            TimeWindows tw = w.get("grace").isNull() ? TimeWindows.ofSizeWithNoGrace(Duration.ofMillis(size))
                : TimeWindows.ofSizeAndGrace(Duration.ofMillis(size), Duration.ofMillis(w.get("grace").asLong()));
            if (w.has("advance") && !w.get("advance").isNull()) {
                tw = tw.advanceBy(Duration.ofMillis(w.get("advance").asLong()));
            }
            return name == null ? c.windowedBy(tw).aggregate(i, m) : c.windowedBy(tw).aggregate(i, Named.as(name), m);
        }

        private static Object aggregate(final Object current, final String kind, final JsonNode op) {
            final JsonNode store = op.get("store");
            final boolean hasStore = store != null && !store.isNull();
            final Materialized m = hasStore ? materialized(store) : null;
            if (current instanceof KGroupedStream) {
                final KGroupedStream g = (KGroupedStream) current;
                switch (kind) {
                    case "count":
                        return hasStore ? g.count(m) : g.count();
                    case "reduce": {
                        final Reducer r = Functions.reducer(op.get("fn").asText());
                        return hasStore ? g.reduce(r, m) : g.reduce(r);
                    }
                    default: {
                        final Initializer i = Functions.initializer(op.get("fn").asText());
                        final Aggregator a = Functions.aggregator(op.get("fn").asText());
                        return hasStore ? g.aggregate(i, a, m) : g.aggregate(i, a);
                    }
                }
            }
            if (current instanceof KGroupedTable) {
                final KGroupedTable t = (KGroupedTable) current;
                switch (kind) {
                    case "count":
                        return hasStore ? t.count(m) : t.count();
                    case "reduce": {
                        final Reducer r = Functions.reducer(op.get("fn").asText());
                        final Reducer sub = Functions.reducer(op.get("sub").asText());
                        return hasStore ? t.reduce(r, sub, m) : t.reduce(r, sub);
                    }
                    default: {
                        final Initializer i = Functions.initializer(op.get("fn").asText());
                        final Aggregator a = Functions.aggregator(op.get("fn").asText());
                        final Aggregator sub = Functions.aggregator(op.get("sub").asText());
                        return hasStore ? t.aggregate(i, a, sub, m) : t.aggregate(i, a, sub);
                    }
                }
            }
            if (current instanceof SessionWindowedKStream) {
                final SessionWindowedKStream s = (SessionWindowedKStream) current;
                switch (kind) {
                    case "count":
                        return hasStore ? s.count(m) : s.count();
                    case "reduce": {
                        final Reducer r = Functions.reducer(op.get("fn").asText());
                        return hasStore ? s.reduce(r, m) : s.reduce(r);
                    }
                    default: {
                        final Initializer i = Functions.initializer(op.get("fn").asText());
                        final Aggregator a = Functions.aggregator(op.get("fn").asText());
                        final Merger mg = Functions.merger(op.get("fn").asText());
                        return hasStore ? s.aggregate(i, a, mg, m) : s.aggregate(i, a, mg);
                    }
                }
            }
            final TimeWindowedKStream w = (TimeWindowedKStream) current;
            switch (kind) {
                case "count":
                    return hasStore ? w.count(m) : w.count();
                case "reduce": {
                    final Reducer r = Functions.reducer(op.get("fn").asText());
                    return hasStore ? w.reduce(r, m) : w.reduce(r);
                }
                default: {
                    final Initializer i = Functions.initializer(op.get("fn").asText());
                    final Aggregator a = Functions.aggregator(op.get("fn").asText());
                    return hasStore ? w.aggregate(i, a, m) : w.aggregate(i, a);
                }
            }
        }

        /** {"name": str|null, "serdes": bool}: a name for the repartition topic, String serdes or none. */
        private static Grouped grouped(final JsonNode op) {
            Grouped g = op.path("serdes").asBoolean(false) ? Grouped.with(STRING, STRING) : Grouped.with(null, null);
            final String groupName = text(op.get("name"));
            if (groupName != null) {
                g = g.withName(groupName);
            }
            return g;
        }

        /**
         * {"kind": "until_window_closes"|"until_time_limit", "limit": ms, "name": str|null,
         * "buffer": {"kind": "unbounded"|"max_records"|"max_bytes", "n": long, "when_full": "emit"|"shut_down"}}.
         */
        private static Suppressed suppressed(final JsonNode op) {
            final JsonNode b = op.get("buffer");
            Suppressed.BufferConfig buffer;
            switch (b.get("kind").asText()) {
                case "unbounded":
                    buffer = Suppressed.BufferConfig.unbounded();
                    break;
                case "max_records":
                    buffer = Suppressed.BufferConfig.maxRecords(b.get("n").asLong());
                    break;
                default:
                    buffer = Suppressed.BufferConfig.maxBytes(b.get("n").asLong());
            }
            if (!b.get("kind").asText().equals("unbounded")) {
                buffer = b.get("when_full").asText().equals("emit") ? buffer.emitEarlyWhenFull()
                    : buffer.shutDownWhenFull();
            }
            Suppressed s = op.get("kind").asText().equals("until_window_closes")
                ? Suppressed.untilWindowCloses((Suppressed.StrictBufferConfig) buffer)
                : Suppressed.untilTimeLimit(Duration.ofMillis(op.get("limit").asLong()), buffer);
            final String suppressName = text(op.get("name"));
            if (suppressName != null) {
                s = s.withName(suppressName);
            }
            return s;
        }

        /**
         * {"name": str|null, "type": "persistent"|"in_memory"|null, "caching": bool, "logging": bool, "retention": ms
         * (optional: a windowed store's retention)}.
         */
        private static Materialized materialized(final JsonNode store) {
            if (VersionedOps.isVersioned(store)) {
                return VersionedOps.materialized(store);
            }
            final String storeName = text(store.get("name"));
            Materialized m = storeName == null ? Materialized.with(null, null) : Materialized.as(storeName);
            final String type = text(store.get("type"));
            if (type != null) {
                m = m.withStoreType(type.equals("in_memory") ? Materialized.StoreType.IN_MEMORY
                    : Materialized.StoreType.ROCKS_DB);
            }
            m = store.path("caching").asBoolean(true) ? m.withCachingEnabled() : m.withCachingDisabled();
            m = store.path("logging").asBoolean(true) ? m.withLoggingEnabled(new java.util.HashMap<>()) : m.withLoggingDisabled();
            if (store.has("retention") && !store.get("retention").isNull()) {
                m = m.withRetention(Duration.ofMillis(store.get("retention").asLong()));
            }
            return m;
        }

        /** "string", "long", or {"time_windowed": size} over String keys. */
        private static Serde serde(final JsonNode spec) {
            if (spec.isObject() && spec.has("session_windowed")) {
                return WindowedSerdes.sessionWindowedSerdeFrom(String.class);
            }
            if (spec.isObject() && spec.has("time_windowed")) {
                return WindowedSerdes.timeWindowedSerdeFrom(String.class, spec.get("time_windowed").asLong());
            }
            switch (spec.asText()) {
                case "string":
                    return STRING;
                case "long":
                    return Serdes.Long();
                default:
                    throw new IllegalArgumentException("unknown serde " + spec);
            }
        }
    }

    /** The named user functions; each has a twin with the same name in tests/fidelity/functions.py. */
    @SuppressWarnings({"rawtypes"})
    static final class Functions {

        private Functions() {
        }

        static String str(final Object v) {
            return v == null ? null : String.valueOf(v);
        }

        static String last12(final String s) {
            return s.length() <= 12 ? s : s.substring(s.length() - 12);
        }

        static Predicate predicate(final String fn) {
            switch (fn) {
                case "value_even_length":
                    return (k, v) -> v != null && str(v).length() % 2 == 0;
                case "key_before_c":
                    return (k, v) -> k != null && ((String) k).compareTo("c") < 0;
                case "value_not_null":
                    return (k, v) -> v != null;
                default:
                    throw new IllegalArgumentException("unknown predicate " + fn);
            }
        }

        static ValueMapper valueMapper(final String fn) {
            switch (fn) {
                case "tag":
                    return v -> v == null ? "n" : str(v) + "t";
                case "length":
                    return v -> v == null ? "0" : Integer.toString(str(v).length());
                default:
                    throw new IllegalArgumentException("unknown value mapper " + fn);
            }
        }

        static KeyValueMapper keySelector(final String fn) {
            switch (fn) {
                case "value_first":
                    return (k, v) -> v == null ? null : str(v).substring(0, 1);
                case "key_and_value_last":
                    return (k, v) -> (k == null ? "n" : str(k)) + (v == null ? "n" : str(v).substring(str(v).length() - 1));
                case "value_length":
                    return (k, v) -> v == null ? null : Integer.toString(str(v).length());
                default:
                    throw new IllegalArgumentException("unknown key selector " + fn);
            }
        }

        static KeyValueMapper keyValueMapper(final String fn) {
            switch (fn) {
                case "swap":
                    return (k, v) -> KeyValue.pair(v, k);
                case "key_from_value_first":
                    return (k, v) -> KeyValue.pair(v == null ? null : str(v).substring(0, 1), str(k) + ":" + str(v));
                default:
                    throw new IllegalArgumentException("unknown key-value mapper " + fn);
            }
        }

        static ValueMapper flatValueMapper(final String fn) {
            if (!fn.equals("chars")) {
                throw new IllegalArgumentException("unknown flat value mapper " + fn);
            }
            return v -> {
                final List<String> out = new ArrayList<>();
                if (v != null) {
                    for (final char ch : str(v).toCharArray()) {
                        out.add(String.valueOf(ch));
                    }
                }
                return out;
            };
        }

        static KeyValueMapper flatKeyValueMapper(final String fn) {
            if (!fn.equals("twice")) {
                throw new IllegalArgumentException("unknown flat mapper " + fn);
            }
            return (k, v) -> List.of(KeyValue.pair(k, v), KeyValue.pair(k == null ? "n" : str(k) + "2", v));
        }

        static Reducer reducer(final String fn) {
            switch (fn) {
                case "concat":
                    return (a, b) -> last12(str(a) + "+" + str(b));
                case "unconcat":
                    return (a, b) -> last12(str(a) + "-" + str(b));
                default:
                    throw new IllegalArgumentException("unknown reducer " + fn);
            }
        }

        static Initializer initializer(final String fn) {
            if (!fn.equals("trail")) {
                throw new IllegalArgumentException("unknown aggregator " + fn);
            }
            return () -> "";
        }

        static Aggregator aggregator(final String fn) {
            switch (fn) {
                case "trail":
                    return (k, v, agg) -> last12(str(agg) + "/" + (k == null ? "n" : str(k)) + (v == null ? "n" : str(v)));
                case "untrail":
                    return (k, v, agg) -> last12(str(agg) + "\\" + (k == null ? "n" : str(k)) + (v == null ? "n" : str(v)));
                default:
                    throw new IllegalArgumentException("unknown aggregator " + fn);
            }
        }

        static Merger merger(final String fn) {
            if (!fn.equals("trail")) {
                throw new IllegalArgumentException("unknown merger " + fn);
            }
            return (k, a, b) -> last12(str(a) + "|" + str(b));
        }

        /** A left value's foreign key (a right-table key "a".."d"), or null: twin of FOREIGN_KEYS. */
        static java.util.function.Function foreignKey(final String fn) {
            switch (fn) {
                case "first_char_key":
                    return v -> {
                        final char c = str(v).charAt(0);
                        return c >= '0' && c <= '8' ? String.valueOf("abcd".charAt((c - '0') % 4)) : null;
                    };
                case "last_char_key":
                    return v -> {
                        final char c = str(v).charAt(str(v).length() - 1);
                        return c >= '0' && c <= '9' ? String.valueOf("abcd".charAt((c - '0') % 4)) : "a";
                    };
                default:
                    throw new IllegalArgumentException("unknown foreign key extractor " + fn);
            }
        }

        /** The key a stream record looks a global table up by: its own key, or a foreign key of its value. */
        @SuppressWarnings("unchecked")
        static KeyValueMapper globalKeySelector(final String fn) {
            if (fn.equals("key")) {
                return (k, v) -> k;
            }
            final java.util.function.Function fk = foreignKey(fn);
            return (k, v) -> v == null ? null : fk.apply(v);
        }

        static ValueJoiner joiner(final String fn) {
            if (!fn.equals("pair")) {
                throw new IllegalArgumentException("unknown joiner " + fn);
            }
            return (a, b) -> (a == null ? "n" : str(a)) + "&" + (b == null ? "n" : str(b));
        }
    }
}
