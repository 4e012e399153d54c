"""Replays the Java behaviour scenarios: same topology, same input records, same output records.

Each tests/dsl/golden/behaviour/<scenario>.json was written by BehaviourScenarios.java from the real
Kafka Streams TopologyTestDriver (4.4.0; 3.9.1 wrote the same files): the inputs it piped and every
record that reached the output topics (key, value, timestamp, headers). streamlet's driver must
produce exactly those records.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from streamlet.serdes import resolve_serde
from streamlet.testing import TopologyTestDriver
from tests.dsl.topologies import REFERENCE_TOPOLOGIES

SCENARIOS = Path(__file__).parent / "golden" / "behaviour"
SCENARIO_NAMES = sorted(p.stem for p in SCENARIOS.glob("*.json"))

def _headers(pairs: list[list[str]]) -> tuple[tuple[str, bytes], ...]:
    return tuple((name, value.encode()) for name, value in pairs)


def _record(r: Any) -> dict[str, Any]:
    return {
        "key": r.key, "value": r.value, "timestamp": r.timestamp,
        "headers": [[name, value.decode()] for name, value in r.headers],
    }


def test_there_are_scenarios() -> None:
    assert len(SCENARIO_NAMES) >= 15


@pytest.mark.parametrize("name", SCENARIO_NAMES)
def test_same_output_records_as_kafka_streams(name: str) -> None:
    scenario = json.loads((SCENARIOS / f"{name}.json").read_text())
    topology = REFERENCE_TOPOLOGIES[scenario["topology"]]()
    config = {"application.id": f"behaviour-{name}".replace("_", "-"), **scenario["config"]}
    with TopologyTestDriver(topology, config) as driver:
        inputs = {
            topic: driver.create_input_topic(topic, resolve_serde(k), resolve_serde(v))
            for topic, (k, v) in scenario["input_serdes"].items()
        }
        for record in scenario["inputs"]:
            inputs[record["topic"]].pipe_input(record["key"], record["value"], record["timestamp"],
                                               headers=_headers(record["headers"]))
        for topic, (k, v) in scenario["output_serdes"].items():
            output = driver.create_output_topic(topic, resolve_serde(k), resolve_serde(v))
            got = [_record(r) for r in output.read_records_to_list()]
            assert got == scenario["outputs"][topic], f"output topic {topic!r}"
