"""Says in streamlet's own words when the app waits for an unreachable broker, and when it goes on.

When the network to the broker fails (resets, a cut, a broker restart), aiokafka's clients retry by
themselves and the app continues once the broker answers again: nothing needs a restart. But what
the log shows meanwhile is a flood of low-level errors from several clients (fetcher, producer
sender, group coordinator, metadata), one per retry every 100 ms, none of which says that the app is
fine and waiting, nor for what. An operator needs one line when the waiting starts (what is
unreachable and why), a reminder now and then while it lasts, and one line when the app continues.

`BrokerWaitLog` is a logging handler on the `aiokafka` logger that condenses those records into such
lines on the `streamlet.kafka.broker` logger. It reads the records rather than probing the broker
itself, so it adds no connection and no task of its own, and it cannot disagree with the clients
about whether they reach the broker. `install()` attaches it once (the CLI does so at start-up;
library users may call it after configuring logging).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

log = logging.getLogger("streamlet.kafka.broker")

# Fragments of aiokafka's messages (aiokafka 0.14) that mean "a request or connection failed for want
# of the broker", and those that mean a broker answered again after such a failure.
_TROUBLE = (
    "Unable connect to node", "Connection at", "NodeNotReadyError", "KafkaConnectionError",
    "Unable to update metadata", "Unable to request metadata", "RequestTimedOutError",
)
# A JoinGroup (or SyncGroup) that the coordinator holds until the group's members have rejoined or timed
# out outlasts aiokafka's request.timeout.ms; aiokafka reports it as a timed-out request and "marks the
# coordinator dead". The broker answered everything meanwhile: it is the group that is waited for.
_HELD_GROUP_REQUESTS = ("JoinGroupRequest", "SyncGroupRequest")
_ANSWERED = ("Discovered coordinator", "Successfully synced group", "Joined group")
_MEMBERSHIP_LOST = ("member_id was not recognized", "Heartbeat session expired")


class BrokerWaitLog(logging.Handler):
    """Turns aiokafka's per-retry connection errors into "waiting for ..." / "continuing" lines."""

    def __init__(self, remind_every: float = 5.0, clock: Callable[[], float] = time.monotonic) -> None:
        super().__init__(logging.DEBUG)
        self.remind_every = remind_every
        self._clock = clock
        self._waiting_since: float | None = None
        self._reminded_at = 0.0
        self._membership_reported_at = -float("inf")

    @property
    def waiting(self) -> bool:
        return self._waiting_since is not None

    def emit(self, record: logging.LogRecord) -> None:
        try:
            message = record.getMessage()
        except Exception:  # a malformed record of someone else's is not ours to report
            return
        now = self._clock()
        if (record.levelno >= logging.WARNING and "RequestTimedOutError" in message
                and any(part in message for part in _HELD_GROUP_REQUESTS)):
            log.warning("the group coordinator held this member's join longer than request.timeout.ms: the group "
                        "waits for its members to rejoin or for a previous member's session to expire "
                        "(session.timeout.ms); the Kafka broker answers, the join is sent again (%s)", message)
        elif record.levelno >= logging.WARNING and any(part in message for part in _TROUBLE):
            self._on_trouble(message, now)
        elif any(part in message for part in _MEMBERSHIP_LOST):
            # aiokafka says it twice in a row (failed heartbeat, expired session): one line is enough.
            if now - self._membership_reported_at >= self.remind_every:
                self._membership_reported_at = now
                log.warning("the group dropped this instance (no heartbeat reached the broker within "
                            "session.timeout.ms): rejoining it")
        elif self._waiting_since is not None and any(part in message for part in _ANSWERED):
            log.info("the Kafka broker answers again after %.1fs: continuing (%s)",
                     now - self._waiting_since, message)
            self._waiting_since = None

    def _on_trouble(self, message: str, now: float) -> None:
        if self._waiting_since is None:
            self._waiting_since = self._reminded_at = now
            log.warning("lost the connection to the Kafka broker; waiting for it to come back (the clients "
                        "retry by themselves, no restart needed): %s", message)
        elif now - self._reminded_at >= self.remind_every:
            self._reminded_at = now
            log.warning("still waiting for the Kafka broker after %.0fs: %s", now - self._waiting_since, message)


def install(logger_name: str = "aiokafka") -> BrokerWaitLog:
    """Attach a `BrokerWaitLog` to aiokafka's logger, once (a second call returns the first one)."""
    target = logging.getLogger(logger_name)
    for handler in target.handlers:
        if isinstance(handler, BrokerWaitLog):
            return handler
    handler = BrokerWaitLog()
    target.addHandler(handler)
    return handler
