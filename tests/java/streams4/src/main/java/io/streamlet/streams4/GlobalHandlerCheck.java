package io.streamlet.streams4;

import java.nio.charset.StandardCharsets;
import java.util.Properties;

import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.apache.kafka.common.serialization.IntegerDeserializer;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.streams.KeyValue;
import org.apache.kafka.streams.TestInputTopic;
import org.apache.kafka.streams.Topology;
import org.apache.kafka.streams.TopologyTestDriver;
import org.apache.kafka.streams.processor.api.Processor;
import org.apache.kafka.streams.processor.api.ProcessorContext;
import org.apache.kafka.streams.processor.api.Record;
import org.apache.kafka.streams.state.KeyValueIterator;
import org.apache.kafka.streams.state.KeyValueStore;
import org.apache.kafka.streams.state.Stores;

/**
 * The processing exception handler and global stores (KIP-1033) in Kafka Streams 4.4.0's TopologyTestDriver.
 * A global store's processor puts each record and raises "boom 7" for value 7. Each case ("label enabled
 * handler dlq|- deser-handler") sets processing.exception.handler.global.enabled, the processing and
 * deserialization handlers and the dead-letter topic, pipes values 1, 7, an undeserializable one and 2 to
 * the global topic and prints "label failed <i>" for each pipe that threw (with the exception's class), then
 * the store's rows and the topics produced. tests/driver/test_global_processing_handler.py runs the same.
 */
public final class GlobalHandlerCheck {
    public static void main(final String[] args) throws Exception {
        CaseLines.forEach(GlobalHandlerCheck::run);
    }

    private static void run(final String[] words) {
        final String label = words[0];
        final Properties props = new Properties();
        props.put("application.id", "global-handler");
        props.put("bootstrap.servers", "localhost:9");
        props.put("processing.exception.handler.global.enabled", words[1]);
        props.put("processing.exception.handler", "org.apache.kafka.streams.errors."
            + (words[2].equals("continue") ? "LogAndContinue" : "LogAndFail") + "ProcessingExceptionHandler");
        props.put("deserialization.exception.handler", "org.apache.kafka.streams.errors."
            + (words[4].equals("continue") ? "LogAndContinue" : "LogAndFail") + "ExceptionHandler");
        if (!words[3].equals("-")) {
            props.put("errors.dead.letter.queue.topic.name", words[3]);
        }
        final Topology topology = new Topology();
        topology.addGlobalStore(Stores.keyValueStoreBuilder(Stores.inMemoryKeyValueStore("global"), Serdes.String(),
                Serdes.Integer()).withLoggingDisabled(), "gsrc", new StringDeserializer(), new IntegerDeserializer(),
            "global-in", "gproc", () -> new Processor<String, Integer, Void, Void>() {
                private KeyValueStore<String, Integer> store;

                @Override
                public void init(final ProcessorContext<Void, Void> context) {
                    store = context.getStateStore("global");
                }

                @Override
                public void process(final Record<String, Integer> record) {
                    if (record.value() == 7) {
                        throw new IllegalArgumentException("boom 7");
                    }
                    store.put(record.key(), record.value());
                }
            });
        try (TopologyTestDriver driver = new TopologyTestDriver(topology, props)) {
            final TestInputTopic<byte[], byte[]> input = driver.createInputTopic("global-in", new ByteArraySerializer(),
                new ByteArraySerializer());
            final byte[][] values = {{0, 0, 0, 1}, {0, 0, 0, 7}, "abc".getBytes(StandardCharsets.UTF_8), {0, 0, 0, 2}};
            for (int i = 0; i < values.length; i++) {
                try {
                    input.pipeInput(("k" + i).getBytes(StandardCharsets.UTF_8), values[i], 10L + i);
                } catch (final RuntimeException e) {
                    System.out.println(label + " failed " + i);
                }
            }
            final KeyValueStore<String, Integer> store = driver.getKeyValueStore("global");
            try (KeyValueIterator<String, Integer> rows = store.all()) {
                while (rows.hasNext()) {
                    final KeyValue<String, Integer> row = rows.next();
                    System.out.println(label + " row " + row.key + " " + row.value);
                }
            }
            System.out.println(label + " produced " + new java.util.TreeSet<>(driver.producedTopicNames()));
        }
    }
}
