package io.streamlet.reference;

import java.io.IOException;
import java.nio.file.Path;

/** Writes every golden file under the given directory (default tests/dsl/golden). */
public final class GenerateGolden {

    private GenerateGolden() {
    }

    public static void main(final String[] args) throws IOException {
        final Path dir = Path.of(args.length > 0 ? args[0] : "tests/dsl/golden");
        DescribeTopologies.main(new String[] {dir.toString()});
        BehaviourScenarios.main(new String[] {dir.resolve("behaviour").toString()});
    }
}
