package io.streamlet.interop;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.HashMap;
import java.util.Map;
import java.util.Properties;

import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.streams.CloseOptions;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.Topology;
import org.apache.kafka.streams.errors.StreamsUncaughtExceptionHandler;

/**
 * Runs one of the interop topologies (see {@link Apps}) as a real Kafka Streams application.
 *
 * <p>Usage: {@code Main <app> key=value...}. Keys starting with {@code topic.} name the app's topics
 * (e.g. {@code topic.input}); every other key is a Kafka Streams setting. Defaults: exactly_once_v2,
 * no record cache, String serdes, one stream thread.
 *
 * <p>Protocol on stdout, one line each: {@code DESCRIBE <json-escaped describe()>}, {@code STATE <new state>}
 * on every transition, {@code CLOSED} after a close. On stdin: {@code close} closes the way Kafka
 * Streams does by default (its members stay in the group until their session times out), {@code
 * close-leave} closes with {@code GroupMembershipOperation.LEAVE_GROUP}; end of input is {@code close}.
 * With the setting {@code describe.only=true} it prints DESCRIBE and exits without starting. With {@code
 * start.on.stdin=true} it first loads and warms what a start needs (a throwaway client of another
 * application id, never started), prints {@code READY} and starts only once stdin says {@code start}: a
 * restart whose JVM start-up must not count (the instance it replaces is killed meanwhile).
 */
public final class Main {
    private Main() {
    }

    public static void main(final String[] args) throws Exception {
        final String app = args[0];
        final Map<String, String> topics = new HashMap<>();
        final Properties props = new Properties();
        props.put(StreamsConfig.PROCESSING_GUARANTEE_CONFIG, StreamsConfig.EXACTLY_ONCE_V2);
        props.put(StreamsConfig.STATESTORE_CACHE_MAX_BYTES_CONFIG, 0);
        props.put(StreamsConfig.DEFAULT_KEY_SERDE_CLASS_CONFIG, Serdes.StringSerde.class);
        props.put(StreamsConfig.DEFAULT_VALUE_SERDE_CLASS_CONFIG, Serdes.StringSerde.class);
        props.put(StreamsConfig.NUM_STREAM_THREADS_CONFIG, 1);
        boolean describeOnly = false;
        boolean startOnStdin = false;
        for (int i = 1; i < args.length; i++) {
            final int eq = args[i].indexOf('=');
            final String key = args[i].substring(0, eq);
            final String value = args[i].substring(eq + 1);
            if (key.startsWith("topic.")) {
                topics.put(key.substring("topic.".length()), value);
            } else if (key.equals("describe.only")) {
                describeOnly = Boolean.parseBoolean(value);
            } else if (key.equals("start.on.stdin")) {
                startOnStdin = Boolean.parseBoolean(value);
            } else {
                props.put(key, value);
            }
        }
        final Topology topology = Apps.build(app, topics, props);
        say("DESCRIBE " + escape(topology.describe().toString()));
        if (describeOnly) {
            return;
        }
        final BufferedReader stdin = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        if (startOnStdin) {
            warmUp(app, topics, props);
            say("READY");
            String go;
            while ((go = stdin.readLine()) != null && !go.trim().equals("start")) {
                // wait for the word
            }
        }
        final KafkaStreams streams = new KafkaStreams(topology, props);
        streams.setStateListener((now, before) -> say("STATE " + now));
        streams.setUncaughtExceptionHandler(error -> {
            say("FAILED " + escape(String.valueOf(error)));
            return StreamsUncaughtExceptionHandler.StreamThreadExceptionResponse.SHUTDOWN_CLIENT;
        });
        streams.start();
        String line;
        CloseOptions options = CloseOptions.timeout(Duration.ofSeconds(60));
        while ((line = stdin.readLine()) != null) {
            final String command = line.trim();
            if (command.equals("close")) {
                break;
            }
            if (command.equals("close-leave")) {
                options = options.withGroupMembershipOperation(CloseOptions.GroupMembershipOperation.LEAVE_GROUP);
                break;
            }
        }
        final boolean failed = streams.state() == KafkaStreams.State.ERROR;
        final boolean closed = streams.close(options);
        say(closed ? "CLOSED" : "CLOSE-TIMED-OUT");
        System.exit(failed || !closed ? 1 : 0);
    }

    /** Builds and closes, unstarted, a client like the real one under another application id and state
     * directory and without a group.instance.id: the classes a start needs are loaded, nothing joins. */
    private static void warmUp(final String app, final Map<String, String> topics, final Properties props)
            throws java.io.IOException {
        final Properties warm = new Properties();
        warm.putAll(props);
        warm.remove("group.instance.id");
        warm.put(StreamsConfig.APPLICATION_ID_CONFIG,
                 props.getProperty(StreamsConfig.APPLICATION_ID_CONFIG) + "-warm-up");
        warm.put(StreamsConfig.STATE_DIR_CONFIG,
                 java.nio.file.Files.createTempDirectory("interop-warm-up").toString());
        new KafkaStreams(Apps.build(app, topics, warm), warm).close(Duration.ofSeconds(30));
    }

    private static synchronized void say(final String line) {
        System.out.println(line);
        System.out.flush();
    }

    private static String escape(final String text) {
        final StringBuilder out = new StringBuilder("\"");
        for (final char c : text.toCharArray()) {
            switch (c) {
                case '"' -> out.append("\\\"");
                case '\\' -> out.append("\\\\");
                case '\n' -> out.append("\\n");
                case '\t' -> out.append("\\t");
                case '\r' -> out.append("\\r");
                default -> {
                    if (c < 0x20) {
                        out.append(String.format("\\u%04x", (int) c));
                    } else {
                        out.append(c);
                    }
                }
            }
        }
        return out.append('"').toString();
    }
}
