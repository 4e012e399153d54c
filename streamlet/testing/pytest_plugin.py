"""streamlet's pytest plugin (registered as the `streamlet` entry point, so installing streamlet is enough).

Fixtures for testing an application's topology:

- `kafka_broker`: one real single-node Kafka broker (`LocalKafkaBroker`) for the whole test session,
  started on first use (needs Java 17+ and, once, Maven to fetch the jars). Tests share it: give each
  test its own topic names and application id.
- `schema_registry`: the URL (`http://127.0.0.1:PORT/apis/ccompat/v7`, for `schema.registry.url`) of one
  real Confluent-compatible schema registry (`LocalSchemaRegistry`, Apicurio Registry) for the whole test
  session, started on first use (Java 17+; Maven once). Schemas live in memory and tests share them: give
  each test its own topics (subjects).
- `topology_test_driver`: a factory, `topology_test_driver(topology, config=None)`, returning a
  `TopologyTestDriver` that is closed when the test ends, whatever happened.

An `async def` test that asks for one of these fixtures runs on asyncio without any marker: the plugin
marks it for anyio's pytest plugin (anyio is a dependency of streamlet, and `KafkaStreams` is an asyncio
client, so pytest alone would refuse the coroutine). It leaves alone every test a project already runs
its own way: one marked `anyio`, `asyncio` or `trio` (on the test, its class or its module), and every
test when pytest-asyncio or anyio runs in auto mode. A project's own `anyio_backend` fixture is used as
it is; a copy anyio makes of such a test for another backend (trio) is deselected. Otherwise the
plugin changes no option and collects nothing.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Generator, Iterator
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from streamlet.testing import TopologyTestDriver
    from streamlet.testing.local_broker import LocalKafkaBroker
    from streamlet.testing.local_registry import LocalSchemaRegistry
    from streamlet.topology import Topology

_FIXTURES = frozenset({"kafka_broker", "schema_registry", "topology_test_driver"})
_RUNNER_MARKS = frozenset({"anyio", "asyncio", "trio"})
_MARKED = "_streamlet_runs_on_asyncio"  # set on the test functions this plugin hands to anyio


@pytest.fixture(scope="session")
def kafka_broker() -> Iterator[LocalKafkaBroker]:
    """A real Kafka broker on 127.0.0.1 for the session (KRaft, transactions on); stopped at the end."""
    # Fixtures import streamlet when a test asks for them: the plugin loads into every pytest run of a
    # project that installed streamlet, and must cost nothing there.
    from streamlet.testing.local_broker import LocalKafkaBroker

    with LocalKafkaBroker() as broker:
        yield broker


@pytest.fixture(scope="session")
def schema_registry() -> Iterator[str]:
    """The URL of a real schema registry on 127.0.0.1 (Confluent's API) for the session; stopped at the end."""
    from streamlet.testing.local_registry import LocalSchemaRegistry  # when asked for, as above

    registry: LocalSchemaRegistry
    with LocalSchemaRegistry() as registry:
        yield registry.url


@pytest.fixture
def topology_test_driver() -> Iterator[Callable[..., TopologyTestDriver]]:
    """`topology_test_driver(topology, config=None, initial_wall_clock_time=None)`: a driver closed after
    the test (its state directory removed)."""
    from streamlet.testing import TopologyTestDriver  # when asked for, as above

    drivers: list[TopologyTestDriver] = []

    def make(topology: Topology, config: dict[str, Any] | None = None, **kwargs: Any) -> TopologyTestDriver:
        driver = TopologyTestDriver(topology, config, **kwargs)
        drivers.append(driver)
        return driver

    yield make
    for driver in drivers:
        driver.close()


def _auto_mode(config: pytest.Config, name: str) -> bool:
    """True when the plugin owning the `name` ini setting and option (`asyncio_mode`, `anyio_mode`)
    runs every coroutine test by itself."""
    try:
        ini = config.getini(name)
    except ValueError:  # that plugin is not installed
        return False
    return bool(config.getoption(name, default=None) == "auto" or ini == "auto")


def _for_anyio(collector: pytest.Module | pytest.Class, name: str, obj: object) -> bool:
    """An async test asking for streamlet's fixtures that no async plugin of the project would run."""
    if not collector.istestfunction(obj, name):
        return False
    inner = getattr(getattr(obj, "hypothesis", None), "inner_test", obj)
    if not inspect.iscoroutinefunction(inner):
        return False
    try:
        wanted = set(inspect.signature(inner).parameters)
    except (TypeError, ValueError):
        return False
    if not wanted & _FIXTURES:
        return False
    config = collector.config
    if not config.pluginmanager.has_plugin("anyio"):
        return False
    if _auto_mode(config, "asyncio_mode") or _auto_mode(config, "anyio_mode"):
        return False
    own = {mark.name for mark in getattr(obj, "pytestmark", ())}
    return not own & _RUNNER_MARKS and not any(collector.get_closest_marker(m) for m in _RUNNER_MARKS)


@pytest.hookimpl(wrapper=True)
def pytest_pycollect_makeitem(collector: pytest.Module | pytest.Class, name: str,
                              obj: object) -> Generator[None, Any, Any]:
    """Mark the async tests that use streamlet's fixtures for anyio, before anyio's own hook looks."""
    if _for_anyio(collector, name, obj):
        pytest.mark.anyio(obj)
        setattr(obj, _MARKED, True)
    return (yield)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Keep the tests marked above on asyncio: deselect their copies for another backend (anyio's own
    `anyio_backend` fixture runs a test once per backend installed, trio included)."""
    other: list[pytest.Item] = []
    for item in items:
        callspec = getattr(item, "callspec", None)
        if callspec is None or not getattr(getattr(item, "function", None), _MARKED, False):
            continue
        backend = callspec.params.get("anyio_backend", "asyncio")
        if (backend[0] if isinstance(backend, tuple) else backend) != "asyncio":
            other.append(item)
    if other:
        config.hook.pytest_deselected(items=other)
        items[:] = [item for item in items if item not in other]
