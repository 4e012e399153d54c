package io.streamlet.reference;

import java.util.LinkedHashMap;
import java.util.Map;

/** Behaviour scenarios for the window and join topologies (see BehaviourScenarios). */
final class WindowJoinScenarios {

    private WindowJoinScenarios() {
    }

    static Map<String, BehaviourScenarios.Scenario> scenarios() {
        final long noCache = BehaviourScenarios.NO_CACHE;
        final Map<String, BehaviourScenarios.Scenario> all = new LinkedHashMap<>();
        all.put("windowed_count_tumbling", new BehaviourScenarios.Scenario("windowed_count_tumbling", noCache)
            .in("input", "String", "String")
            .out("output", "String", "Long")
            .pipe("input", "a", "x", 1, "h", "1")
            .pipe("input", "a", "x", 9)
            .pipe("input", "b", "x", 5)
            .pipe("input", "a", "x", 10)
            .pipe("input", "a", "x", 3)      // stream time 10: window [0,10) is closed, dropped
            .pipe("input", null, "x", 12)    // null key: dropped
            .pipe("input", "a", null, 12)    // null value: counted
            .pipe("input", "b", "x", 35)
            .pipe("input", "a", "x", 29)     // [20,30) still open at stream time 35? no: closed
            .pipe("input", "a", "x", 31));
        all.put("windowed_reduce_hopping_grace", new BehaviourScenarios.Scenario("windowed_reduce_hopping_grace", noCache)
            .in("input", "String", "String")
            .out("output", "String", "String")
            .pipe("input", "k", "a", 0)
            .pipe("input", "k", "b", 7)
            .pipe("input", "k", "c", 12)
            .pipe("input", "k", "d", 3)      // [0,10) closes at 15: still open
            .pipe("input", "k", "e", 20)
            .pipe("input", "k", "f", 4)      // stream time 20: [0,10) closed
            .pipe("input", "k", "g", 14)     // [5,15) closed, [10,20) open until 25
            .pipe("input", "j", "h", 2));
        all.put("windowed_aggregate_after_map", new BehaviourScenarios.Scenario("windowed_aggregate_after_map", noCache)
            .in("input", "String", "String")
            .out("output", "String", "String")
            .pipe("input", "1", "a", 50)
            .pipe("input", "2", "b", 60)
            .pipe("input", "3", "a", 150)
            .pipe("input", "4", "a", 99));
        all.put("stream_table_join", new BehaviourScenarios.Scenario("stream_table_join", noCache)
            .in("input", "String", "String")
            .in("table-input", "String", "String")
            .out("output", "String", "String")
            .pipe("input", "a", "s1", 1)
            .pipe("table-input", "a", "A1", 2)
            .pipe("input", "a", "s2", 3, "h", "x")
            .pipe("table-input", "a", "A2", 4)
            .pipe("input", "a", "s3", 5)
            .pipe("input", "b", "s4", 6)
            .pipe("input", null, "s5", 7)
            .pipe("input", "a", null, 8)
            .pipe("table-input", "a", null, 9)
            .pipe("input", "a", "s6", 10)
            .pipe("table-input", "b", "B1", 11)
            .pipe("input", "b", "s7", 2));
        all.put("stream_table_left_join_unmaterialized",
            new BehaviourScenarios.Scenario("stream_table_left_join_unmaterialized", noCache)
            .in("input", "String", "String")
            .in("table-input", "String", "String")
            .out("output", "String", "String")
            .pipe("input", "a", "s1", 1)
            .pipe("table-input", "a", "A1", 2)
            .pipe("input", "a", "s2", 3)
            .pipe("input", null, "s3", 4)
            .pipe("input", "a", null, 5)
            .pipe("table-input", "a", null, 6)
            .pipe("input", "a", "s4", 7));
        all.put("stream_table_join_after_select_key",
            new BehaviourScenarios.Scenario("stream_table_join_after_select_key", noCache)
            .in("input", "String", "String")
            .in("table-input", "String", "String")
            .out("output", "String", "String")
            .pipe("table-input", "x", "X1", 1)
            .pipe("input", "k1", "x", 2)
            .pipe("input", "k2", "y", 3)
            .pipe("table-input", "y", "Y1", 4)
            .pipe("input", "k3", "y", 5));
        return all;
    }
}
