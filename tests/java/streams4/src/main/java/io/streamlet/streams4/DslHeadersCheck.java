package io.streamlet.streams4;

import java.time.Duration;
import java.time.Instant;
import java.util.HexFormat;
import java.util.Properties;

import org.apache.kafka.common.header.internals.RecordHeaders;
import org.apache.kafka.common.serialization.Serde;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.serialization.Serializer;
import org.apache.kafka.common.utils.Bytes;
import org.apache.kafka.streams.KeyValue;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.TestInputTopic;
import org.apache.kafka.streams.TestOutputTopic;
import org.apache.kafka.streams.TopologyTestDriver;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.JoinWindows;
import org.apache.kafka.streams.kstream.KStream;
import org.apache.kafka.streams.kstream.StreamJoined;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.Produced;
import org.apache.kafka.streams.kstream.SessionWindows;
import org.apache.kafka.streams.kstream.SlidingWindows;
import org.apache.kafka.streams.kstream.TimeWindows;
import org.apache.kafka.streams.kstream.Windowed;
import org.apache.kafka.streams.processor.StateStore;
import org.apache.kafka.streams.state.KeyValueIterator;
import org.apache.kafka.streams.state.AggregationWithHeaders;
import org.apache.kafka.streams.state.KeyValueStore;
import org.apache.kafka.streams.state.SessionStore;
import org.apache.kafka.streams.state.WindowStore;
import org.apache.kafka.streams.state.ValueTimestampHeaders;
import org.apache.kafka.streams.state.internals.AggregationWithHeadersSerde;
import org.apache.kafka.streams.state.internals.ValueTimestampHeadersSerde;
import org.apache.kafka.streams.test.TestRecord;

/**
 * The DSL's key-value stores under `dsl.store.format=HEADERS` (KIP-1285) in Kafka Streams 4.4.0. For each case
 * line on stdin ("label op format cache record record ...": op `count` (groupByKey().count), `reduce` (values
 * concatenated), `table` (builder.table materialized); format `DEFAULT` or `HEADERS`; cache `0` or `1` (a 1 MiB
 * cache); records as in HeadersStoreCheck), prints the store's class name, every changelog record
 * ("label cl KEYHEX VALUEHEX|null TIMESTAMP HEADERS"), every output record ("label out KEY VALUE TIMESTAMP
 * HEADERS") and, under HEADERS, the store's values as its ValueTimestampHeadersSerde writes them ("label store KEY
 * VALUEHEX"). The windowed counterparts: op `wcount` (count in 100 ms tumbling windows), `slcount` (count in
 * sliding windows of 50 ms) and `scount` (count in sessions with a 30 ms gap), no grace, output keys written
 * "key@start" (sessions "key@start-end"); under HEADERS their stores' values print as "label store KEY START
 * VALUEHEX" (windows, sorted) and "label store KEY START END VALUEHEX" (sessions, `AggregationWithHeadersSerde`).
 * Op `join`: records whose value starts with "x" joined with the others (10 ms apart, no grace; StreamJoined
 * store name "agg"), printing both join stores' changelogs ("label cl-this ..." and "label cl-other ...").
 * tests/dsl/test_dsl_headers_format.py runs the same cases.
 */
public final class DslHeadersCheck {
    private static final HexFormat HEX = HexFormat.of();

    private DslHeadersCheck() {
    }

    public static void main(final String[] args) throws Exception {
        CaseLines.forEach(DslHeadersCheck::run);
    }

    private static void run(final String[] words) {
        final String label = words[0];
        final String op = words[1];
        final boolean headers = "HEADERS".equalsIgnoreCase(words[2]);
        final Properties props = new Properties();
        props.put("application.id", "dslh");
        props.put("bootstrap.servers", "localhost:9");
        props.put("statestore.cache.max.bytes", "1".equals(words[3]) ? "1048576" : "0");
        props.put("dsl.store.format", words[2]);
        final StreamsBuilder builder = new StreamsBuilder();
        final Serde<?> valueSerde;
        if ("count".equals(op)) {
            builder.stream("in", Consumed.with(Serdes.String(), Serdes.String())).groupByKey()
                .count(Materialized.<String, Long, KeyValueStore<Bytes, byte[]>>as("agg")
                    .withKeySerde(Serdes.String()).withValueSerde(Serdes.Long()))
                .toStream().mapValues(String::valueOf)
                .to("out", Produced.with(Serdes.String(), Serdes.String()));
            valueSerde = Serdes.Long();
        } else if ("reduce".equals(op)) {
            builder.stream("in", Consumed.with(Serdes.String(), Serdes.String())).groupByKey()
                .reduce((a, b) -> a + b, Materialized.<String, String, KeyValueStore<Bytes, byte[]>>as("agg")
                    .withKeySerde(Serdes.String()).withValueSerde(Serdes.String()))
                .toStream().to("out", Produced.with(Serdes.String(), Serdes.String()));
            valueSerde = Serdes.String();
        } else if ("wcount".equals(op) || "slcount".equals(op)) {
            final var grouped = builder.stream("in", Consumed.with(Serdes.String(), Serdes.String())).groupByKey();
            final var windowed = "wcount".equals(op)
                ? grouped.windowedBy(TimeWindows.ofSizeWithNoGrace(Duration.ofMillis(100)))
                : grouped.windowedBy(SlidingWindows.ofTimeDifferenceWithNoGrace(Duration.ofMillis(50)));
            windowed.count(Materialized.<String, Long, WindowStore<Bytes, byte[]>>as("agg")
                    .withKeySerde(Serdes.String()).withValueSerde(Serdes.Long()))
                .toStream((k, v) -> k.key() + "@" + k.window().start()).mapValues(v -> String.valueOf(v))
                .to("out", Produced.with(Serdes.String(), Serdes.String()));
            valueSerde = Serdes.Long();
        } else if ("join".equals(op)) {
            final KStream<String, String> all = builder.stream("in", Consumed.with(Serdes.String(), Serdes.String()));
            all.filter((k, v) -> v.startsWith("x")).join(all.filter((k, v) -> !v.startsWith("x")), (a, b) -> a + b,
                    JoinWindows.ofTimeDifferenceWithNoGrace(Duration.ofMillis(10)),
                    StreamJoined.with(Serdes.String(), Serdes.String(), Serdes.String()).withStoreName("agg"))
                .to("out", Produced.with(Serdes.String(), Serdes.String()));
            valueSerde = Serdes.String();
        } else if ("scount".equals(op)) {
            builder.stream("in", Consumed.with(Serdes.String(), Serdes.String())).groupByKey()
                .windowedBy(SessionWindows.ofInactivityGapWithNoGrace(Duration.ofMillis(30)))
                .count(Materialized.<String, Long, SessionStore<Bytes, byte[]>>as("agg")
                    .withKeySerde(Serdes.String()).withValueSerde(Serdes.Long()))
                .toStream((k, v) -> k.key() + "@" + k.window().start() + "-" + k.window().end())
                .mapValues(v -> v == null ? null : String.valueOf(v))
                .to("out", Produced.with(Serdes.String(), Serdes.String()));
            valueSerde = Serdes.Long();
        } else {
            builder.table("in", Consumed.with(Serdes.String(), Serdes.String()),
                    Materialized.<String, String, KeyValueStore<Bytes, byte[]>>as("agg")
                        .withKeySerde(Serdes.String()).withValueSerde(Serdes.String()))
                .toStream().to("out", Produced.with(Serdes.String(), Serdes.String()));
            valueSerde = Serdes.String();
        }
        try (TopologyTestDriver driver = new TopologyTestDriver(builder.build(props), props, Instant.ofEpochMilli(0))) {
            final TestInputTopic<String, String> input = driver.createInputTopic("in", Serdes.String().serializer(),
                Serdes.String().serializer());
            for (int i = 4; i < words.length; i++) {
                final String[] parts = words[i].split(",", 4);
                final RecordHeaders hs = parts.length > 3 ? HeadersStoreCheck.parseHeaders(parts[3])
                    : new RecordHeaders();
                input.pipeInput(new TestRecord<>(parts[0], "null".equals(parts[1]) ? null : parts[1], hs,
                    Long.parseLong(parts[2])));
            }
            if ("join".equals(op)) {
                for (final String side : new String[] {"this", "other"}) {
                    final TestOutputTopic<byte[], byte[]> log = driver.createOutputTopic(
                        "dslh-agg-" + side + "-join-store-changelog", Serdes.ByteArray().deserializer(),
                        Serdes.ByteArray().deserializer());
                    for (final TestRecord<byte[], byte[]> r : log.readRecordsToList()) {
                        System.out.println(label + " cl-" + side + " " + HEX.formatHex(r.key()) + " "
                            + HEX.formatHex(r.value()) + " " + r.timestamp() + " " + HeadersStoreCheck.headers(r.headers()));
                    }
                }
                final TestOutputTopic<String, String> joined = driver.createOutputTopic("out",
                    Serdes.String().deserializer(), Serdes.String().deserializer());
                for (final TestRecord<String, String> r : joined.readRecordsToList()) {
                    System.out.println(label + " out " + r.key() + " " + r.value() + " " + r.timestamp() + " "
                        + HeadersStoreCheck.headers(r.headers()));
                }
                return;
            }
            final StateStore raw = driver.getAllStateStores().get("agg");
            System.out.println(label + " class " + raw.getClass().getSimpleName());
            final TestOutputTopic<byte[], byte[]> changelog = driver.createOutputTopic("dslh-agg-changelog",
                Serdes.ByteArray().deserializer(), Serdes.ByteArray().deserializer());
            for (final TestRecord<byte[], byte[]> r : changelog.readRecordsToList()) {
                System.out.println(label + " cl " + HEX.formatHex(r.key()) + " "
                    + (r.value() == null ? "null" : HEX.formatHex(r.value())) + " " + r.timestamp() + " "
                    + HeadersStoreCheck.headers(r.headers()));
            }
            final TestOutputTopic<String, String> out = driver.createOutputTopic("out", Serdes.String().deserializer(),
                Serdes.String().deserializer());
            for (final TestRecord<String, String> r : out.readRecordsToList()) {
                System.out.println(label + " out " + r.key() + " " + r.value() + " " + r.timestamp() + " "
                    + HeadersStoreCheck.headers(r.headers()));
            }
            if (headers && op.startsWith("s") && !"slcount".equals(op)) {
                printSessions(label, raw);
            } else if (headers && ("wcount".equals(op) || "slcount".equals(op))) {
                printWindows(label, raw);
            } else if (headers) {
                @SuppressWarnings("unchecked")
                final KeyValueStore<String, ValueTimestampHeaders<Object>> store =
                    (KeyValueStore<String, ValueTimestampHeaders<Object>>) raw;
                @SuppressWarnings("unchecked")
                final ValueTimestampHeadersSerde<Object> serde = new ValueTimestampHeadersSerde<>((Serde<Object>) valueSerde);
                final Serializer<ValueTimestampHeaders<Object>> ser = serde.serializer();
                try (KeyValueIterator<String, ValueTimestampHeaders<Object>> it = store.all()) {
                    while (it.hasNext()) {
                        final KeyValue<String, ValueTimestampHeaders<Object>> kv = it.next();
                        System.out.println(label + " store " + kv.key + " " + HEX.formatHex(ser.serialize("t", kv.value)));
                    }
                }
            }
        }
    }

    @SuppressWarnings("unchecked")
    private static void printWindows(final String label, final StateStore raw) {
        final WindowStore<String, ValueTimestampHeaders<Long>> store = (WindowStore<String, ValueTimestampHeaders<Long>>) raw;
        final java.util.List<String> lines = new java.util.ArrayList<>();
        try (ValueTimestampHeadersSerde<Long> serde = new ValueTimestampHeadersSerde<>(Serdes.Long());
             KeyValueIterator<Windowed<String>, ValueTimestampHeaders<Long>> it = store.all()) {
            while (it.hasNext()) {
                final KeyValue<Windowed<String>, ValueTimestampHeaders<Long>> kv = it.next();
                lines.add(label + " store " + kv.key.key() + " " + kv.key.window().start() + " "
                    + HEX.formatHex(serde.serializer().serialize("t", kv.value)));
            }
        }
        java.util.Collections.sort(lines);
        lines.forEach(System.out::println);
    }

    @SuppressWarnings("unchecked")
    private static void printSessions(final String label, final StateStore raw) {
        final SessionStore<String, AggregationWithHeaders<Long>> store = (SessionStore<String, AggregationWithHeaders<Long>>) raw;
        final java.util.List<String> lines = new java.util.ArrayList<>();
        try (AggregationWithHeadersSerde<Long> serde = new AggregationWithHeadersSerde<>(Serdes.Long())) {
            for (final String key : new String[] {"a", "b", "c"}) {
                try (KeyValueIterator<Windowed<String>, AggregationWithHeaders<Long>> it = store.fetch(key)) {
                    while (it.hasNext()) {
                        final KeyValue<Windowed<String>, AggregationWithHeaders<Long>> kv = it.next();
                        lines.add(label + " store " + kv.key.key() + " " + kv.key.window().start() + " "
                            + kv.key.window().end() + " " + HEX.formatHex(serde.serializer().serialize("t", kv.value)));
                    }
                }
            }
        }
        java.util.Collections.sort(lines);
        lines.forEach(System.out::println);
    }
}
