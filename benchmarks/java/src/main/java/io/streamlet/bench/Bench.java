package io.streamlet.bench;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.CountDownLatch;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;

import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.utils.Bytes;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.KeyValue;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.Topology;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.Grouped;
import org.apache.kafka.streams.kstream.JoinWindows;
import org.apache.kafka.streams.kstream.KStream;
import org.apache.kafka.streams.kstream.KTable;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.Produced;
import org.apache.kafka.streams.kstream.SessionWindows;
import org.apache.kafka.streams.kstream.StreamJoined;
import org.apache.kafka.streams.kstream.Suppressed;
import org.apache.kafka.streams.kstream.TimeWindows;
import org.apache.kafka.streams.kstream.Windowed;
import org.apache.kafka.streams.processor.StateRestoreListener;
import org.apache.kafka.streams.state.KeyValueStore;

/**
 * Kafka Streams' side of the benchmark: the workloads of benchmarks/workloads.py as topologies, with the
 * command line of benchmarks/systems.py:
 *
 *   --workload W --bootstrap B --app-id A --input T --output O --guarantee G --commit-ms N --state-dir D [--table T2]
 *   [--registry URL] [--threads N]
 *   [--props k=v,k=v]   (further StreamsConfig settings, e.g. session.timeout.ms=6000 for benchmarks/eos_recovery.py)
 *
 * One stream thread (--threads N for more), default caching, earliest offsets; runs until SIGTERM (a shutdown hook closes it).
 * Prints "bench-mark ..." lines (state changes, restore start and end, with epoch ms) for benchmarks/restore.py.
 */
public final class Bench {
    static final ObjectMapper JSON = new ObjectMapper();

    public static void main(String[] argv) throws InterruptedException {
        Map<String, String> args = parseArgs(argv);
        String workload = required(args, "workload");
        String appId = required(args, "app-id");

        Properties props = new Properties();
        props.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, required(args, "bootstrap"));
        props.put(StreamsConfig.APPLICATION_ID_CONFIG, appId);
        props.put(StreamsConfig.PROCESSING_GUARANTEE_CONFIG, args.getOrDefault("guarantee", "at_least_once"));
        props.put(StreamsConfig.COMMIT_INTERVAL_MS_CONFIG, args.getOrDefault("commit-ms", "1000"));
        props.put(StreamsConfig.STATE_DIR_CONFIG, required(args, "state-dir"));
        props.put(StreamsConfig.NUM_STREAM_THREADS_CONFIG, Integer.parseInt(args.getOrDefault("threads", "1")));
        props.put(StreamsConfig.consumerPrefix("auto.offset.reset"), "earliest");
        for (String setting : args.getOrDefault("props", "").split(",")) {
            if (!setting.isBlank()) {
                String[] kv = setting.split("=", 2);
                props.put(kv[0].trim(), kv.length > 1 ? kv[1].trim() : "");
            }
        }

        Topology topology = topology(workload, required(args, "input"), required(args, "output"), args.get("table"),
            args.get("registry"));
        KafkaStreams streams = new KafkaStreams(topology, props);
        CountDownLatch done = new CountDownLatch(1);
        streams.setStateListener((now, before) -> {
            mark("state " + now);
            if (now == KafkaStreams.State.ERROR) {
                System.err.println("Kafka Streams went to ERROR; exiting");
                System.err.flush();
                Runtime.getRuntime().halt(1);
            }
        });
        streams.setGlobalStateRestoreListener(new StateRestoreListener() {
            @Override
            public void onRestoreStart(TopicPartition tp, String store, long start, long end) {
                mark("restore-start " + tp + " " + store + " " + start + " " + end);
            }

            @Override
            public void onBatchRestored(TopicPartition tp, String store, long batchEnd, long restored) {
            }

            @Override
            public void onRestoreEnd(TopicPartition tp, String store, long restored) {
                mark("restore-end " + tp + " " + store + " " + restored);
            }
        });
        streams.setUncaughtExceptionHandler(e -> {
            e.printStackTrace();
            return org.apache.kafka.streams.errors.StreamsUncaughtExceptionHandler.StreamThreadExceptionResponse
                .SHUTDOWN_CLIENT;
        });
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            streams.close(Duration.ofSeconds(20));
            done.countDown();
        }));
        streams.start();
        System.out.println("started " + appId + " (" + workload + ")");
        System.out.println(topology.describe());
        System.out.flush();
        done.await();
    }

    /** A machine-readable line for benchmarks/restore.py: what happened, then epoch ms. */
    static synchronized void mark(String what) {
        System.out.println("bench-mark " + what + " " + System.currentTimeMillis());
        System.out.flush();
    }

    static Topology topology(String workload, String input, String output, String table, String registry) {
        StreamsBuilder builder = new StreamsBuilder();
        if (workload.endsWith("_avro") && registry == null) {
            throw new IllegalArgumentException("the Avro workloads need --registry (the schema registry's URL)");
        }
        switch (workload) {
            case "pipe_avro":
                AvroWorkloads.pipe(builder, input, output, registry);
                break;
            case "window_count_avro":
                AvroWorkloads.windowCount(builder, input, output, registry);
                break;
            case "pipe":
                builder.stream(input, Consumed.with(Serdes.Bytes(), Serdes.String()))
                    .mapValues(Bench::parse)
                    .filter((Bytes key, JsonNode ev) -> !"view".equals(ev.get("kind").asText()))
                    .mapValues(ev -> {
                        ObjectNode out = JSON.createObjectNode();
                        out.set("id", ev.get("id"));
                        out.set("user", ev.get("user"));
                        out.put("amount_cents", ev.get("amount").longValue() * 100);
                        return write(out);
                    })
                    .to(output, Produced.with(Serdes.Bytes(), Serdes.String()));
                break;
            case "wordcount_alos":
            case "wordcount_eos":
                builder.stream(input, Consumed.with(Serdes.Bytes(), Serdes.String()))
                    .flatMapValues(Bench::split)
                    .groupBy((Bytes key, String word) -> word, Grouped.with(Serdes.String(), Serdes.String()))
                    .count(Materialized.as("counts-store"))
                    .toStream()
                    .to(output, Produced.with(Serdes.String(), Serdes.Long()));
                break;
            case "window_count":
                windowCount(builder.stream(input, Consumed.with(Serdes.String(), Serdes.Bytes())), output);
                break;
            case "join":
                if (table == null) {
                    throw new IllegalArgumentException("the join workload needs --table");
                }
                KTable<String, String> users = builder.table(table, Consumed.with(Serdes.String(), Serdes.String()),
                    Materialized.as("users"));
                builder.stream(input, Consumed.with(Serdes.String(), Serdes.String()))
                    .join(users, (String event, String user) -> {
                        JsonNode ev = parse(event);
                        ObjectNode out = JSON.createObjectNode();
                        out.set("id", ev.get("id"));
                        out.set("user", ev.get("user"));
                        out.set("amount", ev.get("amount"));
                        out.set("region", parse(user).get("region"));
                        return write(out);
                    })
                    .to(output, Produced.with(Serdes.String(), Serdes.String()));
                break;
            case "session_count":
                // Final session counts per user: 30 s inactivity gap, no grace (benchmarks/workloads.py).
                builder.stream(input, Consumed.with(Serdes.String(), Serdes.Bytes()))
                    .groupByKey()
                    .windowedBy(SessionWindows.ofInactivityGapWithNoGrace(Duration.ofSeconds(30)))
                    .count(Materialized.as("session-counts"))
                    .suppress(Suppressed.untilWindowCloses(Suppressed.BufferConfig.unbounded()))
                    .toStream()
                    .map((Windowed<String> wk, Long count) ->
                        KeyValue.pair(wk.key() + "@" + wk.window().start() + "-" + wk.window().end(), count))
                    .to(output, Produced.with(Serdes.String(), Serdes.Long()));
                break;
            case "stream_join":
                // Clicks joined with views of the same user within 10 s either way, no grace.
                KStream<String, String> events = builder.stream(input, Consumed.with(Serdes.String(), Serdes.String()));
                KStream<String, String> clicks = events.filter((k, v) -> "click".equals(parse(v).get("kind").asText()));
                KStream<String, String> views = events.filter((k, v) -> "view".equals(parse(v).get("kind").asText()));
                clicks.join(views, (String click, String view) -> {
                        JsonNode c = parse(click);
                        JsonNode v = parse(view);
                        ObjectNode out = JSON.createObjectNode();
                        out.put("id", (c.get("id").longValue() << 21) | v.get("id").longValue());
                        out.set("user", c.get("user"));
                        out.set("click", c.get("id"));
                        out.set("view", v.get("id"));
                        return write(out);
                    }, JoinWindows.ofTimeDifferenceWithNoGrace(Duration.ofSeconds(10)),
                    StreamJoined.with(Serdes.String(), Serdes.String(), Serdes.String()))
                    .to(output, Produced.with(Serdes.String(), Serdes.String()));
                break;
            case "table_agg":
                // Each group's sum over the table's rows: subtract a row from its old group, add it to the new one.
                builder.table(input, Consumed.with(Serdes.String(), Serdes.String()),
                        Materialized.<String, String, KeyValueStore<Bytes, byte[]>>as("agg-table"))
                    .groupBy((String row, String update) -> {
                        JsonNode u = parse(update);
                        return KeyValue.pair(u.get("group").asText(), u.get("amount").longValue());
                    }, Grouped.with(Serdes.String(), Serdes.Long()))
                    .aggregate(() -> 0L,
                        (String group, Long amount, Long total) -> total + amount,
                        (String group, Long amount, Long total) -> total - amount,
                        Materialized.<String, Long, KeyValueStore<Bytes, byte[]>>as("group-sums")
                            .withKeySerde(Serdes.String()).withValueSerde(Serdes.Long()))
                    .toStream()
                    .to(output, Produced.with(Serdes.String(), Serdes.Long()));
                break;
            default:
                throw new IllegalArgumentException("unknown workload " + workload);
        }
        return builder.build();
    }

    /** Per user (the key) and 1-minute tumbling window (no grace), the count of events: "user@start" -> count. */
    static <V> void windowCount(KStream<String, V> events, String output) {
        events.groupByKey()
            .windowedBy(TimeWindows.ofSizeWithNoGrace(Duration.ofMinutes(1)))
            .count(Materialized.as("window-counts"))
            .toStream()
            .map((Windowed<String> wk, Long count) -> KeyValue.pair(wk.key() + "@" + wk.window().start(), count))
            .to(output, Produced.with(Serdes.String(), Serdes.Long()));
    }

    /** Whitespace split after lower-casing, as Python's str.lower().split(). */
    static List<String> split(String line) {
        List<String> words = new ArrayList<>();
        for (String w : line.toLowerCase(Locale.ROOT).split("\\s+")) {
            if (!w.isEmpty()) {
                words.add(w);
            }
        }
        return words;
    }

    static JsonNode parse(String json) {
        try {
            return JSON.readTree(json);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    static String write(JsonNode node) {
        try {
            return JSON.writeValueAsString(node);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    static Map<String, String> parseArgs(String[] argv) {
        Map<String, String> args = new HashMap<>();
        for (int i = 0; i < argv.length; i++) {
            if (!argv[i].startsWith("--") || i + 1 >= argv.length) {
                throw new IllegalArgumentException("expected --name value pairs, got " + String.join(" ", argv));
            }
            args.put(argv[i].substring(2), argv[++i]);
        }
        return args;
    }

    static String required(Map<String, String> args, String name) {
        String value = args.get(name);
        if (value == null) {
            throw new IllegalArgumentException("missing --" + name);
        }
        return value;
    }
}
