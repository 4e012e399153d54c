package io.streamlet.interop;

import java.time.Duration;
import java.util.Arrays;
import java.util.Locale;
import java.util.Map;
import java.util.Properties;

import org.apache.kafka.common.serialization.Serde;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.utils.Bytes;
import org.apache.kafka.streams.KeyValue;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.Topology;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.EmitStrategy;
import org.apache.kafka.streams.kstream.JoinWindows;
import org.apache.kafka.streams.kstream.KStream;
import org.apache.kafka.streams.kstream.KTable;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.Produced;
import org.apache.kafka.streams.kstream.SessionWindows;
import org.apache.kafka.streams.kstream.StreamJoined;
import org.apache.kafka.streams.kstream.TableJoined;
import org.apache.kafka.streams.kstream.TimeWindows;
import org.apache.kafka.streams.kstream.Windowed;
import org.apache.kafka.streams.state.KeyValueStore;
import org.apache.kafka.streams.state.SessionStore;
import org.apache.kafka.streams.state.WindowStore;

/**
 * The topologies the interop tests move between Kafka Streams and streamlet. Each has a twin in
 * tests/interop/apps.py that must describe() the same (same node, store and internal topic names).
 */
final class Apps {
    private Apps() {
    }

    static Topology build(final String app, final Map<String, String> topics, final Properties props) {
        final StreamsBuilder builder = new StreamsBuilder();
        switch (app) {
            case "wordcount" -> wordCount(builder, topics);
            case "operators" -> operators(builder, topics);
            case "customer-totals" -> AvroApps.customerTotals(builder, topics, props);
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

    private static final Serde<String> S = Serdes.String();

    private static KeyValue<String, String> windowKey(final Windowed<String> key, final Long count) {
        return KeyValue.pair(key.key() + "@" + key.window().start() + "-" + key.window().end(),
            count == null ? null : count.toString());
    }

    /**
     * Four stateful operators, each in sub-topologies of its own: a tumbling-window count emitted on
     * window close, a session-window count, a stream-stream inner join and a foreign-key table join.
     * The window store keeps 30 minutes (not size + grace): closed windows stay in it, so an instance
     * that does not know which it already emitted (the commit metadata) would emit them again.
     * Stores and internal topics are named, as a Kafka Streams application that wants to be
     * upgraded safely names them.
     */
    private static void operators(final StreamsBuilder builder, final Map<String, String> topics) {
        builder.stream(topics.get("win-in"), Consumed.with(S, S))
            .groupByKey()
            .windowedBy(TimeWindows.ofSizeAndGrace(Duration.ofSeconds(10), Duration.ofSeconds(1)))
            .emitStrategy(EmitStrategy.onWindowClose())
            .count(Materialized.<String, Long, WindowStore<Bytes, byte[]>>as("window-counts")
                .withRetention(Duration.ofMinutes(30)))
            .toStream()
            .map(Apps::windowKey)
            .to(topics.get("win-out"), Produced.with(S, S));

        builder.stream(topics.get("sess-in"), Consumed.with(S, S))
            .groupByKey()
            .windowedBy(SessionWindows.ofInactivityGapAndGrace(Duration.ofSeconds(5), Duration.ofSeconds(1)))
            .count(Materialized.<String, Long, SessionStore<Bytes, byte[]>>as("session-counts"))
            .toStream()
            .map(Apps::windowKey)
            .to(topics.get("sess-out"), Produced.with(S, S));

        final KStream<String, String> clicks = builder.stream(topics.get("join-left"), Consumed.with(S, S));
        final KStream<String, String> views = builder.stream(topics.get("join-right"), Consumed.with(S, S));
        clicks.join(views, (click, view) -> click + "+" + view,
                JoinWindows.ofTimeDifferenceAndGrace(Duration.ofSeconds(5), Duration.ofMinutes(30)),
                StreamJoined.with(S, S, S).withStoreName("clicks-views"))
            .to(topics.get("join-out"), Produced.with(S, S));

        final KTable<String, String> orders = builder.table(topics.get("fk-orders"), Consumed.with(S, S),
            Materialized.<String, String, KeyValueStore<Bytes, byte[]>>as("orders-store"));
        final KTable<String, String> products = builder.table(topics.get("fk-products"), Consumed.with(S, S),
            Materialized.<String, String, KeyValueStore<Bytes, byte[]>>as("products-store"));
        orders.join(products, (String order) -> order.split(":")[0], (order, product) -> order + "/" + product,
                TableJoined.as("order-product"),
                Materialized.<String, String, KeyValueStore<Bytes, byte[]>>as("order-product-store"))
            .toStream()
            .to(topics.get("fk-out"), Produced.with(S, S));
    }
}
