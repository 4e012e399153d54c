package io.streamlet.streams4;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.Map;
import java.util.Properties;
import java.util.TreeMap;

import org.apache.kafka.common.Metric;
import org.apache.kafka.common.MetricName;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.Produced;

/**
 * Kafka Streams 4.4.0's topic metrics (KIP-846) on a real broker. Reads from stdin, one a line: the bootstrap
 * servers, the application id, the input topic, the output topic and how many records to wait for. Runs
 * input -> mapValues(upper case, null stays null) -> output from the earliest offset until the output
 * count is reached, then prints "group name processor-node-id topic value" for each stream-topic-metrics
 * metric, sorted. tests/metrics/test_topic_metrics.py runs streamlet over the same input and compares.
 */
public final class TopicMetricsCheck {
    public static void main(final String[] args) throws Exception {
        final BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        final String bootstrap = in.readLine().trim();
        final String applicationId = in.readLine().trim();
        final String input = in.readLine().trim();
        final String output = in.readLine().trim();
        final long expected = Long.parseLong(in.readLine().trim());
        final StreamsBuilder builder = new StreamsBuilder();
        builder.stream(input, Consumed.with(Serdes.ByteArray(), Serdes.String()))
            .mapValues(v -> v == null ? null : v.toUpperCase())
            .to(output, Produced.with(Serdes.ByteArray(), Serdes.String()));
        final Properties props = brokerProps(bootstrap, applicationId, "topic-metrics-check");
        try (KafkaStreams streams = new KafkaStreams(builder.build(), props)) {
            streams.start();
            awaitProduced(streams, expected);
            final TreeMap<String, Object> lines = new TreeMap<>();
            for (final Map.Entry<MetricName, ? extends Metric> e : streams.metrics().entrySet()) {
                final MetricName name = e.getKey();
                if (name.group().equals("stream-topic-metrics")) {
                    lines.put(name.name() + " " + name.tags().get("processor-node-id") + " " + name.tags().get("topic"),
                        e.getValue().metricValue());
                }
            }
            lines.forEach((k, v) -> System.out.println(k + " " + ((Number) v).longValue()));
        }
    }

    /** A client of `bootstrap` reading from the earliest offsets, committing every 100 ms, its state in a
     *  temporary directory named after `check` and this process. */
    static Properties brokerProps(final String bootstrap, final String applicationId, final String check) {
        final Properties props = new Properties();
        props.put("application.id", applicationId);
        props.put("bootstrap.servers", bootstrap);
        props.put("auto.offset.reset", "earliest");
        props.put("commit.interval.ms", "100");
        props.put("state.dir", System.getProperty("java.io.tmpdir") + "/" + check + "-" + ProcessHandle.current().pid());
        return props;
    }

    /** Waits (up to two minutes) until the client's sink nodes produced `expected` records in all. */
    static void awaitProduced(final KafkaStreams streams, final long expected) throws InterruptedException {
        final long deadline = System.currentTimeMillis() + 120_000;
        while (produced(streams) < expected) {
            if (System.currentTimeMillis() > deadline) {
                throw new IllegalStateException("timed out: produced " + produced(streams) + " of " + expected);
            }
            Thread.sleep(100);
        }
    }

    private static double produced(final KafkaStreams streams) {
        double total = 0;
        for (final Map.Entry<MetricName, ? extends Metric> e : streams.metrics().entrySet()) {
            if (e.getKey().group().equals("stream-topic-metrics") && e.getKey().name().equals("records-produced-total")) {
                total += ((Number) e.getValue().metricValue()).doubleValue();
            }
        }
        return total;
    }
}
