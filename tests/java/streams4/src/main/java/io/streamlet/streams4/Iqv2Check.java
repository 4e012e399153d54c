package io.streamlet.streams4;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.TreeMap;

import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.KeyValue;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.Topology;
import org.apache.kafka.streams.kstream.Windowed;
import org.apache.kafka.streams.kstream.internals.SessionWindow;
import org.apache.kafka.streams.processor.api.Processor;
import org.apache.kafka.streams.processor.api.ProcessorContext;
import org.apache.kafka.streams.processor.api.ReadOnlyRecord;
import org.apache.kafka.streams.processor.api.Record;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.streams.query.KeyQuery;
import org.apache.kafka.streams.query.MultiVersionedKeyQuery;
import org.apache.kafka.streams.query.Position;
import org.apache.kafka.streams.query.PositionBound;
import org.apache.kafka.streams.query.Query;
import org.apache.kafka.streams.query.QueryResult;
import org.apache.kafka.streams.query.RangeQuery;
import org.apache.kafka.streams.query.StateQueryRequest;
import org.apache.kafka.streams.query.StateQueryResult;
import org.apache.kafka.streams.query.TimestampedKeyQuery;
import org.apache.kafka.streams.query.TimestampedKeyWithHeadersQuery;
import org.apache.kafka.streams.query.TimestampedRangeQuery;
import org.apache.kafka.streams.query.TimestampedRangeWithHeadersQuery;
import org.apache.kafka.streams.query.TimestampedWindowKeyWithHeadersQuery;
import org.apache.kafka.streams.query.TimestampedWindowRangeWithHeadersQuery;
import org.apache.kafka.streams.query.VersionedKeyQuery;
import org.apache.kafka.streams.query.WindowKeyQuery;
import org.apache.kafka.streams.query.WindowRangeQuery;
import org.apache.kafka.streams.state.AggregationWithHeaders;
import org.apache.kafka.streams.state.KeyValueIterator;
import org.apache.kafka.streams.state.KeyValueStore;
import org.apache.kafka.streams.state.ReadOnlyRecordIterator;
import org.apache.kafka.streams.state.SessionStoreWithHeaders;
import org.apache.kafka.streams.state.Stores;
import org.apache.kafka.streams.state.TimestampedKeyValueStore;
import org.apache.kafka.streams.state.TimestampedKeyValueStoreWithHeaders;
import org.apache.kafka.streams.state.TimestampedWindowStoreWithHeaders;
import org.apache.kafka.streams.state.ValueTimestampHeaders;
import org.apache.kafka.streams.state.ValueAndTimestamp;
import org.apache.kafka.streams.state.VersionedKeyValueStore;
import org.apache.kafka.streams.state.VersionedRecord;
import org.apache.kafka.streams.state.VersionedRecordIterator;
import org.apache.kafka.streams.state.WindowStore;

/**
 * Kafka Streams 4.4.0's IQv2 answers on a real broker (tests/queries/test_iqv2_java.py runs streamlet's twin).
 * A processor writes every record to five stores: "kv" (key-value), "ts" (timestamped key-value), "hs"
 * (timestamped key-value with headers, KIP-1271: the record's headers kept with the value), "win" (window, 10 s
 * windows), "ver" (versioned), "hw" (timestamped window with headers, 10 s windows, the record's headers kept) and
 * "hss" (session with headers: each record its own session [t - t % 10 s, t] of `AggregationWithHeaders(value, headers)`);
 * a value "DELETE" deletes the key from kv, ts, hs and ver, and a value starting "ver-only" goes to ver alone. Reads from stdin, one a line: the bootstrap servers, the
 * application id, the input topic, the state directory, the last offset of each input partition
 * ("partition:offset" words), then one query a line: "label store TYPE args... [p=0,1] [bound=0:5,1:3] [active]".
 * Once every store has seen the last offsets, prints one JSON object a query (for a query that throws, the
 * exception's class name).
 */
public final class Iqv2Check {
    private Iqv2Check() {
    }

    static final class Writer implements Processor<String, String, Void, Void> {
        private KeyValueStore<String, String> kv;
        private TimestampedKeyValueStore<String, String> ts;
        private TimestampedKeyValueStoreWithHeaders<String, String> hs;
        private WindowStore<String, String> win;
        private VersionedKeyValueStore<String, String> ver;
        private TimestampedWindowStoreWithHeaders<String, String> hw;
        private SessionStoreWithHeaders<String, String> hss;

        @Override
        public void init(final ProcessorContext<Void, Void> context) {
            hw = context.getStateStore("hw");
            hss = context.getStateStore("hss");
            kv = context.getStateStore("kv");
            ts = context.getStateStore("ts");
            hs = context.getStateStore("hs");
            win = context.getStateStore("win");
            ver = context.getStateStore("ver");
        }

        @Override
        public void process(final Record<String, String> record) {
            final String k = record.key();
            final String v = record.value();
            final long t = record.timestamp();
            if ("DELETE".equals(v)) {
                kv.delete(k);
                ts.delete(k);
                hs.delete(k);
                ver.delete(k, t);
                return;
            }
            if (!v.startsWith("ver-only")) {
                kv.put(k, v);
                ts.put(k, ValueAndTimestamp.make(v, t));
                hs.put(k, ValueTimestampHeaders.make(v, t, record.headers()));
                win.put(k, v, t - t % 10_000L);
                hw.put(k, ValueTimestampHeaders.make(v, t, record.headers()), t - t % 10_000L);
                hss.put(new Windowed<>(k, new SessionWindow(t - t % 10_000L, t)), AggregationWithHeaders.make(v, record.headers()));
            }
            ver.put(k, v, t);
        }
    }

    public static void main(final String[] args) throws Exception {
        final BufferedReader in = new BufferedReader(new InputStreamReader(System.in));
        final String bootstrap = in.readLine().trim();
        final String applicationId = in.readLine().trim();
        final String topic = in.readLine().trim();
        final String stateDir = in.readLine().trim();
        final Position end = Position.emptyPosition();
        for (final String word : in.readLine().trim().split(" ")) {
            final String[] pair = word.split(":");
            end.withComponent(topic, Integer.parseInt(pair[0]), Long.parseLong(pair[1]));
        }
        final List<String[]> queries = new ArrayList<>();
        String line;
        while ((line = in.readLine()) != null) {
            if (!line.isBlank()) {
                queries.add(line.trim().split(" "));
            }
        }

        final Topology topology = new Topology();
        topology.addSource("src", Serdes.String().deserializer(), Serdes.String().deserializer(), topic);
        topology.addProcessor("writer", Writer::new, "src");
        topology.addStateStore(Stores.keyValueStoreBuilder(Stores.persistentKeyValueStore("kv"),
            Serdes.String(), Serdes.String()), "writer");
        topology.addStateStore(Stores.timestampedKeyValueStoreBuilder(Stores.persistentTimestampedKeyValueStore("ts"),
            Serdes.String(), Serdes.String()), "writer");
        topology.addStateStore(Stores.timestampedKeyValueStoreWithHeadersBuilder(
            Stores.persistentTimestampedKeyValueStoreWithHeaders("hs"), Serdes.String(), Serdes.String()), "writer");
        topology.addStateStore(Stores.windowStoreBuilder(Stores.persistentWindowStore("win", Duration.ofDays(1),
            Duration.ofSeconds(10), false), Serdes.String(), Serdes.String()), "writer");
        topology.addStateStore(Stores.timestampedWindowStoreWithHeadersBuilder(
            Stores.persistentTimestampedWindowStoreWithHeaders("hw", Duration.ofDays(1), Duration.ofSeconds(10), false),
            Serdes.String(), Serdes.String()), "writer");
        topology.addStateStore(Stores.sessionStoreWithHeadersBuilder(
            Stores.persistentSessionStoreWithHeaders("hss", Duration.ofDays(1)), Serdes.String(), Serdes.String()),
            "writer");
        topology.addStateStore(Stores.versionedKeyValueStoreBuilder(
            Stores.persistentVersionedKeyValueStore("ver", Duration.ofDays(1)), Serdes.String(), Serdes.String()),
            "writer");

        final Properties props = new Properties();
        props.put(StreamsConfig.APPLICATION_ID_CONFIG, applicationId);
        props.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        props.put(StreamsConfig.STATE_DIR_CONFIG, stateDir);
        props.put(StreamsConfig.COMMIT_INTERVAL_MS_CONFIG, 100);
        props.put("consumer.auto.offset.reset", "earliest");
        try (KafkaStreams streams = new KafkaStreams(topology, props)) {
            streams.start();
            final long deadline = System.currentTimeMillis() + 120_000;
            while (true) {  // every record writes ver: once it has seen the last offsets, all is processed
                if (System.currentTimeMillis() > deadline) {
                    throw new IllegalStateException("the stores never reached the input's end");
                }
                if (streams.state() == KafkaStreams.State.RUNNING) {
                    final StateQueryResult<?> caughtUp = streams.query(StateQueryRequest.inStore("ver")
                        .withQuery(VersionedKeyQuery.<String, String>withKey("-")).withPositionBound(PositionBound.at(end)));
                    if (caughtUp.getPartitionResults().size() == end.getPartitionPositions(topic).size()
                        && caughtUp.getPartitionResults().values().stream().allMatch(QueryResult::isSuccess)) {
                        break;
                    }
                }
                Thread.sleep(100);
            }
            for (final String[] words : queries) {
                System.out.println(run(streams, words, topic));
            }
            streams.close(Duration.ofSeconds(30));
        }
    }

    private static String opt(final String word) {
        return "-".equals(word) ? null : word;
    }

    private static Instant time(final String word) {
        return "-".equals(word) ? null : Instant.ofEpochMilli(Long.parseLong(word));
    }

    private static String run(final KafkaStreams streams, final String[] words, final String topic) {
        final String label = words[0];
        final String store = words[1];
        final String type = words[2];
        final List<String> args = new ArrayList<>();
        Set<Integer> partitions = null;
        PositionBound bound = PositionBound.unbounded();
        boolean active = false;
        for (int i = 3; i < words.length; i++) {
            final String w = words[i];
            if (w.startsWith("p=")) {
                partitions = new HashSet<>();
                for (final String p : w.substring(2).split(",")) {
                    partitions.add(Integer.parseInt(p));
                }
            } else if (w.startsWith("bound=")) {
                final Position position = Position.emptyPosition();
                for (final String pair : w.substring(6).split(",")) {
                    final String[] po = pair.split(":");
                    position.withComponent(topic, Integer.parseInt(po[0]), Long.parseLong(po[1]));
                }
                bound = PositionBound.at(position);
            } else if ("active".equals(w)) {
                active = true;
            } else {
                args.add(w);
            }
        }
        final Query<?> query;
        switch (type) {
            case "KEY": query = KeyQuery.withKey(args.get(0)); break;
            case "TKEY": query = TimestampedKeyQuery.withKey(args.get(0)); break;
            case "RANGE": query = range(args, false); break;
            case "RANGE_DESC": query = range(args, true); break;
            case "TRANGE": query = trange(args, false); break;
            case "TRANGE_DESC": query = trange(args, true); break;
            case "HKEY": query = TimestampedKeyWithHeadersQuery.withKey(args.get(0)); break;
            case "HRANGE": query = hrange(args, false); break;
            case "HRANGE_DESC": query = hrange(args, true); break;
            case "WKEY": query = WindowKeyQuery.withKeyAndWindowStartRange(args.get(0), time(args.get(1)),
                time(args.get(2))); break;
            case "WRANGE": query = WindowRangeQuery.withWindowStartRange(time(args.get(0)), time(args.get(1))); break;
            case "WRANGE_KEY": query = WindowRangeQuery.withKey(args.get(0)); break;
            case "HWKEY": query = TimestampedWindowKeyWithHeadersQuery.withKeyAndWindowStartRange(args.get(0),
                time(args.get(1)), time(args.get(2))); break;
            case "HWRANGE": query = TimestampedWindowRangeWithHeadersQuery.withWindowStartRange(time(args.get(0)),
                time(args.get(1))); break;
            case "HWRANGE_KEY": query = TimestampedWindowRangeWithHeadersQuery.withKey(args.get(0)); break;
            case "VKEY": query = args.size() > 1 ? VersionedKeyQuery.withKey(args.get(0)).asOf(time(args.get(1)))
                : VersionedKeyQuery.withKey(args.get(0)); break;
            case "MVKEY": {
                MultiVersionedKeyQuery<String, String> q = MultiVersionedKeyQuery.withKey(args.get(0));
                if (time(args.get(1)) != null) {
                    q = q.fromTime(time(args.get(1)));
                }
                if (time(args.get(2)) != null) {
                    q = q.toTime(time(args.get(2)));
                }
                if ("ASC".equals(args.get(3))) {
                    q = q.withAscendingTimestamps();
                } else if ("DESC".equals(args.get(3))) {
                    q = q.withDescendingTimestamps();
                }
                query = q;
                break;
            }
            default: throw new IllegalArgumentException(type);
        }
        StateQueryRequest<?> request = StateQueryRequest.inStore(store).withQuery(query).withPositionBound(bound);
        if (partitions != null) {
            request = request.withPartitions(partitions);
        }
        if (active) {
            request = request.requireActive();
        }
        final StateQueryResult<?> result;
        try {
            result = streams.query(request);
        } catch (final RuntimeException e) {
            return "{\"label\": \"" + label + "\", \"exception\": \"" + e.getClass().getSimpleName() + "\"}";
        }
        final StringBuilder out = new StringBuilder("{\"label\": \"" + label + "\", \"global\": ");
        out.append(result.getGlobalResult() == null ? "null" : result(result.getGlobalResult()));
        out.append(", \"partitions\": {");
        final Map<Integer, String> byPartition = new TreeMap<>();
        for (final Map.Entry<Integer, ? extends QueryResult<?>> e : result.getPartitionResults().entrySet()) {
            byPartition.put(e.getKey(), result(e.getValue()));
        }
        boolean first = true;
        for (final Map.Entry<Integer, String> e : byPartition.entrySet()) {
            out.append(first ? "" : ", ").append('"').append(e.getKey()).append("\": ").append(e.getValue());
            first = false;
        }
        return out.append("}, \"position\": ").append(position(result.getPosition())).append('}').toString();
    }

    private static Query<?> range(final List<String> args, final boolean descending) {
        final String lo = opt(args.get(0));
        final String hi = opt(args.get(1));
        RangeQuery<String, String> q = lo == null && hi == null ? RangeQuery.withNoBounds()
            : lo == null ? RangeQuery.withUpperBound(hi) : hi == null ? RangeQuery.withLowerBound(lo)
            : RangeQuery.withRange(lo, hi);
        return descending ? q.withDescendingKeys() : q;
    }

    private static Query<?> trange(final List<String> args, final boolean descending) {
        final String lo = opt(args.get(0));
        final String hi = opt(args.get(1));
        TimestampedRangeQuery<String, String> q = lo == null && hi == null ? TimestampedRangeQuery.withNoBounds()
            : lo == null ? TimestampedRangeQuery.withUpperBound(hi) : hi == null
            ? TimestampedRangeQuery.withLowerBound(lo) : TimestampedRangeQuery.withRange(lo, hi);
        return descending ? q.withDescendingKeys() : q;
    }

    private static Query<?> hrange(final List<String> args, final boolean descending) {
        final String lo = opt(args.get(0));
        final String hi = opt(args.get(1));
        TimestampedRangeWithHeadersQuery<String, String> q = lo == null && hi == null
            ? TimestampedRangeWithHeadersQuery.withNoBounds() : lo == null
            ? TimestampedRangeWithHeadersQuery.withUpperBound(hi) : hi == null
            ? TimestampedRangeWithHeadersQuery.withLowerBound(lo) : TimestampedRangeWithHeadersQuery.withRange(lo, hi);
        return descending ? q.withDescendingKeys() : q;
    }

    private static String result(final QueryResult<?> r) {
        final String position = position(r.getPosition());
        if (r.isFailure()) {
            return "{\"ok\": false, \"reason\": \"" + r.getFailureReason().name() + "\", \"position\": " + position + "}";
        }
        return "{\"ok\": true, \"result\": " + json(r.getResult()) + ", \"position\": " + position + "}";
    }

    private static String position(final Position p) {
        if (p == null) {
            return "null";
        }
        final StringBuilder out = new StringBuilder("{");
        boolean first = true;
        for (final String topic : new java.util.TreeSet<>(p.getTopics())) {
            out.append(first ? "" : ", ").append('"').append(topic).append("\": {");
            boolean firstPartition = true;
            for (final Map.Entry<Integer, Long> e : new TreeMap<>(p.getPartitionPositions(topic)).entrySet()) {
                out.append(firstPartition ? "" : ", ").append('"').append(e.getKey()).append("\": ").append(e.getValue());
                firstPartition = false;
            }
            out.append('}');
            first = false;
        }
        return out.append('}').toString();
    }

    private static String json(final Object o) {
        if (o == null) {
            return "null";
        }
        if (o instanceof String) {
            return "\"" + o + "\"";
        }
        if (o instanceof Number) {
            return o.toString();
        }
        if (o instanceof ValueAndTimestamp) {
            final ValueAndTimestamp<?> vt = (ValueAndTimestamp<?>) o;
            return "{\"value\": " + json(vt.value()) + ", \"timestamp\": " + vt.timestamp() + "}";
        }
        if (o instanceof ReadOnlyRecord) {  // headers as [name, UTF-8 text or null]
            final ReadOnlyRecord<?, ?> r = (ReadOnlyRecord<?, ?>) o;
            final List<String> hs = new ArrayList<>();
            for (final Header h : r.headers()) {
                hs.add("[" + json(h.key()) + ", "
                    + (h.value() == null ? "null" : json(new String(h.value(), java.nio.charset.StandardCharsets.UTF_8)))
                    + "]");
            }
            return "{\"key\": " + json(r.key()) + ", \"value\": " + json(r.value()) + ", \"timestamp\": "
                + r.timestamp() + ", \"headers\": [" + String.join(", ", hs) + "]}";
        }
        if (o instanceof ReadOnlyRecordIterator) {
            final List<String> items = new ArrayList<>();
            try (ReadOnlyRecordIterator<?, ?> it = (ReadOnlyRecordIterator<?, ?>) o) {
                it.forEachRemaining(r -> items.add(json(r)));
            }
            return "[" + String.join(", ", items) + "]";
        }
        if (o instanceof AggregationWithHeaders) {  // headers as in a ReadOnlyRecord
            final AggregationWithHeaders<?> a = (AggregationWithHeaders<?>) o;
            final List<String> hs = new ArrayList<>();
            for (final Header h : a.headers()) {
                hs.add("[" + json(h.key()) + ", "
                    + (h.value() == null ? "null" : json(new String(h.value(), java.nio.charset.StandardCharsets.UTF_8)))
                    + "]");
            }
            return "{\"aggregation\": " + json(a.aggregation()) + ", \"headers\": [" + String.join(", ", hs) + "]}";
        }
        if (o instanceof ValueTimestampHeaders) {
            final ValueTimestampHeaders<?> v = (ValueTimestampHeaders<?>) o;
            return "{\"value_timestamp_headers\": " + json(v.value()) + "}";
        }
        if (o instanceof Windowed) {
            final Windowed<?> w = (Windowed<?>) o;
            return "{\"key\": " + json(w.key()) + ", \"start\": " + w.window().start() + ", \"end\": "
                + w.window().end() + "}";
        }
        if (o instanceof VersionedRecord) {
            final VersionedRecord<?> v = (VersionedRecord<?>) o;
            return "{\"value\": " + json(v.value()) + ", \"timestamp\": " + v.timestamp() + ", \"valid_to\": "
                + (v.validTo().isPresent() ? v.validTo().get().toString() : "null") + "}";
        }
        if (o instanceof VersionedRecordIterator) {
            final List<String> items = new ArrayList<>();
            try (VersionedRecordIterator<?> it = (VersionedRecordIterator<?>) o) {
                it.forEachRemaining(v -> items.add(json(v)));
            }
            return "[" + String.join(", ", items) + "]";
        }
        if (o instanceof KeyValueIterator) {
            final List<String> items = new ArrayList<>();
            try (KeyValueIterator<?, ?> it = (KeyValueIterator<?, ?>) o) {
                while (it.hasNext()) {
                    final KeyValue<?, ?> kv = it.next();
                    items.add("[" + json(kv.key) + ", " + json(kv.value) + "]");
                }
            }
            return "[" + String.join(", ", items) + "]";
        }
        throw new IllegalArgumentException("cannot print " + o.getClass());
    }
}
