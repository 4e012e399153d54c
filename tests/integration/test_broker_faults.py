"""The broker dies under a running application (issue #11): SIGKILL mid-transaction, and a 60 s outage.

Each test has a broker of its own (the session broker stays up for the others) and runs two WordCount
instances while input flows. The broker's JVM is killed with SIGKILL, so whatever transaction was
open is cut off, and started again on the same port and data. The applications are never restarted
by hand: they must wait, say in their log what they are waiting for, and continue by themselves.
Exactly-once: every word's updates read `read_committed` are exactly 1..n. At-least-once: no input
lost.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from streamlet.testing import LocalKafkaBroker
from tests.integration.chaos import ChaosResult, kill_broker, run_chaos

pytestmark = [pytest.mark.anyio, pytest.mark.broker]


def _assert_survived_by_itself(result: ChaosResult) -> None:
    for i, (alive, code, log) in enumerate(zip(result.alive_at_end, result.exit_codes, result.logs, strict=True)):
        assert alive and code == 0, f"instance {i} crashed or did not close cleanly (exit {code}):\n{log[-4000:]}"
        assert "ERROR state" not in log and "to ERROR" not in log, log[-4000:]
        # What it waited for, in streamlet's words, and that it went on (see runtime/broker_wait_log.py).
        assert "waiting for" in log, log[-4000:]
        assert "continuing" in log, log[-4000:]


@pytest.mark.parametrize("guarantee", ["exactly_once_v2", "at_least_once"])
async def test_broker_killed_mid_transaction_and_restarted(tmp_path: Path, guarantee: str) -> None:
    with LocalKafkaBroker(data_dir=tmp_path / "kafka") as broker:
        result = await run_chaos(broker.bootstrap_servers, tmp_path, words=60_000,
                                 disrupt=kill_broker(broker, after=6, down_for=2), guarantee=guarantee,
                                 produce_seconds=20, seed=21)
    if guarantee == "exactly_once_v2":
        assert result.check.exact, result.check.summary()
    else:
        assert result.check.no_loss, result.check.summary()
    _assert_survived_by_itself(result)


async def test_exactly_once_through_a_60_second_broker_outage(tmp_path: Path) -> None:
    # Longer than the session timeout (6 s), the transaction timeout (10 s) and aiokafka's request
    # timeouts (40 s): every client's retries run out at least once while the broker is away.
    with LocalKafkaBroker(data_dir=tmp_path / "kafka") as broker:
        result = await run_chaos(broker.bootstrap_servers, tmp_path, words=40_000,
                                 disrupt=kill_broker(broker, after=5, down_for=60), guarantee="exactly_once_v2",
                                 produce_seconds=70, seed=22)
    assert result.check.exact, result.check.summary()
    _assert_survived_by_itself(result)
