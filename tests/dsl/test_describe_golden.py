"""`str(topology.describe())` equals the real Kafka Streams 4.4.0 output, byte for byte
(3.9.1 printed the same for every one of these topologies).

The golden files were written by tests/java/reference (Kafka Streams itself); this test only reads
them. `test_golden_files_are_current` regenerates them with Java + Maven when both are installed and
checks that the committed files are what Kafka Streams prints today.
"""

from __future__ import annotations

import difflib
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.dsl.topologies import REFERENCE_TOPOLOGIES

GOLDEN = Path(__file__).parent / "golden"
JAVA_PROJECT = Path(__file__).parents[1] / "java" / "reference" / "pom.xml"

def test_every_golden_file_has_a_streamlet_topology() -> None:
    golden = {p.stem for p in GOLDEN.glob("*.txt")}
    assert golden == set(REFERENCE_TOPOLOGIES)
    assert len(golden) >= 30


@pytest.mark.parametrize("name", sorted(REFERENCE_TOPOLOGIES))
def test_describe_matches_kafka_streams(name: str) -> None:
    expected = (GOLDEN / f"{name}.txt").read_text()
    actual = str(REFERENCE_TOPOLOGIES[name]().describe())
    if actual != expected:
        diff = "".join(difflib.unified_diff(expected.splitlines(True), actual.splitlines(True),
                                            "kafka-streams", "streamlet"))
        pytest.fail(f"describe() of {name} differs from Kafka Streams:\n{diff}")


@pytest.mark.skipif(shutil.which("mvn") is None or shutil.which("java") is None, reason="needs Java and Maven")
def test_golden_files_are_current(tmp_path: Path) -> None:
    proc = subprocess.run(
        ["mvn", "-q", "-f", str(JAVA_PROJECT), "compile", "exec:java", f"-Dexec.args={tmp_path}"],
        capture_output=True, text=True, timeout=540,
    )
    if proc.returncode != 0 and "Could not resolve" in proc.stdout + proc.stderr:
        pytest.skip("Kafka Streams jars are not available (offline?)")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    regenerated = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*") if p.is_file())
    committed = sorted(p.relative_to(GOLDEN) for p in GOLDEN.rglob("*") if p.is_file())
    assert regenerated == committed
    for rel in regenerated:
        assert (tmp_path / rel).read_text() == (GOLDEN / rel).read_text(), str(rel)
