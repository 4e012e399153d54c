"""Jars from Maven Central, fetched once into a cache with the machine's Maven.

Both engines and the developer tools need Java jars that pip cannot bring: the Kafka broker of tests
and `streamlet broker` (`streamlet.testing.local_broker`), Spark's Kafka connector
(`streamlet.spark.jars`). They share one way to fetch them: Maven copies a small pom's runtime
dependencies into a scratch directory renamed into place when complete, under a lock file, so a
crashed or concurrent fetch never leaves a half-filled jar directory behind. Engine code imports this
module, never the test broker's.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import subprocess
import sys
import tarfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO

from streamlet.errors import BrokerUnavailableError

# -- cache and tools ------------------------------------------------------------------------------

def cache_dir() -> Path:
    """Where downloaded jars and the dev broker's state live.

    `STREAMLET_CACHE_DIR` wins; a source checkout (pyproject.toml next to the package) keeps its
    cache in `<repo>/.cache` so that `make clean`-style tooling and .gitignore cover it; an installed
    package uses the per-user `~/.cache/streamlet`.
    """
    configured = os.environ.get("STREAMLET_CACHE_DIR")
    if configured:
        return Path(configured).expanduser().resolve()
    repo = Path(__file__).resolve().parents[2]
    if (repo / "pyproject.toml").is_file() and (repo / "streamlet").is_dir():
        return repo / ".cache"
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg) if xdg else Path.home() / ".cache") / "streamlet"


def find_java() -> str:
    """The `java` executable ($JAVA_HOME/bin/java, else the one on PATH)."""
    java_home = os.environ.get("JAVA_HOME")
    if java_home:
        candidate = Path(java_home) / "bin" / "java"
        if os.access(candidate, os.X_OK):
            return str(candidate)
    found = shutil.which("java")
    if found is None:
        raise BrokerUnavailableError(
            "Java was not found (neither $JAVA_HOME/bin/java nor java on PATH): the local Kafka broker "
            "needs a Java 17+ runtime, e.g. `apt-get install openjdk-17-jre-headless`."
        )
    return found


def find_maven(label: str) -> str:
    """The `mvn` executable on PATH; `label` names what it is needed for, in the error."""
    found = shutil.which("mvn")
    if found is None:
        raise BrokerUnavailableError(
            f"Maven (mvn) was not found on PATH: it is needed once to fetch the {label} "
            "jars from Maven Central, e.g. `apt-get install maven`."
        )
    return found


@contextlib.contextmanager
def file_lock(path: Path) -> Iterator[None]:
    """An exclusive advisory lock held across processes (released when the process dies)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a+") as handle:
        fcntl.flock(handle.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle.fileno(), fcntl.LOCK_UN)


def fetch_maven_jars(pom: Path, home: Path, label: str, marker_jar: str,
                     keep: Callable[[str], bool] | None = None) -> None:
    """Fill `home/libs` with the runtime jars `pom` depends on, unless `marker_jar` is already there.

    Maven copies the dependencies into a private scratch directory that is renamed into place only
    when complete, and the whole fetch runs under a lock file: a crashed or concurrent fetch never
    leaves a half-filled jar directory behind for the next user to trip over. `keep` (a jar's file
    name -> bool) drops jars the caller gets elsewhere.
    """
    def copy_dependencies(mvn: str, scratch: Path, out: IO[bytes]) -> int:
        shutil.copy(pom, scratch / "pom.xml")
        code = subprocess.run(
            [mvn, "-B", "-q", "-Dstyle.color=never", "dependency:copy-dependencies",
             f"-DoutputDirectory={scratch / 'libs'}", "-DincludeScope=runtime"],
            cwd=scratch, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT, check=False,
        ).returncode
        if code == 0 and keep is not None and (scratch / "libs").is_dir():
            for jar in (scratch / "libs").iterdir():
                if not keep(jar.name):
                    jar.unlink()
        return code

    _fetch_once(home, label, Path("libs") / marker_jar, copy_dependencies)


def fetch_maven_archive(artifact: str, home: Path, label: str, marker: str) -> None:
    """Unpack the `tar.gz` Maven artifact `artifact` (`group:name:version:tar.gz:classifier`) into `home`,
    unless `home/marker` is already there; as `fetch_maven_jars`, under a lock, through a scratch directory."""
    def copy_and_unpack(mvn: str, scratch: Path, out: IO[bytes]) -> int:
        download = scratch / "download"
        code = subprocess.run(
            [mvn, "-B", "-q", "-Dstyle.color=never", "dependency:copy", f"-Dartifact={artifact}",
             f"-DoutputDirectory={download}"],
            cwd=scratch, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT, check=False,
        ).returncode
        if code != 0:
            return code
        for archive in download.glob("*.tar.gz"):
            with tarfile.open(archive) as tar:
                tar.extractall(scratch, filter="data")
        shutil.rmtree(download)
        return 0

    _fetch_once(home, label, Path(marker), copy_and_unpack)


def _fetch_once(home: Path, label: str, marker: Path, fill: Callable[[str, Path, IO[bytes]], int]) -> None:
    """Run `fill(mvn, scratch, log)` into a private scratch directory renamed to `home` when `home/marker`
    exists after it, all under a lock file; nothing happens when `home/marker` is already there."""
    if (home / marker).is_file():
        return
    find_java()  # Maven needs Java too; say so first, in the words that matter
    mvn = find_maven(label)
    with file_lock(home.parent / f"{home.name}.lock"):
        if (home / marker).is_file():  # another process fetched while we waited for the lock
            return
        scratch = home.parent / f"{home.name}.partial-{os.getpid()}"
        shutil.rmtree(scratch, ignore_errors=True)
        scratch.mkdir(parents=True)
        fetch_log = home.parent / f"{home.name}-fetch.log"
        print(f"streamlet: fetching {label} from Maven Central into {home} ...", file=sys.stderr, flush=True)
        with open(fetch_log, "wb") as out:
            code = fill(mvn, scratch, out)
        if code != 0 or not (scratch / marker).is_file():
            shutil.rmtree(scratch, ignore_errors=True)
            raise BrokerUnavailableError(
                f"Maven could not fetch {label} (exit code {code}); see {fetch_log}."
            )
        shutil.rmtree(home, ignore_errors=True)
        os.rename(scratch, home)
