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
 * Kafka Streams 4.4.0's enforced-processing-total (DEBUG) on a real broker. Reads from stdin, one a line: the
 * bootstrap servers, the application id, the stream topic, the table topic, the output topic, how many
 * records to wait for and max.task.idle.ms, then any further client settings as key=value lines. Runs
 * stream.leftJoin(table) -> output from the earliest offsets until the output count is reached, then prints
 * "task-id value" of enforced-processing-total per task, sorted. tests/metrics/test_task_metrics.py runs
 * streamlet over the same input and compares; tests/runtime/test_idle_disabled_broker.py compares the output.
 */
public final class EnforcedProcessingCheck {
    public static void main(final String[] args) throws Exception {
        final BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        final String bootstrap = in.readLine().trim();
        final String applicationId = in.readLine().trim();
        final String stream = in.readLine().trim();
        final String table = in.readLine().trim();
        final String output = in.readLine().trim();
        final long expected = Long.parseLong(in.readLine().trim());
        final String maxTaskIdleMs = in.readLine().trim();
        final StreamsBuilder builder = new StreamsBuilder();
        builder.stream(stream, Consumed.with(Serdes.String(), Serdes.String()))
            .leftJoin(builder.table(table, Consumed.with(Serdes.String(), Serdes.String())), (o, u) -> o + "|" + u)
            .to(output, Produced.with(Serdes.String(), Serdes.String()));
        final Properties props = TopicMetricsCheck.brokerProps(bootstrap, applicationId, "enforced-check");
        props.put("max.task.idle.ms", maxTaskIdleMs);
        props.put("metrics.recording.level", "DEBUG");
        for (String line = in.readLine(); line != null; line = in.readLine()) {
            final int eq = line.indexOf('=');
            if (eq > 0) {
                props.put(line.substring(0, eq).trim(), line.substring(eq + 1).trim());
            }
        }
        try (KafkaStreams streams = new KafkaStreams(builder.build(), props)) {
            streams.start();
            TopicMetricsCheck.awaitProduced(streams, expected);
            final TreeMap<String, Object> lines = new TreeMap<>();
            for (final Map.Entry<MetricName, ? extends Metric> e : streams.metrics().entrySet()) {
                final MetricName name = e.getKey();
                if (name.group().equals("stream-task-metrics") && name.name().equals("enforced-processing-total")) {
                    lines.put(name.tags().get("task-id"), e.getValue().metricValue());
                }
            }
            lines.forEach((k, v) -> System.out.println(k + " " + ((Number) v).longValue()));
        }
    }
}
