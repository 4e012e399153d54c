"""`python -m benchmarks`: every workload on every system, side by side on one local broker.

    python -m benchmarks                                   # the whole suite (make bench)
    python -m benchmarks --quick                           # 100,000 records
    python -m benchmarks --workloads pipe --systems streamlet,kafka-streams --records 20000
    python -m benchmarks --workloads wordcount_eos,table_agg --systems streamlet,kafka-streams \
        --records 2000000 --keys 1000000 --system-cpus 0          # at scale (make bench-scale)

One broker is started, the input topics are written once (see benchmarks/workloads.py), and then, one
system at a time, each workload runs twice: for throughput over the pre-loaded input, with the output
verified, and for latency at 10,000 records/s offered (see benchmarks/measure.py). With `--rounds N` the
throughput runs come N times per system, the systems alternating (A B, B A, ...), and the median round
is reported with every round beside it: on this machine one run of the same code can be 2x another. The
latency runs come N times too, after the throughput rounds and alternating the same way; the median p50
and p99 are reported (`median_latency`). Results go to
benchmarks/results/<workload>.json; the report (benchmarks/RESULTS.md's generated part and the charts in
benchmarks/results/) is regenerated from those files by benchmarks/report.py.

`--workloads pipe_avro,window_count_avro` (not in the suite): the events in Avro through a schema registry
(Apicurio, started by the runner beside the broker), streamlet and Kafka Streams only (see
benchmarks/workloads.py).

`--keys N` sets every workload's key cardinality (WordCount's vocabulary, the events' users, the join's
table rows, table_agg's rows; see benchmarks/workloads.py); without it the input is the suite's usual one.
A run with `--keys` writes its results to benchmarks/results/scale/<workload>-keys<N>.json (the report
reads only benchmarks/results/*.json, so a scale run never replaces a row of the suite's tables) and
regenerates no report; `--results-dir` puts results elsewhere.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import math
import shutil
import sys
import time
from pathlib import Path
from typing import Any

from benchmarks import measure
from benchmarks import workloads as wl
from benchmarks.kafka_bench import create_topics, preload
from benchmarks.measure import Inputs, run_latency, run_throughput
from benchmarks.systems import SYSTEMS

REPO = Path(__file__).resolve().parents[1]
RESULTS = REPO / "benchmarks" / "results"


async def main_async(args: argparse.Namespace) -> dict[str, list[dict[str, Any]]]:
    import logging

    logging.basicConfig(level=logging.WARNING)
    logging.getLogger("aiokafka").setLevel(logging.CRITICAL)  # leader elections of fresh topics, retried
    from streamlet.testing import LocalKafkaBroker

    workloads = args.workloads.split(",")
    systems = [SYSTEMS[s] for s in args.systems.split(",")]
    workdir = Path(args.workdir)
    shutil.rmtree(workdir, ignore_errors=True)
    workdir.mkdir(parents=True, exist_ok=True)
    for system in systems:  # installs and builds first, so that no run's time includes them
        system.provision()
    results: dict[str, list[dict[str, Any]]] = {w: [] for w in workloads}
    with LocalKafkaBroker(heap="1g") as broker, contextlib.ExitStack() as services:
        bootstrap = broker.bootstrap_servers
        # The Avro workloads' schema registry: Apicurio (streamlet.testing.local_registry), on loopback, its own
        # port, with the broker's CPUs; started only when an Avro workload runs.
        registry = None
        if set(workloads) & set(wl.AVRO_WORKLOADS):
            from streamlet.testing.local_registry import LocalSchemaRegistry

            registry = services.enter_context(LocalSchemaRegistry(log_dir=workdir))
        if args.system_cpus:
            assert broker.pid is not None
            measure.pin_systems(args.system_cpus, broker.pid, registry.pid if registry is not None else None)
        loaded: dict[tuple[str, int], str] = {}  # (input kind, records) -> topic
        schema_ids: dict[str, int] = {}  # Avro input topic -> the id its values' schema is registered under

        async def topic_of(kind: str, n: int) -> str:
            """The pre-loaded topic with the first `n` records of `kind` (written on first use)."""
            if (kind, n) not in loaded:
                topic = f"bench-{kind}" if n == args.records else f"bench-{kind}-{n}"
                # The input's event times are fixed in the past: keep the broker from expiring it.
                await create_topics(bootstrap, {topic: args.partitions}, {"retention.ms": "-1"})
                if kind == "events_avro":  # the schema registered once, as an upstream producer would
                    assert registry is not None
                    schema_ids[topic] = wl.register_schema(registry.url, f"{topic}-value", wl.EVENT_SCHEMA)
                t0 = time.monotonic()
                await preload(bootstrap, topic, args.partitions,
                              wl.input_records(kind, n, args.keys, schema_ids.get(topic), args.value_bytes))
                print(f"pre-loaded {topic} in {time.monotonic() - t0:.1f}s", flush=True)
                loaded[(kind, n)] = topic
            return loaded[(kind, n)]

        expectations: dict[tuple[str, int], wl.Expected] = {}
        for workload in workloads:
            runnable = []
            for system in systems:
                if workload in system.not_applicable:
                    results[workload].append({"system": system.label, "system_key": system.key,
                                              "workload": workload, "n/a": system.not_applicable[workload]})
                    write_results(workload, results[workload], args)  # also when n/a rows come last
                else:
                    runnable.append(system)
            inputs_of: dict[str, Inputs] = {}
            for system in runnable:  # every input written before any clock starts
                n = system.records_for(workload, args.records)
                kind = wl.INPUT_OF[workload]
                inputs_of[system.key] = Inputs(
                    await topic_of("lines", n) if kind == "lines" else "",
                    await topic_of("events", n) if kind == "events" else "",
                    # The join's table: written only for a run of the join (at --keys 10M it is 10M rows).
                    await topic_of("users", wl.USERS if args.keys is None else args.keys) if workload == "join" else "",
                    n, keys=args.keys,
                    updates=await topic_of("updates", n) if kind == "updates" else "",
                    events_avro=await topic_of("events_avro", n) if kind == "events_avro" else "",
                    registry=registry.url if registry is not None else None, value_bytes=args.value_bytes)
                inputs_of[system.key].schema_id = schema_ids.get(inputs_of[system.key].events_avro)
                if (workload, n) not in expectations:
                    t0 = time.monotonic()
                    expectations[(workload, n)] = wl.Expected(
                        workload, n, partitions=args.partitions, keys=args.keys,
                        schema_of=wl.registry_schemas(registry.url) if registry is not None else None)
                    print(f"expected output of {workload} on {n} records computed in "
                          f"{time.monotonic() - t0:.1f}s", flush=True)
            rounds: dict[str, list[dict[str, Any]]] = {system.key: [] for system in runnable}
            for round_no in range(args.rounds):
                # Alternating order (A B, then B A): a machine whose speed drifts favours neither side.
                for system in runnable if round_no % 2 == 0 else runnable[::-1]:
                    inputs = inputs_of[system.key]
                    probe_ms = machine_probe_ms()
                    row: dict[str, Any]
                    try:
                        row = await run_throughput(system, workload, inputs, bootstrap, workdir,
                                                   expectations[(workload, inputs.records)], args.partitions,
                                                   args.timeout,
                                                   **({"stall_s": 20.0, "settled_s": 10.0} if args.quick else {}))
                    except Exception as exc:  # one broken system must not hide the others' results
                        row = {"system": system.label, "system_key": system.key, "workload": workload,
                               "records": inputs.records, "correct": False, "error": str(exc)[-2000:]}
                    row["machine_probe_ms"] = probe_ms
                    print(json.dumps({k: v for k, v in row.items() if k != "latency_cdf_ms"}), flush=True)
                    rounds[system.key].append(row)
            rows = {system.key: median_row(rounds[system.key]) for system in runnable}
            timed = [system for system in runnable if workload not in wl.NO_LATENCY and not system.latency_na
                     and args.latency_seconds > 0 and "error" not in rows[system.key]]
            latency_rounds: dict[str, list[dict[str, Any]]] = {system.key: [] for system in timed}
            for round_no in range(args.rounds):
                for system in timed if round_no % 2 == 0 else timed[::-1]:
                    latency: dict[str, Any]
                    try:
                        latency = await run_latency(system, workload, inputs_of[system.key], bootstrap, workdir,
                                                    args.partitions, seconds=args.latency_seconds,
                                                    warmup=min(3.0, 0.6 * args.latency_seconds),
                                                    straggle_s=2 * args.latency_seconds)
                    except Exception as exc:
                        latency = {"latency_error": str(exc)[-2000:]}
                    latency_rounds[system.key].append(latency)
                    print(json.dumps({"system": system.label, "workload": workload} | {k: latency.get(k) for k in (
                        "p50_ms", "p99_ms", "samples", "saturated", "latency_error")}), flush=True)
            for system in runnable:
                row = rows[system.key]
                if workload in wl.NO_LATENCY:
                    row["latency_na"] = wl.NO_LATENCY[workload]
                elif system.latency_na and args.latency_seconds > 0:
                    row["latency_na"] = system.latency_na
                elif latency_rounds.get(system.key):
                    row.update(median_latency(latency_rounds[system.key]) | {"system": system.label})
                results[workload].append(row)
                write_results(workload, results[workload], args)
    return results


ROUND_FIELDS = ("records_per_s", "seconds", "cpu_s", "outputs", "correct", "machine_probe_ms")
"""What each round of a throughput run keeps in its system's row (`rounds`)."""


def median_row(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """One system's row from its rounds: a round that failed or whose output was wrong, if any (a wrong
    result is never outvoted), else the round of the median rate (the lower middle one of an even
    count); with more than one round, every round's figures under `rounds`."""
    failed = [r for r in rows if "error" in r or not r.get("correct")]
    if failed:
        row = dict(failed[0])
    else:
        ranked = sorted(rows, key=lambda r: r["records_per_s"])
        row = dict(ranked[(len(ranked) - 1) // 2])
    if len(rows) > 1:
        row["rounds"] = [{k: r[k] for k in ROUND_FIELDS if k in r} for r in rows]
    return row


LATENCY_ROUND_FIELDS = ("p50_ms", "p99_ms", "samples", "saturated")
"""What each round of a latency run keeps in its system's row (`latency_rounds`)."""


def median_latency(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """One system's latency from its rounds: a round that failed, if any (never outvoted); else the median
    p50 and the median p99 of the rounds (each the lower middle one of an even count), with the CDF and
    saturation of the round of the median p99; with more than one round, every round's percentiles under
    `latency_rounds`. A 5 s window holds a handful of commits, so one run's p99 moved by 2x here
    (RESULTS.md, "The Spark engine's start")."""

    def ms(value: Any) -> float:
        return float("inf") if value is None else float(value)

    failed = [r for r in rows if r.get("latency_error")]
    if failed:
        row = dict(failed[0])
    else:
        middle = (len(rows) - 1) // 2
        row = dict(sorted(rows, key=lambda r: ms(r.get("p99_ms")))[middle])
        row["p50_ms"] = sorted((r.get("p50_ms") for r in rows), key=ms)[middle]
    if len(rows) > 1:
        row["latency_rounds"] = [{k: r[k] for k in LATENCY_ROUND_FIELDS if k in r} for r in rows]
    return row


def machine_probe_ms() -> float:
    """CPU ms of a fixed piece of pure-Python work, the best of three: how fast this machine's core is just
    before a run. On this VM the same work takes 1.6x as long in some minutes as in others, with nothing
    else running (RESULTS.md, "One run is not a measure on this machine"), so every round records it
    beside its rate."""
    data = list(range(20_000))
    best = math.inf
    for _ in range(3):
        started = time.thread_time_ns()
        for _ in range(100):
            sum(data)
        best = min(best, (time.thread_time_ns() - started) / 1e6)
    return round(best, 2)


_MERGED_THIS_RUN: set[Path] = set()
"""Results files this process has merged into (`--merge` names each run once in a file)."""


def results_file(workload: str, args: argparse.Namespace) -> Path:
    """Where a run's results for `workload` go: benchmarks/results/<workload>.json, or with `--keys N`
    benchmarks/results/scale/<workload>-keys<N>.json, `-bytes<B>` appended with `--value-bytes B`
    (`--results-dir` overrides the folder)."""
    name = workload if args.keys is None else f"{workload}-keys{args.keys}"
    if args.value_bytes:
        name += f"-bytes{args.value_bytes}"
    folder = Path(args.results_dir) if args.results_dir else RESULTS if args.keys is None else RESULTS / "scale"
    return folder / f"{name}.json"


def write_results(workload: str, rows: list[dict[str, Any]], args: argparse.Namespace) -> None:
    out = results_file(workload, args)
    out.parent.mkdir(parents=True, exist_ok=True)
    command = " ".join(["python -m benchmarks", *sys.argv[1:]])
    taken_at = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    if args.merge and out.exists():
        # Replace only this run's systems in the existing file, in the suite's order of systems; the
        # file's command and time name both runs, and the replaced rows say when they were taken.
        previous = json.loads(out.read_text())
        earlier_command, earlier_taken_at = previous["command"], previous["taken_at"]
        if out in _MERGED_THIS_RUN:  # this run wrote the file already (an earlier system): name the run once
            earlier_command = earlier_command.rpartition("; then ")[0]
            earlier_taken_at = earlier_taken_at.rpartition("; then ")[0]
        _MERGED_THIS_RUN.add(out)
        command = f"{earlier_command}; then {command}" if earlier_command else command
        taken_at = f"{earlier_taken_at}; then {taken_at}" if earlier_taken_at else taken_at
        rows = [dict(r, taken_at=taken_at.split("; then ")[-1]) for r in rows]
        mine = {r["system_key"] for r in rows}
        kept = [r for r in previous["results"] if r.get("system_key") not in mine]
        order = list(SYSTEMS)
        rows = sorted(kept + rows, key=lambda r: order.index(r["system_key"]) if r.get("system_key") in order else 99)
    scale = {} if args.keys is None else {"keys": args.keys}  # the input's shape beyond the suite's usual one
    if args.value_bytes:
        scale["value_bytes"] = args.value_bytes
    out.write_text(json.dumps({"command": command, "records": args.records, **scale, "partitions": args.partitions,
                               "taken_at": taken_at, "results": rows}, indent=2) + "\n")
    print(f"wrote {out}", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks")
    parser.add_argument("--workloads", default=",".join(wl.WORKLOADS),
                        help=f"default: the suite; `scale`: {','.join(wl.SCALE_WORKLOADS)} (the workloads that keep "
                             "state by key, table_agg among them)")
    parser.add_argument("--systems", default=",".join(SYSTEMS))
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--quick", action="store_true", help="100,000 records")
    parser.add_argument("--partitions", type=int, default=8)
    parser.add_argument("--keys", type=int, default=None,
                        help="key cardinality of every workload: WordCount's vocabulary, the events' users, the "
                             "join's table rows, table_agg's rows (default: 10,000 words, 1,000 users, 10,000 "
                             "rows, the suite's usual input); results go to benchmarks/results/scale/")
    parser.add_argument("--value-bytes", type=int, default=0,
                        help="table_agg only: pad each update's JSON value to about this many bytes (the table's "
                             "store keeps every row's value, so rows x bytes sizes the state; default: unpadded)")
    parser.add_argument("--results-dir", default="",
                        help="write the results files here (default benchmarks/results, with --keys .../scale)")
    parser.add_argument("--latency-seconds", type=float, default=None,
                        help="the measured window of each latency run (default 5, --quick 1.5); 0 skips them")
    parser.add_argument("--timeout", type=float, default=900.0, help="per throughput run")
    parser.add_argument("--system-cpus", default="",
                        help="e.g. 0: each system under test runs on these CPUs only, the broker and the runner on "
                             "the others (a worker and a Kafka Streams thread on one core each)")
    parser.add_argument("--rounds", type=int, default=1,
                        help="throughput runs per system, in alternating order; the median round is reported")
    parser.add_argument("--workdir", default=str(REPO / ".cache" / "bench"))
    parser.add_argument("--no-report", action="store_true", help="do not regenerate RESULTS.md and charts")
    parser.add_argument("--merge", action="store_true",
                        help="replace only the rows of the systems run now in the existing results files")
    args = parser.parse_args()
    if args.quick:
        args.records = 100_000
    if args.latency_seconds is None:
        args.latency_seconds = 1.5 if args.quick else 5.0
    if args.keys is not None and args.keys < 1:
        parser.error("--keys must be at least 1")
    if args.value_bytes < 0:
        parser.error("--value-bytes must not be negative")
    if args.workloads == "scale":
        args.workloads = ",".join(wl.SCALE_WORKLOADS)
    unknown = set(args.workloads.split(",")) - set(wl.ALL_WORKLOADS)
    if unknown:
        parser.error(f"unknown workloads: {', '.join(sorted(unknown))}")
    asyncio.run(main_async(args))
    if not args.no_report and args.keys is None and not args.results_dir:
        from benchmarks import report

        report.main()


if __name__ == "__main__":
    main()
