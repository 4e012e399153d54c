"""Runs a check of tests/java/streams4 (Kafka Streams 4.4.0 answering for a 4.x feature), building the
Maven project first when its sources are newer than its jar. A test calls `run_check(main_class)` and
compares what Kafka Streams printed with what streamlet does."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from streamlet import Consumed, Produced, Serdes, StreamsBuilder
from streamlet.topology import Topology

JAVA_DIR = Path(__file__).parent / "java" / "streams4"
_JAR = JAVA_DIR / "target" / "streamlet-streams4-checks-0.1.0.jar"
_CLASSPATH = JAVA_DIR / "target" / "classpath.txt"


def _build() -> None:
    sources = [*(JAVA_DIR / "src").rglob("*.java"), JAVA_DIR / "pom.xml"]
    if _JAR.exists() and _CLASSPATH.exists() and max(p.stat().st_mtime for p in sources) <= _JAR.stat().st_mtime:
        return
    built = subprocess.run(["mvn", "-q", "-B", "-f", str(JAVA_DIR / "pom.xml"), "package",
                            "dependency:build-classpath", "-Dmdep.outputFile=target/classpath.txt"],
                           capture_output=True, text=True, timeout=600)
    if built.returncode != 0:
        raise RuntimeError(f"building tests/java/streams4 failed:\n{built.stdout}{built.stderr}")


def run_check(main_class: str, stdin: str = "") -> str:
    """The standard output of `io.streamlet.streams4.<main_class>` fed `stdin`; skips the test without Java
    or Maven."""
    if shutil.which("mvn") is None or shutil.which("java") is None:
        pytest.skip("needs Java and Maven")
    _build()
    classpath = f"{_JAR}:{_CLASSPATH.read_text().strip()}"
    run = subprocess.run(["java", "-cp", classpath, f"io.streamlet.streams4.{main_class}"],
                         input=stdin, capture_output=True, text=True, timeout=300)
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
