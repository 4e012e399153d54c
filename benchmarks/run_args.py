"""The command line every benchmarked application takes (the contract in `benchmarks/systems.py`).

One parser for the hand-written apps (the raw aiokafka pipe, the faust and Quix Streams apps), so
the contract cannot drift between them. Standard library only: the peers import it from their own
venvs (the runner starts every system with the repository on PYTHONPATH).
"""

from __future__ import annotations

import argparse

REQUIRED = ("--workload", "--bootstrap", "--app-id", "--input", "--output", "--guarantee", "--state-dir")


def parse_run_args(argv: list[str] | None = None) -> argparse.Namespace:
    """workload, bootstrap, app_id, input, output, guarantee, state_dir, commit_ms (int), table (or None),
    registry (or None)."""
    parser = argparse.ArgumentParser()
    for name in REQUIRED:
        parser.add_argument(name, required=True)
    parser.add_argument("--commit-ms", type=int, required=True)
    parser.add_argument("--table")
    parser.add_argument("--registry")  # the Avro workloads' schema registry (Confluent's API)
    return parser.parse_args(argv)
