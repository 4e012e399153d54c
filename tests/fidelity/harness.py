"""The reference side of the differential suite: Kafka Streams itself, in one long-lived JVM.

`KafkaStreamsReference` builds tests/java/fidelity with Maven when its sources are newer than the jar
(each Kafka Streams version's build is kept in tests/java/fidelity/target/<version>), starts
`io.streamlet.fidelity.Runner`, and sends it one case per line; each answer is one JSON line of the same
shape as `topology.run_streamlet`'s result. `difference` says, readably, where two results part.

The oracle is Kafka Streams 4.4.0, the line its users run; `FIDELITY_KAFKA_VERSION=3.9.1` runs the same
runner on 3.9.1 (tests/fidelity/KAFKA_STREAMS_4_DIFFERENCES.md lists where the two lines part, and
streamlet follows 4.4.0 there, so a 3.9.1 run shows exactly those differences).
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import subprocess
import threading
from pathlib import Path
from typing import IO, Any

from tests.fidelity.topology import Case, Result, run_streamlet

JAVA_DIR = Path(__file__).parents[1] / "java" / "fidelity"
KAFKA_STREAMS_VERSION = os.environ.get("FIDELITY_KAFKA_VERSION", "4.4.0")
"""The Kafka Streams version the suite compares against (the pom's `kafka.version`)."""
_BUILD_LOCK = threading.Lock()


def java_available() -> bool:
    return shutil.which("java") is not None and shutil.which("mvn") is not None


def build_runner(version: str = KAFKA_STREAMS_VERSION) -> list[str]:
    """Compile the runner on Kafka Streams `version` if needed; returns the java command that starts it."""
    target = JAVA_DIR / "target" / version
    jar, classpath = target / "streamlet-fidelity-0.1.0.jar", target / "classpath.txt"
    target.parent.mkdir(parents=True, exist_ok=True)
    # A thread lock for this process's threads and a file lock for other processes (the restart suite's
    # parallel jobs, a second pytest run): a JVM started on a jar another process's `mvn package` is
    # rewriting fails with "Could not find or load main class".
    with _BUILD_LOCK, (JAVA_DIR / "target" / f".build-{version}.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        sources = [*(JAVA_DIR / "src").rglob("*.java"), JAVA_DIR / "pom.xml"]
        stale = not (jar.exists() and classpath.exists()) or max(p.stat().st_mtime for p in sources) > \
            jar.stat().st_mtime
        if stale:
            proc = subprocess.run(["mvn", "-q", "-B", "-f", str(JAVA_DIR / "pom.xml"), f"-Dkafka.version={version}",
                                   "package", "dependency:build-classpath", f"-Dmdep.outputFile={classpath}"],
                                  capture_output=True, text=True, timeout=600)
            if proc.returncode != 0:
                raise RuntimeError(f"building the Kafka Streams {version} reference runner failed:\n"
                                   f"{proc.stdout}{proc.stderr}")
    return ["java", "-Xmx512m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-cp",
            f"{jar}:{classpath.read_text().strip()}", "io.streamlet.fidelity.Runner"]


class KafkaStreamsReference:
    """One JVM running Kafka Streams' TopologyTestDriver (of `version`) on the cases it is sent, in order."""

    def __init__(self, version: str = KAFKA_STREAMS_VERSION) -> None:
        self.version = version
        self._proc = subprocess.Popen(build_runner(version), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                      stderr=subprocess.PIPE, text=True, encoding="utf-8")
        self._stderr: list[str] = []
        assert self._proc.stderr is not None
        threading.Thread(target=self._drain, args=(self._proc.stderr,), daemon=True).start()
        self.cases_run = 0

    def _drain(self, stream: IO[str]) -> None:
        for line in stream:
            self._stderr.append(line)
            del self._stderr[:-200]

    def run(self, case: Case) -> Result:
        self.submit(case)
        return self.result()

    def submit(self, case: Case) -> None:
        """Send a case; Kafka Streams works on it while the caller runs streamlet's side (2 cores)."""
        assert self._proc.stdin is not None
        self._proc.stdin.write(json.dumps(case, separators=(",", ":")) + "\n")
        self._proc.stdin.flush()

    def result(self) -> Result:
        """The answer to the case submitted last."""
        assert self._proc.stdout is not None
        line = self._proc.stdout.readline()
        if not line:
            raise RuntimeError("the Kafka Streams reference runner died:\n" + "".join(self._stderr[-50:]))
        self.cases_run += 1
        result: Result = json.loads(line)
        return result

    def close(self) -> None:
        if self._proc.poll() is None:
            assert self._proc.stdin is not None
            self._proc.stdin.close()
            try:
                self._proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait()


def readable(hex_bytes: str | None, base: int = 0) -> str:
    """Output bytes as a person reads them: text, a Long, or a windowed key with its window's times less `base`
    (a session-windowed key is told apart by its end time, which is at least `base` when `base` is given)."""
    if hex_bytes is None:
        return "null"
    raw = bytes.fromhex(hex_bytes)
    text = raw.decode("utf-8", "replace")
    if text.isprintable():
        return repr(text)
    if len(raw) == 8:
        return str(int.from_bytes(raw, "big", signed=True))
    if len(raw) > 16 and raw[:-16].decode("utf-8", "replace").isprintable() and \
            int.from_bytes(raw[-16:-8], "big") >= base > 0:  # a session-windowed key: key, end, start
        end, start = int.from_bytes(raw[-16:-8], "big"), int.from_bytes(raw[-8:], "big")
        return f"{raw[:-16].decode()!r}@[{start - base},{end - base}]"
    if len(raw) > 8 and raw[:-8].decode("utf-8", "replace").isprintable():  # a time-windowed key
        return f"{raw[:-8].decode()!r}@{int.from_bytes(raw[-8:], 'big', signed=True) - base}"
    return hex_bytes


def _row(r: list[Any]) -> str:
    index, topic, key, value, ts = r
    return f"after input {index}: {topic} {readable(key)} -> {readable(value)} @ {ts}"


def difference(case: Case, java: Result, python: Result) -> str | None:
    """None when streamlet did what Kafka Streams did; else a report of the first differences."""
    if "build_error" in java or "build_error" in python:
        if ("build_error" in java) == ("build_error" in python):
            return None
        return (f"topology build: Kafka Streams {java.get('build_error', 'built it')!r}, "
                f"streamlet {python.get('build_error', 'built it')!r}")
    lines = []
    if java["describe"] != python["describe"]:
        lines.append(f"describe() differs:\n--- Kafka Streams\n{java['describe']}--- streamlet\n{python['describe']}")
    if ("error" in java) != ("error" in python) or java.get("error_at") != python.get("error_at"):
        lines.append(f"errors differ: Kafka Streams {java.get('error')!r} at {java.get('error_at')}, "
                     f"streamlet {python.get('error')!r} at {python.get('error_at')}")
    if java["records"] != python["records"]:
        jr, pr = java["records"], python["records"]
        first = next((i for i, (a, b) in enumerate(zip(jr, pr, strict=False)) if a != b), min(len(jr), len(pr)))
        lines.append(f"output records differ from record {first} on ({len(jr)} from Kafka Streams, {len(pr)} "
                     f"from streamlet)")
        lines.append("  Kafka Streams:")
        lines += [f"    {_row(r)}" for r in jr[max(0, first - 2):first + 6]]
        lines.append("  streamlet:")
        lines += [f"    {_row(r)}" for r in pr[max(0, first - 2):first + 6]]
    if java.get("stores") != python.get("stores"):  # cases asking which stores are persistent
        lines.append(f"stores differ: Kafka Streams {java.get('stores')}, streamlet {python.get('stores')}")
    if java.get("printed") != python.get("printed"):  # print(Printed.to_file(...)) ops
        lines.append(f"printed lines differ:\n--- Kafka Streams\n{java.get('printed')}\n--- streamlet\n"
                     f"{python.get('printed')}")
    if not lines:
        return None
    inputs = [f"  {i}: {e}" for i, e in enumerate(case["inputs"])]
    return "\n".join([*lines, "ops: " + json.dumps(case["ops"]), "config: " + json.dumps(case.get("config")),
                      "inputs:", *inputs])


def difference_on_both(kafka_streams: KafkaStreamsReference, case: Case) -> str | None:
    """`case` run on Kafka Streams (`kafka_streams`) and on streamlet: the report of `difference`, None if equal."""
    return difference(case, kafka_streams.run(case), run_streamlet(case))
