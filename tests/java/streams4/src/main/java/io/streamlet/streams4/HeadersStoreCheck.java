package io.streamlet.streams4;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HexFormat;
import java.util.List;
import java.util.Properties;

import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.header.internals.RecordHeaders;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.serialization.Serializer;
import org.apache.kafka.streams.KeyValue;
import org.apache.kafka.streams.TestInputTopic;
import org.apache.kafka.streams.TestOutputTopic;
import org.apache.kafka.streams.Topology;
import org.apache.kafka.streams.TopologyTestDriver;
import org.apache.kafka.streams.kstream.Windowed;
import org.apache.kafka.streams.kstream.internals.SessionWindow;
import org.apache.kafka.streams.processor.api.Processor;
import org.apache.kafka.streams.processor.api.ProcessorContext;
import org.apache.kafka.streams.processor.api.Record;
import org.apache.kafka.streams.state.HeadersBytesStore;
import org.apache.kafka.streams.state.KeyValueBytesStoreSupplier;
import org.apache.kafka.streams.state.KeyValueIterator;
import org.apache.kafka.streams.state.AggregationWithHeaders;
import org.apache.kafka.streams.state.KeyValueStore;
import org.apache.kafka.streams.state.SessionBytesStoreSupplier;
import org.apache.kafka.streams.state.SessionStoreWithHeaders;
import org.apache.kafka.streams.state.StoreBuilder;
import org.apache.kafka.streams.state.Stores;
import org.apache.kafka.streams.state.TimestampedKeyValueStoreWithHeaders;
import org.apache.kafka.streams.state.TimestampedWindowStoreWithHeaders;
import org.apache.kafka.streams.state.ValueTimestampHeaders;
import org.apache.kafka.streams.state.WindowBytesStoreSupplier;
import org.apache.kafka.streams.state.internals.AggregationWithHeadersSerde;
import org.apache.kafka.streams.state.internals.ValueTimestampHeadersSerde;
import org.apache.kafka.streams.test.TestRecord;

/**
 * The bytes of Kafka Streams 4.4.0's timestamped key-value store with headers (KIP-1271): its stored value and
 * its changelog records. For each case line on stdin ("label backend record record ...", backend `persistent` or
 * `memory`; each record `key,value,timestamp[,name=value;name=null;...]`, value `DELETE` deletes the key), a
 * processor puts `ValueTimestampHeaders(value, timestamp, record headers)` into the store "hs" (no cache). Prints
 * every changelog record as "label cl KEYHEX VALUEHEX|null TIMESTAMP HEADERS", then the store's contents in key
 * order as "label store KEY VALUEHEX" (the value serialized by Kafka Streams' ValueTimestampHeadersSerde, as the
 * store keeps it). HEADERS is `-` or `name=HEX|null;...`. A line "convert HEX" prints the upgrade conversions
 * `HeadersBytesStore.convertToHeaderFormat` and `convertFromPlainToHeaderFormat` of those bytes.
 * <p>
 * The window and session counterparts: backend `window-persistent`, `window-memory` or `window-dups` (persistent,
 * retaining duplicates) puts `ValueTimestampHeaders` into a `TimestampedWindowStoreWithHeaders` (100 ms windows,
 * one day's retention) at window start `timestamp - timestamp % 100` (a DELETE puts null there); backend
 * `session-persistent` or `session-memory` puts `AggregationWithHeaders(value, record headers)` into a
 * `SessionStoreWithHeaders` under the session [timestamp - timestamp % 100, timestamp] (a DELETE removes it).
 * Their contents print sorted, as "label store KEY START VALUEHEX" (window) and "label store KEY START END
 * VALUEHEX" (session; the value as `AggregationWithHeadersSerde` serializes it).
 * tests/stores/test_headers_store_format.py runs the same cases.
 */
public final class HeadersStoreCheck {
    private static final HexFormat HEX = HexFormat.of();

    private HeadersStoreCheck() {
    }

    public static void main(final String[] args) throws Exception {
        CaseLines.forEach(HeadersStoreCheck::run);
    }

    static final class Writer implements Processor<String, String, Void, Void> {
        private TimestampedKeyValueStoreWithHeaders<String, String> store;

        @Override
        public void init(final ProcessorContext<Void, Void> context) {
            store = context.getStateStore("hs");
        }

        @Override
        public void process(final Record<String, String> record) {
            if ("DELETE".equals(record.value())) {
                store.delete(record.key());
            } else {
                store.put(record.key(), ValueTimestampHeaders.make(record.value(), record.timestamp(),
                    record.headers()));
            }
        }
    }

    static final class WindowWriter implements Processor<String, String, Void, Void> {
        private TimestampedWindowStoreWithHeaders<String, String> store;

        @Override
        public void init(final ProcessorContext<Void, Void> context) {
            store = context.getStateStore("hs");
        }

        @Override
        public void process(final Record<String, String> record) {
            final long start = record.timestamp() - record.timestamp() % 100;
            store.put(record.key(), "DELETE".equals(record.value()) ? null
                : ValueTimestampHeaders.make(record.value(), record.timestamp(), record.headers()), start);
        }
    }

    static final class SessionWriter implements Processor<String, String, Void, Void> {
        private SessionStoreWithHeaders<String, String> store;

        @Override
        public void init(final ProcessorContext<Void, Void> context) {
            store = context.getStateStore("hs");
        }

        @Override
        public void process(final Record<String, String> record) {
            final Windowed<String> session = new Windowed<>(record.key(),
                new SessionWindow(record.timestamp() - record.timestamp() % 100, record.timestamp()));
            if ("DELETE".equals(record.value())) {
                store.remove(session);
            } else {
                store.put(session, AggregationWithHeaders.make(record.value(), record.headers()));
            }
        }
    }

    static String headers(final Iterable<Header> headers) {
        final StringBuilder out = new StringBuilder();
        for (final Header h : headers) {
            out.append(out.length() == 0 ? "" : ";").append(h.key()).append('=')
                .append(h.value() == null ? "null" : HEX.formatHex(h.value()));
        }
        return out.length() == 0 ? "-" : out.toString();
    }

    static RecordHeaders parseHeaders(final String spec) {
        final RecordHeaders hs = new RecordHeaders();
        for (final String pair : spec.split(";")) {
            final String[] kv = pair.split("=", 2);
            hs.add(kv[0], "null".equals(kv[1]) ? null : kv[1].getBytes(StandardCharsets.UTF_8));
        }
        return hs;
    }

    private static void run(final String[] words) {
        if ("convert".equals(words[0])) {
            final byte[] raw = HEX.parseHex(words[1]);
            System.out.println("convert " + words[1] + " " + HEX.formatHex(HeadersBytesStore.convertToHeaderFormat(raw))
                + " " + HEX.formatHex(HeadersBytesStore.convertFromPlainToHeaderFormat(raw)));
            return;
        }
        final String label = words[0];
        final String backend = words[1];
        final Topology topology = new Topology();
        topology.addSource("src", Serdes.String().deserializer(), Serdes.String().deserializer(), "in");
        final StoreBuilder<?> builder;
        if (backend.startsWith("window-")) {
            final WindowBytesStoreSupplier supplier = "window-memory".equals(backend)
                ? Stores.inMemoryWindowStore("hs", Duration.ofDays(1), Duration.ofMillis(100), false)
                : Stores.persistentTimestampedWindowStoreWithHeaders("hs", Duration.ofDays(1), Duration.ofMillis(100),
                    "window-dups".equals(backend));
            topology.addProcessor("writer", WindowWriter::new, "src");
            builder = Stores.timestampedWindowStoreWithHeadersBuilder(supplier, Serdes.String(), Serdes.String());
        } else if (backend.startsWith("session-")) {
            final SessionBytesStoreSupplier supplier = "session-memory".equals(backend)
                ? Stores.inMemorySessionStore("hs", Duration.ofDays(1))
                : Stores.persistentSessionStoreWithHeaders("hs", Duration.ofDays(1));
            topology.addProcessor("writer", SessionWriter::new, "src");
            builder = Stores.sessionStoreWithHeadersBuilder(supplier, Serdes.String(), Serdes.String());
        } else {
            final KeyValueBytesStoreSupplier supplier = "memory".equals(backend) ? Stores.inMemoryKeyValueStore("hs")
                : Stores.persistentTimestampedKeyValueStoreWithHeaders("hs");
            topology.addProcessor("writer", Writer::new, "src");
            builder = Stores.timestampedKeyValueStoreWithHeadersBuilder(supplier, Serdes.String(), Serdes.String());
        }
        topology.addStateStore(builder, "writer");
        final Properties props = new Properties();
        props.put("application.id", "hdr");
        props.put("bootstrap.servers", "localhost:9");
        props.put("statestore.cache.max.bytes", "0");
        try (TopologyTestDriver driver = new TopologyTestDriver(topology, props, Instant.ofEpochMilli(0))) {
            final TestInputTopic<String, String> input = driver.createInputTopic("in", Serdes.String().serializer(),
                Serdes.String().serializer());
            for (int i = 2; i < words.length; i++) {
                final String[] parts = words[i].split(",", 4);
                final RecordHeaders hs = parts.length > 3 ? parseHeaders(parts[3]) : new RecordHeaders();
                input.pipeInput(new TestRecord<>(parts[0], parts[1], hs, Long.parseLong(parts[2])));
            }
            final TestOutputTopic<byte[], byte[]> changelog = driver.createOutputTopic("hdr-hs-changelog",
                Serdes.ByteArray().deserializer(), Serdes.ByteArray().deserializer());
            for (final TestRecord<byte[], byte[]> r : changelog.readRecordsToList()) {
                System.out.println(label + " cl " + HEX.formatHex(r.key()) + " "
                    + (r.value() == null ? "null" : HEX.formatHex(r.value())) + " " + r.timestamp() + " "
                    + headers(r.headers()));
            }
            if (backend.startsWith("window-")) {
                printWindows(label, driver);
                return;
            }
            if (backend.startsWith("session-")) {
                printSessions(label, driver);
                return;
            }
            @SuppressWarnings("unchecked")
            final KeyValueStore<String, ValueTimestampHeaders<String>> store =
                (KeyValueStore<String, ValueTimestampHeaders<String>>) driver.getAllStateStores().get("hs");
            try (ValueTimestampHeadersSerde<String> serde = new ValueTimestampHeadersSerde<>(Serdes.String())) {
                final Serializer<ValueTimestampHeaders<String>> ser = serde.serializer();
                try (KeyValueIterator<String, ValueTimestampHeaders<String>> it = store.all()) {
                    while (it.hasNext()) {
                        final KeyValue<String, ValueTimestampHeaders<String>> kv = it.next();
                        System.out.println(label + " store " + kv.key + " " + HEX.formatHex(ser.serialize("t", kv.value)));
                    }
                }
            }
        }
    }

    @SuppressWarnings("unchecked")
    private static void printWindows(final String label, final TopologyTestDriver driver) {
        final TimestampedWindowStoreWithHeaders<String, String> store =
            (TimestampedWindowStoreWithHeaders<String, String>) driver.getAllStateStores().get("hs");
        final List<String> lines = new ArrayList<>();
        try (ValueTimestampHeadersSerde<String> serde = new ValueTimestampHeadersSerde<>(Serdes.String());
             KeyValueIterator<Windowed<String>, ValueTimestampHeaders<String>> it = store.all()) {
            while (it.hasNext()) {
                final KeyValue<Windowed<String>, ValueTimestampHeaders<String>> kv = it.next();
                lines.add(label + " store " + kv.key.key() + " " + kv.key.window().start() + " "
                    + HEX.formatHex(serde.serializer().serialize("t", kv.value)));
            }
        }
        Collections.sort(lines);
        lines.forEach(System.out::println);
    }

    @SuppressWarnings("unchecked")
    private static void printSessions(final String label, final TopologyTestDriver driver) {
        final SessionStoreWithHeaders<String, String> store =
            (SessionStoreWithHeaders<String, String>) driver.getAllStateStores().get("hs");
        final List<String> lines = new ArrayList<>();
        try (AggregationWithHeadersSerde<String> serde = new AggregationWithHeadersSerde<>(Serdes.String())) {
            for (final String key : new String[] {"a", "b", "c", "d"}) {
                try (KeyValueIterator<Windowed<String>, AggregationWithHeaders<String>> it = store.fetch(key)) {
                    while (it.hasNext()) {
                        final KeyValue<Windowed<String>, AggregationWithHeaders<String>> kv = it.next();
                        lines.add(label + " store " + kv.key.key() + " " + kv.key.window().start() + " "
                            + kv.key.window().end() + " " + HEX.formatHex(serde.serializer().serialize("t", kv.value)));
                    }
                }
            }
        }
        Collections.sort(lines);
        lines.forEach(System.out::println);
    }
}
