package io.streamlet.streams4;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.HexFormat;
import java.util.Properties;

import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.header.internals.RecordHeaders;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.streams.KeyValue;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.TestInputTopic;
import org.apache.kafka.streams.TestOutputTopic;
import org.apache.kafka.streams.TopologyTestDriver;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.Produced;
import org.apache.kafka.streams.kstream.Suppressed;
import org.apache.kafka.streams.kstream.TimeWindows;
import org.apache.kafka.streams.test.TestRecord;

/**
 * The bytes Kafka Streams 4.4.0 writes to a suppression buffer's changelog. For each case line on stdin
 * ("label mode record record ...", mode `final` = a windowed count (10 ms windows, 5 ms grace) suppressed until
 * its windows close, or `limit` = a table of the latest value per key suppressed for 7 ms; each record
 * `key,value,timestamp[,header]`), prints every record the buffer's changelog received, in order, as
 * "label cl KEYHEX VALUEHEX|null HEADERS", then every output record as "label out KEY VALUE TIMESTAMP".
 * HEADERS is `-` or `name=HEX;...`. tests/stores/test_suppression_changelog_format.py runs the same cases.
 */
public final class SuppressChangelogCheck {
    private static final HexFormat HEX = HexFormat.of();

    public static void main(final String[] args) throws Exception {
        CaseLines.forEach(SuppressChangelogCheck::run);
    }

    private static String headers(final Iterable<Header> headers) {
        final StringBuilder out = new StringBuilder();
        for (final Header h : headers) {
            out.append(out.length() == 0 ? "" : ";").append(h.key()).append('=')
                .append(h.value() == null ? "null" : HEX.formatHex(h.value()));
        }
        return out.length() == 0 ? "-" : out.toString();
    }

    private static void run(final String[] words) {
        final String label = words[0];
        final boolean windowed = words[1].equals("final");
        final Properties props = new Properties();
        props.put("application.id", "sup");
        props.put("bootstrap.servers", "localhost:9");
        props.put("statestore.cache.max.bytes", "0");
        final StreamsBuilder builder = new StreamsBuilder();
        if (windowed) {
            builder.stream("in", Consumed.with(Serdes.String(), Serdes.String()))
                .groupByKey()
                .windowedBy(TimeWindows.ofSizeAndGrace(Duration.ofMillis(10), Duration.ofMillis(5)))
                .count(Materialized.as("counts"))
                .suppress(Suppressed.untilWindowCloses(Suppressed.BufferConfig.unbounded()).withName("sup"))
                .toStream()
                .map((k, v) -> KeyValue.pair(k.key() + "@" + k.window().start(), String.valueOf(v)))
                .to("out", Produced.with(Serdes.String(), Serdes.String()));
        } else {
            builder.table("in", Consumed.with(Serdes.String(), Serdes.String()), Materialized.as("latest"))
                .suppress(Suppressed.untilTimeLimit(Duration.ofMillis(7), Suppressed.BufferConfig.unbounded())
                    .withName("sup"))
                .toStream()
                .to("out", Produced.with(Serdes.String(), Serdes.String()));
        }
        try (TopologyTestDriver driver = new TopologyTestDriver(builder.build(), props, Instant.ofEpochMilli(0))) {
            final TestInputTopic<String, String> input = driver.createInputTopic("in", Serdes.String().serializer(),
                Serdes.String().serializer());
            for (int i = 2; i < words.length; i++) {
                final String[] parts = words[i].split(",");
                final RecordHeaders hs = new RecordHeaders();
                if (parts.length > 3) {
                    hs.add("h", parts[3].getBytes(StandardCharsets.UTF_8));
                }
                final String value = parts[1].equals("null") ? null : parts[1];
                input.pipeInput(new TestRecord<>(parts[0], value, hs, Long.parseLong(parts[2])));
            }
            final TestOutputTopic<byte[], byte[]> changelog = driver.createOutputTopic("sup-sup-store-changelog",
                Serdes.ByteArray().deserializer(), Serdes.ByteArray().deserializer());
            for (final TestRecord<byte[], byte[]> r : changelog.readRecordsToList()) {
                System.out.println(label + " cl " + HEX.formatHex(r.key()) + " "
                    + (r.value() == null ? "null" : HEX.formatHex(r.value())) + " " + headers(r.headers()));
            }
            final TestOutputTopic<String, String> out = driver.createOutputTopic("out", Serdes.String().deserializer(),
                Serdes.String().deserializer());
            for (final TestRecord<String, String> r : out.readRecordsToList()) {
                System.out.println(label + " out " + r.key() + " " + r.value() + " " + r.timestamp());
            }
        }
    }
}
