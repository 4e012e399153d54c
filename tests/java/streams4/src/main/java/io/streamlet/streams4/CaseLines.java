package io.streamlet.streams4;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.util.function.Consumer;

/** The checks' input: one case a line on stdin, its words split on spaces; blank lines are skipped. */
final class CaseLines {
    private CaseLines() {
    }

    static void forEach(final Consumer<String[]> run) throws IOException {
        final BufferedReader in = new BufferedReader(new InputStreamReader(System.in));
        String line;
        while ((line = in.readLine()) != null) {
            if (!line.isBlank()) {
                run.accept(line.trim().split(" "));
            }
        }
    }
}
