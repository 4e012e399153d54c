package io.streamlet.reference;

import java.util.LinkedHashMap;
import java.util.Map;
import java.util.function.Supplier;

import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.utils.Bytes;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.Topology;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.GlobalKTable;
import org.apache.kafka.streams.kstream.KStream;
import org.apache.kafka.streams.kstream.KTable;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.TableJoined;
import org.apache.kafka.streams.processor.api.Processor;
import org.apache.kafka.streams.processor.api.ProcessorContext;
import org.apache.kafka.streams.processor.api.Record;
import org.apache.kafka.streams.state.KeyValueStore;
import org.apache.kafka.streams.state.Stores;

/**
 * Reference topologies with global tables, global stores and foreign-key joins
 * (tests/dsl/global_fk_topologies.py builds the same ones with streamlet).
 */
public final class GlobalFkTopologies {

    private GlobalFkTopologies() {
    }

    static Map<String, Supplier<Topology>> topologies() {
        final Map<String, Supplier<Topology>> all = new LinkedHashMap<>();
        all.put("global_table_joins", GlobalFkTopologies::globalTableJoins);
        all.put("global_table_named_after_stream", GlobalFkTopologies::globalTableNamedAfterStream);
        all.put("global_store_processor_api", GlobalFkTopologies::globalStoreProcessorApi);
        all.put("fk_join", GlobalFkTopologies::fkJoin);
        all.put("fk_left_join_named_materialized", GlobalFkTopologies::fkLeftJoinNamedMaterialized);
        all.put("fk_join_of_derived_tables", GlobalFkTopologies::fkJoinOfDerivedTables);
        return all;
    }

    static String join(final String left, final String right) {
        return left + "+" + (right == null ? "-" : right);
    }

    static String foreignKey(final String value) {
        return value.split(":")[0];
    }

    static Topology globalTableJoins() {
        final StreamsBuilder builder = new StreamsBuilder();
        final GlobalKTable<String, String> global = builder.globalTable("global-input");
        final KStream<String, String> input = builder.stream("input");
        input.join(global, (k, v) -> v, GlobalFkTopologies::join).to("output");
        input.leftJoin(global, (k, v) -> k, GlobalFkTopologies::join).to("output-left");
        return builder.build();
    }

    static Topology globalTableNamedAfterStream() {
        final StreamsBuilder builder = new StreamsBuilder();
        final KStream<String, String> input = builder.stream("input");
        final GlobalKTable<String, String> global = builder.globalTable("global-input",
            Consumed.<String, String>as("global-source"),
            Materialized.<String, String, KeyValueStore<Bytes, byte[]>>as("global-store"));
        input.mapValues(v -> v + "!").join(global, (k, v) -> k, GlobalFkTopologies::join).to("output");
        return builder.build();
    }

    static final class PutInStore implements Processor<String, String, Void, Void> {
        private KeyValueStore<String, String> store;

        @Override
        public void init(final ProcessorContext<Void, Void> context) {
            store = context.getStateStore("global-kv");
        }

        @Override
        public void process(final Record<String, String> record) {
            store.put(record.key(), record.value());
        }
    }

    static Topology globalStoreProcessorApi() {
        final Topology topology = new Topology();
        topology.addSource("Source", "input");
        topology.addProcessor("Process", DescribeTopologies.PassThrough::new, "Source");
        topology.addGlobalStore(Stores.keyValueStoreBuilder(Stores.inMemoryKeyValueStore("global-kv"),
                Serdes.String(), Serdes.String()).withLoggingDisabled(), "global-source",
            new StringDeserializer(), new StringDeserializer(), "global-input", "global-processor", PutInStore::new);
        topology.addSink("Sink", "output", "Process");
        topology.addSource("Other", "other-input");
        topology.addSink("Other-sink", "other-output", "Other");
        return topology;
    }

    static Topology fkJoin() {
        final StreamsBuilder builder = new StreamsBuilder();
        final KTable<String, String> orders = builder.table("orders");
        final KTable<String, String> customers = builder.table("customers");
        orders.join(customers, GlobalFkTopologies::foreignKey, GlobalFkTopologies::join).toStream().to("output");
        return builder.build();
    }

    static Topology fkLeftJoinNamedMaterialized() {
        final StreamsBuilder builder = new StreamsBuilder();
        final KTable<String, String> orders = builder.table("orders");
        final KTable<String, String> customers = builder.table("customers");
        orders.leftJoin(customers, GlobalFkTopologies::foreignKey, GlobalFkTopologies::join, TableJoined.as("fkj"),
            Materialized.<String, String, KeyValueStore<Bytes, byte[]>>as("fk-result")).toStream().to("output");
        return builder.build();
    }

    static Topology fkJoinOfDerivedTables() {
        final StreamsBuilder builder = new StreamsBuilder();
        final KTable<String, String> orders = builder.<String, String>table("orders").filter((k, v) -> v != null);
        final KTable<String, String> customers = builder.<String, String>table("customers").mapValues(v -> v + "!");
        orders.join(customers, GlobalFkTopologies::foreignKey, GlobalFkTopologies::join).toStream().to("output");
        return builder.build();
    }
}
