package io.streamlet.interop;

import java.util.HashMap;
import java.util.Map;
import java.util.Properties;

import org.apache.avro.Schema;
import org.apache.avro.generic.GenericData;
import org.apache.avro.generic.GenericRecord;
import org.apache.kafka.common.serialization.Serde;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.utils.Bytes;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.Grouped;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.Produced;
import org.apache.kafka.streams.state.KeyValueStore;

import io.apicurio.registry.serde.Legacy4ByteIdHandler;
import io.apicurio.registry.serde.SerdeConfig;
import io.apicurio.registry.serde.avro.AvroKafkaDeserializer;
import io.apicurio.registry.serde.avro.AvroKafkaSerializer;
import io.apicurio.registry.serde.config.IdOption;

/**
 * The interop topology with Avro values through a schema registry: Apicurio Registry's Java Avro serde
 * (2.6), configured for Confluent's wire format, so that its bytes are those of Confluent's
 * {@code GenericAvroSerde} and of streamlet's Avro serdes. Its twin is {@code customer_totals} in
 * tests/interop/apps.py.
 */
final class AvroApps {
    /** The orders' value schema, as Avro's {@code Schema.toString()} writes it (the text the serde registers). */
    static final Schema ORDER = new Schema.Parser().parse("{\"type\":\"record\",\"name\":\"Order\","
        + "\"namespace\":\"io.streamlet.interop\",\"fields\":[{\"name\":\"id\",\"type\":\"string\"},"
        + "{\"name\":\"customer\",\"type\":\"string\"},{\"name\":\"amount\",\"type\":\"double\"},"
        + "{\"name\":\"items\",\"type\":\"int\"}]}");
    /** The aggregate: a customer's order count, total amount and last order. */
    static final Schema TOTALS = new Schema.Parser().parse("{\"type\":\"record\",\"name\":\"CustomerTotals\","
        + "\"namespace\":\"io.streamlet.interop\",\"fields\":[{\"name\":\"count\",\"type\":\"long\"},"
        + "{\"name\":\"total\",\"type\":\"double\"},{\"name\":\"last_order_id\",\"type\":\"string\"}]}");

    private AvroApps() {
    }

    /**
     * The serde settings for Confluent's wire format: magic byte 0, the 4-byte id, no headers, and the
     * id written being the content id, which is the id Apicurio's Confluent-compatible API gives. The
     * registry's URL comes from {@code apicurio.registry.url} in the application's settings.
     */
    static Map<String, Object> serdeConfig(final Properties props) {
        final Map<String, Object> config = new HashMap<>();
        config.put(SerdeConfig.REGISTRY_URL, props.getProperty(SerdeConfig.REGISTRY_URL));
        config.put(SerdeConfig.ID_HANDLER, Legacy4ByteIdHandler.class.getName());
        config.put(SerdeConfig.ENABLE_HEADERS, false);
        config.put(SerdeConfig.USE_ID, IdOption.contentId.name());
        config.put(SerdeConfig.AUTO_REGISTER_ARTIFACT, true);
        return config;
    }

    static Serde<GenericRecord> avroSerde(final Map<String, Object> config) {
        final Serde<GenericRecord> serde = Serdes.serdeFrom(new AvroKafkaSerializer<>(), new AvroKafkaDeserializer<>());
        serde.configure(config, false);
        return serde;
    }

    /**
     * orders (String key, Avro Order) grouped by customer (repartition topic {@code orders-by-customer}),
     * aggregated into an Avro CustomerTotals in the persistent store {@code customer-totals}, to the output.
     */
    static void customerTotals(final StreamsBuilder builder, final Map<String, String> topics, final Properties props) {
        final Serde<GenericRecord> avro = avroSerde(serdeConfig(props));
        builder.stream(topics.get("orders"), Consumed.with(Serdes.String(), avro))
            .groupBy((key, order) -> order.get("customer").toString(),
                Grouped.with("orders-by-customer", Serdes.String(), avro))
            .aggregate(AvroApps::emptyTotals, AvroApps::addOrder,
                Materialized.<String, GenericRecord, KeyValueStore<Bytes, byte[]>>as("customer-totals")
                    .withKeySerde(Serdes.String()).withValueSerde(avro))
            .toStream()
            .to(topics.get("totals"), Produced.with(Serdes.String(), avro));
    }

    private static GenericRecord emptyTotals() {
        final GenericRecord totals = new GenericData.Record(TOTALS);
        totals.put("count", 0L);
        totals.put("total", 0.0);
        totals.put("last_order_id", "");
        return totals;
    }

    private static GenericRecord addOrder(final String customer, final GenericRecord order, final GenericRecord before) {
        final GenericRecord totals = new GenericData.Record(TOTALS);
        totals.put("count", (Long) before.get("count") + 1);
        totals.put("total", (Double) before.get("total") + (Double) order.get("amount"));
        totals.put("last_order_id", order.get("id").toString());
        return totals;
    }
}
