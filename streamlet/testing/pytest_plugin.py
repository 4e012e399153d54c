"""streamlet's pytest plugin (registered as the `streamlet` entry point, so installing streamlet is enough).

Fixtures for testing an application's topology:

- `kafka_broker`: one real single-node Kafka broker (`LocalKafkaBroker`) for the whole test session,
  started on first use (needs Java 17+ and, once, Maven to fetch the jars). Tests share it: give each
  test its own topic names and application id.
- `topology_test_driver`: a factory, `topology_test_driver(topology, config=None)`, returning a
  `TopologyTestDriver` that is closed when the test ends, whatever happened.

The plugin only adds fixtures: it changes no option and collects nothing.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from streamlet.testing import TopologyTestDriver
    from streamlet.testing.local_broker import LocalKafkaBroker
    from streamlet.topology import Topology


@pytest.fixture(scope="session")
def kafka_broker() -> Iterator[LocalKafkaBroker]:
    """A real Kafka broker on 127.0.0.1 for the session (KRaft, transactions on); stopped at the end."""
    from streamlet.testing.local_broker import LocalKafkaBroker

    with LocalKafkaBroker() as broker:
        yield broker


@pytest.fixture
def topology_test_driver() -> Iterator[Callable[..., TopologyTestDriver]]:
    """`topology_test_driver(topology, config=None, initial_wall_clock_time=None)`: a driver closed after
    the test (its state directory removed)."""
    from streamlet.testing import TopologyTestDriver

    drivers: list[TopologyTestDriver] = []

    def make(topology: Topology, config: dict[str, Any] | None = None, **kwargs: Any) -> TopologyTestDriver:
        driver = TopologyTestDriver(topology, config, **kwargs)
        drivers.append(driver)
        return driver

    yield make
    for driver in drivers:
        driver.close()
