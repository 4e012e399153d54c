"""The TopologyTestDriver's side of a restart test: what the driver gives for the same input, phase by phase."""

from __future__ import annotations

from typing import Any


def driver_output_in_two_phases(out: Any, first: list[tuple[Any, list[tuple[str, str, int]]]],
                                second: list[tuple[Any, list[tuple[str, str, int]]]]
                                ) -> tuple[list[tuple[str, str, int]], list[tuple[str, str, int]]]:
    """A TopologyTestDriver run in two phases, the expectation of a restart test: pipe each (input topic,
    records) of `first`, read `out`, then pipe `second`; (what the first phase gave, everything)."""
    def run(phase: list[tuple[Any, list[tuple[str, str, int]]]]) -> list[tuple[str, str, int]]:
        for topic, records in phase:
            for key, value, ts in records:
                topic.pipe_input(key, value, ts)
        return [(r.key, r.value, r.timestamp) for r in out.read_records_to_list()]

    given = run(first)
    return given, given + run(second)
