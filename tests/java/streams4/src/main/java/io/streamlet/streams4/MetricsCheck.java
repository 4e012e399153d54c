package io.streamlet.streams4;

import java.util.Properties;
import java.util.TreeSet;

import org.apache.kafka.common.MetricName;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.TestInputTopic;
import org.apache.kafka.streams.TopologyTestDriver;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.Produced;

/**
 * Kafka Streams 4.4.0's built-in metric names at DEBUG recording level: the client and thread metrics of a
 * KafkaStreams that is created (never started, its broker unreachable), and the task, processor-node, state-
 * store and record-cache metrics of a TopologyTestDriver running a word count into a cached persistent store.
 * Prints "group name tag-key,tag-key" per metric of the stream-* groups, sorted, once each.
 * tests/metrics/test_metric_names.py compares streamlet's names with these.
 */
public final class MetricsCheck {
    public static void main(final String[] args) {
        final StreamsBuilder builder = new StreamsBuilder();
        builder.stream("words", Consumed.with(Serdes.String(), Serdes.String()))
            .groupByKey()
            .count(Materialized.as("counts"))
            .toStream()
            .to("counted", Produced.with(Serdes.String(), Serdes.Long()));
        final Properties props = new Properties();
        props.put("application.id", "metrics-check");
        props.put("bootstrap.servers", "localhost:9");
        props.put("metrics.recording.level", "DEBUG");
        props.put("state.dir", System.getProperty("java.io.tmpdir") + "/metrics-check-" + ProcessHandle.current().pid());
        final TreeSet<String> lines = new TreeSet<>();
        try (KafkaStreams streams = new KafkaStreams(builder.build(), props)) {
            for (final MetricName name : streams.metrics().keySet()) {
                add(lines, name);
            }
        }
        try (TopologyTestDriver driver = new TopologyTestDriver(builder.build(), props)) {
            final TestInputTopic<String, String> input = driver.createInputTopic("words",
                Serdes.String().serializer(), Serdes.String().serializer());
            input.pipeInput("a", "x");
            input.pipeInput("b", "y");
            input.pipeInput("a", "z");
            for (final MetricName name : driver.metrics().keySet()) {
                add(lines, name);
            }
        }
        lines.forEach(System.out::println);
    }

    private static void add(final TreeSet<String> lines, final MetricName name) {
        if (name.group().startsWith("stream-")) {
            lines.add(name.group() + " " + name.name() + " " + String.join(",", new TreeSet<>(name.tags().keySet())));
        }
    }
}
