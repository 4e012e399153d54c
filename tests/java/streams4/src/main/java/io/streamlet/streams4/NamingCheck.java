package io.streamlet.streams4;

import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Properties;
import java.util.function.Consumer;

import org.apache.kafka.common.utils.Bytes;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.TopologyConfig;
import org.apache.kafka.streams.kstream.Grouped;
import org.apache.kafka.streams.kstream.JoinWindows;
import org.apache.kafka.streams.kstream.KStream;
import org.apache.kafka.streams.kstream.KTable;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.Repartitioned;
import org.apache.kafka.streams.kstream.SessionWindows;
import org.apache.kafka.streams.kstream.SlidingWindows;
import org.apache.kafka.streams.kstream.StreamJoined;
import org.apache.kafka.streams.kstream.Suppressed;
import org.apache.kafka.streams.kstream.TableJoined;
import org.apache.kafka.streams.kstream.TimeWindows;
import org.apache.kafka.streams.state.KeyValueStore;

/**
 * Builds each labelled topology with ensure.explicit.internal.resource.naming=true and prints one line per
 * topology: the label, a tab, and "OK" or the TopologyException's message with its newlines as "\n".
 * tests/dsl/test_explicit_naming.py builds the same topologies (same labels) with streamlet.
 */
public final class NamingCheck {
    private static final Map<String, Consumer<StreamsBuilder>> CASES = new LinkedHashMap<>();

    private static void add(final String label, final Consumer<StreamsBuilder> topology) {
        CASES.put(label, topology);
    }

    private static KStream<String, String> in(final StreamsBuilder b) {
        return b.stream("in");
    }

    private static KTable<String, String> table(final StreamsBuilder b, final String topic, final String store) {
        return b.table(topic, Materialized.<String, String, KeyValueStore<Bytes, byte[]>>as(store));
    }

    private static Materialized<String, Long, KeyValueStore<Bytes, byte[]>> countStore() {
        return Materialized.with(null, null);
    }

    static {
        add("count", b -> in(b).groupByKey().count());
        add("count_named", b -> in(b).groupByKey().count(Materialized.as("c")));
        add("count_serdes_only", b -> in(b).groupByKey().count(countStore()));
        add("count_unlogged", b -> in(b).groupByKey().count(countStore().withLoggingDisabled()));
        add("reduce", b -> in(b).groupByKey().reduce((x, y) -> x));
        add("aggregate", b -> in(b).groupByKey().aggregate(() -> "", (k, v, a) -> a));
        add("select_key_count", b -> in(b).selectKey((k, v) -> v).groupByKey().count());
        add("select_key_count_named", b -> in(b).selectKey((k, v) -> v).groupByKey(Grouped.as("g"))
            .count(Materialized.as("c")));
        add("select_key_count_store_named", b -> in(b).selectKey((k, v) -> v).groupByKey().count(Materialized.as("c")));
        add("group_by_grouped_named", b -> in(b).groupBy((k, v) -> v, Grouped.as("g")).count());
        add("two_counts", b -> {
            in(b).groupByKey().count();
            b.<String, String>stream("in2").selectKey((k, v) -> v).groupByKey().count();
        });
        add("windowed_count", b -> in(b).groupByKey().windowedBy(TimeWindows.ofSizeWithNoGrace(Duration.ofSeconds(10)))
            .count());
        add("session_count", b -> in(b).groupByKey()
            .windowedBy(SessionWindows.ofInactivityGapWithNoGrace(Duration.ofSeconds(10))).count());
        add("sliding_count", b -> in(b).groupByKey()
            .windowedBy(SlidingWindows.ofTimeDifferenceWithNoGrace(Duration.ofSeconds(10))).count());
        add("cogroup", b -> in(b).groupByKey().<String>cogroup((k, v, a) -> a).aggregate(() -> ""));
        add("table", b -> b.table("t").toStream().to("out"));
        add("table_named", b -> b.table("t", Materialized.as("ts")).toStream().to("out"));
        add("global_table", b -> b.globalTable("g"));
        add("to_table", b -> in(b).toTable().toStream().to("out"));
        add("table_join", b -> b.table("t1", Materialized.as("a")).join(b.table("t2", Materialized.as("b")),
            (x, y) -> x).toStream().to("out"));
        add("table_join_serdes_only", b -> b.table("t1", Materialized.as("a")).join(
            b.table("t2", Materialized.as("b")), (x, y) -> x, Materialized.with(null, null)).toStream().to("out"));
        add("table_left_join_named", b -> b.table("t1", Materialized.as("a")).leftJoin(
            b.table("t2", Materialized.as("b")), (x, y) -> x, Materialized.as("j")).toStream().to("out"));
        add("table_filter_map_values", b -> b.table("t1", Materialized.as("a")).filter((k, v) -> true)
            .mapValues(v -> v, Materialized.with(null, null)).toStream().to("out"));
        add("fk_join", b -> table(b, "t1", "a").join(table(b, "t2", "b"), (String v) -> v, (x, y) -> x)
            .toStream().to("out"));
        add("fk_join_named", b -> table(b, "t1", "a").join(table(b, "t2", "b"), (String v) -> v, (x, y) -> x,
            TableJoined.as("fk"), Materialized.as("r")).toStream().to("out"));
        add("table_group_by", b -> b.table("t1", Materialized.as("a")).groupBy((k, v) -> org.apache.kafka.streams.KeyValue
            .pair(v, v)).count());
        add("stream_join", b -> in(b).join(b.<String, String>stream("in2"), (x, y) -> x,
            JoinWindows.ofTimeDifferenceWithNoGrace(Duration.ofSeconds(1))).to("out"));
        add("stream_join_store_named", b -> in(b).join(b.<String, String>stream("in2"), (x, y) -> x,
            JoinWindows.ofTimeDifferenceWithNoGrace(Duration.ofSeconds(1)), StreamJoined.as("j")).to("out"));
        add("stream_join_processor_named", b -> in(b).join(b.<String, String>stream("in2"), (x, y) -> x,
            JoinWindows.ofTimeDifferenceWithNoGrace(Duration.ofSeconds(1)),
            StreamJoined.<String, String, String>with(null, null, null).withName("n")).to("out"));
        add("stream_join_unlogged", b -> in(b).join(b.<String, String>stream("in2"), (x, y) -> x,
            JoinWindows.ofTimeDifferenceWithNoGrace(Duration.ofSeconds(1)),
            StreamJoined.<String, String, String>with(null, null, null).withLoggingDisabled()).to("out"));
        add("stream_left_join", b -> in(b).leftJoin(b.<String, String>stream("in2"), (x, y) -> x,
            JoinWindows.ofTimeDifferenceWithNoGrace(Duration.ofSeconds(1))).to("out"));
        add("stream_outer_join", b -> in(b).outerJoin(b.<String, String>stream("in2"), (x, y) -> x,
            JoinWindows.ofTimeDifferenceWithNoGrace(Duration.ofSeconds(1))).to("out"));
        add("stream_join_repartition", b -> in(b).selectKey((k, v) -> v).join(b.<String, String>stream("in2"),
            (x, y) -> x, JoinWindows.ofTimeDifferenceWithNoGrace(Duration.ofSeconds(1)), StreamJoined.as("j")).to("out"));
        add("stream_join_repartition_named", b -> in(b).selectKey((k, v) -> v).join(b.<String, String>stream("in2"),
            (x, y) -> x, JoinWindows.ofTimeDifferenceWithNoGrace(Duration.ofSeconds(1)),
            StreamJoined.<String, String, String>as("j").withName("n")).to("out"));
        add("stream_table_join_repartition_named", b -> in(b).selectKey((k, v) -> v)
            .join(b.table("t", Materialized.as("ts")), (x, y) -> x,
                org.apache.kafka.streams.kstream.Joined.<String, String, String>as("jj")).to("out"));
        add("stream_table_join", b -> in(b).join(b.table("t", Materialized.as("ts")), (x, y) -> x).to("out"));
        add("stream_table_join_repartition", b -> in(b).selectKey((k, v) -> v)
            .join(b.table("t", Materialized.as("ts")), (x, y) -> x).to("out"));
        add("repartition", b -> in(b).repartition().to("out"));
        add("repartition_serdes_only", b -> in(b).repartition(Repartitioned.with(null, null)).to("out"));
        add("repartition_named", b -> in(b).repartition(Repartitioned.as("r")).to("out"));
        add("suppress", b -> in(b).groupByKey().count(Materialized.as("c"))
            .suppress(Suppressed.untilTimeLimit(Duration.ofSeconds(1), Suppressed.BufferConfig.unbounded()))
            .toStream().to("out"));
        add("suppress_named", b -> in(b).groupByKey().count(Materialized.as("c"))
            .suppress(Suppressed.untilTimeLimit(Duration.ofSeconds(1), Suppressed.BufferConfig.unbounded())
                .withName("s")).toStream().to("out"));
        add("suppress_unlogged", b -> in(b).groupByKey().count(Materialized.as("c"))
            .suppress(Suppressed.untilTimeLimit(Duration.ofSeconds(1), Suppressed.BufferConfig.unbounded()
                .withLoggingDisabled())).toStream().to("out"));
        add("stateless", b -> in(b).filter((k, v) -> true).mapValues(v -> v).to("out"));
    }

    public static void main(final String[] args) {
        final Properties props = new Properties();
        props.put(StreamsConfig.APPLICATION_ID_CONFIG, "naming");
        props.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, "localhost:9");
        props.put("ensure.explicit.internal.resource.naming", "true");
        for (final Map.Entry<String, Consumer<StreamsBuilder>> c : CASES.entrySet()) {
            final StreamsBuilder builder = new StreamsBuilder(new TopologyConfig(new StreamsConfig(props)));
            c.getValue().accept(builder);
            String outcome;
            try {
                builder.build();
                outcome = "OK";
            } catch (final RuntimeException e) {
                outcome = e.getClass().getSimpleName() + ": " + e.getMessage().replace("\n", "\\n");
            }
            System.out.println(c.getKey() + "\t" + outcome);
        }
    }
}
