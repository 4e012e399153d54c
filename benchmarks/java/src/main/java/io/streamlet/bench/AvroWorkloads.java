package io.streamlet.bench;

import java.util.HashMap;
import java.util.Map;

import org.apache.avro.Schema;
import org.apache.avro.generic.GenericData;
import org.apache.avro.generic.GenericRecord;
import org.apache.kafka.common.serialization.Serde;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.utils.Bytes;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.Produced;

import io.apicurio.registry.serde.Legacy4ByteIdHandler;
import io.apicurio.registry.serde.SerdeConfig;
import io.apicurio.registry.serde.avro.AvroKafkaDeserializer;
import io.apicurio.registry.serde.avro.AvroKafkaSerializer;
import io.apicurio.registry.serde.config.IdOption;

/**
 * The Avro workloads of benchmarks/workloads.py ({@code pipe_avro}, {@code window_count_avro}): the events'
 * values through a schema registry with Apicurio Registry's Java Avro serde (2.6) in Confluent's wire format
 * (magic byte 0, the 4-byte content id, no headers), values as GenericRecords.
 */
final class AvroWorkloads {
    /** pipe_avro's output schema, the text Python's CENTS_SCHEMA writes (benchmarks/workloads.py). */
    static final Schema CENTS = new Schema.Parser().parse("{\"type\":\"record\",\"name\":\"EventCents\","
        + "\"namespace\":\"io.streamlet.bench\",\"fields\":[{\"name\":\"id\",\"type\":\"long\"},"
        + "{\"name\":\"user\",\"type\":\"string\"},{\"name\":\"amount_cents\",\"type\":\"long\"}]}");

    private AvroWorkloads() {
    }

    /**
     * Apicurio's Avro serde for values, talking to the registry whose Confluent API is at {@code confluentUrl}
     * through Apicurio's own API on the same server, in Confluent's wire format.
     */
    static Serde<GenericRecord> valueSerde(final String confluentUrl) {
        final Map<String, Object> config = new HashMap<>();
        config.put(SerdeConfig.REGISTRY_URL, confluentUrl.replaceAll("/apis/ccompat/v[0-9]+/?$", "") + "/apis/registry/v2");
        config.put(SerdeConfig.ID_HANDLER, Legacy4ByteIdHandler.class.getName());
        config.put(SerdeConfig.ENABLE_HEADERS, false);
        config.put(SerdeConfig.USE_ID, IdOption.contentId.name());
        config.put(SerdeConfig.AUTO_REGISTER_ARTIFACT, true);
        final Serde<GenericRecord> serde = Serdes.serdeFrom(new AvroKafkaSerializer<>(), new AvroKafkaDeserializer<>());
        serde.configure(config, false);
        return serde;
    }

    /** Events without the views, mapped to EventCents (id, user, amount * 100), Avro in and out. */
    static void pipe(final StreamsBuilder builder, final String input, final String output, final String registry) {
        final Serde<GenericRecord> avro = valueSerde(registry);
        builder.stream(input, Consumed.with(Serdes.Bytes(), avro))
            .filter((Bytes key, GenericRecord ev) -> !"view".equals(ev.get("kind").toString()))
            .mapValues(ev -> {
                final GenericRecord out = new GenericData.Record(CENTS);
                out.put("id", ev.get("id"));
                out.put("user", ev.get("user"));
                out.put("amount_cents", ((Integer) ev.get("amount")).longValue() * 100);
                return out;
            })
            .to(output, Produced.with(Serdes.Bytes(), avro));
    }

    /** Per user and 1-minute tumbling window (no grace), the count of events, every value read as Avro. */
    static void windowCount(final StreamsBuilder builder, final String input, final String output, final String registry) {
        Bench.windowCount(builder.stream(input, Consumed.with(Serdes.String(), valueSerde(registry))), output);
    }
}
