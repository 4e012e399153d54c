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
import org.apache.kafka.streams.kstream.EmitStrategy;
import org.apache.kafka.streams.kstream.Grouped;
import org.apache.kafka.streams.kstream.KGroupedStream;
import org.apache.kafka.streams.kstream.KStream;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.Named;
import org.apache.kafka.streams.kstream.Produced;
import org.apache.kafka.streams.kstream.SessionWindows;
import org.apache.kafka.streams.kstream.SlidingWindows;
import org.apache.kafka.streams.kstream.TimeWindows;
import org.apache.kafka.streams.state.KeyValueStore;
import org.apache.kafka.streams.state.WindowStore;

/**
 * Reference topologies with sliding windows, emit strategies and cogroup (tests/dsl/window_cogroup_topologies.py
 * builds the same ones with streamlet). Windowed keys become "key@start/end" strings, as in WindowJoinTopologies.
 */
public final class WindowCogroupTopologies {

    private WindowCogroupTopologies() {
    }

    static Map<String, Supplier<Topology>> topologies() {
        final Map<String, Supplier<Topology>> all = new LinkedHashMap<>();
        all.put("sliding_count_grace", WindowCogroupTopologies::slidingCountGrace);
        all.put("sliding_reduce_emit_final_after_map", WindowCogroupTopologies::slidingReduceEmitFinalAfterMap);
        all.put("tumbling_count_emit_final", WindowCogroupTopologies::tumblingCountEmitFinal);
        all.put("cogroup_two_streams", WindowCogroupTopologies::cogroupTwoStreams);
        all.put("cogroup_windowed_named", WindowCogroupTopologies::cogroupWindowedNamed);
        all.put("cogroup_session", WindowCogroupTopologies::cogroupSession);
        return all;
    }

    static Topology slidingCountGrace() {
        final StreamsBuilder builder = new StreamsBuilder();
        final KStream<String, String> input = builder.stream("input");
        input.groupByKey()
            .windowedBy(SlidingWindows.ofTimeDifferenceAndGrace(Duration.ofMillis(10), Duration.ofMillis(5)))
            .count(Materialized.<String, Long, WindowStore<Bytes, byte[]>>as("sliding-counts"))
            .toStream()
            .map((k, v) -> KeyValue.pair(k.key() + "@" + k.window().start() + "/" + k.window().end(), v))
            .to("output", Produced.with(Serdes.String(), Serdes.Long()));
        return builder.build();
    }

    static Topology slidingReduceEmitFinalAfterMap() {
        final StreamsBuilder builder = new StreamsBuilder();
        final KStream<String, String> input = builder.stream("input");
        input.map((k, v) -> KeyValue.pair(v.substring(0, 1), v))
            .groupByKey()
            .windowedBy(SlidingWindows.ofTimeDifferenceWithNoGrace(Duration.ofMillis(5)))
            .emitStrategy(EmitStrategy.onWindowClose())
            .reduce((a, b) -> a + b)
            .toStream()
            .map((k, v) -> KeyValue.pair(k.key() + "@" + k.window().start() + "/" + k.window().end(), v))
            .to("output");
        return builder.build();
    }

    static Topology tumblingCountEmitFinal() {
        final StreamsBuilder builder = new StreamsBuilder();
        final KStream<String, String> input = builder.stream("input");
        input.groupByKey()
            .windowedBy(TimeWindows.ofSizeAndGrace(Duration.ofMillis(10), Duration.ofMillis(2)))
            .emitStrategy(EmitStrategy.onWindowClose())
            .count()
            .toStream()
            .map((k, v) -> KeyValue.pair(k.key() + "@" + k.window().start() + "/" + k.window().end(), v))
            .to("output", Produced.with(Serdes.String(), Serdes.Long()));
        return builder.build();
    }

    static Topology cogroupTwoStreams() {
        final StreamsBuilder builder = new StreamsBuilder();
        final KGroupedStream<String, String> left = builder.<String, String>stream("input").groupByKey();
        final KGroupedStream<String, String> right = builder.<String, String>stream("input2")
            .groupBy((k, v) -> v.substring(0, 1), Grouped.as("by-first"));
        left.cogroup((String k, String v, String agg) -> agg + "+" + v)
            .cogroup(right, (k, v, agg) -> agg + "-" + v)
            .aggregate(() -> "", Materialized.<String, String, KeyValueStore<Bytes, byte[]>>as("cogrouped"))
            .toStream()
            .to("output");
        return builder.build();
    }

    static Topology cogroupWindowedNamed() {
        final StreamsBuilder builder = new StreamsBuilder();
        final KGroupedStream<String, String> left = builder.<String, String>stream("input").groupByKey();
        final KGroupedStream<String, String> right = builder.<String, String>stream("input2").groupByKey();
        left.cogroup((String k, String v, String agg) -> agg + "+" + v)
            .cogroup(right, (k, v, agg) -> agg + "-" + v)
            .windowedBy(TimeWindows.ofSizeWithNoGrace(Duration.ofMillis(10)))
            .aggregate(() -> "", Named.as("cg"))
            .toStream()
            .map((k, v) -> KeyValue.pair(k.key() + "@" + k.window().start() + "/" + k.window().end(), v))
            .to("output");
        return builder.build();
    }

    static Topology cogroupSession() {
        final StreamsBuilder builder = new StreamsBuilder();
        final KGroupedStream<String, String> left = builder.<String, String>stream("input").groupByKey();
        final KGroupedStream<String, String> right = builder.<String, String>stream("input2").groupByKey();
        left.cogroup((String k, String v, String agg) -> agg + "+" + v)
            .cogroup(right, (k, v, agg) -> agg + "-" + v)
            .windowedBy(SessionWindows.ofInactivityGapAndGrace(Duration.ofMillis(5), Duration.ofMillis(3)))
            .aggregate(() -> "", (k, a, b) -> a + "|" + b)
            .toStream()
            .map((k, v) -> KeyValue.pair(k.key() + "@" + k.window().start() + "/" + k.window().end(), v))
            .to("output");
        return builder.build();
    }
}
