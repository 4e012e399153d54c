"""`streamlet spark ...`: the Spark engine's commands (pyspark is imported only when one runs).

    streamlet spark fetch     fetch the Kafka connector's jars into the cache (done once)
"""

from __future__ import annotations

import argparse
from typing import Any


def _cmd_fetch(args: argparse.Namespace) -> int:
    from streamlet.spark.jars import ensure_spark_jars

    for jar in ensure_spark_jars():
        print(jar)
    return 0


def add_spark_commands(commands: Any) -> None:
    """Add `spark` and its actions to the main parser's sub-commands."""
    spark = commands.add_parser("spark", help="run a topology on Apache Spark (Structured Streaming)")
    actions = spark.add_subparsers(dest="action", required=True, metavar="ACTION")
    fetch = actions.add_parser("fetch", help="download Spark's Kafka connector jars into the cache (done once)")
    fetch.set_defaults(handler=_cmd_fetch)
