package io.streamlet.commitmetadata;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.lang.reflect.Field;
import java.nio.charset.StandardCharsets;
import java.util.HexFormat;
import java.util.Map;
import org.apache.kafka.streams.processor.internals.ProcessorMetadata;
import org.apache.kafka.streams.processor.internals.TopicPartitionMetadata;

/**
 * Answers one request per stdin line with one stdout line, using Kafka Streams' own classes:
 * <ul>
 *   <li>{@code decode HEX}, HEX being the metadata string's UTF-8 bytes in hex (empty for ""):
 *       {@code TopicPartitionMetadata.decode} (never given null: a committed offset's metadata is ""
 *       when there is none), printed as {@code {"partitionTime":N,"metadata":[["HEXKEY",V],...]}} in the
 *       map's iteration order, keys as hex of their UTF-8 bytes.</li>
 *   <li>{@code encode TIME [HEXKEY=VALUE ...]}: the entries put, in this order, into a new
 *       {@code ProcessorMetadata} (as a task's map grows), then
 *       {@code new TopicPartitionMetadata(TIME, map).encode()}.</li>
 * </ul>
 */
public final class CommitMetadataCheck {
    private static final HexFormat HEX = HexFormat.of();

    private CommitMetadataCheck() {
    }

    public static void main(final String[] args) throws Exception {
        final Field entries = ProcessorMetadata.class.getDeclaredField("metadata");
        entries.setAccessible(true);
        final PrintStream out = new PrintStream(System.out, true, StandardCharsets.UTF_8);
        final BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        String line;
        while ((line = in.readLine()) != null) {
            final String[] words = line.split(" ", -1);
            switch (words[0]) {
                case "decode":
                    final String text =
                        new String(HEX.parseHex(words.length > 1 ? words[1] : ""), StandardCharsets.UTF_8);
                    out.println(describe(TopicPartitionMetadata.decode(text), entries));
                    break;
                case "encode":
                    final ProcessorMetadata metadata = new ProcessorMetadata();
                    for (int i = 2; i < words.length; i++) {
                        final int eq = words[i].indexOf('=');
                        final String key =
                            new String(HEX.parseHex(words[i].substring(0, eq)), StandardCharsets.UTF_8);
                        metadata.put(key, Long.parseLong(words[i].substring(eq + 1)));
                    }
                    out.println(new TopicPartitionMetadata(Long.parseLong(words[1]), metadata).encode());
                    break;
                default:
                    out.println("{\"error\":\"unknown request\"}");
            }
        }
    }

    @SuppressWarnings("unchecked")
    private static String describe(final TopicPartitionMetadata decoded, final Field entries) throws Exception {
        final StringBuilder json = new StringBuilder("{\"partitionTime\":").append(decoded.partitionTime())
            .append(",\"metadata\":[");
        String separator = "";
        final Map<String, Long> map = (Map<String, Long>) entries.get(decoded.processorMetadata());
        for (final Map.Entry<String, Long> e : map.entrySet()) {
            json.append(separator).append("[\"").append(HEX.formatHex(e.getKey().getBytes(StandardCharsets.UTF_8)))
                .append("\",").append(e.getValue()).append(']');
            separator = ",";
        }
        return json.append("]}").toString();
    }
}
