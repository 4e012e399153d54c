"""A restart case first runs, without any restart, on both TopologyTestDrivers (tests/fidelity's harness): a case
whose topology Kafka Streams refuses, or that fails while processing (a windowed key reaching a String serde, say),
is not worth half a minute of broker time, since both systems would stop at a point that depends on their last
commit. The drivers' comparison is kept as a hint for the report: a difference there is not about restarts.

The driver pipes the input in the order it was generated, one record at a time; on a broker a task reading several
partitions takes them by timestamp, so for such cases the hint is only a hint. The `punctuate` op is not in the
fidelity vocabulary and is left out here.
"""

from __future__ import annotations

import logging
from typing import Any

from tests.fidelity.harness import KafkaStreamsReference, difference
from tests.fidelity.topology import run_streamlet
from tests.fidelity_restart.strategies import Case


def driver_case(case: Case) -> dict[str, Any]:
    """The restart case as one uninterrupted tests/fidelity case."""
    return {"config": {"cache_max_bytes": 0}, "ops": [op for op in case["ops"] if op["op"] != "punctuate"],
            "inputs": [{"topic": t, "key": k, "value": v, "ts": ts} for t, k, v, ts in case["inputs"]],
            "outputs": case["outputs"]}


class Screen:
    """One Kafka Streams reference JVM for the screening of many cases."""

    def __init__(self) -> None:
        self._reference = KafkaStreamsReference()
        self.output_at: list[int] = []
        """After `check`: for each record Kafka Streams' driver wrote, the index of the input record it came after."""

    def check(self, case: Case) -> tuple[bool, str | None]:
        """(whether the case runs on Kafka Streams' driver without error, the drivers' difference or None)."""
        fidelity = driver_case(case)
        self._reference.submit(fidelity)
        logger = logging.getLogger("streamlet")
        level = logger.level
        logger.setLevel(logging.ERROR)
        try:
            ours = run_streamlet(fidelity)
        finally:
            logger.setLevel(level)
            theirs = self._reference.result()
        usable = "build_error" not in theirs and "error" not in theirs
        self.output_at = [record[0] for record in theirs.get("records", [])] if usable else []
        return usable, difference(fidelity, theirs, ours) if usable else None

    def close(self) -> None:
        self._reference.close()
