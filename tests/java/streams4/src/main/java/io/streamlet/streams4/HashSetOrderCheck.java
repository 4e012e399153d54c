package io.streamlet.streams4;

import java.util.HashSet;
import java.util.HexFormat;
import java.util.Set;

import org.apache.kafka.common.utils.Bytes;

/**
 * The iteration order of a {@code HashSet<Bytes>}, the set a Kafka Streams 4.4.0 suppression buffer keeps its dirty
 * keys in and writes its changelog in at each commit. Each case line on stdin is "label op op ...", one set per
 * line: an op is a key in hex (added; `_` for the empty key) or `|` (prints "label KEY KEY ..." in the set's
 * iteration order, then clears the set, which keeps its table as the buffer's does).
 * tests/stores/test_java_hash_order.py compares streamlet's emulation of that order with it.
 */
public final class HashSetOrderCheck {
    private static final HexFormat HEX = HexFormat.of();

    public static void main(final String[] args) throws Exception {
        CaseLines.forEach(HashSetOrderCheck::run);
    }

    private static void run(final String[] words) {
        final Set<Bytes> set = new HashSet<>();
        for (int i = 1; i < words.length; i++) {
            if (words[i].equals("|")) {
                final StringBuilder line = new StringBuilder(words[0]);
                for (final Bytes key : set) {
                    line.append(' ').append(key.get().length == 0 ? "_" : HEX.formatHex(key.get()));
                }
                System.out.println(line);
                set.clear();
            } else {
                set.add(Bytes.wrap(words[i].equals("_") ? new byte[0] : HEX.parseHex(words[i])));
            }
        }
    }
}
