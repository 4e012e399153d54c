package io.streamlet.interop;

import java.util.Arrays;
import java.util.Locale;
import java.util.Map;

import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.utils.Bytes;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.Topology;
import org.apache.kafka.streams.kstream.KStream;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.Produced;
import org.apache.kafka.streams.state.KeyValueStore;

/**
 * The topologies the interop tests move between Kafka Streams and streamlet. Each has a twin in
 * tests/interop/apps.py that must describe() the same (same node, store and internal topic names).
 */
final class Apps {
    private Apps() {
    }

    static Topology build(final String app, final Map<String, String> topics) {
        final StreamsBuilder builder = new StreamsBuilder();
        switch (app) {
            case "wordcount" -> wordCount(builder, topics);
            default -> throw new IllegalArgumentException("unknown app " + app);
        }
        return builder.build();
    }

    /** Kafka's WordCount tutorial (the store named "counts-store"), as examples/wordcount.py. */
    private static void wordCount(final StreamsBuilder builder, final Map<String, String> topics) {
        final KStream<String, String> lines = builder.stream(topics.get("input"));
        lines.flatMapValues(line -> Arrays.asList(line.toLowerCase(Locale.ROOT).split("\\W+")))
            .groupBy((key, word) -> word)
            .count(Materialized.<String, Long, KeyValueStore<Bytes, byte[]>>as("counts-store"))
            .toStream()
            .to(topics.get("output"), Produced.with(Serdes.String(), Serdes.Long()));
    }
}
