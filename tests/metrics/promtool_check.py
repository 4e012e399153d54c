"""`promtool check metrics` over an exposition, less its advice about names that are Kafka Streams' own."""

from __future__ import annotations

import subprocess

KAFKA_STREAMS_OWN_NAMES = {
    "kafka_streams_stream_thread_metrics_blocked_time_ns_total metric names should not contain abbreviated units",
}
"""promtool's advice about Kafka Streams' own names (KIP-761's blocked-time-ns-total): the JMX exporter gives
dashboards this very series name, so it stays."""


def promtool_complaints(promtool: str, exposition: bytes) -> list[str]:
    """What `promtool check metrics` says about `exposition`, but for `KAFKA_STREAMS_OWN_NAMES`."""
    check = subprocess.run([promtool, "check", "metrics"], input=exposition, capture_output=True, check=False)
    said = [line.strip() for line in (check.stdout + check.stderr).decode().splitlines() if line.strip()]
    if check.returncode != 0 and not said:
        return [f"promtool exited {check.returncode} saying nothing"]
    return [line for line in said if line not in KAFKA_STREAMS_OWN_NAMES]
