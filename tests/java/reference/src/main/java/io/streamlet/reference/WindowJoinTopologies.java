package io.streamlet.reference;

import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.function.Supplier;

import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.utils.Bytes;
import org.apache.kafka.streams.KeyValue;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.Topology;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.KStream;
import org.apache.kafka.streams.kstream.KTable;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.Produced;
import org.apache.kafka.streams.kstream.TimeWindows;
import org.apache.kafka.streams.state.KeyValueStore;
import org.apache.kafka.streams.state.WindowStore;

/**
 * Reference topologies with time windows and stream-table joins (tests/dsl/window_join_topologies.py
 * builds the same ones with streamlet). Windowed keys are mapped to "key@start/end" strings so that
 * the behaviour scenarios can compare them as plain String keys.
 */
public final class WindowJoinTopologies {

    private WindowJoinTopologies() {
    }

    static Map<String, Supplier<Topology>> topologies() {
        final Map<String, Supplier<Topology>> all = new LinkedHashMap<>();
        all.put("windowed_count_tumbling", WindowJoinTopologies::windowedCountTumbling);
        all.put("windowed_reduce_hopping_grace", WindowJoinTopologies::windowedReduceHoppingGrace);
        all.put("windowed_aggregate_after_map", WindowJoinTopologies::windowedAggregateAfterMap);
        all.put("stream_table_join", WindowJoinTopologies::streamTableJoin);
        all.put("stream_table_left_join_unmaterialized", WindowJoinTopologies::streamTableLeftJoinUnmaterialized);
        all.put("stream_table_join_after_select_key", WindowJoinTopologies::streamTableJoinAfterSelectKey);
        return all;
    }

    static String join(final String left, final String right) {
        return left + "+" + (right == null ? "-" : right);
    }

    static Topology windowedCountTumbling() {
        final StreamsBuilder builder = new StreamsBuilder();
        final KStream<String, String> input = builder.stream("input");
        input.groupByKey()
            .windowedBy(TimeWindows.ofSizeWithNoGrace(Duration.ofMillis(10)))
            .count(Materialized.<String, Long, WindowStore<Bytes, byte[]>>as("counts"))
            .toStream()
            .map((k, v) -> KeyValue.pair(k.key() + "@" + k.window().start() + "/" + k.window().end(), v))
            .to("output", Produced.with(Serdes.String(), Serdes.Long()));
        return builder.build();
    }

    static Topology windowedReduceHoppingGrace() {
        final StreamsBuilder builder = new StreamsBuilder();
        final KStream<String, String> input = builder.stream("input");
        input.groupByKey()
            .windowedBy(TimeWindows.ofSizeAndGrace(Duration.ofMillis(10), Duration.ofMillis(5))
                .advanceBy(Duration.ofMillis(5)))
            .reduce((a, b) -> a + b)
            .toStream()
            .map((k, v) -> KeyValue.pair(k.key() + "@" + k.window().start() + "/" + k.window().end(), v))
            .to("output", Produced.with(Serdes.String(), Serdes.String()));
        return builder.build();
    }

    static Topology windowedAggregateAfterMap() {
        final StreamsBuilder builder = new StreamsBuilder();
        final KStream<String, String> input = builder.stream("input");
        input.map((k, v) -> KeyValue.pair(v, k))
            .groupByKey()
            .windowedBy(TimeWindows.ofSizeWithNoGrace(Duration.ofMillis(100)))
            .aggregate(() -> "", (k, v, agg) -> agg + v,
                Materialized.with(Serdes.String(), Serdes.String()))
            .toStream()
            .map((k, v) -> KeyValue.pair(k.key() + "@" + k.window().start() + "/" + k.window().end(), v))
            .to("output", Produced.with(Serdes.String(), Serdes.String()));
        return builder.build();
    }

    static Topology streamTableJoin() {
        final StreamsBuilder builder = new StreamsBuilder();
        final KTable<String, String> table = builder.table("table-input", Consumed.with(Serdes.String(), Serdes.String()),
            Materialized.<String, String, KeyValueStore<Bytes, byte[]>>as("table-store"));
        final KStream<String, String> input = builder.stream("input");
        input.join(table, WindowJoinTopologies::join).to("output");
        return builder.build();
    }

    static Topology streamTableLeftJoinUnmaterialized() {
        final StreamsBuilder builder = new StreamsBuilder();
        final KStream<String, String> input = builder.stream("input");
        final KTable<String, String> table = builder.table("table-input");
        input.leftJoin(table, WindowJoinTopologies::join).to("output");
        return builder.build();
    }

    static Topology streamTableJoinAfterSelectKey() {
        final StreamsBuilder builder = new StreamsBuilder();
        final KTable<String, String> table = builder.table("table-input");
        final KStream<String, String> input = builder.stream("input");
        input.selectKey((k, v) -> v)
            .join(table, WindowJoinTopologies::join)
            .to("output");
        return builder.build();
    }
}
