package io.streamlet.vectors;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.Random;

import org.apache.kafka.clients.producer.internals.BuiltInPartitioner;
import org.apache.kafka.common.utils.Utils;

/**
 * Writes test vectors for streamlet's partitioner: for each key, the Java client's
 * Utils.murmur2, Utils.toPositive(murmur2) and the producer's partition for several partition
 * counts (BuiltInPartitioner.partitionForKey, the path a Java producer takes for keyed records).
 */
public final class Murmur2Vectors {
    private static final int[] PARTITION_COUNTS = {1, 2, 3, 4, 5, 6, 7, 8, 10, 12, 16, 32, 100, 1000};

    public static void main(String[] args) throws IOException {
        if (args.length != 1) {
            System.err.println("usage: Murmur2Vectors OUTPUT.json");
            System.exit(2);
        }
        List<byte[]> keys = new ArrayList<>();
        keys.add(new byte[0]);
        for (int len = 1; len <= 17; len++) {
            byte[] ascending = new byte[len];
            byte[] high = new byte[len];
            for (int i = 0; i < len; i++) {
                ascending[i] = (byte) (i + 1);
                high[i] = (byte) (0xff - i);  // sign-extension traps: every byte >= 0x80
            }
            keys.add(ascending);
            keys.add(high);
        }
        String[] words = {
            "a", "key", "hello", "streamlet", "kafka-streams", "user-42", "order:1000001",
            "the quick brown fox jumps over the lazy dog", "Zürich", "日本語のキー", "🙂emoji🙂", "0", "-1",
        };
        for (String w : words) {
            keys.add(w.getBytes(StandardCharsets.UTF_8));
        }
        Random random = new Random(20240917L);
        for (int i = 0; i < 200; i++) {
            byte[] b = new byte[random.nextInt(65)];
            random.nextBytes(b);
            keys.add(b);
        }

        HexFormat hex = HexFormat.of();
        StringBuilder out = new StringBuilder();
        out.append("{\n  \"generator\": \"tests/java/vectors (org.apache.kafka:kafka-clients:3.9.1)\",\n");
        out.append("  \"partition_counts\": [");
        for (int i = 0; i < PARTITION_COUNTS.length; i++) {
            out.append(i == 0 ? "" : ", ").append(PARTITION_COUNTS[i]);
        }
        out.append("],\n  \"vectors\": [\n");
        for (int k = 0; k < keys.size(); k++) {
            byte[] key = keys.get(k);
            int hash = Utils.murmur2(key);
            out.append("    {\"key_hex\": \"").append(hex.formatHex(key)).append("\", ")
               .append("\"murmur2\": ").append(hash).append(", ")
               .append("\"to_positive\": ").append(Utils.toPositive(hash)).append(", ")
               .append("\"partitions\": [");
            for (int i = 0; i < PARTITION_COUNTS.length; i++) {
                out.append(i == 0 ? "" : ", ")
                   .append(BuiltInPartitioner.partitionForKey(key, PARTITION_COUNTS[i]));
            }
            out.append("]}").append(k + 1 < keys.size() ? ",\n" : "\n");
        }
        out.append("  ]\n}\n");
        Files.writeString(Path.of(args[0]), out.toString(), StandardCharsets.UTF_8);
        System.out.println("wrote " + keys.size() + " vectors to " + args[0]);
    }
}
