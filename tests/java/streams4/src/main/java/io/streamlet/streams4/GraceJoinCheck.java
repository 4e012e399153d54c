package io.streamlet.streams4;

import java.time.Duration;
import java.util.HexFormat;
import java.util.Properties;

import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.Serde;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.TestInputTopic;
import org.apache.kafka.streams.TestOutputTopic;
import org.apache.kafka.streams.Topology;
import org.apache.kafka.streams.TopologyTestDriver;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.Joined;
import org.apache.kafka.streams.kstream.KStream;
import org.apache.kafka.streams.kstream.KTable;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.Produced;
import org.apache.kafka.streams.kstream.ValueJoiner;
import org.apache.kafka.streams.state.Stores;
import org.apache.kafka.streams.test.TestRecord;

/**
 * A stream-table join with a grace period (KIP-923) in Kafka Streams' TopologyTestDriver. Each case line on
 * stdin is "label join|left grace history versioned|plain event event ...", an event "s,key,value,ts" (the
 * stream "in") or "t,key,value,ts" (the table "tbl"), value "~" for null. Prints, per case, the topology's
 * description once ("label describe" then its lines), each join result ("label out key value ts") and each
 * record of the buffer's changelog ("label log keyhex valuehex", "null" for a tombstone), or "label error
 * message" when building or starting fails. tests/dsl/test_join_grace_period.py runs the same.
 */
public final class GraceJoinCheck {
    private static final Serde<String> S = Serdes.String();

    public static void main(final String[] args) throws Exception {
        CaseLines.forEach(GraceJoinCheck::run);
    }

    private static void run(final String[] words) {
        final String label = words[0];
        final boolean left = words[1].equals("left");
        final long grace = Long.parseLong(words[2]);
        final long history = Long.parseLong(words[3]);
        final boolean versioned = words[4].equals("versioned");
        final Properties props = new Properties();
        props.put("application.id", "app");
        props.put("bootstrap.servers", "localhost:9");
        props.put("statestore.cache.max.bytes", "0");
        final Topology topology;
        final String joinName;
        try {
            final StreamsBuilder builder = new StreamsBuilder();
            final KTable<String, String> table = versioned
                ? builder.table("tbl", Consumed.with(S, S),
                    Materialized.as(Stores.persistentVersionedKeyValueStore("versions", Duration.ofMillis(history))))
                : builder.table("tbl", Consumed.with(S, S), Materialized.as("plain"));
            final KStream<String, String> stream = builder.stream("in", Consumed.with(S, S));
            final Joined<String, String, String> joined = Joined.<String, String, String>with(S, S, S)
                .withGracePeriod(Duration.ofMillis(grace));
            final ValueJoiner<String, String, String> joiner = (v, t) -> v + "+" + t;
            (left ? stream.leftJoin(table, joiner, joined) : stream.join(table, joiner, joined))
                .to("out", Produced.with(S, S));
            topology = builder.build();
            joinName = left ? "KSTREAM-LEFTJOIN-0000000003" : "KSTREAM-JOIN-0000000003";
        } catch (final RuntimeException e) {
            System.out.println(label + " error " + e.getMessage());
            return;
        }
        System.out.println(label + " describe");
        for (final String line : topology.describe().toString().split("\n")) {
            if (!line.isBlank()) {
                System.out.println(label + " | " + line);
            }
        }
        try (TopologyTestDriver driver = new TopologyTestDriver(topology, props)) {
            final TestInputTopic<String, String> in = driver.createInputTopic("in", S.serializer(), S.serializer());
            final TestInputTopic<String, String> tbl = driver.createInputTopic("tbl", S.serializer(), S.serializer());
            for (int i = 5; i < words.length; i++) {
                final String[] event = words[i].split(",", -1);
                final String value = event[2].equals("~") ? null : event[2];
                final String key = event[1].equals("~") ? null : event[1];
                (event[0].equals("s") ? in : tbl).pipeInput(key, value, Long.parseLong(event[3]));
            }
            final TestOutputTopic<String, String> out = driver.createOutputTopic("out", S.deserializer(),
                S.deserializer());
            for (final TestRecord<String, String> r : out.readRecordsToList()) {
                System.out.println(label + " out " + r.key() + " " + r.value() + " " + r.timestamp());
            }
            final TestOutputTopic<byte[], byte[]> log = driver.createOutputTopic(
                "app-" + joinName + "-Buffer-changelog", new ByteArrayDeserializer(), new ByteArrayDeserializer());
            for (final TestRecord<byte[], byte[]> r : log.readRecordsToList()) {
                System.out.println(label + " log " + HexFormat.of().formatHex(r.key()) + " "
                    + (r.value() == null ? "null" : HexFormat.of().formatHex(r.value())));
            }
        } catch (final RuntimeException e) {
            System.out.println(label + " error " + e.getMessage());
        }
    }
}
