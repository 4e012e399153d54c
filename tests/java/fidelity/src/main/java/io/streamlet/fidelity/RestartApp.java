package io.streamlet.fidelity;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Properties;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicBoolean;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;

import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.Topology;
import org.apache.kafka.streams.errors.StreamsUncaughtExceptionHandler;

/**
 * One differential case's topology as a real Kafka Streams application on a broker, for the restart
 * differential suite (tests/fidelity_restart): {@code RestartApp CASE_FILE key=value...}, where CASE_FILE holds
 * the case description (its "ops" are applied as {@link Runner} applies them) and every key=value is a Kafka
 * Streams property (application.id, bootstrap.servers, processing.guarantee, state.dir, commit.interval.ms, ...).
 *
 * <p>It prints one line per event on stdout: {@code STATE <new state>}, {@code ERROR <cause>} (the uncaught
 * exception handler shuts the client down) and {@code CLOSED} once closed, each followed by " @<epoch ms>". It closes cleanly
 * ({@link KafkaStreams#close}) on a line "close" on stdin, at the end of stdin, or on SIGTERM (a line "close-leave"
 * also leaves the group, as a rolling move's instance must: the group then hands its tasks over at once), and exits 0 after a
 * clean close of a client that did not fail, 1 otherwise. A kill -9 is the other way out.
 */
public final class RestartApp {

    private RestartApp() {
    }

    public static void main(final String[] args) throws Exception {
        final JsonNode c = new ObjectMapper().readTree(Files.readString(Path.of(args[0]), StandardCharsets.UTF_8));
        final StreamsBuilder builder = new StreamsBuilder();
        SmallOps.startCase();
        Object current = null;
        for (final JsonNode op : c.get("ops")) {
            current = RestartOps.apply(builder, current, op);
        }
        final Topology topology = builder.build();
        final Properties props = new Properties();
        for (int i = 1; i < args.length; i++) {
            final int eq = args[i].indexOf('=');
            props.put(args[i].substring(0, eq), args[i].substring(eq + 1));
        }
        final KafkaStreams streams = new KafkaStreams(topology, props);
        final AtomicBoolean failed = new AtomicBoolean(false);
        streams.setStateListener((now, before) -> say("STATE " + now));
        streams.setUncaughtExceptionHandler(e -> {
            failed.set(true);
            Throwable root = e;
            while (root.getCause() != null && root.getCause() != root) {
                root = root.getCause();
            }
            say("ERROR " + root.getClass().getSimpleName() + ": " + root.getMessage());
            return StreamsUncaughtExceptionHandler.StreamThreadExceptionResponse.SHUTDOWN_CLIENT;
        });
        final CountDownLatch closed = new CountDownLatch(1);
        final AtomicBoolean closing = new AtomicBoolean(false);
        final AtomicBoolean leave = new AtomicBoolean(false);
        final Runnable close = () -> {
            if (closing.compareAndSet(false, true)) {
                if (leave.get()) {
                    streams.close(leaveOptions());
                } else {
                    streams.close(Duration.ofSeconds(60));
                }
                say("CLOSED");
                closed.countDown();
            }
        };
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            close.run();
            try {
                closed.await();
            } catch (final InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }));
        streams.start();
        final BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        String line;
        while ((line = in.readLine()) != null && !line.strip().equals("close")) {
            if (line.strip().equals("close-leave")) {
                leave.set(true);
                break;
            }
            // only "close", "close-leave" (or the end of stdin) mean anything
        }
        close.run();
        closed.await();
        System.exit(failed.get() || streams.state() == KafkaStreams.State.ERROR ? 1 : 0);
    }

    /** A close that leaves the group; the older options class, which both Kafka Streams lines built here have. */
    @SuppressWarnings("deprecation")
    private static KafkaStreams.CloseOptions leaveOptions() {
        return new KafkaStreams.CloseOptions().leaveGroup(true).timeout(Duration.ofSeconds(60));
    }

    private static synchronized void say(final String line) {
        System.out.println(line + " @" + System.currentTimeMillis());
        System.out.flush();
    }
}
