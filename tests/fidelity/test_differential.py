"""streamlet against Kafka Streams 4.4.0 itself, record for record (issues #16 and 26).

Hypothesis generates topologies in the op vocabulary of tests/fidelity (stateless operations, stream-table
joins, grouped and windowed aggregations, table operations, with and without stores, caching and
logging) and the records to pipe; each case runs on Kafka Streams' own TopologyTestDriver (one JVM for
the whole run, see harness.py) and on streamlet's, and describe(), every output record (key and value
bytes, timestamp, order, and after which input it came out) and any processing error must be equal.

`FIDELITY_CASES` sets the number of cases (2,000 by default; `make fidelity` runs 50,000, in shards side by
side, see shards.py);
`FIDELITY_FOCUS=fk_join,global_join` makes every case contain one of those ops; `FIDELITY_FOCUS=windows`
makes every case a windowed aggregation (time, sliding or session windows, emit strategies) or a cogroup
(see strategies.py).
"""

from __future__ import annotations

import os

import pytest
from hypothesis import HealthCheck, given, settings

from tests.fidelity.harness import KafkaStreamsReference, difference, java_available
from tests.fidelity.shards import database_for_shard, seeded_for_shard, shard_cases, shard_param
from tests.fidelity.strategies import cases
from tests.fidelity.topology import Case, run_streamlet

CASES = int(os.environ.get("FIDELITY_CASES", "2000"))
FOCUS = {op for op in os.environ.get("FIDELITY_OPS", "").split(",") if op}
"""`FIDELITY_OPS=process_values,print`: only cases using one of these ops (to work on an operator)."""

pytestmark = pytest.mark.skipif(not java_available(), reason="the differential suite needs Java 17 and Maven")


@shard_param
def test_same_records_as_kafka_streams(kafka_streams: KafkaStreamsReference, request: pytest.FixtureRequest,
                                       shard: int) -> None:
    refused: list[str] = []  # topologies both refused to build: equal, but they test nothing
    cases_here = shard_cases(CASES, shard)  # this shard's share (all of them unless FIDELITY_SHARDS, see shards.py)
    before = kafka_streams.cases_run

    # The default example database (.hypothesis/, not committed) keeps a failing case, so that the next
    # run on this machine starts from it: a rare difference is found again rather than lost.
    @seeded_for_shard(request, shard)
    @settings(max_examples=cases_here, deadline=None, database=database_for_shard(shard),
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much])
    @given(cases().filter(lambda c: any(op["op"] in FOCUS for op in c["ops"])) if FOCUS else cases())
    def check(case: Case) -> None:
        kafka_streams.submit(case)  # the JVM runs it while streamlet does
        try:
            ours = run_streamlet(case)
        finally:
            theirs = kafka_streams.result()  # read even if streamlet failed: the next case gets its own answer
        diff = difference(case, theirs, ours)
        assert diff is None, diff
        if "build_error" in theirs:
            refused.append(theirs["build_error"])

    check()
    ran = kafka_streams.cases_run - before
    assert len(refused) <= ran // 20, f"too many cases built nothing: {refused[:5]}"
    # every case hypothesis ran went to Kafka Streams too (shrinking only adds to this)
    assert ran >= cases_here
