package io.streamlet.reference;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.function.Supplier;

import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.header.internals.RecordHeaders;
import org.apache.kafka.common.serialization.Serde;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.Topology;
import org.apache.kafka.streams.TopologyTestDriver;
import org.apache.kafka.streams.test.TestRecord;

/**
 * Runs each scenario's input records through the real Kafka Streams TopologyTestDriver and writes
 * inputs and outputs to {@code <dir>/<scenario>.json}. tests/dsl/test_dsl_java_behaviour.py replays the
 * same inputs through streamlet's driver (same topology, built by tests/dsl/topologies.py) and expects
 * the same output records, timestamps and headers included.
 */
public final class BehaviourScenarios {

    private BehaviourScenarios() {
    }

    /** One piped record; a null timestamp is not used (every input says when it happened). */
    record Input(String topic, Object key, Object value, long timestamp, String[] headers) {
    }

    /** A scenario: a reference topology, cache size, topic serdes and the records to pipe. */
    static final class Scenario {
        final String topology;
        final long cacheBytes;
        final Map<String, String[]> inputSerdes = new LinkedHashMap<>();
        final Map<String, String[]> outputSerdes = new LinkedHashMap<>();
        final List<Input> inputs = new ArrayList<>();

        Scenario(final String topology, final long cacheBytes) {
            this.topology = topology;
            this.cacheBytes = cacheBytes;
        }

        Scenario in(final String topic, final String keySerde, final String valueSerde) {
            inputSerdes.put(topic, new String[] {keySerde, valueSerde});
            return this;
        }

        Scenario out(final String topic, final String keySerde, final String valueSerde) {
            outputSerdes.put(topic, new String[] {keySerde, valueSerde});
            return this;
        }

        Scenario pipe(final String topic, final Object key, final Object value, final long timestamp,
                      final String... headers) {
            inputs.add(new Input(topic, key, value, timestamp, headers));
            return this;
        }
    }

    static final long NO_CACHE = 0L;
    static final long CACHE = 10L * 1024 * 1024;

    static Map<String, Scenario> scenarios() {
        final Map<String, Scenario> all = new LinkedHashMap<>();
        all.put("wordcount_no_cache", new Scenario("wordcount", NO_CACHE)
            .in("streams-plaintext-input", "String", "String")
            .out("streams-wordcount-output", "String", "Long")
            .pipe("streams-plaintext-input", null, "all streams lead to kafka", 1000)
            .pipe("streams-plaintext-input", "k", "hello kafka streams", 2000, "trace", "t-1")
            .pipe("streams-plaintext-input", null, "join kafka summit", 1500)
            .pipe("streams-plaintext-input", null, "Kafka, KAFKA!", 1700));
        all.put("wordcount_cached", new Scenario("wordcount", CACHE)
            .in("streams-plaintext-input", "String", "String")
            .out("streams-wordcount-output", "String", "Long")
            .pipe("streams-plaintext-input", null, "a a a b", 10)
            .pipe("streams-plaintext-input", null, "a", 5)
            .pipe("streams-plaintext-input", null, "b c b", 20));
        all.put("count_then_table_ops", new Scenario("count_then_table_ops", NO_CACHE)
            .in("input", "String", "String")
            .out("output", "String", "Long")
            .pipe("input", "a", "x", 1)
            .pipe("input", "b", "x", 2)
            .pipe("input", "a", "x", 3)
            .pipe("input", null, "x", 4)
            .pipe("input", "a", null, 5)
            .pipe("input", "a", "x", 6)
            .pipe("input", "b", "x", 7));
        all.put("count_then_table_ops_cached", new Scenario("count_then_table_ops", CACHE)
            .in("input", "String", "String")
            .out("output", "String", "Long")
            .pipe("input", "a", "x", 1)
            .pipe("input", "a", "x", 2)
            .pipe("input", "a", "x", 3));
        all.put("table_filter_map_values", new Scenario("table_filter_map_values", NO_CACHE)
            .in("table-input", "String", "String")
            .out("output", "String", "String")
            .pipe("table-input", "a", "long", 10, "h", "1")
            .pipe("table-input", "b", "x", 20)
            .pipe("table-input", "a", "y", 30)
            .pipe("table-input", null, "zzz", 40)
            .pipe("table-input", "c", "ccc", 50)
            .pipe("table-input", "c", null, 60)
            .pipe("table-input", "b", null, 70));
        all.put("table_materialized", new Scenario("table_materialized", NO_CACHE)
            .in("table-input", "String", "String")
            .out("output", "String", "String")
            .pipe("table-input", "a", "abc", 10)
            .pipe("table-input", "b", "x", 20)
            .pipe("table-input", "a", "xyz", 30)
            .pipe("table-input", "a", "abcd", 25)
            .pipe("table-input", "a", null, 40)
            .pipe("table-input", "b", "bcd", 50)
            .pipe("table-input", "b", "bc", 60)
            .pipe("table-input", "d", null, 70));
        all.put("table_materialized_cached", new Scenario("table_materialized", CACHE)
            .in("table-input", "String", "String")
            .out("output", "String", "String")
            .pipe("table-input", "a", "abc", 10)
            .pipe("table-input", "a", "xyz", 30)
            .pipe("table-input", "a", "abcd", 40)
            .pipe("table-input", "a", null, 50));
        all.put("table_map_values_materialized", new Scenario("table_map_values_materialized", NO_CACHE)
            .in("table-input", "String", "String")
            .out("output", "String", "String")
            .pipe("table-input", "a", "1", 10)
            .pipe("table-input", "a", "2", 20)
            .pipe("table-input", "a", null, 30)
            .pipe("table-input", "b", null, 40));
        all.put("map_group_by_key_reduce", new Scenario("map_group_by_key_reduce", NO_CACHE)
            .in("input", "String", "String")
            .out("output", "String", "String")
            .pipe("input", "k1", "a", 100, "source", "one")
            .pipe("input", "k2", "a", 50, "source", "two")
            .pipe("input", "k3", "b", 200)
            .pipe("input", "k4", "a", 75, "source", "four", "extra", "x"));
        all.put("group_by_aggregate", new Scenario("group_by_aggregate", NO_CACHE)
            .in("input", "String", "String")
            .out("output", "String", "Long")
            .pipe("input", "k", "aa", 3)
            .pipe("input", "k", "bbb", 1)
            .pipe("input", "j", "aa", 2));
        all.put("filter_map_chain", new Scenario("filter_map_chain", NO_CACHE)
            .in("input", "String", "String")
            .out("output", "String", "String")
            .pipe("input", "k1", "v1", 5, "h", "a")
            .pipe("input", "k2", "", 6)
            .pipe("input", "k3", null, 7)
            .pipe("input", null, "v4", 8));
        all.put("flat_map", new Scenario("flat_map", NO_CACHE)
            .in("input", "String", "String")
            .out("output", "String", "String")
            .pipe("input", "k", "v", 9, "h", "x"));
        all.put("merge", new Scenario("merge", NO_CACHE)
            .in("left", "String", "String")
            .in("right", "String", "String")
            .out("merged", "String", "String")
            .pipe("left", "a", "1", 1)
            .pipe("right", "b", "2", 2)
            .pipe("left", "c", "3", 3));
        all.put("repartition", new Scenario("repartition", NO_CACHE)
            .in("input", "String", "String")
            .out("output-1", "String", "String")
            .out("output-2", "String", "Long")
            .pipe("input", "a", "x", 1)
            .pipe("input", "b", "x", 2)
            .pipe("input", "c", "y", 3));
        all.put("value_ops_keep_partitioning", new Scenario("value_ops_keep_partitioning", NO_CACHE)
            .in("input", "String", "String")
            .out("output", "String", "String")
            .pipe("input", "a", "1", 1)
            .pipe("input", null, "2", 2)
            .pipe("input", "a", "3", 3)
            .pipe("input", "b", "4", 4));
        all.put("value_ops_keep_partitioning_cached", new Scenario("value_ops_keep_partitioning", CACHE)
            .in("input", "String", "String")
            .out("output", "String", "String")
            .pipe("input", "a", "1", 1, "origin", "first")
            .pipe("input", "a", "2", 2, "origin", "second")
            .pipe("input", "b", "3", 3));
        all.put("two_aggregations_named_grouping", new Scenario("two_aggregations_named_grouping", NO_CACHE)
            .in("input", "String", "String")
            .out("counts", "String", "Long")
            .out("concatenated", "String", "String")
            .pipe("input", "k1", "x", 1)
            .pipe("input", "k2", "x", 2)
            .pipe("input", "k3", "y", 3));
        all.put("group_by_key_with_and_without_repartition",
            new Scenario("group_by_key_with_and_without_repartition", NO_CACHE)
                .in("input", "String", "String")
                .out("counts-by-key", "String", "Long")
                .out("counts-by-value", "String", "Long")
                .pipe("input", "k1", "x", 1)
                .pipe("input", "k1", "y", 2)
                .pipe("input", "k2", "x", 3));
        all.put("merge_then_group_by_key", new Scenario("merge_then_group_by_key", NO_CACHE)
            .in("left", "String", "String")
            .in("right", "String", "String")
            .out("output", "String", "Long")
            .pipe("left", "k1", "x", 1)
            .pipe("right", "x", "whatever", 2)
            .pipe("left", "k2", "y", 3));
        all.putAll(WindowJoinScenarios.scenarios());
        all.putAll(WindowCogroupScenarios.scenarios());
        return all;
    }

    static Serde<?> serde(final String name) {
        switch (name) {
            case "String":
                return Serdes.String();
            case "Long":
                return Serdes.Long();
            default:
                throw new IllegalArgumentException(name);
        }
    }

    static String json(final Object o) {
        if (o == null) {
            return "null";
        }
        if (o instanceof Number) {
            return o.toString();
        }
        final String s = o.toString();
        final StringBuilder sb = new StringBuilder("\"");
        for (final char c : s.toCharArray()) {
            if (c == '"' || c == '\\') {
                sb.append('\\').append(c);
            } else if (c < 0x20) {
                sb.append(String.format("\\u%04x", (int) c));
            } else {
                sb.append(c);
            }
        }
        return sb.append('"').toString();
    }

    static String headersJson(final Iterable<Header> headers) {
        final List<String> parts = new ArrayList<>();
        for (final Header h : headers) {
            parts.add("[" + json(h.key()) + ", " + json(new String(h.value(), StandardCharsets.UTF_8)) + "]");
        }
        return "[" + String.join(", ", parts) + "]";
    }

    @SuppressWarnings({"unchecked", "rawtypes"})
    static String run(final String name, final Scenario scenario, final Supplier<Topology> topology) {
        final Properties props = new Properties();
        props.put(StreamsConfig.APPLICATION_ID_CONFIG, "behaviour-" + name.replace('_', '-'));
        props.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, "dummy:1234");
        props.put(StreamsConfig.DEFAULT_KEY_SERDE_CLASS_CONFIG, Serdes.String().getClass());
        props.put(StreamsConfig.DEFAULT_VALUE_SERDE_CLASS_CONFIG, Serdes.String().getClass());
        props.put(StreamsConfig.STATESTORE_CACHE_MAX_BYTES_CONFIG, scenario.cacheBytes);
        final StringBuilder out = new StringBuilder();
        out.append("{\n  \"topology\": ").append(json(scenario.topology)).append(",\n");
        out.append("  \"config\": {\"statestore.cache.max.bytes\": ").append(scenario.cacheBytes)
            .append(", \"default.key.serde\": \"String\", \"default.value.serde\": \"String\"},\n");
        out.append("  \"input_serdes\": {");
        out.append(String.join(", ", scenario.inputSerdes.entrySet().stream()
            .map(e -> json(e.getKey()) + ": [" + json(e.getValue()[0]) + ", " + json(e.getValue()[1]) + "]")
            .toList()));
        out.append("},\n  \"output_serdes\": {");
        out.append(String.join(", ", scenario.outputSerdes.entrySet().stream()
            .map(e -> json(e.getKey()) + ": [" + json(e.getValue()[0]) + ", " + json(e.getValue()[1]) + "]")
            .toList()));
        out.append("},\n  \"inputs\": [\n");
        final List<String> inputLines = new ArrayList<>();
        for (final Input in : scenario.inputs) {
            final RecordHeaders headers = new RecordHeaders();
            for (int i = 0; i + 1 < in.headers().length; i += 2) {
                headers.add(in.headers()[i], in.headers()[i + 1].getBytes(StandardCharsets.UTF_8));
            }
            inputLines.add("    {\"topic\": " + json(in.topic()) + ", \"key\": " + json(in.key()) + ", \"value\": "
                + json(in.value()) + ", \"timestamp\": " + in.timestamp() + ", \"headers\": " + headersJson(headers)
                + "}");
        }
        out.append(String.join(",\n", inputLines)).append("\n  ],\n  \"outputs\": {\n");
        final List<String> outputBlocks = new ArrayList<>();
        try (TopologyTestDriver driver = new TopologyTestDriver(topology.get(), props)) {
            final Map<String, org.apache.kafka.streams.TestInputTopic> inputs = new LinkedHashMap<>();
            for (final Map.Entry<String, String[]> e : scenario.inputSerdes.entrySet()) {
                inputs.put(e.getKey(), driver.createInputTopic(e.getKey(),
                    ((Serde) serde(e.getValue()[0])).serializer(), ((Serde) serde(e.getValue()[1])).serializer()));
            }
            for (final Input in : scenario.inputs) {
                final RecordHeaders headers = new RecordHeaders();
                for (int i = 0; i + 1 < in.headers().length; i += 2) {
                    headers.add(in.headers()[i], in.headers()[i + 1].getBytes(StandardCharsets.UTF_8));
                }
                inputs.get(in.topic()).pipeInput(new TestRecord(in.key(), in.value(), headers, in.timestamp()));
            }
            for (final Map.Entry<String, String[]> e : scenario.outputSerdes.entrySet()) {
                final org.apache.kafka.streams.TestOutputTopic output = driver.createOutputTopic(e.getKey(),
                    ((Serde) serde(e.getValue()[0])).deserializer(), ((Serde) serde(e.getValue()[1])).deserializer());
                final List<String> records = new ArrayList<>();
                for (final Object o : output.readRecordsToList()) {
                    final TestRecord r = (TestRecord) o;
                    records.add("      {\"key\": " + json(r.key()) + ", \"value\": " + json(r.value())
                        + ", \"timestamp\": " + r.timestamp() + ", \"headers\": " + headersJson(r.headers()) + "}");
                }
                outputBlocks.add("    " + json(e.getKey()) + ": [\n" + String.join(",\n", records)
                    + (records.isEmpty() ? "]" : "\n    ]"));
            }
        }
        out.append(String.join(",\n", outputBlocks)).append("\n  }\n}\n");
        return out.toString();
    }

    public static void main(final String[] args) throws IOException {
        final Path dir = Path.of(args.length > 0 ? args[0] : "tests/dsl/golden/behaviour");
        Files.createDirectories(dir);
        final Map<String, Supplier<Topology>> topologies = DescribeTopologies.topologies();
        for (final Map.Entry<String, Scenario> entry : scenarios().entrySet()) {
            final Supplier<Topology> topology = topologies.get(entry.getValue().topology);
            if (topology == null) {
                throw new IllegalStateException("unknown topology " + entry.getValue().topology);
            }
            Files.writeString(dir.resolve(entry.getKey() + ".json"), run(entry.getKey(), entry.getValue(), topology),
                StandardCharsets.UTF_8);
        }
        System.out.println("wrote " + scenarios().size() + " behaviour scenarios to " + dir);
    }
}
