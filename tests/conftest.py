"""Shared fixtures: one real Kafka broker for the whole session, and anyio on asyncio.

The broker starts only when a test asks for `kafka_broker`, so pure in-memory runs (the test driver,
serdes, stores) need neither Java nor the Kafka jars. Tests share it: use fresh topic names and
application ids per test (a uuid suffix) to stay independent. `kafka_broker` and
`topology_test_driver` are the fixtures streamlet's pytest plugin gives its users; importing them here
makes this suite use them whether or not the plugin's entry point is installed.
"""

from __future__ import annotations

import pytest

from streamlet.testing.pytest_plugin import kafka_broker, topology_test_driver

__all__ = ["kafka_broker", "topology_test_driver"]


@pytest.fixture(scope="session")
def anyio_backend() -> str:
    return "asyncio"
