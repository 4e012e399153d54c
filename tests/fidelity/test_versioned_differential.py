"""Versioned stores and versioned tables against Kafka Streams 4.4.0 itself, record for record (issue 26).

Two generators (versioned_strategies.py): commands on a versioned store through the Processor API
(put return codes, reads as of a time, deletes, and with `all_topics` the changelog bytes), and
versioned tables in the DSL joined by streams, written out, grouped or joined with other tables, with
out-of-order table updates and stream records, some beyond the history retention. Each case runs on
Kafka Streams' TopologyTestDriver (harness.py) and on streamlet's; describe(), every output record and
any processing error must be equal. `FIDELITY_VERSIONED_CASES` sets the number of cases per kind (a
tenth of `FIDELITY_CASES` by default: 200 in `make test`, 5,000 in `make fidelity`).
"""

from __future__ import annotations

import os

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.fidelity.harness import KafkaStreamsReference, difference, java_available
from tests.fidelity.shards import database_for_shard, seeded_for_shard, shard_cases, shard_param
from tests.fidelity.topology import Case, run_streamlet
from tests.fidelity.versioned_strategies import store_cases, table_cases

CASES = int(os.environ.get("FIDELITY_VERSIONED_CASES", int(os.environ.get("FIDELITY_CASES", "2000")) // 10))
"""Per kind; a tenth of the main suite's `FIDELITY_CASES` unless `FIDELITY_VERSIONED_CASES` says."""

pytestmark = pytest.mark.skipif(not java_available(), reason="the differential suite needs Java 17 and Maven")


def _check(kafka_streams: KafkaStreamsReference, strategy: st.SearchStrategy[Case], request: pytest.FixtureRequest,
           shard: int) -> None:
    built: list[bool] = []
    before = kafka_streams.cases_run
    cases_here = shard_cases(CASES, shard)

    @seeded_for_shard(request, shard)
    @settings(max_examples=cases_here, deadline=None, database=database_for_shard(shard),
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
    @given(strategy)
    def check(case: Case) -> None:
        kafka_streams.submit(case)
        try:
            ours = run_streamlet(case)
        finally:
            theirs = kafka_streams.result()
        diff = difference(case, theirs, ours)
        assert diff is None, diff
        built.append("build_error" not in theirs)

    check()
    assert sum(built) >= len(built) * 0.9, "too many cases built nothing"
    assert kafka_streams.cases_run - before >= cases_here  # every case went to Kafka Streams too


@shard_param
def test_versioned_store_commands_as_kafka_streams(kafka_streams: KafkaStreamsReference,
                                                   request: pytest.FixtureRequest, shard: int) -> None:
    _check(kafka_streams, store_cases(), request, shard)


@shard_param
def test_versioned_tables_as_kafka_streams(kafka_streams: KafkaStreamsReference, request: pytest.FixtureRequest,
                                           shard: int) -> None:
    _check(kafka_streams, table_cases(), request, shard)
