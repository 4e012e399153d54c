"""Builds a Maven project of tests/java once (again only when a source is newer than its jar) and gives the
class path to run it with. Test files that call it run on the xdist "java" worker (tests/conftest.py)."""

from __future__ import annotations

import subprocess
from pathlib import Path


def built_classpath(java_dir: Path, jar_name: str) -> str:
    """`java -cp` for the project in `java_dir`: its jar (target/`jar_name`) and its dependencies."""
    jar = java_dir / "target" / jar_name
    classpath = java_dir / "target" / "classpath.txt"
    sources = [*(java_dir / "src").rglob("*.java"), java_dir / "pom.xml"]
    if not (jar.exists() and classpath.exists() and max(p.stat().st_mtime for p in sources) <= jar.stat().st_mtime):
        built = subprocess.run(["mvn", "-q", "-B", "-f", str(java_dir / "pom.xml"), "package",
                                "dependency:build-classpath", "-Dmdep.outputFile=target/classpath.txt"],
                               capture_output=True, text=True, timeout=600)
        if built.returncode != 0:
            raise RuntimeError(f"building {java_dir} failed:\n{built.stdout}{built.stderr}")
    return f"{jar}:{classpath.read_text().strip()}"
