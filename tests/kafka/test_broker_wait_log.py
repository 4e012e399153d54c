"""The "waiting for the broker" lines condensed from aiokafka's retry errors (no broker needed)."""

from __future__ import annotations

import logging

import pytest

from streamlet.kafka.broker_wait_log import BrokerWaitLog, install


class _Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def _record(level: int, message: str) -> logging.LogRecord:
    return logging.LogRecord("aiokafka.consumer.fetcher", level, __file__, 1, message, None, None)


def test_an_outage_is_one_waiting_line_reminders_and_one_continuing_line(caplog: pytest.LogCaptureFixture) -> None:
    clock = _Clock()
    handler = BrokerWaitLog(remind_every=5.0, clock=clock)
    caplog.set_level(logging.INFO, logger="streamlet.kafka.broker")
    handler.handle(_record(logging.INFO, "Discovered coordinator 1 for group g"))  # no outage: nothing to say
    for _ in range(30):  # aiokafka retries every 100 ms, one error each time
        handler.handle(_record(logging.ERROR, "Unable connect to node with id 1: [Errno 111] Connect call failed"))
        clock.now += 0.4
    handler.handle(_record(logging.ERROR, "Heartbeat session expired - marking coordinator dead"))
    handler.handle(_record(logging.WARNING, "Heartbeat failed: local member_id was not recognized; resetting"))
    assert handler.waiting
    handler.handle(_record(logging.INFO, "Discovered coordinator 1 for group g"))
    assert not handler.waiting
    lines = [r.getMessage() for r in caplog.records if r.name == "streamlet.kafka.broker"]
    assert lines[0].startswith("lost the connection to the Kafka broker; waiting for it to come back")
    assert "Connect call failed" in lines[0]
    assert [line.split(":")[0] for line in lines[1:3]] == ["still waiting for the Kafka broker after 5s",
                                                           "still waiting for the Kafka broker after 10s"]
    assert lines[3].startswith("the group dropped this instance")
    assert lines[4].startswith("the Kafka broker answers again after 12.0s: continuing")
    assert len(lines) == 5


def test_install_attaches_one_handler_only() -> None:
    target = logging.getLogger("streamlet-test-aiokafka")
    try:
        assert install(target.name) is install(target.name)
        assert sum(isinstance(h, BrokerWaitLog) for h in target.handlers) == 1
    finally:
        target.handlers.clear()


def test_a_join_the_coordinator_held_past_the_request_timeout_is_no_broker_failure(
        caplog: pytest.LogCaptureFixture) -> None:
    # aiokafka's line when a JoinGroup outlasts request.timeout.ms: the coordinator was waiting for the
    # group's members (a killed member's session), not away.
    handler = BrokerWaitLog(clock=_Clock())
    caplog.set_level(logging.INFO, logger="streamlet.kafka.broker")
    handler.handle(_record(logging.ERROR, "Error sending JoinGroupRequest to node 1 [[Error 7] RequestTimedOutError] "
                                          "-- marking coordinator dead"))
    handler.handle(_record(logging.INFO, "Discovered coordinator 1 for group g"))
    assert not handler.waiting
    lines = [r.getMessage() for r in caplog.records if r.name == "streamlet.kafka.broker"]
    assert len(lines) == 1
    assert lines[0].startswith("the group coordinator held this member's join longer than request.timeout.ms")
    assert "previous member's session" in lines[0] and "lost the connection" not in lines[0]
    # Any other request that times out still means the broker is not answering.
    handler.handle(_record(logging.ERROR, "Error sending HeartbeatRequest to node 1 [[Error 7] RequestTimedOutError] "
                                          "-- marking coordinator dead"))
    assert handler.waiting
