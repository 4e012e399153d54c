"""Developer tools for users' tests: the in-memory `TopologyTestDriver` and a real `LocalKafkaBroker`.

- `test_driver` and `store_facades`: the driver runs a topology in memory on the same task core as the
  engines (`streamlet.actors.stream_task`), with Kafka Streams' `TestInputTopic`/`TestOutputTopic`;
- `local_broker` (with its pom and log4j config in `broker/`) and `broker_acls`: a genuine single-node
  Kafka broker from Maven Central jars, for integration tests, the demo and `streamlet broker`;
- `strategies`: hypothesis strategies for property-based topology tests;
- `pytest_plugin`: the `kafka_broker` and `topology_test_driver` fixtures.

The engines never import this package; `import streamlet` does not either.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Self

from streamlet.errors import StreamsError
from streamlet.stores.session.api import SessionStore
from streamlet.stores.window.api import TimestampedWindowStore, WindowStore
from streamlet.testing.store_facades import WindowStoreFacade
from streamlet.testing.test_driver import (
    NoSuchElementError,
    TestInputTopic,
    TestOutputTopic,
)
from streamlet.testing.test_driver import TopologyTestDriver as _TopologyTestDriver

if TYPE_CHECKING:
    from streamlet.testing.broker_acls import Acl, create_acls, streams_application_acls
    from streamlet.testing.local_broker import LocalKafkaBroker

__all__ = [
    "Acl",
    "LocalKafkaBroker",
    "NoSuchElementError",
    "TestInputTopic",
    "TestOutputTopic",
    "TopologyTestDriver",
    "create_acls",
    "streams_application_acls",
]


class TopologyTestDriver(_TopologyTestDriver):
    """Runs a topology in memory, synchronously, as Kafka Streams' `TopologyTestDriver`: pipe records in
    through `create_input_topic`, read what came out through `create_output_topic`, look into the
    stores (`get_key_value_store`, `get_window_store`, ...) and move wall-clock time with
    `advance_wall_clock_time`. Use it as a context manager (or call `close()`)."""

    __test__ = False

    def __enter__(self) -> Self:
        return self

    def get_window_store(self, name: str) -> WindowStore:
        """The window store `name`; a timestamped one (a windowed aggregation's) seen with plain values,
        as Kafka Streams' driver shows it (`get_timestamped_window_store` gives `ValueAndTimestamp` values)."""
        store = self.get_state_store(name)
        if isinstance(store, TimestampedWindowStore):
            return WindowStoreFacade(store)
        if not isinstance(store, WindowStore):
            raise StreamsError(f"state store {name!r} is not a window store")
        return store

    def get_session_store(self, name: str) -> SessionStore:
        """The session store `name` (a session aggregation's): `find_sessions`, `fetch_session`, `fetch`."""
        store = self.get_state_store(name)
        if not isinstance(store, SessionStore):
            raise StreamsError(f"state store {name!r} is not a session store")
        return store

    def get_timestamped_window_store(self, name: str) -> TimestampedWindowStore:
        """The window store `name` with `ValueAndTimestamp` values (a windowed aggregation's)."""
        store = self.get_state_store(name)
        if not isinstance(store, TimestampedWindowStore):
            raise StreamsError(f"state store {name!r} is not a timestamped window store")
        return store


def __getattr__(name: str) -> Any:
    # The broker module pulls in process management; import it only when a test asks for it.
    if name == "LocalKafkaBroker":
        from streamlet.testing.local_broker import LocalKafkaBroker

        return LocalKafkaBroker
    if name in ("Acl", "create_acls", "streams_application_acls"):  # for LocalKafkaBroker(acls=True), as lazily
        from streamlet.testing import broker_acls

        return getattr(broker_acls, name)
    raise AttributeError(name)
