"""Builds a Maven project of tests/java once (again only when a source is newer than its jar) and gives the
class path to run it with. Test files that call it run on the xdist "java" worker (tests/conftest.py); a thread
lock and a file lock in the project's target/ keep two builds of one project apart anyway (threads, and test
files outside that group, or a second pytest run)."""

from __future__ import annotations

import fcntl
import os
import subprocess
import threading
from pathlib import Path

_BUILD_LOCK = threading.Lock()


def built_classpath(java_dir: Path, jar_name: str, java_home: str | None = None) -> str:
    """`java -cp` for the project in `java_dir`: its jar (target/`jar_name`) and its dependencies. `java_home`
    is the JDK Maven builds with (JAVA_HOME) when it must not be the default one."""
    jar = java_dir / "target" / jar_name
    classpath = java_dir / "target" / "classpath.txt"
    (java_dir / "target").mkdir(exist_ok=True)
    with _BUILD_LOCK, (java_dir / "target" / ".build.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        sources = [*(java_dir / "src").rglob("*.java"), java_dir / "pom.xml"]
        if not (jar.exists() and classpath.exists()
                and max(p.stat().st_mtime for p in sources) <= jar.stat().st_mtime):
            built = subprocess.run(["mvn", "-q", "-B", "-f", str(java_dir / "pom.xml"), "package",
                                    "dependency:build-classpath", "-Dmdep.outputFile=target/classpath.txt"],
                                   capture_output=True, text=True, timeout=600,
                                   env=None if java_home is None else {**os.environ, "JAVA_HOME": java_home})
            if built.returncode != 0:
                raise RuntimeError(f"building {java_dir} failed:\n{built.stdout}{built.stderr}")
        return f"{jar}:{classpath.read_text().strip()}"
