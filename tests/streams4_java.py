"""Runs a check of tests/java/streams4 (Kafka Streams 4.4.0 answering for a 4.x feature), building the
Maven project first when its sources are newer than its jar. A test calls `run_check(main_class)` and
compares what Kafka Streams printed with what streamlet does."""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

from streamlet import Consumed, Produced, Serdes, StreamsBuilder
from streamlet.topology import Topology
from tests.helpers.maven import built_classpath

JAVA_DIR = Path(__file__).parent / "java" / "streams4"


def run_check(main_class: str, stdin: str = "") -> str:
    """The standard output of `io.streamlet.streams4.<main_class>` fed `stdin`; skips the test without Java
    or Maven."""
    if shutil.which("mvn") is None or shutil.which("java") is None:
        pytest.skip("needs Java and Maven")
    classpath = built_classpath(JAVA_DIR, "streamlet-streams4-checks-0.1.0.jar")
    # A temporary directory of its own: a check's TopologyTestDriver keeps its state under
    # ${java.io.tmpdir}/kafka-streams/<application.id>, and two tests running one check at once (pytest-xdist
    # workers) would otherwise share, and delete, each other's task directories.
    with tempfile.TemporaryDirectory(prefix="streams4-check-") as tmp:
        command = ["java", f"-Djava.io.tmpdir={tmp}", "-cp", classpath, f"io.streamlet.streams4.{main_class}"]
        run = subprocess.run(command, input=stdin, capture_output=True, text=True, timeout=300)
    if run.returncode != 0:
        raise RuntimeError(f"{main_class} failed:\n{run.stderr[-3000:]}")
    return run.stdout


def enforced_check_topology(stream: str, table: str, output: str) -> Topology:
    """streamlet's twin of EnforcedProcessingCheck's topology: stream.leftJoin(table) -> output, String serdes,
    the joiner writing "order|user" (a missing user is None here, null there)."""
    s = Serdes.String()
    builder = StreamsBuilder()
    (builder.stream(stream, Consumed(s, s)).left_join(builder.table(table, Consumed(s, s)), lambda o, u: f"{o}|{u}")
     .to(output, Produced(s, s)))
    return builder.build()
