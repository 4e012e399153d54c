package io.streamlet.streams4;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.HexFormat;
import java.util.Properties;

import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.header.internals.RecordHeaders;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.apache.kafka.common.serialization.IntegerDeserializer;
import org.apache.kafka.common.serialization.IntegerSerializer;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.apache.kafka.streams.TestInputTopic;
import org.apache.kafka.streams.TestOutputTopic;
import org.apache.kafka.streams.Topology;
import org.apache.kafka.streams.TopologyTestDriver;
import org.apache.kafka.streams.errors.DefaultProductionExceptionHandler;
import org.apache.kafka.streams.errors.ErrorHandlerContext;
import org.apache.kafka.streams.errors.ProductionExceptionHandler;
import org.apache.kafka.streams.processor.PunctuationType;
import org.apache.kafka.streams.processor.api.Processor;
import org.apache.kafka.streams.processor.api.ProcessorContext;
import org.apache.kafka.streams.processor.api.Record;
import org.apache.kafka.streams.test.TestRecord;

/**
 * Dead-letter records of Kafka Streams 4.4.0's built-in handlers (KIP-1034) in its TopologyTestDriver. One
 * topology: source "in" (String keys, Integer values) -> processor "proc" (raises "boom <value>" for value 7,
 * forwards the rest) -> sink "out" (its value serializer raises "cannot write 9" for value 9); "proc" may
 * schedule a wall-clock punctuation raising "tick". Each case ("label deser-handler proc-handler dlq|- punct|-
 * fail|continue", the last word the production handler: Kafka Streams' default, or one that resumes with the
 * default's dead-letter records) pipes a record that cannot be deserialized, then values 7, 9 and 1 (each with
 * a header), and with punct advances the wall clock; it prints every record of the
 * dead-letter topic and of "out" ("label dlq|out key value ts", then "label header name value" lines; the
 * stacktrace header is printed as its first line), "label failed <where>" when the driver threw, and the
 * topics the driver saw produced. tests/driver/test_dead_letter_queue.py runs the same cases in streamlet.
 */
public final class DeadLetterCheck {
    private static final HexFormat HEX = HexFormat.of();

    public static void main(final String[] args) throws Exception {
        CaseLines.forEach(DeadLetterCheck::run);
    }

    private static String handlerClass(final String name, final boolean processing) {
        final String p = processing ? "Processing" : "";
        return "org.apache.kafka.streams.errors." + (name.equals("continue") ? "LogAndContinue" : "LogAndFail") + p
            + "ExceptionHandler";
    }

    /** Resumes after a record that cannot be produced, with the dead-letter records of Kafka Streams' default. */
    public static final class ResumingProductionHandler implements ProductionExceptionHandler {
        private final DefaultProductionExceptionHandler inner = new DefaultProductionExceptionHandler();

        @Override
        public void configure(final java.util.Map<String, ?> configs) {
            inner.configure(configs);
        }

        @Override
        public Response handleError(final ErrorHandlerContext context, final ProducerRecord<byte[], byte[]> record,
                                    final Exception exception) {
            return Response.resume(inner.handleError(context, record, exception).deadLetterQueueRecords());
        }

        @Override
        public Response handleSerializationError(final ErrorHandlerContext context, final ProducerRecord record,
                                                 final Exception exception, final SerializationExceptionOrigin origin) {
            return Response.resume(inner.handleSerializationError(context, record, exception, origin)
                .deadLetterQueueRecords());
        }
    }

    private static String text(final byte[] bytes) {
        return bytes == null ? "null" : HEX.formatHex(bytes);
    }

    private static void run(final String[] words) {
        final String label = words[0];
        final boolean punct = words[4].equals("punct");
        final Properties props = new Properties();
        props.put("application.id", "dead-letter");
        props.put("bootstrap.servers", "localhost:9");
        props.put("deserialization.exception.handler", handlerClass(words[1], false));
        props.put("processing.exception.handler", handlerClass(words[2], true));
        if (!words[3].equals("-")) {
            props.put("errors.dead.letter.queue.topic.name", words[3]);
        }
        if (words[5].equals("continue")) {
            props.put("production.exception.handler", ResumingProductionHandler.class.getName());
        }
        final Topology topology = new Topology();
        topology.addSource("src", new StringDeserializer(), new IntegerDeserializer(), "in");
        topology.addProcessor("proc", () -> new Processor<String, Integer, String, Integer>() {
            private ProcessorContext<String, Integer> context;

            @Override
            public void init(final ProcessorContext<String, Integer> context) {
                this.context = context;
                if (punct) {
                    context.schedule(Duration.ofMillis(100), PunctuationType.WALL_CLOCK_TIME, ts -> {
                        throw new IllegalStateException("tick");
                    });
                }
            }

            @Override
            public void process(final Record<String, Integer> record) {
                if (record.value() == 7) {
                    throw new IllegalArgumentException("boom " + record.value());
                }
                context.forward(record);
            }
        }, "src");
        final IntegerSerializer integers = new IntegerSerializer();
        topology.addSink("out", "out", new StringSerializer(), (final String topic, final Integer value) -> {
            if (value == 9) {
                throw new IllegalArgumentException("cannot write 9");
            }
            return integers.serialize(topic, value);
        }, "proc");
        try (TopologyTestDriver driver = new TopologyTestDriver(topology, props, Instant.ofEpochMilli(1000))) {
            final TestInputTopic<byte[], byte[]> input = driver.createInputTopic("in", new ByteArraySerializer(),
                new ByteArraySerializer());
            final byte[][] values = {"abc".getBytes(StandardCharsets.UTF_8), {0, 0, 0, 7}, {0, 0, 0, 9}, {0, 0, 0, 1}};
            final String[] where = {"deserialize", "process", "produce", "pass"};
            for (int i = 0; i < values.length; i++) {
                final RecordHeaders headers = new RecordHeaders();
                headers.add("h", ("x" + i).getBytes(StandardCharsets.UTF_8));
                try {
                    input.pipeInput(new TestRecord<>(("k" + i).getBytes(StandardCharsets.UTF_8), values[i], headers,
                        40L + i));
                } catch (final RuntimeException e) {
                    System.out.println(label + " failed " + where[i]);
                }
            }
            if (punct) {
                try {
                    driver.advanceWallClockTime(Duration.ofMillis(150));
                } catch (final RuntimeException e) {
                    System.out.println(label + " failed punctuate");
                }
            }
            for (final String topic : new String[] {words[3], "out"}) {
                if (topic.equals("-")) {
                    continue;
                }
                final TestOutputTopic<byte[], byte[]> output = driver.createOutputTopic(topic,
                    new ByteArrayDeserializer(), new ByteArrayDeserializer());
                for (final TestRecord<byte[], byte[]> r : output.readRecordsToList()) {
                    System.out.println(label + " " + (topic.equals("out") ? "out" : "dlq") + " " + text(r.key()) + " "
                        + text(r.value()) + " " + r.timestamp());
                    for (final Header h : r.headers()) {
                        String value = h.value() == null ? "null" : new String(h.value(), StandardCharsets.UTF_8);
                        if (h.key().equals("__streams.errors.stacktrace")) {
                            value = value.lines().findFirst().orElse("");
                        }
                        System.out.println(label + " header " + h.key() + " " + value.replace('\n', '|'));
                    }
                }
            }
            System.out.println(label + " produced " + new java.util.TreeSet<>(driver.producedTopicNames()));
        }
    }
}
