package io.streamlet.reference;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Supplier;

import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.utils.Bytes;
import org.apache.kafka.streams.KeyValue;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.Topology;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.Grouped;
import org.apache.kafka.streams.kstream.KGroupedStream;
import org.apache.kafka.streams.kstream.KStream;
import org.apache.kafka.streams.kstream.KTable;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.Named;
import org.apache.kafka.streams.kstream.Produced;
import org.apache.kafka.streams.kstream.Repartitioned;
import org.apache.kafka.streams.processor.api.Processor;
import org.apache.kafka.streams.processor.api.ProcessorContext;
import org.apache.kafka.streams.processor.api.Record;
import org.apache.kafka.streams.state.KeyValueStore;
import org.apache.kafka.streams.state.Stores;

/**
 * Writes {@code topology.describe()} of each reference topology to {@code <dir>/<name>.txt}.
 *
 * <p>The Python tests build the same topologies with streamlet's DSL and compare {@code str(describe())}
 * with these files byte for byte, so every name (processors, stores, repartition topics) and every
 * detail of the layout comes from Kafka Streams itself. Lambdas here do trivial work: describe() only
 * shows the graph.
 */
public final class DescribeTopologies {

    private DescribeTopologies() {
    }

    /** Passes records through unchanged; enough for describe(). */
    static final class PassThrough implements Processor<String, String, String, String> {
        private ProcessorContext<String, String> context;

        @Override
        public void init(final ProcessorContext<String, String> context) {
            this.context = context;
        }

        @Override
        public void process(final Record<String, String> record) {
            context.forward(record);
        }
    }

    static Map<String, Supplier<Topology>> topologies() {
        final Map<String, Supplier<Topology>> all = new LinkedHashMap<>();
        all.put("pipe", DescribeTopologies::pipe);
        all.put("wordcount", DescribeTopologies::wordcount);
        all.put("wordcount_unnamed_store", DescribeTopologies::wordcountUnnamedStore);
        all.put("filter_map_chain", DescribeTopologies::filterMapChain);
        all.put("map_group_by_key_reduce", DescribeTopologies::mapGroupByKeyReduce);
        all.put("group_by_aggregate", DescribeTopologies::groupByAggregate);
        all.put("merge", DescribeTopologies::merge);
        all.put("table_filter_map_values", DescribeTopologies::tableFilterMapValues);
        all.put("table_materialized", DescribeTopologies::tableMaterialized);
        all.put("process_with_store", DescribeTopologies::processWithStore);
        all.put("stream_to_twice", DescribeTopologies::streamToTwice);
        all.put("two_pipelines", DescribeTopologies::twoPipelines);
        all.put("peek_foreach", DescribeTopologies::peekForeach);
        all.put("flat_map", DescribeTopologies::flatMap);
        all.put("group_by_key_with_and_without_repartition", DescribeTopologies::groupByKeyWithAndWithout);
        all.put("named_operations", DescribeTopologies::namedOperations);
        all.put("grouped_named_repartition", DescribeTopologies::groupedNamedRepartition);
        all.put("multi_topic_source", DescribeTopologies::multiTopicSource);
        all.put("count_then_table_ops", DescribeTopologies::countThenTableOps);
        all.put("merge_then_group_by_key", DescribeTopologies::mergeThenGroupByKey);
        all.put("process_then_group_by_key", DescribeTopologies::processThenGroupByKey);
        all.put("two_aggregations_one_grouping", DescribeTopologies::twoAggregationsOneGrouping);
        all.put("repartition", DescribeTopologies::repartition);
        all.put("value_ops_keep_partitioning", DescribeTopologies::valueOpsKeepPartitioning);
        all.put("count_materialized_without_name", DescribeTopologies::countMaterializedWithoutName);
        all.put("two_aggregations_named_grouping", DescribeTopologies::twoAggregationsNamedGrouping);
        all.put("named_burns_index", DescribeTopologies::namedBurnsIndex);
        all.put("table_named_source", DescribeTopologies::tableNamedSource);
        all.put("process_named", DescribeTopologies::processNamed);
        all.put("subtopology_numbering", DescribeTopologies::subtopologyNumbering);
        all.put("wide_fanout", DescribeTopologies::wideFanout);
        all.put("table_map_values_materialized", DescribeTopologies::tableMapValuesMaterialized);
        all.put("processor_api", DescribeTopologies::processorApi);
        all.put("processor_api_numbering", DescribeTopologies::processorApiNumbering);
        all.putAll(WindowJoinTopologies.topologies());
        all.putAll(GlobalFkTopologies.topologies());
        all.putAll(WindowCogroupTopologies.topologies());
        return all;
    }

    static Topology pipe() {
        final StreamsBuilder builder = new StreamsBuilder();
        builder.stream("streams-plaintext-input").to("streams-pipe-output");
        return builder.build();
    }

    static Topology wordcount() {
        final StreamsBuilder builder = new StreamsBuilder();
        final KStream<String, String> textLines = builder.stream("streams-plaintext-input");
        final KTable<String, Long> wordCounts = textLines
            .flatMapValues(textLine -> Arrays.asList(textLine.toLowerCase().split("\\W+")))
            .groupBy((key, word) -> word)
            .count(Materialized.<String, Long, KeyValueStore<Bytes, byte[]>>as("counts-store"));
        wordCounts.toStream().to("streams-wordcount-output", Produced.with(Serdes.String(), Serdes.Long()));
        return builder.build();
    }

    static Topology wordcountUnnamedStore() {
        final StreamsBuilder builder = new StreamsBuilder();
        final KStream<String, String> textLines = builder.stream("streams-plaintext-input");
        textLines
            .flatMapValues(textLine -> Arrays.asList(textLine.toLowerCase().split("\\W+")))
            .groupBy((key, word) -> word)
            .count()
            .toStream()
            .to("streams-wordcount-output", Produced.with(Serdes.String(), Serdes.Long()));
        return builder.build();
    }

    static Topology filterMapChain() {
        final StreamsBuilder builder = new StreamsBuilder();
        final KStream<String, String> input = builder.stream("input");
        input.filter((k, v) -> v != null)
            .filterNot((k, v) -> v.isEmpty())
            .map((k, v) -> KeyValue.pair(v, k))
            .mapValues(v -> v)
            .selectKey((k, v) -> k)
            .to("output");
        return builder.build();
    }

    static Topology mapGroupByKeyReduce() {
        final StreamsBuilder builder = new StreamsBuilder();
        final KStream<String, String> input = builder.stream("input");
        input.map((k, v) -> KeyValue.pair(v, k))
            .groupByKey()
            .reduce((a, b) -> a + b)
            .toStream()
            .to("output");
        return builder.build();
    }

    static Topology groupByAggregate() {
        final StreamsBuilder builder = new StreamsBuilder();
        final KStream<String, String> input = builder.stream("input");
        input.groupBy((k, v) -> v)
            .aggregate(() -> 0L, (k, v, agg) -> agg + v.length(),
                Materialized.with(Serdes.String(), Serdes.Long()))
            .toStream()
            .to("output", Produced.with(Serdes.String(), Serdes.Long()));
        return builder.build();
    }

    static Topology merge() {
        final StreamsBuilder builder = new StreamsBuilder();
        final KStream<String, String> left = builder.stream("left");
        final KStream<String, String> right = builder.stream("right");
        left.merge(right).to("merged");
        return builder.build();
    }

    static Topology tableFilterMapValues() {
        final StreamsBuilder builder = new StreamsBuilder();
        final KTable<String, String> table = builder.table("table-input");
        table.filter((k, v) -> v.length() > 2)
            .mapValues(v -> v.toUpperCase())
            .toStream()
            .to("output");
        return builder.build();
    }

    static Topology tableMaterialized() {
        final StreamsBuilder builder = new StreamsBuilder();
        final KTable<String, String> table = builder.table("table-input",
            Materialized.<String, String, KeyValueStore<Bytes, byte[]>>as("table-store"));
        table.filter((k, v) -> v.length() > 2,
                Materialized.<String, String, KeyValueStore<Bytes, byte[]>>as("filtered-store"))
            .filterNot((k, v) -> v.startsWith("x"))
            .toStream()
            .to("output");
        return builder.build();
    }

    static Topology processWithStore() {
        final StreamsBuilder builder = new StreamsBuilder();
        builder.addStateStore(Stores.keyValueStoreBuilder(
            Stores.persistentKeyValueStore("process-store"), Serdes.String(), Serdes.Long()));
        final KStream<String, String> input = builder.stream("input");
        input.process(PassThrough::new, "process-store").to("output");
        return builder.build();
    }

    static Topology streamToTwice() {
        final StreamsBuilder builder = new StreamsBuilder();
        final KStream<String, String> input = builder.stream("input");
        input.to("output-1");
        input.to("output-2");
        return builder.build();
    }

    static Topology twoPipelines() {
        final StreamsBuilder builder = new StreamsBuilder();
        builder.stream("input-b").to("output-b");
        builder.stream("input-a").to("output-a");
        return builder.build();
    }

    static Topology peekForeach() {
        final StreamsBuilder builder = new StreamsBuilder();
        final KStream<String, String> input = builder.stream("input");
        input.peek((k, v) -> { }).to("output");
        input.foreach((k, v) -> { });
        return builder.build();
    }

    static Topology flatMap() {
        final StreamsBuilder builder = new StreamsBuilder();
        final KStream<String, String> input = builder.stream("input");
        input.flatMap((k, v) -> List.of(KeyValue.pair(v, k), KeyValue.pair(k, v))).to("output");
        return builder.build();
    }

    static Topology groupByKeyWithAndWithout() {
        final StreamsBuilder builder = new StreamsBuilder();
        final KStream<String, String> input = builder.stream("input");
        input.groupByKey().count().toStream().to("counts-by-key", Produced.with(Serdes.String(), Serdes.Long()));
        input.selectKey((k, v) -> v)
            .groupByKey()
            .count()
            .toStream()
            .to("counts-by-value", Produced.with(Serdes.String(), Serdes.Long()));
        return builder.build();
    }

    static Topology namedOperations() {
        final StreamsBuilder builder = new StreamsBuilder();
        final KStream<String, String> input = builder.stream("input", Consumed.as("read-input"));
        input.filter((k, v) -> v != null, Named.as("non-null"))
            .mapValues(v -> v.toLowerCase(), Named.as("lower"))
            .selectKey((k, v) -> v, Named.as("by-value"))
            .groupByKey(Grouped.as("grouping"))
            .count(Named.as("counter"), Materialized.as("count-store"))
            .toStream(Named.as("changes"))
            .to("output", Produced.<String, Long>as("write-output").withValueSerde(Serdes.Long()));
        return builder.build();
    }

    static Topology groupedNamedRepartition() {
        final StreamsBuilder builder = new StreamsBuilder();
        final KStream<String, String> input = builder.stream("input");
        input.groupBy((k, v) -> v, Grouped.with("words", Serdes.String(), Serdes.String()))
            .count()
            .toStream()
            .to("output", Produced.with(Serdes.String(), Serdes.Long()));
        return builder.build();
    }

    static Topology multiTopicSource() {
        final StreamsBuilder builder = new StreamsBuilder();
        builder.stream(List.of("input-1", "input-2")).to("output");
        return builder.build();
    }

    static Topology countThenTableOps() {
        final StreamsBuilder builder = new StreamsBuilder();
        final KStream<String, String> input = builder.stream("input");
        input.groupByKey()
            .count()
            .filter((k, v) -> v > 1)
            .mapValues(v -> v * 10)
            .toStream()
            .to("output", Produced.with(Serdes.String(), Serdes.Long()));
        return builder.build();
    }

    static Topology mergeThenGroupByKey() {
        final StreamsBuilder builder = new StreamsBuilder();
        final KStream<String, String> left = builder.stream("left");
        final KStream<String, String> right = builder.stream("right");
        left.selectKey((k, v) -> v)
            .merge(right)
            .groupByKey()
            .count()
            .toStream()
            .to("output", Produced.with(Serdes.String(), Serdes.Long()));
        return builder.build();
    }

    static Topology processThenGroupByKey() {
        final StreamsBuilder builder = new StreamsBuilder();
        final KStream<String, String> input = builder.stream("input");
        input.process(PassThrough::new)
            .groupByKey()
            .reduce((a, b) -> b)
            .toStream()
            .to("output");
        return builder.build();
    }

    static Topology twoAggregationsOneGrouping() {
        final StreamsBuilder builder = new StreamsBuilder();
        final KStream<String, String> input = builder.stream("input");
        final KGroupedStream<String, String> grouped = input.groupBy((k, v) -> v);
        grouped.count().toStream().to("counts", Produced.with(Serdes.String(), Serdes.Long()));
        grouped.reduce((a, b) -> a + b).toStream().to("concatenated");
        return builder.build();
    }

    static Topology repartition() {
        final StreamsBuilder builder = new StreamsBuilder();
        final KStream<String, String> input = builder.stream("input");
        input.repartition().to("output-1");
        input.selectKey((k, v) -> v)
            .repartition(Repartitioned.as("by-value"))
            .groupByKey()
            .count()
            .toStream()
            .to("output-2", Produced.with(Serdes.String(), Serdes.Long()));
        return builder.build();
    }

    static Topology valueOpsKeepPartitioning() {
        final StreamsBuilder builder = new StreamsBuilder();
        final KStream<String, String> input = builder.stream("input");
        input.filter((k, v) -> true)
            .mapValues(v -> v)
            .flatMapValues(v -> List.of(v))
            .peek((k, v) -> { })
            .groupByKey()
            .aggregate(() -> "", (k, v, agg) -> agg + v)
            .toStream()
            .to("output");
        return builder.build();
    }

    static Topology countMaterializedWithoutName() {
        final StreamsBuilder builder = new StreamsBuilder();
        final KStream<String, String> input = builder.stream("input");
        input.groupByKey()
            .count(Materialized.with(Serdes.String(), Serdes.Long()))
            .toStream()
            .to("output", Produced.with(Serdes.String(), Serdes.Long()));
        return builder.build();
    }

    static Topology twoAggregationsNamedGrouping() {
        final StreamsBuilder builder = new StreamsBuilder();
        final KStream<String, String> input = builder.stream("input");
        final KGroupedStream<String, String> grouped = input.groupBy((k, v) -> v, Grouped.as("shared"));
        grouped.count().toStream().to("counts", Produced.with(Serdes.String(), Serdes.Long()));
        grouped.reduce((a, b) -> a + b).toStream().to("concatenated");
        return builder.build();
    }

    static Topology namedBurnsIndex() {
        final StreamsBuilder builder = new StreamsBuilder();
        final KStream<String, String> input = builder.stream("input", Consumed.as("src"));
        input.filter((k, v) -> true, Named.as("keep-all"))
            .mapValues(v -> v)
            .to("output", Produced.as("sink"));
        input.peek((k, v) -> { }).to("output-2");
        return builder.build();
    }

    static Topology tableNamedSource() {
        final StreamsBuilder builder = new StreamsBuilder();
        final KTable<String, String> table = builder.table("table-input", Consumed.as("tbl"));
        table.toStream().to("output");
        return builder.build();
    }

    static Topology processNamed() {
        final StreamsBuilder builder = new StreamsBuilder();
        final KStream<String, String> input = builder.stream("input");
        input.process(PassThrough::new, Named.as("my-processor"))
            .mapValues(v -> v)
            .to("output");
        return builder.build();
    }

    static Topology subtopologyNumbering() {
        final StreamsBuilder builder = new StreamsBuilder();
        builder.stream("input-z", Consumed.as("zz-source")).to("output-z");
        builder.stream("input-a", Consumed.as("aa-source")).to("output-a");
        return builder.build();
    }

    static Topology wideFanout() {
        final StreamsBuilder builder = new StreamsBuilder();
        final KStream<String, String> input = builder.stream("input");
        for (int i = 0; i < 5; i++) {
            input.filter((k, v) -> true).mapValues(v -> v).to("output-" + i);
        }
        return builder.build();
    }

    static Topology tableMapValuesMaterialized() {
        final StreamsBuilder builder = new StreamsBuilder();
        final KTable<String, String> table = builder.table("table-input");
        table.mapValues(v -> v + "!", Materialized.<String, String, KeyValueStore<Bytes, byte[]>>as("mapped-store"))
            .filter((k, v) -> true, Materialized.with(Serdes.String(), Serdes.String()))
            .toStream()
            .to("output");
        return builder.build();
    }

    static Topology processorApi() {
        final Topology topology = new Topology();
        topology.addSource("Source", "topic-b", "topic-a", "topic-c");
        topology.addProcessor("Process", PassThrough::new, "Source");
        topology.addStateStore(Stores.keyValueStoreBuilder(
            Stores.inMemoryKeyValueStore("store-b"), Serdes.String(), Serdes.Long()), "Process");
        topology.addStateStore(Stores.keyValueStoreBuilder(
            Stores.inMemoryKeyValueStore("store-a"), Serdes.String(), Serdes.Long()), "Process");
        topology.addStateStore(Stores.keyValueStoreBuilder(
            Stores.inMemoryKeyValueStore("Counts"), Serdes.String(), Serdes.Long()), "Process");
        topology.addProcessor("Audit", PassThrough::new, "Source");
        topology.addSink("Sink-1", "output-1", "Process");
        topology.addSink("Sink-2", "output-2", "Process", "Audit");
        topology.addProcessor("Leaf", PassThrough::new, "Process");
        return topology;
    }

    static Topology processorApiNumbering() {
        final Topology topology = new Topology();
        topology.addSource("zeta", "topic-z");
        topology.addSink("zeta-sink", "out-z", "zeta");
        topology.addSource("alpha", "topic-a");
        topology.addSink("alpha-sink", "out-a", "alpha");
        topology.addSource("middle", "topic-m");
        topology.addProcessor("middle-proc", PassThrough::new, "middle");
        topology.addStateStore(Stores.keyValueStoreBuilder(
            Stores.inMemoryKeyValueStore("shared"), Serdes.String(), Serdes.Long()), "middle-proc");
        topology.addProcessor("alpha-proc", PassThrough::new, "alpha");
        topology.connectProcessorAndStateStores("alpha-proc", "shared");
        return topology;
    }

    public static void main(final String[] args) throws IOException {
        final Path dir = Path.of(args.length > 0 ? args[0] : "tests/dsl/golden");
        Files.createDirectories(dir);
        for (final Map.Entry<String, Supplier<Topology>> entry : topologies().entrySet()) {
            final String description = entry.getValue().get().describe().toString();
            Files.writeString(dir.resolve(entry.getKey() + ".txt"), description, StandardCharsets.UTF_8);
        }
        System.out.println("wrote " + topologies().size() + " topology descriptions to " + dir);
    }
}
