"""`streamlet spark ...`: the Spark engine's commands (pyspark is imported only when one runs).

    streamlet spark run MODULE:FUNCTION [--master URL] [--checkpoint DIR] [--config FILE] [--set k=v ...]
    streamlet spark backfill MODULE:FUNCTION [--from earliest|ISO-8601|offsets-JSON] [--until latest|ISO-8601] ...
    streamlet spark fetch     fetch the Kafka connector's jars into the cache (done once)

`run` goes on until SIGINT/SIGTERM (exit 0) or a query fails (exit 1); kill -9 and a start with the same
`--checkpoint` continue where it stopped. `backfill` processes the bounded range and exits by itself.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import signal
import sys
from typing import Any

from streamlet.cli.loading import configure_logging, load_target, parse_settings, read_config_file
from streamlet.spark.jars import ensure_spark_jars
from streamlet.spark.plan import CHECKPOINT_KEY, ENGINE_KEY_PREFIX, MASTER_KEY

log = logging.getLogger("streamlet.spark.cli")


def _cmd_fetch(args: argparse.Namespace) -> int:
    for jar in ensure_spark_jars():
        print(jar)
    return 0


def _app(args: argparse.Namespace) -> tuple[Any, dict[str, Any]]:
    configure_logging(args.log_level)
    topology, config = load_target(args.target)
    for path in args.config or []:
        config.update(read_config_file(path))
    config.update(parse_settings(args.set or []))
    if args.master:
        config[MASTER_KEY] = args.master
    config.setdefault(MASTER_KEY, "local[*]")
    if args.checkpoint:
        config[CHECKPOINT_KEY] = args.checkpoint
    return topology, config


def _cmd_run(args: argparse.Namespace) -> int:
    # First of all: a SIGTERM while pyspark loads or the queries start must still end in a clean stop.
    stopping: list[int] = []

    def on_signal(signum: int, _frame: Any) -> None:
        stopping.append(signum)

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    from streamlet.spark.streams import SparkStreams  # lazy: the whole engine, only when a command runs

    topology, config = _app(args)
    streams = SparkStreams(topology, config)
    streams.start()
    # pyspark's SparkContext put its own SIGINT handler in (cancel every job, raise KeyboardInterrupt
    # wherever the main thread is, often inside a py4j call): Ctrl-C must stop as SIGTERM does.
    signal.signal(signal.SIGINT, on_signal)
    print(f"streamlet spark: running {len(streams.queries)} queries; checkpoints in {streams.checkpoint_root()}",
          file=sys.stderr, flush=True)
    try:
        while not stopping:
            if streams.await_termination(0.5):
                log.error("every query stopped by itself")
                return 1
    finally:
        streams.stop()
    log.info("stopped on signal %d", stopping[0])
    return 0


def _cmd_backfill(args: argparse.Namespace) -> int:
    from streamlet.spark.bounds import backfill_bounds  # lazy: the engine, only when a command runs
    from streamlet.spark.streams import SparkStreams

    topology, config = _app(args)
    streams = SparkStreams(topology, config)
    internal = topology.internal_topics
    sources = sorted({t for sub in topology.sub_topologies() for t in sub.source_topics if t not in internal})
    client = {k: v for k, v in config.items() if not str(k).startswith(ENGINE_KEY_PREFIX)}
    bounds = asyncio.run(backfill_bounds(client, sources, args.start, args.until))
    passes = streams.backfill(bounds)  # raises (exit 1, saying why) unless every query read its input to the end
    print(f"streamlet spark: backfill done in {passes} passes; checkpoints in {streams.checkpoint_root()}",
          file=sys.stderr, flush=True)
    return 0


def _app_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("target", metavar="MODULE:FUNCTION")
    parser.add_argument("--master", default=None, help="Spark master URL (default local[*])")
    parser.add_argument("--checkpoint", default=None, metavar="DIR",
                        help="checkpoint root on storage every node sees (default <state.dir>/<application.id>/spark)")
    parser.add_argument("--config", action="append", metavar="FILE",
                        help="a .properties or .json file of settings (repeatable; later files win)")
    parser.add_argument("--set", action="append", metavar="KEY=VALUE", help="one setting (repeatable; wins)")
    parser.add_argument("--log-level", default="INFO", help="DEBUG, INFO (default), WARNING, ERROR")


def add_spark_commands(commands: Any) -> None:
    """Add `spark` and its actions to the main parser's sub-commands."""
    spark = commands.add_parser("spark", help="run a topology on Apache Spark (Structured Streaming)")
    actions = spark.add_subparsers(dest="action", required=True, metavar="ACTION")
    run = actions.add_parser("run", help="run continuously until SIGINT/SIGTERM")
    _app_arguments(run)
    run.set_defaults(handler=_cmd_run)
    backfill = actions.add_parser("backfill", help="process a bounded range of the input and exit")
    _app_arguments(backfill)
    backfill.add_argument("--from", dest="start", default="earliest",
                          help="earliest (default), an ISO-8601 time, or offsets JSON as Spark's Kafka source takes")
    backfill.add_argument("--until", default="latest", help="latest (default) or an ISO-8601 time")
    backfill.set_defaults(handler=_cmd_backfill)
    fetch = actions.add_parser("fetch", help="download Spark's Kafka connector jars into the cache (done once)")
    fetch.set_defaults(handler=_cmd_fetch)
