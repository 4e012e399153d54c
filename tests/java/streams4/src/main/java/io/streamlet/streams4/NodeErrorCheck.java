package io.streamlet.streams4;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.TreeSet;

import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.header.internals.RecordHeaders;
import org.apache.kafka.common.serialization.Serializer;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.apache.kafka.streams.TestInputTopic;
import org.apache.kafka.streams.TestOutputTopic;
import org.apache.kafka.streams.Topology;
import org.apache.kafka.streams.TopologyTestDriver;
import org.apache.kafka.streams.errors.ErrorHandlerContext;
import org.apache.kafka.streams.errors.LogAndContinueProcessingExceptionHandler;
import org.apache.kafka.streams.errors.LogAndFailProcessingExceptionHandler;
import org.apache.kafka.streams.errors.ProcessingExceptionHandler;
import org.apache.kafka.streams.processor.PunctuationType;
import org.apache.kafka.streams.processor.api.Processor;
import org.apache.kafka.streams.processor.api.ProcessorContext;
import org.apache.kafka.streams.processor.api.Record;
import org.apache.kafka.streams.test.TestRecord;

/**
 * Where Kafka Streams 4.4.0 handles a processing error: at the processor node that raised (KIP-1033), in its
 * TopologyTestDriver. A case ("label continue|fail v1,v2,... node...") builds a topology of String records
 * from source "src" (topic "in"): each node token "name,parent,fail,copies,pick" is a processor that raises
 * "boom name" when the value's last character is among the digits `fail` ("-": never), else forwards
 * `copies` records (copies 1: the record itself; 2: the value with "0" and "1" appended), to all children or
 * (pick 1) to the child whose index is the last digit modulo the number of children, by name; a token
 * "name,parent,sink,fail" is a sink to topic "o-name" whose value serializer raises "cannot write" for those
 * digits (the production handler is Kafka Streams' default, which fails). The processing handler resumes
 * (continue) or fails, each time printing "label seen node key value timestamp topic partition offset" (the
 * record the failing node got, the context of the handler), and dead-letters to "dlq". The values are piped
 * with keys k0, k1, ... at timestamps 100, 101, ... with a header "h"; "label failed i" when a pipe threw (the
 * case then stops). Then every dead-letter record ("label dlq key value ts" and its headers but the
 * exception's class and stack trace) and every sink's records ("label out topic key value ts"). A mode
 * "continue+p" (or "fail+p") gives node n0 a wall-clock punctuation every 100 ms that forwards ("p", "75") at
 * its time; "+pf" also raises "boom tick" after that forward; the wall clock is advanced by 150 ms after the
 * values were piped ("label failed punct" when that threw).
 * tests/driver/test_node_errors.py runs the same in streamlet.
 */
public final class NodeErrorCheck {
    public static void main(final String[] args) throws Exception {
        CaseLines.forEach(NodeErrorCheck::run);
    }

    static final List<String> SEEN = new ArrayList<>();
    static String label = "";
    static boolean fails = false;

    /** Prints what it is shown, then answers as Kafka Streams' built-in handler would. */
    public static final class RecordingHandler implements ProcessingExceptionHandler {
        private ProcessingExceptionHandler inner;

        @Override
        public void configure(final Map<String, ?> configs) {
            inner = fails ? new LogAndFailProcessingExceptionHandler() : new LogAndContinueProcessingExceptionHandler();
            inner.configure(configs);
        }

        @Override
        public Response handleError(final ErrorHandlerContext context, final Record<?, ?> record,
                                    final Exception exception) {
            final String shown = record == null ? "null null" : record.key() + " " + record.value();
            SEEN.add(label + " seen " + context.processorNodeId() + " " + shown + " "
                + context.timestamp() + " " + context.topic() + " " + context.partition() + " " + context.offset());
            return inner.handleError(context, record, exception);
        }
    }

    private static final class Node implements Processor<String, String, String, String> {
        private final String name;
        private final String fail;
        private final int copies;
        private final boolean pick;
        private final List<String> children;
        private ProcessorContext<String, String> context;

        private final String punct;

        Node(final String name, final String fail, final int copies, final boolean pick, final List<String> children,
             final String punct) {
            this.name = name;
            this.fail = fail;
            this.copies = copies;
            this.pick = pick;
            this.children = children;
            this.punct = punct;
        }

        @Override
        public void init(final ProcessorContext<String, String> context) {
            this.context = context;
            if (punct != null) {
                context.schedule(Duration.ofMillis(100), PunctuationType.WALL_CLOCK_TIME, ts -> {
                    context.forward(new Record<>("p", "75", ts));
                    if (punct.equals("pf")) {
                        throw new IllegalStateException("boom tick");
                    }
                });
            }
        }

        @Override
        public void process(final Record<String, String> record) {
            final String v = record.value();
            final char last = v.charAt(v.length() - 1);
            if (fail.indexOf(last) >= 0) {
                throw new IllegalStateException("boom " + name);
            }
            for (int i = 0; i < copies; i++) {
                final String value = copies == 1 ? v : v + i;
                final Record<String, String> out = record.withValue(value);
                if (pick && !children.isEmpty()) {
                    final int digit = value.charAt(value.length() - 1) - '0';
                    context.forward(out, children.get(digit % children.size()));
                } else {
                    context.forward(out);
                }
            }
        }
    }

    private static Serializer<String> failingSerializer(final String fail) {
        final StringSerializer strings = new StringSerializer();
        return (topic, value) -> {
            if (value != null && fail.indexOf(value.charAt(value.length() - 1)) >= 0) {
                throw new IllegalArgumentException("cannot write");
            }
            return strings.serialize(topic, value);
        };
    }

    private static void run(final String[] words) {
        label = words[0];
        final String[] mode = words[1].split("\\+");
        fails = mode[0].equals("fail");
        final String punct = mode.length > 1 ? mode[1] : null;
        SEEN.clear();
        final Properties props = new Properties();
        props.put("application.id", "node-errors");
        props.put("bootstrap.servers", "localhost:9");
        props.put("processing.exception.handler", RecordingHandler.class.getName());
        props.put("errors.dead.letter.queue.topic.name", "dlq");
        final Topology topology = new Topology();
        topology.addSource("src", new StringDeserializer(), new StringDeserializer(), "in");
        final List<String[]> tokens = new ArrayList<>();
        for (int i = 3; i < words.length; i++) {
            tokens.add(words[i].split(","));
        }
        final TreeSet<String> sinkTopics = new TreeSet<>();
        for (final String[] t : tokens) {
            final String name = t[0];
            final String parent = t[1];
            if (t[2].equals("sink")) {
                topology.addSink(name, "o-" + name, new StringSerializer(), failingSerializer(t[3]), parent);
                sinkTopics.add("o-" + name);
                continue;
            }
            final List<String> children = new ArrayList<>();
            for (final String[] c : tokens) {
                if (c[1].equals(name)) {
                    children.add(c[0]);
                }
            }
            final String fail = t[2].equals("-") ? "" : t[2];
            final int copies = Integer.parseInt(t[3]);
            final boolean pick = t[4].equals("1");
            final String scheduled = name.equals("n0") ? punct : null;
            topology.addProcessor(name, () -> new Node(name, fail, copies, pick, children, scheduled), parent);
        }
        try (TopologyTestDriver driver = new TopologyTestDriver(topology, props, Instant.ofEpochMilli(0))) {
            final TestInputTopic<String, String> input = driver.createInputTopic("in", new StringSerializer(),
                new StringSerializer());
            final String[] values = words[2].split(",");
            boolean failed = false;
            for (int i = 0; i < values.length; i++) {
                final RecordHeaders headers = new RecordHeaders();
                headers.add("h", ("x" + i).getBytes(StandardCharsets.UTF_8));
                try {
                    input.pipeInput(new TestRecord<>("k" + i, values[i], headers, 100L + i));
                } catch (final RuntimeException e) {
                    SEEN.add(label + " failed " + i);
                    failed = true;
                    break;
                }
            }
            if (punct != null && !failed) {
                try {
                    driver.advanceWallClockTime(Duration.ofMillis(150));
                } catch (final RuntimeException e) {
                    SEEN.add(label + " failed punct");
                }
            }
            SEEN.forEach(System.out::println);
            final TestOutputTopic<String, String> dlq = driver.createOutputTopic("dlq", new StringDeserializer(),
                new StringDeserializer());
            for (final TestRecord<String, String> r : dlq.readRecordsToList()) {
                System.out.println(label + " dlq " + r.key() + " " + r.value() + " " + r.timestamp());
                for (final Header h : r.headers()) {
                    if (h.key().equals("__streams.errors.exception") || h.key().equals("__streams.errors.stacktrace")) {
                        continue;
                    }
                    final String value = h.value() == null ? "null" : new String(h.value(), StandardCharsets.UTF_8);
                    System.out.println(label + " header " + h.key() + " " + value);
                }
            }
            for (final String topic : sinkTopics) {
                final TestOutputTopic<String, String> out = driver.createOutputTopic(topic, new StringDeserializer(),
                    new StringDeserializer());
                for (final TestRecord<String, String> r : out.readRecordsToList()) {
                    System.out.println(label + " out " + topic + " " + r.key() + " " + r.value() + " " + r.timestamp());
                }
            }
        }
    }
}
