package io.streamlet.fidelity;

import java.time.Duration;

import com.fasterxml.jackson.databind.JsonNode;

import org.apache.kafka.common.serialization.Serde;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.streams.KeyValue;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.kstream.KStream;
import org.apache.kafka.streams.processor.PunctuationType;
import org.apache.kafka.streams.processor.api.Processor;
import org.apache.kafka.streams.processor.api.ProcessorContext;
import org.apache.kafka.streams.processor.api.ProcessorSupplier;
import org.apache.kafka.streams.processor.api.Record;
import org.apache.kafka.streams.state.KeyValueBytesStoreSupplier;
import org.apache.kafka.streams.state.KeyValueIterator;
import org.apache.kafka.streams.state.KeyValueStore;
import org.apache.kafka.streams.state.StoreBuilder;
import org.apache.kafka.streams.state.Stores;

/**
 * The ops the restart differential suite (tests/fidelity_restart) adds to the vocabulary of {@link Runner}:
 * {@code punctuate}, a processor with a stream-time punctuator. Every other op goes to {@link Runner.Ops}. The
 * Python twin is tests/fidelity_restart/ops.py.
 */
@SuppressWarnings({"unchecked", "rawtypes"})
final class RestartOps {

    private static final Serde<String> STRING = Serdes.String();

    private RestartOps() {
    }

    static Object apply(final StreamsBuilder builder, final Object current, final JsonNode op) {
        if (!op.get("op").asText().equals("punctuate")) {
            return Runner.Ops.apply(builder, current, op);
        }
        final JsonNode store = op.get("store");
        final String storeName = store.get("name").asText();
        final KeyValueBytesStoreSupplier supplier = "in_memory".equals(store.path("type").asText())
            ? Stores.inMemoryKeyValueStore(storeName) : Stores.persistentKeyValueStore(storeName);
        StoreBuilder<KeyValueStore<String, String>> sb = Stores.keyValueStoreBuilder(supplier, STRING, STRING)
            .withCachingDisabled();
        sb = store.path("logging").asBoolean(true) ? sb.withLoggingEnabled(java.util.Map.of()) : sb.withLoggingDisabled();
        builder.addStateStore(sb);
        final long interval = op.get("interval").asLong();
        final ProcessorSupplier supplierOfProcessor = () -> new Counting(storeName, interval);
        return ((KStream) current).process(supplierOfProcessor, storeName);
    }

    /**
     * Counts records per key in a store and passes every record on; every {@code interval} ms of stream time it
     * forwards one record, key "P", value "{punctuation time}:{key=count,...}" (the store's entries in its
     * order), stamped with the punctuation time.
     */
    private static final class Counting implements Processor<String, String, String, String> {
        private final String storeName;
        private final long interval;
        private ProcessorContext<String, String> context;
        private KeyValueStore<String, String> store;

        Counting(final String storeName, final long interval) {
            this.storeName = storeName;
            this.interval = interval;
        }

        @Override
        public void init(final ProcessorContext<String, String> context) {
            this.context = context;
            this.store = context.getStateStore(storeName);
            context.schedule(Duration.ofMillis(interval), PunctuationType.STREAM_TIME, this::punctuate);
        }

        @Override
        public void process(final Record<String, String> record) {
            if (record.key() != null) {
                final String count = store.get(record.key());
                store.put(record.key(), Long.toString(count == null ? 1 : Long.parseLong(count) + 1));
            }
            context.forward(record);
        }

        private void punctuate(final long timestamp) {
            final StringBuilder entries = new StringBuilder();
            try (KeyValueIterator<String, String> it = store.all()) {
                while (it.hasNext()) {
                    final KeyValue<String, String> kv = it.next();
                    if (entries.length() > 0) {
                        entries.append(',');
                    }
                    entries.append(kv.key).append('=').append(kv.value);
                }
            }
            context.forward(new Record<>("P", timestamp + ":" + entries, timestamp));
        }
    }
}
