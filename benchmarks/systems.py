"""The systems under test, and how each one is started for a workload.

Every system runs as its own process (tree), started from the command line with the same facts:

    <command> --workload W --bootstrap HOST:PORT --app-id ID --input TOPIC [--table TOPIC] --output TOPIC
              --guarantee at_least_once|exactly_once_v2 --commit-ms N --state-dir DIR

and must then: consume its input (and the table) from the earliest offset as consumer group ID, compute
the workload exactly as benchmarks/workloads.py specifies, write each output record with the timestamp
of the input record it came from (Kafka Streams' rule; the latency measure reads it), commit, and run
until SIGTERM. streamlet takes the same facts as `streamlet run ... --set key=value` settings and env.

A system that cannot express a workload says why in `not_applicable`, and the report prints "n/a".
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from benchmarks.spark_cluster import CLUSTER
from benchmarks.workloads import AVRO_WORKLOADS

REPO = Path(__file__).resolve().parents[1]
JAVA_DIR = REPO / "benchmarks" / "java"
PEER_VENVS = REPO / ".cache" / "bench-venvs"


FULL_RECORDS = 1_000_000
"""The suite's input size (`make bench`); `max_records` caps are meant for it."""


@dataclass
class RunSpec:
    workload: str
    bootstrap: str
    app_id: str
    input: str
    output: str
    guarantee: str
    commit_ms: int
    state_dir: Path
    table: str | None = None
    registry: str | None = None  # the schema registry's URL (Confluent's API) for the Avro workloads

    def cli_args(self) -> list[str]:
        args = ["--workload", self.workload, "--bootstrap", self.bootstrap, "--app-id", self.app_id,
                "--input", self.input, "--output", self.output, "--guarantee", self.guarantee,
                "--commit-ms", str(self.commit_ms), "--state-dir", str(self.state_dir)]
        if self.table:
            args += ["--table", self.table]
        return [*args, "--registry", self.registry] if self.registry else args


@dataclass
class System:
    key: str  # command-line name
    label: str  # name in tables and charts
    command: Callable[[RunSpec], list[str]]
    provision: Callable[[], None] = lambda: None
    not_applicable: dict[str, str] = field(default_factory=dict)
    python_peer: bool = False  # counts for "the best Python peer"
    # Runs on the first `max_records` records only (same generator, own pre-loaded topics), for a system
    # too slow to finish the full input within the suite's time budget; the report says so.
    max_records: int | None = None
    # The same, for some workloads only (wins over `max_records`).
    max_records_of: dict[str, int] = field(default_factory=dict)
    members: int = 1  # consumer-group members once it runs (the latency run waits for all of them)
    env: dict[str, str] = field(default_factory=dict)
    latency_na: str | None = None  # why its latency is not measured (the report says so), if it is not

    def records_for(self, workload: str, records: int) -> int:
        """How many of the pre-loaded records this system runs `workload` on. Caps are set for the full
        run of FULL_RECORDS and shrink with a smaller one (`--quick`), so a capped system keeps its
        share of the time budget."""
        cap = self.max_records_of.get(workload, self.max_records)
        if cap is None:
            return records
        if records < FULL_RECORDS:
            cap = max(2_000, cap * records // FULL_RECORDS)
        return min(records, cap)


# --- streamlet ---------------------------------------------------------------------------------------

STREAMLET_TOPOLOGY = {
    "pipe": "benchmarks.apps.streamlet_app:pipe",
    "wordcount_alos": "benchmarks.apps.streamlet_app:wordcount",
    "wordcount_eos": "benchmarks.apps.streamlet_app:wordcount",
    "window_count": "benchmarks.apps.streamlet_app:window_count",
    "join": "benchmarks.apps.streamlet_app:join",
    "session_count": "benchmarks.apps.streamlet_app:session_count",
    "stream_join": "benchmarks.apps.streamlet_app:stream_join",
    "table_agg": "benchmarks.apps.streamlet_app:table_agg",
    "pipe_avro": "benchmarks.apps.streamlet_app:pipe_avro",
    "window_count_avro": "benchmarks.apps.streamlet_app:window_count_avro",
}


def streamlet_command(workers: int) -> Callable[[RunSpec], list[str]]:
    def command(run: RunSpec) -> list[str]:
        settings = {
            "bootstrap.servers": run.bootstrap, "application.id": run.app_id, "state.dir": str(run.state_dir),
            "commit.interval.ms": run.commit_ms, "max.poll.records": 2000, "processing.guarantee": run.guarantee,
        }
        if run.registry:
            settings["schema.registry.url"] = run.registry
        # BENCH_PROFILE=DIR: run under cProfile, one file per run (written when SIGTERM closes the app).
        profile = os.environ.get("BENCH_PROFILE")
        prof_args = ["-m", "cProfile", "-o", f"{profile}/{run.app_id}.prof"] if profile else []
        args = [sys.executable, *prof_args, "-m", "streamlet", "run", STREAMLET_TOPOLOGY[run.workload]]
        if workers > 1:
            args += ["--workers", str(workers)]
        for k, v in settings.items():
            args += ["--set", f"{k}={v}"]
        return args
    return command


def streamlet_env(run: RunSpec) -> dict[str, str]:
    env = {"BENCH_INPUT": run.input, "BENCH_OUTPUT": run.output}
    if run.table:
        env["BENCH_TABLE"] = run.table
    return env


# --- Kafka Streams and the Java raw pipe ----------------------------------------------------------------

def build_java() -> list[str]:
    """Build the Java side once (Maven, Java 17); returns the java command prefix."""
    classpath = JAVA_DIR / "target" / "classpath.txt"
    jar = JAVA_DIR / "target" / "streamlet-java-bench-0.1.0.jar"
    sources = [*(JAVA_DIR / "src").rglob("*.java"), JAVA_DIR / "pom.xml"]
    stale = not (classpath.exists() and jar.exists()) or max(p.stat().st_mtime for p in sources) > min(
        jar.stat().st_mtime, classpath.stat().st_mtime)  # a jar built by hand leaves the classpath as it was
    if stale:
        subprocess.run(["mvn", "-q", "-B", "-f", str(JAVA_DIR / "pom.xml"), "package", "dependency:build-classpath",
                        "-Dmdep.outputFile=target/classpath.txt"], check=True)
    return ["java", "-Xmx1g", "-cp", f"{jar}:{classpath.read_text().strip()}"]


def provision_java() -> None:
    build_java()


def java_command(main_class: str, *extra: str) -> Callable[[RunSpec], list[str]]:
    return lambda run: [*build_java(), main_class, *run.cli_args(), *extra]


# --- Python peers, each in its own virtualenv (their pins differ from ours) ----------------------------

PEER_REQUIREMENTS = {
    "faust": ["faust-streaming==0.15.3"],
    "quix": ["quixstreams==3.28.1"],
}


def peer_python(name: str) -> Path:
    return PEER_VENVS / name / "bin" / "python"


def provision_peer(name: str) -> Callable[[], None]:
    def provision() -> None:
        venv = PEER_VENVS / name
        stamp = venv / ".installed"
        wanted = " ".join(PEER_REQUIREMENTS[name])
        if stamp.exists() and stamp.read_text() == wanted:
            return
        subprocess.run([sys.executable, "-m", "venv", "--clear", str(venv)], check=True)
        subprocess.run([str(venv / "bin" / "python"), "-m", "pip", "install", "-q", "--disable-pip-version-check",
                        *PEER_REQUIREMENTS[name]], check=True)
        stamp.write_text(wanted)
    return provision


def peer_command(name: str) -> Callable[[RunSpec], list[str]]:
    script = REPO / "benchmarks" / "peers" / f"{name}_app.py"
    return lambda run: [str(peer_python(name)), str(script), *run.cli_args()]


# --- Spark: streamlet's Spark engine and WordCount written by hand on Spark (benchmarks/apps/spark_app.py) ----

SPARK_MASTER = "local[2]"


def provision_spark() -> None:
    from streamlet.spark.jars import ensure_spark_jars

    ensure_spark_jars()


# `--master spark-cluster` (benchmarks.spark_cluster.CLUSTER): a standalone master and two one-core workers on
# loopback, started by the run itself from pyspark's own `spark-class`: as many cores as `local[2]`, but
# executors in JVMs of their own.
SPARK_CLUSTER_LABEL = "standalone cluster, 2 one-core workers"


def spark_command(engine: str, master: str = SPARK_MASTER) -> Callable[[RunSpec], list[str]]:
    return lambda run: [sys.executable, "-m", "benchmarks.apps.spark_app", "--engine", engine,
                        "--master", master, *run.cli_args()]


SPARK_EOS_ELSEWHERE = "exactly-once on the Spark engine is the streamlet-spark-eos system"
SPARK_EOS_ONLY = "streamlet-spark-eos is the Spark engine under exactly_once_v2: WordCount exactly-once only"
SPARK_WORKLOADS = "the Spark engine is compared on WordCount, the window count and the join"
NATIVE_SPARK_ONLY = "the hand-written Spark anchor is WordCount only"
SPARK_CLUSTER_NA = dict.fromkeys(("pipe", "wordcount_eos", "window_count", "join", "session_count", "stream_join",
                                  "table_agg"),
                                 "the standalone cluster pair measures WordCount at-least-once, beside native Spark")
SPARK_SINK_NO_TIMESTAMPS = "Spark's Kafka sink cannot set record timestamps, which the latency measure reads"

STATELESS_ONLY = "a hand-written consume→produce pipe keeps no state; it is the ceiling for `pipe` only"
STATEFUL = ("wordcount_alos", "wordcount_eos", "window_count", "join", "session_count", "stream_join", "table_agg")
SCALE_ONLY = {"table_agg": "table_agg (a scale workload) is written for streamlet and Kafka Streams only"}
FAUST_NO_SESSIONS = "faust-streaming 0.15.3 has tumbling and hopping windows only, no session windows"
FAUST_NO_STREAM_JOIN = "faust-streaming 0.15.3 has no windowed stream-stream join"
QUIX_SESSIONS = ("Quix Streams closes a session when its watermark passes the last event + 2 x gap + grace, "
                 "not at the session's end + gap as Kafka Streams: its final results at the end of the input "
                 "are a different set, so this checker cannot judge them")
QUIX_SELF_JOIN = "Quix Streams' join_interval refuses two dataframes of the same topic (a self-join)"

SYSTEMS: dict[str, System] = {s.key: s for s in [
    System("streamlet", "streamlet (1 worker)", streamlet_command(1)),
    System("streamlet-2", "streamlet (2 workers)", streamlet_command(2), members=2),
    System("kafka-streams", "Kafka Streams 4.4.0 (Java)", java_command("io.streamlet.bench.Bench"),
           provision_java),
    # Like with like: as many stream threads as streamlet-2 has workers (ratios pair them, see report.py).
    System("kafka-streams-2", "Kafka Streams 4.4.0 (Java, 2 threads)",
           java_command("io.streamlet.bench.Bench", "--threads", "2"), provision_java, members=2),
    # faust runs at ~100 (WordCount) to ~1,700 (pipe) records/s here: 1,000,000 records would take hours.
    System("faust", "faust-streaming 0.15.3", peer_command("faust"), provision_peer("faust"), python_peer=True,
           max_records=20_000,
           not_applicable={"session_count": FAUST_NO_SESSIONS, "stream_join": FAUST_NO_STREAM_JOIN, **SCALE_ONLY}),
    # Quix runs its stateful workloads at 3,000-15,000 records/s here: on 1,000,000 records its two
    # WordCounts alone took ten minutes of the 45-minute budget; 250,000 records show the same rate.
    System("quix", "Quix Streams 3.28.1", peer_command("quix"), provision_peer("quix"), python_peer=True,
           max_records_of={w: 250_000 for w in ("wordcount_alos", "wordcount_eos", "window_count", "join")},
           not_applicable={"session_count": QUIX_SESSIONS, "stream_join": QUIX_SELF_JOIN, **SCALE_ONLY}),
    System("raw-aiokafka", "raw aiokafka pipe (ceiling)",
           lambda run: [sys.executable, "-m", "benchmarks.apps.raw_aiokafka", *run.cli_args()],
           not_applicable=dict.fromkeys(STATEFUL, STATELESS_ONLY)),
    System("raw-java", "raw Java clients pipe (ceiling)", java_command("io.streamlet.bench.RawPipe"),
           provision_java,
           not_applicable=dict.fromkeys(STATEFUL, STATELESS_ONLY)),
    # At about 5,000-10,000 records/s here (micro-batches of 100,000 records at most), 1,000,000 records
    # would take minutes per workload; 250,000 show the same rate.
    System("streamlet-spark", f"streamlet on Spark ({SPARK_MASTER})", spark_command("streamlet"), provision_spark,
           not_applicable={"pipe": SPARK_WORKLOADS, "wordcount_eos": SPARK_EOS_ELSEWHERE,
                           "session_count": SPARK_WORKLOADS, "stream_join": SPARK_WORKLOADS, **SCALE_ONLY},
           max_records=250_000),
    # Issue #15: one transaction per task and micro-batch (output, changelog, offsets); its cost is this
    # system's wordcount_eos beside streamlet-spark's wordcount_alos (the same input and topology).
    System("streamlet-spark-eos", f"streamlet on Spark, exactly-once ({SPARK_MASTER})", spark_command("streamlet"),
           provision_spark,
           not_applicable={w: SPARK_EOS_ONLY for w in ("pipe", "wordcount_alos", "window_count", "join",
                                                       "session_count", "stream_join", "table_agg")},
           max_records=250_000),
    System("native-spark", f"native Spark WordCount ({SPARK_MASTER})", spark_command("native"), provision_spark,
           not_applicable={w: NATIVE_SPARK_ONLY for w in ("pipe", "wordcount_eos", "window_count", "join",
                                                           "session_count", "stream_join", "table_agg")},
           max_records=250_000,
           latency_na=SPARK_SINK_NO_TIMESTAMPS),
    # The same two on a real standalone cluster (issue 27), WordCount at-least-once: the engine beside native
    # Spark where the shuffle, the state stores and the Python workers live in executor JVMs of their own.
    System("streamlet-spark-cluster", f"streamlet on Spark ({SPARK_CLUSTER_LABEL})",
           spark_command("streamlet", CLUSTER), provision_spark, not_applicable=SPARK_CLUSTER_NA, max_records=250_000),
    System("native-spark-cluster", f"native Spark WordCount ({SPARK_CLUSTER_LABEL})",
           spark_command("native", CLUSTER), provision_spark, not_applicable=SPARK_CLUSTER_NA, max_records=250_000,
           latency_na=SPARK_SINK_NO_TIMESTAMPS),
]}


AVRO_SYSTEMS = ("streamlet", "streamlet-2", "kafka-streams", "kafka-streams-2")
AVRO_ONLY = "the Avro workloads are written for streamlet and Kafka Streams only (Apicurio's Java Avro serde)"
for _system in SYSTEMS.values():
    if _system.key not in AVRO_SYSTEMS:
        _system.not_applicable = {**dict.fromkeys(AVRO_WORKLOADS, AVRO_ONLY), **_system.not_applicable}


def environment(system: System, run: RunSpec) -> dict[str, str]:
    return dict(os.environ, PYTHONPATH=str(REPO), **streamlet_env(run), **system.env)
