"""Shared fixtures: one real Kafka broker for the whole session, and anyio on asyncio.

The broker starts only when a test asks for `kafka_broker`, so pure in-memory runs (the test driver,
serdes, stores) need neither Java nor the Kafka jars. Tests share it: use fresh topic names and
application ids per test (a uuid suffix) to stay independent.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from streamlet.runtime.local_broker import LocalKafkaBroker


@pytest.fixture(scope="session")
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="session")
def kafka_broker() -> Iterator[LocalKafkaBroker]:
    with LocalKafkaBroker() as broker:
        yield broker
