package io.streamlet.bench;

import java.io.IOException;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicBoolean;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;

import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.WakeupException;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;

/**
 * The Java ceiling: the `pipe` workload hand-written on the plain Java clients, with no framework.
 *
 * Polls the input, parses, filters and maps each event, sends the results to the same partition of the
 * output with the input record's timestamp, flushes the producer and then commits the polled offsets
 * synchronously (at-least-once) — the least work any Java stream processor can do for this workload.
 * Takes the command line of benchmarks/systems.py (only --workload pipe); runs until SIGTERM.
 */
public final class RawPipe {
    public static void main(String[] argv) throws IOException, InterruptedException {
        Map<String, String> args = Bench.parseArgs(argv);
        if (!"pipe".equals(Bench.required(args, "workload"))) {
            System.err.println("the raw pipe only does the pipe workload, not " + args.get("workload"));
            System.exit(2);
        }
        String bootstrap = Bench.required(args, "bootstrap");
        String input = Bench.required(args, "input");
        String output = Bench.required(args, "output");

        Properties cprops = new Properties();
        cprops.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        cprops.put(ConsumerConfig.GROUP_ID_CONFIG, Bench.required(args, "app-id"));
        cprops.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        cprops.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, false);
        cprops.put(ConsumerConfig.MAX_POLL_RECORDS_CONFIG, 5000);
        Properties pprops = new Properties();
        pprops.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        pprops.put(ProducerConfig.ACKS_CONFIG, "all");
        pprops.put(ProducerConfig.LINGER_MS_CONFIG, 5);
        pprops.put(ProducerConfig.BATCH_SIZE_CONFIG, 1 << 20);

        ObjectMapper json = new ObjectMapper();
        AtomicBoolean running = new AtomicBoolean(true);
        CountDownLatch stopped = new CountDownLatch(1);
        KafkaConsumer<byte[], byte[]> consumer =
            new KafkaConsumer<>(cprops, new ByteArrayDeserializer(), new ByteArrayDeserializer());
        KafkaProducer<byte[], byte[]> producer =
            new KafkaProducer<>(pprops, new ByteArraySerializer(), new ByteArraySerializer());
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            running.set(false);
            consumer.wakeup();
            try {
                stopped.await();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }));

        System.out.println("started raw pipe " + args.get("app-id"));
        System.out.flush();
        try {
            consumer.subscribe(List.of(input));
            Map<TopicPartition, OffsetAndMetadata> offsets = new HashMap<>();
            while (running.get()) {
                ConsumerRecords<byte[], byte[]> records = consumer.poll(Duration.ofMillis(200));
                if (records.isEmpty()) {
                    continue;
                }
                offsets.clear();
                for (TopicPartition tp : records.partitions()) {
                    List<ConsumerRecord<byte[], byte[]>> part = records.records(tp);
                    for (ConsumerRecord<byte[], byte[]> r : part) {
                        JsonNode ev = json.readTree(r.value());
                        if ("view".equals(ev.get("kind").asText())) {
                            continue;
                        }
                        ObjectNode out = json.createObjectNode();
                        out.set("id", ev.get("id"));
                        out.set("user", ev.get("user"));
                        out.put("amount_cents", ev.get("amount").longValue() * 100);
                        producer.send(new ProducerRecord<>(output, tp.partition(), r.timestamp(), r.key(),
                            json.writeValueAsBytes(out)));
                    }
                    offsets.put(tp, new OffsetAndMetadata(part.get(part.size() - 1).offset() + 1));
                }
                producer.flush();  // throws if a send failed: nothing is committed past a lost record
                consumer.commitSync(offsets);
            }
        } catch (WakeupException e) {
            if (running.get()) {
                throw e;
            }
        } finally {
            producer.close(Duration.ofSeconds(10));
            consumer.close(Duration.ofSeconds(10));
            stopped.countDown();
        }
    }
}
