package io.streamlet.reference;

import java.util.LinkedHashMap;
import java.util.Map;

/** Behaviour scenarios for the sliding-window, emit-strategy and cogroup topologies (see BehaviourScenarios). */
final class WindowCogroupScenarios {

    private WindowCogroupScenarios() {
    }

    static Map<String, BehaviourScenarios.Scenario> scenarios() {
        final long noCache = BehaviourScenarios.NO_CACHE;
        final Map<String, BehaviourScenarios.Scenario> all = new LinkedHashMap<>();
        all.put("sliding_count_grace", new BehaviourScenarios.Scenario("sliding_count_grace", noCache)
            .in("input", "String", "String")
            .out("output", "String", "Long")
            .pipe("input", "a", "x", 3)      // before the time difference: the [0,10] window
            .pipe("input", "a", "x", 10)
            .pipe("input", "a", "x", 15)
            .pipe("input", "b", "x", 12)
            .pipe("input", "a", "x", 12)     // out of order: between two records
            .pipe("input", "a", "x", 15)     // same time again
            .pipe("input", "a", "x", 30)
            .pipe("input", "a", "x", 14)     // too late: its windows closed
            .pipe("input", "a", "x", 21)     // late, but within grace for some windows
            .pipe("input", null, "x", 31)
            .pipe("input", "a", null, 31));
        all.put("sliding_reduce_emit_final_after_map", new BehaviourScenarios.Scenario(
            "sliding_reduce_emit_final_after_map", noCache)
            .in("input", "String", "String")
            .out("output", "String", "String")
            .pipe("input", "1", "a1", 10)
            .pipe("input", "2", "a2", 12)
            .pipe("input", "3", "b1", 13)
            .pipe("input", "4", "a3", 16)
            .pipe("input", "5", "b2", 30)
            .pipe("input", "6", "a4", 31)
            .pipe("input", "7", "a5", 50));
        all.put("tumbling_count_emit_final", new BehaviourScenarios.Scenario("tumbling_count_emit_final", noCache)
            .in("input", "String", "String")
            .out("output", "String", "Long")
            .pipe("input", "a", "x", 1)
            .pipe("input", "b", "x", 5)
            .pipe("input", "a", "x", 11)
            .pipe("input", "a", "x", 9)       // within grace
            .pipe("input", "b", "x", 12)      // closes [0,10)
            .pipe("input", "a", "x", 2)       // too late
            .pipe("input", "c", "x", 35)
            .pipe("input", "a", "x", 36));
        all.put("cogroup_two_streams", new BehaviourScenarios.Scenario("cogroup_two_streams", noCache)
            .in("input", "String", "String")
            .in("input2", "String", "String")
            .out("output", "String", "String")
            .pipe("input", "a", "1", 1)
            .pipe("input2", "x", "a2", 2)
            .pipe("input", "b", "3", 3)
            .pipe("input2", "y", "b4", 4)
            .pipe("input", "a", null, 5)
            .pipe("input", "a", "6", 6));
        all.put("cogroup_windowed_named", new BehaviourScenarios.Scenario("cogroup_windowed_named", noCache)
            .in("input", "String", "String")
            .in("input2", "String", "String")
            .out("output", "String", "String")
            .pipe("input", "a", "1", 1)
            .pipe("input2", "a", "2", 4)
            .pipe("input", "a", "3", 12)
            .pipe("input2", "a", "4", 8)
            .pipe("input2", "b", "5", 25)
            .pipe("input", "a", "6", 9));
        all.put("cogroup_session", new BehaviourScenarios.Scenario("cogroup_session", noCache)
            .in("input", "String", "String")
            .in("input2", "String", "String")
            .out("output", "String", "String")
            .pipe("input", "a", "1", 1)
            .pipe("input2", "a", "2", 4)
            .pipe("input", "a", "3", 20)
            .pipe("input2", "a", "4", 12)
            .pipe("input", "a", "5", 7)
            .pipe("input2", "a", "6", 30));
        return all;
    }
}
