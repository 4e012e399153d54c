"""Issue 23: streamlet's output across restarts equals Kafka Streams' on the real broker, record for record.

Each case runs on Kafka Streams (tests/fidelity/java's RestartApp, a real application) and on streamlet
(`streamlet run`), each on its own topics and application id, through the same steps: input written, a clean close
or a kill -9 under exactly_once_v2 (after a commit, or with a batch in flight), a restart on the same state
directory, more input (some of it late), then everything read `read_committed` (see driver.py).

`make test` runs the handful below: one small case per kind of difference the suite found at length
(`make fidelity-restart`), plus generated cases (`FIDELITY_RESTART_TEST_CASES`, default 2, from a fixed seed).
Nothing here is widened to accept a difference.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import Any

import pytest

from tests.fidelity.harness import java_available
from tests.fidelity_restart.driver import compare_case, describe_case
from tests.fidelity_restart.screen import Screen
from tests.fidelity_restart.strategies import Case, generate

pytestmark = [pytest.mark.anyio, pytest.mark.broker,
              pytest.mark.skipif(not java_available(), reason="the restart suite needs Java 17 and Maven")]

GENERATED = int(os.environ.get("FIDELITY_RESTART_TEST_CASES", "2"))
SEED = 23


def _emit_final_tumbling(stop: dict[str, Any]) -> Case:
    """The issue's example, scaled to ms: a tumbling 10 ms count, no grace, emitted on window close, windows kept an
    hour; event time 0..57, a stop, then 60..87: each of the 8 windows comes out once."""
    return {
        "id": f"emit-final-{stop['kind']}", "kind": "windowed", "guarantee": "exactly_once_v2", "stop": stop,
        "ops": [{"op": "stream", "topic": "in"}, {"op": "group_by_key", "name": None, "serdes": True},
                {"op": "windowed_by", "window": {"size": 10, "advance": None, "grace": 0}},
                {"op": "emit_strategy", "kind": "on_window_close"},
                {"op": "count", "store": {"name": None, "type": None, "caching": False, "logging": True,
                                          "retention": 3_600_000}},
                {"op": "to_stream"}, {"op": "to", "topic": "out", "key": {"time_windowed": 10}, "value": "long"}],
        "outputs": ["out"],
        "inputs": [["in", "a", "1", t] for t in range(0, 60, 3)] + [["in", "a", "2", t] for t in range(60, 90, 3)],
        "phase1": 20,
    }


HANDFUL: list[Case] = [
    _emit_final_tumbling({"kind": "close", "at": 20, "p2_running": False}),
    _emit_final_tumbling({"kind": "kill", "at": 20, "p2_running": False}),
]


def _generated() -> list[Case]:
    screen = Screen()
    try:
        return generate(GENERATED, SEED, screen)
    finally:
        screen.close()


@pytest.fixture(autouse=True)
def _quiet() -> Any:
    logging.getLogger("aiokafka").setLevel(logging.ERROR)
    yield


@pytest.mark.parametrize("case", HANDFUL, ids=[c["id"] for c in HANDFUL])
async def test_restart_gives_kafka_streams_output(case: Case, kafka_broker: Any, tmp_path: Path) -> None:
    comparison = await compare_case(case, kafka_broker.bootstrap_servers, tmp_path)
    assert comparison.difference is None, f"{comparison.difference}\n\n{describe_case(case)}"


async def test_generated_restart_cases_give_kafka_streams_output(kafka_broker: Any, tmp_path: Path) -> None:
    found = []
    for case in _generated():
        comparison = await compare_case(case, kafka_broker.bootstrap_servers, tmp_path / case["id"])
        if comparison.difference is not None:
            found.append(f"case {case['id']}:\n{comparison.difference}\n{describe_case(case)}")
    assert not found, "\n\n".join(found)
