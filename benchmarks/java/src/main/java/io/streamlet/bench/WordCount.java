package io.streamlet.bench;

import java.util.Arrays;
import java.util.Locale;
import java.util.Properties;
import java.util.concurrent.CountDownLatch;

import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.utils.Bytes;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.Grouped;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.Produced;

/**
 * The benchmark's WordCount, as streamlet's benchmarks/wordcount_app.py builds it: lines split on
 * non-word characters after lower-casing, grouped by word, counted in the store "counts-store".
 *
 * Arguments: bootstrap application-id input output guarantee commit-interval-ms state-dir
 */
public final class WordCount {
    public static void main(String[] args) throws InterruptedException {
        String bootstrap = args[0], appId = args[1], input = args[2], output = args[3], guarantee = args[4];
        Properties props = new Properties();
        props.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        props.put(StreamsConfig.APPLICATION_ID_CONFIG, appId);
        props.put(StreamsConfig.PROCESSING_GUARANTEE_CONFIG, guarantee);
        props.put(StreamsConfig.COMMIT_INTERVAL_MS_CONFIG, args[5]);
        props.put(StreamsConfig.STATE_DIR_CONFIG, args[6]);
        props.put(StreamsConfig.consumerPrefix("auto.offset.reset"), "earliest");

        StreamsBuilder builder = new StreamsBuilder();
        builder.stream(input, Consumed.with(Serdes.Bytes(), Serdes.String()))
            .flatMapValues(line -> Arrays.asList(line.toLowerCase(Locale.ROOT).split("\\W+")))
            .groupBy((Bytes key, String word) -> word, Grouped.with(Serdes.String(), Serdes.String()))
            .count(Materialized.as("counts-store"))
            .toStream()
            .to(output, Produced.with(Serdes.String(), Serdes.Long()));

        KafkaStreams streams = new KafkaStreams(builder.build(), props);
        CountDownLatch done = new CountDownLatch(1);
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            streams.close();
            done.countDown();
        }));
        streams.start();
        System.out.println("started " + appId);
        done.await();
    }
}
