package io.streamlet.fidelity;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;

import org.apache.kafka.common.serialization.Serde;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.kstream.KStream;
import org.apache.kafka.streams.kstream.KeyValueMapper;
import org.apache.kafka.streams.kstream.Printed;
import org.apache.kafka.streams.kstream.Produced;
import org.apache.kafka.streams.processor.RecordContext;
import org.apache.kafka.streams.processor.TopicNameExtractor;
import org.apache.kafka.streams.processor.api.FixedKeyProcessor;
import org.apache.kafka.streams.processor.api.FixedKeyProcessorContext;
import org.apache.kafka.streams.processor.api.FixedKeyProcessorSupplier;
import org.apache.kafka.streams.processor.api.FixedKeyRecord;
import org.apache.kafka.streams.state.KeyValueBytesStoreSupplier;
import org.apache.kafka.streams.state.KeyValueStore;
import org.apache.kafka.streams.state.StoreBuilder;
import org.apache.kafka.streams.state.Stores;

/**
 * The ops {@code process_values}, {@code to_extractor} and {@code print} of the vocabulary (kept apart from
 * {@link Runner} so that each family of ops stays in its own file). Each named processor, extractor and
 * mapper has a twin of the same name in tests/fidelity/functions.py.
 */
@SuppressWarnings({"unchecked", "rawtypes"})
final class SmallOps {

    private static final Serde<String> STRING = Serdes.String();
    private static final List<Path> PRINT_FILES = new ArrayList<>();

    private SmallOps() {
    }

    /** Before a case: no print files yet. */
    static void startCase() {
        PRINT_FILES.clear();
    }

    /** After the driver closed (Kafka Streams writes a print file out on close): the printed lines. */
    static void finishCase(final ObjectNode result) {
        if (PRINT_FILES.isEmpty()) {
            return;
        }
        final ArrayNode printed = result.putArray("printed");
        for (final Path file : PRINT_FILES) {
            try {
                for (final String line : Files.readAllLines(file, StandardCharsets.UTF_8)) {
                    printed.add(line);
                }
                Files.deleteIfExists(file);
            } catch (final IOException e) {
                throw new UncheckedIOException(e);
            }
        }
        PRINT_FILES.clear();
    }

    static Object apply(final StreamsBuilder builder, final Object current, final JsonNode op) {
        final String name = op.get("op").asText();
        final KStream stream = (KStream) current;
        switch (name) {
            case "process_values": {
                final JsonNode store = op.get("store");
                if (store == null || store.isNull()) {
                    return stream.processValues(processor(op.get("fn").asText()));
                }
                final String storeName = store.get("name").asText();
                final KeyValueBytesStoreSupplier supplier = "in_memory".equals(text(store.get("type")))
                    ? Stores.inMemoryKeyValueStore(storeName) : Stores.persistentKeyValueStore(storeName);
                StoreBuilder<KeyValueStore<String, String>> sb = Stores.keyValueStoreBuilder(supplier, STRING, STRING);
                sb = store.path("caching").asBoolean(false) ? sb.withCachingEnabled() : sb.withCachingDisabled();
                sb = store.path("logging").asBoolean(true) ? sb.withLoggingEnabled(java.util.Map.of())
                    : sb.withLoggingDisabled();
                builder.addStateStore(sb);
                return stream.processValues(running(storeName), storeName);
            }
            case "to_extractor":
                stream.to(extractor(op.get("fn").asText()), Produced.with(STRING, STRING));
                return current;
            case "print": {
                final Path file;
                try {
                    file = Files.createTempFile("streamlet-fidelity-print-", ".txt");
                } catch (final IOException e) {
                    throw new UncheckedIOException(e);
                }
                PRINT_FILES.add(file);
                Printed printed = Printed.toFile(file.toString());
                final String label = text(op.get("label"));
                if (label != null) {
                    printed = printed.withLabel(label);
                }
                final String mapper = text(op.get("mapper"));
                if (mapper != null) {
                    printed = printed.withKeyValueMapper(printMapper(mapper));
                }
                stream.print(printed);
                return current;
            }
            default:
                throw new IllegalArgumentException("unknown op " + name);
        }
    }

    private static String text(final JsonNode node) {
        return node == null || node.isNull() ? null : node.asText();
    }

    private static String last12(final String s) {
        return s.length() <= 12 ? s : s.substring(s.length() - 12);
    }

    /** The stateless fixed-key processors. */
    static FixedKeyProcessorSupplier processor(final String fn) {
        switch (fn) {
            case "stamp":  // drops null values; restamps the others one ms later
                return () -> new Forwarding() {
                    @Override
                    public void process(final FixedKeyRecord r) {
                        if (r.value() != null) {
                            context.forward(r.withValue(r.value() + "s").withTimestamp(r.timestamp() + 1));
                        }
                    }
                };
            case "dup":  // the record, then a copy with a marked value
                return () -> new Forwarding() {
                    @Override
                    public void process(final FixedKeyRecord r) {
                        context.forward(r);
                        context.forward(r.withValue((r.value() == null ? "n" : String.valueOf(r.value())) + "d"));
                    }
                };
            default:
                throw new IllegalArgumentException("unknown fixed-key processor " + fn);
        }
    }

    /** "running": per key, the last 12 characters of every value seen so far, kept in a store. */
    static FixedKeyProcessorSupplier running(final String storeName) {
        return () -> new Forwarding() {
            private KeyValueStore<String, String> store;

            @Override
            public void init(final FixedKeyProcessorContext context) {
                super.init(context);
                store = context.getStateStore(storeName);
            }

            @Override
            public void process(final FixedKeyRecord r) {
                if (r.key() == null) {
                    context.forward(r);
                    return;
                }
                final String prev = store.get((String) r.key());
                final String next = last12((prev == null ? "" : prev) + (r.value() == null ? "n" : String.valueOf(r.value())));
                store.put((String) r.key(), next);
                context.forward(r.withValue(next));
            }
        };
    }

    /** A fixed-key processor that keeps its context (VersionedOps' processor extends it too). */
    abstract static class Forwarding implements FixedKeyProcessor {
        protected FixedKeyProcessorContext context;

        @Override
        public void init(final FixedKeyProcessorContext context) {
            this.context = context;
        }
    }

    /** A named extractor whose toString() is its name, which describe() prints. */
    private abstract static class Extractor implements TopicNameExtractor {
        private final String name;

        Extractor(final String name) {
            this.name = name;
        }

        @Override
        public String toString() {
            return name;
        }
    }

    static TopicNameExtractor extractor(final String fn) {
        switch (fn) {
            case "by_key":
                return new Extractor(fn) {
                    @Override
                    public String extract(final Object k, final Object v, final RecordContext ctx) {
                        return k == null ? "rnull" : ((String) k).compareTo("c") < 0 ? "rlow" : "rhigh";
                    }
                };
            case "by_ts":
                return new Extractor(fn) {
                    @Override
                    public String extract(final Object k, final Object v, final RecordContext ctx) {
                        return "rts" + (ctx.timestamp() % 2);
                    }
                };
            default:
                throw new IllegalArgumentException("unknown topic name extractor " + fn);
        }
    }

    static KeyValueMapper printMapper(final String fn) {
        if (!fn.equals("kv_colon")) {
            throw new IllegalArgumentException("unknown print mapper " + fn);
        }
        return (k, v) -> k + ":" + v;
    }
}
