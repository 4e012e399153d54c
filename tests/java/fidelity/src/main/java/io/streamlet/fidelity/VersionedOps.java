package io.streamlet.fidelity;

import java.time.Duration;

import com.fasterxml.jackson.databind.JsonNode;

import org.apache.kafka.common.serialization.Serde;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.kstream.KStream;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.processor.api.FixedKeyProcessorContext;
import org.apache.kafka.streams.processor.api.FixedKeyProcessorSupplier;
import org.apache.kafka.streams.processor.api.FixedKeyRecord;
import org.apache.kafka.streams.state.StoreBuilder;
import org.apache.kafka.streams.state.Stores;
import org.apache.kafka.streams.state.VersionedBytesStoreSupplier;
import org.apache.kafka.streams.state.VersionedKeyValueStore;
import org.apache.kafka.streams.state.VersionedRecord;

/**
 * Versioned stores in the vocabulary (kept apart from {@link Runner}, as {@link SmallOps} is): a store spec
 * with {@code "versioned": {"history": ms, "segment": ms or null}} materializes a table in a versioned store,
 * and the op {@code versioned_ops} drives a versioned store directly through the Processor API, each input
 * value a command whose answer is the output value. Twins in tests/fidelity/topology.py and functions.py.
 * Only API present in both Kafka Streams 3.9 and 4.x is used.
 */
@SuppressWarnings({"unchecked", "rawtypes"})
final class VersionedOps {

    private static final Serde<String> STRING = Serdes.String();

    private VersionedOps() {
    }

    static boolean isVersioned(final JsonNode store) {
        return store != null && store.has("versioned") && !store.get("versioned").isNull();
    }

    static VersionedBytesStoreSupplier supplier(final String name, final JsonNode versioned) {
        final Duration history = Duration.ofMillis(versioned.get("history").asLong());
        final JsonNode segment = versioned.get("segment");
        return segment == null || segment.isNull()
            ? Stores.persistentVersionedKeyValueStore(name, history)
            : Stores.persistentVersionedKeyValueStore(name, history, Duration.ofMillis(segment.asLong()));
    }

    /** A table's Materialized over a versioned store (Kafka Streams has only the persistent one). */
    static Materialized materialized(final JsonNode store) {
        Materialized m = Materialized.as(supplier(store.get("name").asText(), store.get("versioned")));
        m = store.path("caching").asBoolean(true) ? m.withCachingEnabled() : m.withCachingDisabled();
        m = store.path("logging").asBoolean(true) ? m.withLoggingEnabled(new java.util.HashMap<>()) : m.withLoggingDisabled();
        return m;
    }

    static Object apply(final StreamsBuilder builder, final Object current, final JsonNode op) {
        final JsonNode store = op.get("store");
        final String storeName = store.get("name").asText();
        StoreBuilder<VersionedKeyValueStore<String, String>> sb =
            Stores.versionedKeyValueStoreBuilder(supplier(storeName, store.get("versioned")), STRING, STRING);
        sb = store.path("logging").asBoolean(true) ? sb.withLoggingEnabled(java.util.Map.of()) : sb.withLoggingDisabled();
        builder.addStateStore(sb);
        return ((KStream) current).processValues(commands(storeName), storeName);
    }

    /**
     * Each value is a command on the record's key at the record's timestamp: {@code p<v>} puts v, null puts a
     * tombstone, {@code d} deletes, {@code g<t>} reads as of t, {@code l} reads the latest. The answer:
     * {@code P<put return code>}, or {@code D|G|L} and the record found ({@code value@timestamp[/validTo]}, or -).
     */
    static FixedKeyProcessorSupplier commands(final String storeName) {
        return () -> new SmallOps.Forwarding() {
            private VersionedKeyValueStore<String, String> store;

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
                final String key = (String) r.key();
                final String command = (String) r.value();
                final String answer;
                if (command == null) {
                    answer = "P" + store.put(key, null, r.timestamp());
                } else if (command.startsWith("p")) {
                    answer = "P" + store.put(key, command.substring(1), r.timestamp());
                } else if (command.startsWith("d")) {
                    answer = "D" + show(store.delete(key, r.timestamp()));
                } else if (command.startsWith("g")) {
                    answer = "G" + show(store.get(key, Long.parseLong(command.substring(1))));
                } else {
                    answer = "L" + show(store.get(key));
                }
                context.forward(r.withValue(answer));
            }
        };
    }

    private static String show(final VersionedRecord<String> record) {
        if (record == null) {
            return "-";
        }
        return record.value() + "@" + record.timestamp() + (record.validTo().isPresent() ? "/" + record.validTo().get() : "");
    }
}
