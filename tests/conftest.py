"""Shared fixtures: one real Kafka broker (and schema registry) for the whole session, anyio on asyncio.

The broker starts only when a test asks for `kafka_broker` (the registry: `schema_registry`), so pure in-memory
runs (the test driver, serdes, stores) need neither Java nor the Kafka jars. Tests share it: use fresh topic names and
application ids per test (a uuid suffix) to stay independent. `kafka_broker` and
`topology_test_driver` are the fixtures streamlet's pytest plugin gives its users; importing them here
makes this suite use them whether or not the plugin's entry point is installed.

`make test` runs the suite on two pytest-xdist workers (`--dist loadgroup`): each worker starts its own
broker, and `pytest_collection_modifyitems` keeps every test file on one worker (its module fixtures are
set up once) and every file that builds or runs Java with Maven on the same worker, because concurrent Maven
runs share one local repository (~/.m2) without a lock between processes.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import settings

from streamlet.testing.pytest_plugin import kafka_broker, schema_registry, topology_test_driver

__all__ = ["kafka_broker", "schema_registry", "topology_test_driver"]

settings.register_profile("streamlet", deadline=None)
settings.load_profile("streamlet")
"""Property tests assert behaviour, never timings: hypothesis' default 200 ms deadline per example is a timing
assertion, and on a loaded two-core machine a descheduled process misses it (the assignor's property test once
failed so: DeadlineExceeded, then Flaky when the rerun was fast). Every example still runs; none is timed."""


@pytest.fixture(scope="session")
def anyio_backend() -> str:
    return "asyncio"


_JAVA_DIRS = frozenset({"fidelity", "fidelity_restart", "interop"})
_uses_maven: dict[Path, bool] = {}


def _builds_java(path: Path) -> bool:
    """Whether the test file at `path` builds or runs Java with Maven (its folder, `"mvn"` in its text, the
    tests/java/streams4 checks it runs, or tests/helpers/maven.py's `built_classpath`)."""
    if path not in _uses_maven:
        text = path.read_text()
        _uses_maven[path] = (bool(_JAVA_DIRS.intersection(path.parts)) or '"mvn"' in text
                             or "streams4_java" in text or "built_classpath" in text)
    return _uses_maven[path]


@pytest.hookimpl(tryfirst=True)  # before pytest-xdist reads the marks
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        group = "java" if _builds_java(item.path) else str(item.path)
        item.add_marker(pytest.mark.xdist_group(group))


@pytest.fixture
def streams_groups(kafka_broker: Any) -> None:
    """Skips a test when the session broker has no streams groups (KIP-1071 needs Kafka 4.2+): `make test`
    runs the streams-group files again on Kafka 4.4.0. Use with `pytest.mark.usefixtures("streams_groups")`."""
    version = tuple(int(part) for part in kafka_broker.version.split(".")[:2])
    if version < (4, 2):
        pytest.skip(f"streams groups need a Kafka 4.2+ broker, the session's is {kafka_broker.version}")


@pytest.fixture(scope="module")
def schema_registry3() -> Iterator[str]:
    """The Confluent API URL of a real Apicurio Registry 3.x (`LocalSchemaRegistry(version=REGISTRY3_VERSION)`,
    Java 21+) for one test module; skips the module when no Java 21+ is installed."""
    from streamlet.errors import BrokerUnavailableError
    from streamlet.testing.local_registry import REGISTRY3_VERSION, LocalSchemaRegistry, find_java_at_least

    try:
        find_java_at_least(21)
    except BrokerUnavailableError as missing:
        pytest.skip(str(missing))
    with LocalSchemaRegistry(version=REGISTRY3_VERSION) as registry:
        yield registry.url
