package io.streamlet.streams4;

import java.time.Duration;
import java.time.Instant;
import java.util.Properties;

import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.streams.TestInputTopic;
import org.apache.kafka.streams.Topology;
import org.apache.kafka.streams.TopologyTestDriver;
import org.apache.kafka.streams.processor.PunctuationType;
import org.apache.kafka.streams.processor.api.Processor;
import org.apache.kafka.streams.processor.api.ProcessorContext;
import org.apache.kafka.streams.processor.api.Record;

/**
 * A punctuation's start time (KIP-1146) in Kafka Streams' TopologyTestDriver: for each case line on stdin
 * ("label wall|stream startMs intervalMs step step ..."), a processor schedules an anchored punctuation in
 * init and the driver takes the steps (wall: advance the wall clock by step ms; stream: pipe a record
 * timestamped step). Prints "label punct T" for every punctuation (T relative to the driver's start time for
 * wall clock) and "label step S" after each step. tests/driver/test_punctuation_start.py runs the same.
 */
public final class PunctuationCheck {
    private static final long BASE = 1_700_000_000_000L;

    public static void main(final String[] args) throws Exception {
        CaseLines.forEach(PunctuationCheck::run);
    }

    private static void run(final String[] words) {
        final String label = words[0];
        final boolean wall = words[1].equals("wall");
        final long start = Long.parseLong(words[2]);
        final long interval = Long.parseLong(words[3]);
        final Properties props = new Properties();
        props.put("application.id", "punctuation");
        props.put("bootstrap.servers", "localhost:9");
        final Topology topology = new Topology();
        topology.addSource("src", Serdes.String().deserializer(), Serdes.String().deserializer(), "in");
        topology.addProcessor("proc", () -> new Processor<String, String, String, String>() {
            @Override
            public void init(final ProcessorContext<String, String> context) {
                final Instant at = Instant.ofEpochMilli(wall ? BASE + start : start);
                context.schedule(at, Duration.ofMillis(interval),
                    wall ? PunctuationType.WALL_CLOCK_TIME : PunctuationType.STREAM_TIME,
                    ts -> System.out.println(label + " punct " + (wall ? ts - BASE : ts)));
            }

            @Override
            public void process(final Record<String, String> record) {
            }
        }, "src");
        try (TopologyTestDriver driver = new TopologyTestDriver(topology, props, Instant.ofEpochMilli(BASE))) {
            final TestInputTopic<String, String> input = driver.createInputTopic("in", Serdes.String().serializer(),
                Serdes.String().serializer());
            for (int i = 4; i < words.length; i++) {
                final long step = Long.parseLong(words[i]);
                if (wall) {
                    driver.advanceWallClockTime(Duration.ofMillis(step));
                } else {
                    input.pipeInput("k", "v", step);
                }
                System.out.println(label + " step " + step);
            }
        }
    }
}
