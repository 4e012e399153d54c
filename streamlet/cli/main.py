"""The `streamlet` command: run or describe an application's topology, manage the dev broker.

    streamlet run MODULE:FUNCTION [--config FILE] [--set key=value ...]
    streamlet describe MODULE:FUNCTION [--format text|dot|mermaid|svg]
    streamlet reset MODULE:FUNCTION [--config FILE] [--set ...] [--to-earliest | --to-datetime T | --to-offset N]
                    [--dry-run]
    streamlet topics create MODULE:FUNCTION [--config FILE] [--set ...] [--partitions N]
    streamlet broker start [--port N] | stop | status | fetch
    streamlet registry start [--port N] | stop | status | fetch
    streamlet spark run | backfill | fetch      (see streamlet.cli.spark)
    streamlet version

FUNCTION returns a `Topology` (or a `StreamsBuilder`, or a `(topology, config)` tuple). Config is
layered, later wins: the function's own dict, then `--config` (.properties or .json), then `--set`.
Errors the user can fix (no Java, bad config, unknown module) print one line and exit 1, never a
stack trace; a bug inside the application still shows its traceback.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import signal
import sys
import tempfile
from collections.abc import Callable, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any, TypeVar

from aiokafka.errors import KafkaConnectionError

from streamlet import _compiled
from streamlet.cli import reset as reset_tool
from streamlet.cli.loading import (
    UsageError,
    configure_logging,
    load_target,
    parse_settings,
    read_config_file,
)
from streamlet.cli.spark import add_spark_commands
from streamlet.config import StreamsConfig
from streamlet.errors import ConfigError, StreamsError, error_summary
from streamlet.http import serve, streams_app
from streamlet.http.server import serve_in_thread
from streamlet.http.workers_app import WorkersApp
from streamlet.kafka.topic_manager import create_user_topics
from streamlet.runtime.gc_tuning import tune_gc_for_streaming
from streamlet.runtime.instance_id import ensure_state_directory, state_root
from streamlet.runtime.kafka_streams import KafkaStreams
from streamlet.runtime.workers import WorkerPool
from streamlet.testing import local_broker, local_registry
from streamlet.topology_render import render

log = logging.getLogger("streamlet.cli")

EXIT_NOT_RUNNING = 3
"""`broker status` / `registry status` exit code when none runs (the LSB status convention)."""
_S = TypeVar("_S")  # a development service's state (DevBrokerState, DevRegistryState)


# -- commands -------------------------------------------------------------------------------------

async def run_streams(topology: Any, config: dict[str, Any], close_timeout: float,
                      http: tuple[str, int] | None = None) -> int:
    """Run until SIGINT/SIGTERM (exit 0 after a clean close) or until the client fails (exit 1);
    with `http`, serve `streamlet.http`'s app there for as long."""
    loop = asyncio.get_running_loop()
    finished = asyncio.Event()
    failed = False
    signals_seen: list[int] = []

    def on_signal(signum: int) -> None:
        signals_seen.append(signum)
        if len(signals_seen) > 1:  # a second Ctrl-C: the user does not want to wait for a clean close
            log.warning("second %s: exiting without a clean close", signal.Signals(signum).name)
            os._exit(128 + signum)
        log.info("%s received: closing", signal.Signals(signum).name)
        finished.set()

    def on_state_change(new: Any, old: Any) -> None:
        nonlocal failed
        if new.name == "ERROR":
            failed = True
            finished.set()
        elif new.name == "NOT_RUNNING":
            finished.set()

    for signum in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(signum, on_signal, signum)
    streams = KafkaStreams(topology, config)
    streams.set_state_listener(on_state_change)
    server = None
    if http is not None:
        server = await serve(streams_app(streams), *http)
        log.info("HTTP server listening on %s:%d", *http)
    try:
        await streams.start()
        await finished.wait()
    finally:
        if server is not None:
            server.close()
        clean = await streams.close(timeout=close_timeout)
        if not clean:
            log.warning("the streams client did not close within %.0fs", close_timeout)
    if failed or streams.state.name == "ERROR":
        error = getattr(streams, "error", None)
        reason = f": {error_summary(error)}" if error is not None else ""
        print(f"streamlet: error: the application failed{reason}", file=sys.stderr)
        return 1
    return 0


def _worker_state_dir(config: dict[str, Any], worker: int | str) -> str:
    """One state directory per worker process (see streamlet.runtime.workers)."""
    base = config.get("state.dir") or config.get("state_dir") or str(Path(tempfile.gettempdir()) / "streamlet")
    return str(Path(base) / f"worker-{worker}")


def _check_worker_state_dirs(config: dict[str, Any], workers: int) -> None:
    """The workers' state directories, checked before any worker starts: a worker that fails at start
    is replaced with a back-off that never gives up on a fault as steady as an unwritable directory."""
    app_id = StreamsConfig.of(config).application_id
    for worker in range(workers):
        ensure_state_directory(state_root({"state.dir": _worker_state_dir(config, worker)}, app_id))


def _log_hot_path() -> None:
    """Whether the per-record path runs compiled: a warning when it fell back to pure Python unasked."""
    if not _compiled.fell_back():
        log.info("hot path: %s", _compiled.describe())
    else:
        log.warning("hot path: %s; it runs, more slowly (`streamlet version` says the same)", _compiled.describe())


def _cmd_run(args: argparse.Namespace) -> int:
    configure_logging(args.log_level)  # first, so that the app's import-time logging shows too
    if os.environ.get("STREAMLET_WORKER_INDEX") is None:  # once: the pool's workers say nothing more
        _log_hot_path()
    topology, config = _load_with_config(args)
    if args.workers > 1:
        _check_worker_state_dirs(config, args.workers)
        worker_args = [args.target, "--log-level", args.log_level, "--close-timeout", str(args.close_timeout)]
        if args.http:
            # The pool serves one view of all workers on PORT; worker i listens on PORT+1+i.
            host, port = _http_address(args.http, 0)
            worker_args += ["--http", f"{host}:{port + 1}"]
            _serve_workers_view(host, port, args.workers)
        for path in args.config or []:
            worker_args += ["--config", path]
        for item in args.set or []:
            worker_args += ["--set", item]
        return WorkerPool(worker_args, args.workers).run()
    worker = os.environ.get("STREAMLET_WORKER_INDEX")
    if worker is not None:
        config["state.dir"] = _worker_state_dir(config, worker)
        config.pop("state_dir", None)
    http = _http_address(args.http, int(worker or 0)) if args.http else None
    if http is not None:
        announced = str(config.get("application.server") or "")
        if announced and worker is not None:
            # Workers share the settings: each announces the configured host with its own port.
            config["application.server"] = f"{announced.rpartition(':')[0]}:{http[1]}"
        elif not announced and http[0] not in ("0.0.0.0", "::", ""):
            config["application.server"] = f"{http[0]}:{http[1]}"
    tune_gc_for_streaming()  # this process is ours: see streamlet/runtime/gc_tuning.py
    return asyncio.run(run_streams(topology, config, args.close_timeout, http))


def _serve_workers_view(host: str, port: int, workers: int) -> None:
    """The pool's HTTP view over its workers (see streamlet.http.workers_app)."""
    reach = "127.0.0.1" if host in ("0.0.0.0", "::") else host
    serve_in_thread(WorkersApp([(reach, port + 1 + i) for i in range(workers)]), host, port)
    log.info("HTTP view of %d workers listening on %s:%d", workers, host, port)


def _http_address(text: str, worker: int) -> tuple[str, int]:
    """`HOST:PORT` of `--http`, the port moved up by the worker's index so that workers do not collide."""
    host, sep, port = text.rpartition(":")
    if not sep or not port.isdigit():
        raise ConfigError(f"--http wants HOST:PORT, got {text!r}")
    return host.strip("[]") or "127.0.0.1", int(port) + worker


def _cmd_describe(args: argparse.Namespace) -> int:
    topology, _ = load_target(args.target)
    print(render(topology.describe(), args.format))  # the text format as print(topology.describe()) shows it
    return 0


def _load_with_config(args: argparse.Namespace) -> tuple[Any, dict[str, Any]]:
    """The target's topology and its config, layered as `run` layers it (function, --config, --set)."""
    topology, config = load_target(args.target)
    for path in args.config or []:
        config.update(read_config_file(path))
    config.update(parse_settings(args.set or []))
    return topology, config


def _cmd_reset(args: argparse.Namespace) -> int:
    configure_logging("WARNING")
    topology, config = _load_with_config(args)
    streams_config = StreamsConfig(config)
    app_id = streams_config.application_id
    when = None
    if args.to_datetime is not None:
        try:
            when = datetime.fromisoformat(args.to_datetime)
        except ValueError as exc:
            raise UsageError(f"--to-datetime must be an ISO-8601 time, got {args.to_datetime!r}") from exc
    base = Path(streams_config["state.dir"])
    # The instance's own directory and, for `run --workers N`, each worker's.
    dirs = [state_root({"state.dir": str(base)}, app_id), *sorted(base.glob(f"worker-*/{app_id}"))]
    plan = asyncio.run(reset_tool.plan_reset(topology, config, to_datetime=when, to_offset=args.to_offset,
                                             state_dirs=dirs))
    print(plan.describe())
    if args.dry_run:
        print("(dry run: nothing changed)")
        return 0
    asyncio.run(reset_tool.apply_reset(plan, config))
    print("done: the next start reprocesses the input from these offsets")
    return 0


def _cmd_topics(args: argparse.Namespace) -> int:
    configure_logging("WARNING")
    topology, config = _load_with_config(args)
    created = asyncio.run(create_user_topics(topology, config, args.partitions, args.replication_factor))
    for name, partitions in created.items():
        print(f"created {name} ({partitions} partitions)")
    if not created:
        print("every source and sink topic exists already")
    return 0


def _cmd_broker(args: argparse.Namespace) -> int:
    if args.action == "fetch":
        versions = local_broker.KAFKA_VERSIONS if args.kafka_version == "all" else (args.kafka_version,)
        for version in versions:
            print(local_broker.ensure_kafka_jars(version=version))
        return 0
    return _dev_service(
        args.action, "broker", lambda: local_broker.start_dev_broker(args.port, args.kafka_version),
        local_broker.stop_dev_broker, local_broker.dev_broker_status,
        lambda state: state.bootstrap_servers, lambda state: f"pid {state.pid}, data in {state.data_dir}")


def _cmd_registry(args: argparse.Namespace) -> int:
    if args.action == "fetch":
        print(local_registry.ensure_registry_app(version=args.version))
        return 0
    return _dev_service(
        args.action, "schema registry", lambda: local_registry.start_dev_registry(args.port),
        local_registry.stop_dev_registry, local_registry.dev_registry_status,
        lambda state: state.url, lambda state: f"pid {state.pid}")


def _dev_service(action: str, noun: str, start: Callable[[], tuple[_S, bool]], stop: Callable[[], _S | None],
                 status: Callable[[], _S | None], address: Callable[[_S], str], details: Callable[[_S], str]) -> int:
    """`start`, `stop` or `status` of a background development service (the broker, the schema registry)."""
    if action == "start":
        state, started = start()
        if not started:
            print(f"already running ({details(state)})", file=sys.stderr)
        print(address(state))
        return 0
    if action == "stop":
        stopped = stop()
        print(f"stopped the {noun} at {address(stopped)}" if stopped else "not running")
        return 0
    running = status()
    if running is None:
        print("not running")
        return EXIT_NOT_RUNNING
    print(f"running at {address(running)} ({details(running)})")
    return 0


def _cmd_version(args: argparse.Namespace) -> int:
    from importlib.metadata import PackageNotFoundError, version

    from streamlet.kafka.maven_jars import cache_dir

    try:
        installed = version("streamlet")
    except PackageNotFoundError:
        installed = "(not installed: run from a source tree)"
    package = Path(_compiled.__file__).resolve().parent
    print(f"streamlet {installed}")
    print(f"package: {package}")
    print(f"python: {sys.version.split()[0]} ({sys.executable})")
    print(f"hot path: {_compiled.describe()}")
    print(f"cache: {cache_dir()} (Kafka jars and the dev broker; STREAMLET_CACHE_DIR moves it)")
    return 0


def _add_config_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--config", action="append", metavar="FILE",
                        help="a .properties or .json file of settings (repeatable; later files win)")
    parser.add_argument("--set", action="append", metavar="KEY=VALUE", help="one setting (repeatable; wins)")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="streamlet", description="Kafka Streams for Python.")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    run = commands.add_parser("run", help="run the topology MODULE:FUNCTION returns, until SIGINT/SIGTERM")
    run.add_argument("target", metavar="MODULE:FUNCTION")
    _add_config_arguments(run)
    run.add_argument("--log-level", default="INFO", help="DEBUG, INFO (default), WARNING, ERROR")
    run.add_argument("--workers", type=int, default=1, metavar="N",
                     help="N supervised worker processes, one group member each (Kafka Streams' "
                          "num.stream.threads, as processes); a worker that dies is replaced")
    run.add_argument("--http", metavar="HOST:PORT", default=None,
                     help="serve interactive queries, /metrics, /health/live and /health/ready over HTTP "
                          "there; with --workers N, one view of all workers there and worker i on PORT+1+i; "
                          "application.server defaults to the address served")
    run.add_argument("--close-timeout", type=float, default=60.0, metavar="SECONDS",
                     help="how long a clean close may take after a signal (default 60)")
    run.set_defaults(handler=_cmd_run)

    describe = commands.add_parser("describe", help="print the topology as Kafka Streams describes it, or draw it")
    describe.add_argument("target", metavar="MODULE:FUNCTION")
    describe.add_argument("--format", choices=("text", "dot", "mermaid", "svg"), default="text",
                          help="text (Kafka Streams' describe(), the default), dot (Graphviz), mermaid, svg")
    describe.set_defaults(handler=_cmd_describe)

    reset = commands.add_parser(
        "reset", help="reprocess from scratch: reset input offsets, delete internal topics, wipe local state "
                      "(Kafka Streams' application reset tool; stop every instance first)")
    reset.add_argument("target", metavar="MODULE:FUNCTION")
    _add_config_arguments(reset)
    where = reset.add_mutually_exclusive_group()
    where.add_argument("--to-earliest", action="store_true", help="resume from each partition's start (default)")
    where.add_argument("--to-datetime", metavar="ISO-8601", help="resume from the first record at or after this time")
    where.add_argument("--to-offset", type=int, metavar="N", help="resume from offset N (clamped to each partition)")
    reset.add_argument("--dry-run", action="store_true", help="show what would be done, change nothing")
    reset.set_defaults(handler=_cmd_reset)

    topics = commands.add_parser("topics", help="development helpers for the topics a topology names")
    topic_actions = topics.add_subparsers(dest="action", required=True, metavar="ACTION")
    create = topic_actions.add_parser("create", help="create the source and sink topics that do not exist")
    create.add_argument("target", metavar="MODULE:FUNCTION")
    _add_config_arguments(create)
    create.add_argument("--partitions", type=int, default=1, metavar="N", help="partitions of each (default 1)")
    create.add_argument("--replication-factor", type=int, default=-1, metavar="R",
                        help="replicas of each (default: the broker's default.replication.factor)")
    topics.set_defaults(handler=_cmd_topics)

    broker = commands.add_parser("broker", help="the local development Kafka broker")
    actions = broker.add_subparsers(dest="action", required=True, metavar="ACTION")
    start = actions.add_parser("start", help="start it in the background and print its bootstrap servers")
    start.add_argument("--port", type=int, default=None, help="listener port (default 9092 if free)")
    start.add_argument("--kafka-version", choices=local_broker.KAFKA_VERSIONS, default=None,
                       help=f"the broker's Kafka version (default ${local_broker.VERSION_ENV}, else "
                            f"{local_broker.KAFKA_VERSIONS[0]})")
    actions.add_parser("stop", help="stop it")
    actions.add_parser("status", help=f"say whether it runs (exit code {EXIT_NOT_RUNNING} if not)")
    fetch = actions.add_parser("fetch", help="download the Kafka jars into the cache (done once)")
    fetch.add_argument("--kafka-version", choices=(*local_broker.KAFKA_VERSIONS, "all"), default="all",
                       help="which version's jars (default: every version streamlet runs)")
    broker.set_defaults(handler=_cmd_broker)

    registry = commands.add_parser("registry", help="the local development schema registry (Confluent's API)")
    registry_actions = registry.add_subparsers(dest="action", required=True, metavar="ACTION")
    registry_start = registry_actions.add_parser(
        "start", help="start it in the background (schemas in memory) and print its schema.registry.url")
    registry_start.add_argument("--port", type=int, default=None,
                                help=f"HTTP port (default {local_registry.DEFAULT_DEV_PORT} if free)")
    registry_actions.add_parser("stop", help="stop it (its schemas are gone)")
    registry_actions.add_parser("status", help=f"say whether it runs (exit code {EXIT_NOT_RUNNING} if not)")
    registry_fetch = registry_actions.add_parser(
        "fetch", help=f"download Apicurio Registry {local_registry.REGISTRY_VERSION} into the cache (done once)")
    registry_fetch.add_argument("--version", default=local_registry.REGISTRY_VERSION,
                                help=f"another release: {local_registry.REGISTRY3_VERSION} (Java 21+) for the tests "
                                     "against the 3.x line's Java serdes")
    registry.set_defaults(handler=_cmd_registry)

    add_spark_commands(commands)

    version = commands.add_parser("version", help="print the version, whether the hot path runs compiled "
                                                  "(mypyc) or as pure Python and why, and the cache directory")
    version.set_defaults(handler=_cmd_version)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        code: int = args.handler(args)
    except StreamsError as exc:
        print(f"streamlet: error: {error_summary(exc, with_type=False)}", file=sys.stderr)
        return 1
    except KafkaConnectionError as exc:  # a wrong bootstrap.servers or a broker that is down
        print(f"streamlet: error: cannot reach Kafka: {error_summary(exc, with_type=False)}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
    return code
