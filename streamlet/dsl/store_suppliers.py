"""Which backend a DSL store gets when the operation names none: `dsl.store.suppliers.class` and `default.dsl.store`.

Kafka Streams lets an application pick the stores its DSL builds without a supplier (KIP-954): the
class `BuiltInDslStoreSuppliers$RocksDBDslStoreSuppliers` (the default) or `$InMemoryDslStoreSuppliers`,
or the older `default.dsl.store` (`rocksDB` / `in_memory`, deprecated in 4.x). Persistent is LevelDB here.
The rules, each checked against Kafka Streams 4.4.0:

- an operation's own supplier or store type (`Materialized(store_type=...)`, `StreamJoined(store_type=...)`,
  a supplier) wins;
- then `StreamsBuilder(config)` (Kafka Streams' `TopologyConfig`): `dsl.store.suppliers.class` when set,
  else `default.dsl.store` when set;
- then the application's `dsl.store.suppliers.class` (KafkaStreams / the test driver config). The
  application's `default.dsl.store` has no effect there: Kafka Streams reads it through `TopologyConfig` only.
- a foreign-key join's subscription store follows the application's `dsl.store.suppliers.class` only
  (Kafka Streams 4.4.0 configures it from the application's config, never from `TopologyConfig`).

The DSL decides while `StreamsBuilder.build()` writes the topology, but the application's setting is only
known when the topology is run; so every store that took the default is recorded with how to build it
again (`DslDefaultStores`), and the runtime rebuilds those when its config asks for in-memory stores.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from functools import wraps
from typing import TYPE_CHECKING, Any, ParamSpec, TypeVar

from streamlet.dsl_store_settings import (
    DEFAULT_DSL_STORE,
    DSL_STORE_SUPPLIERS_CLASS,
    IN_MEMORY,
    IN_MEMORY_SUPPLIERS,
    application_in_memory,
    headers_format,
)

if TYPE_CHECKING:
    from streamlet.stores.api import StoreBuilder
    from streamlet.topology import Topology

log = logging.getLogger("streamlet.dsl")


_warned: set[str] = set()


def _warn_once(message: str) -> None:
    if message not in _warned:
        _warned.add(message)
        log.warning("%s", message)


# -- the DSL's side ---------------------------------------------------------------------------------------------
@dataclass
class _Choice:
    in_memory: bool | None
    """The builder's choice (None: the application's, recorded in `rebuild`)."""
    rebuild: dict[str, Callable[[], StoreBuilder]] = field(default_factory=dict)
    took_default: bool = False
    application: bool = False
    """True while the runtime rebuilds stores for the application's setting."""
    took_application_default: bool = False


_CURRENT: ContextVar[_Choice | None] = ContextVar("streamlet_dsl_store_choice", default=None)


@contextmanager
def building(in_memory: bool | None) -> Iterator[dict[str, Callable[[], StoreBuilder]]]:
    """While a StreamsBuilder writes its topology: DSL stores without their own choice take `in_memory`,
    or (None) the persistent default, each recorded in the mapping yielded for the runtime to rebuild."""
    choice = _Choice(in_memory)
    token = _CURRENT.set(choice)
    try:
        yield choice.rebuild
    finally:
        _CURRENT.reset(token)


def default_in_memory() -> bool:
    """For a DSL store whose operation chose nothing: in memory or not, as the builder (or later the
    application) says. Marks the store being made as following the default."""
    choice = _CURRENT.get()
    if choice is None:
        return False
    choice.took_default = True
    return bool(choice.in_memory)


def application_default_in_memory() -> bool:
    """For the one DSL store Kafka Streams builds on the application's setting alone, whatever
    `StreamsBuilder(config)` says: a foreign-key join's subscription store (its SubscriptionStoreFactory is
    configured from the application's config only, Kafka Streams 4.4.0)."""
    choice = _CURRENT.get()
    if choice is None:
        return False
    choice.took_application_default = True
    return bool(choice.in_memory) if choice.application else False


P = ParamSpec("P")
B = TypeVar("B", bound="StoreBuilder")


def follows_default(make: Callable[P, B]) -> Callable[P, B]:
    """Wrap a function making one DSL store: when it took the default and the builder left the choice to
    the application, remember how to make the store again."""

    @wraps(make)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> B:
        choice = _CURRENT.get()
        if choice is None:
            return make(*args, **kwargs)
        outer = choice.took_default, choice.took_application_default
        choice.took_default = choice.took_application_default = False
        try:
            builder = make(*args, **kwargs)
            if (choice.took_default and choice.in_memory is None) or choice.took_application_default:
                choice.rebuild[builder.name] = lambda: make(*args, **kwargs)
        finally:
            choice.took_default, choice.took_application_default = outer
        return builder

    return wrapper


def apply_application_setting(topology: Topology, config: Any) -> None:
    """Rebuild the topology's DSL stores that follow the application's `dsl.store.suppliers.class`, then set
    their format from its `dsl.store.format` (KafkaStreams and the test driver call this when they take the
    topology)."""
    _apply_suppliers(topology, config)
    apply_store_format(topology, config)


def apply_store_format(topology: Topology, config: Any) -> None:
    """`dsl.store.format=HEADERS` (KIP-1285): the DSL's table stores and the stores of its windowed and session
    aggregations become headers-aware; `DEFAULT` undoes it (a topology run again under another config)."""
    headers = headers_format(config)
    for builder in topology.store_builders.values():
        if getattr(builder, "dsl_store", False):
            builder.headers_format = headers  # type: ignore[attr-defined]


def _apply_suppliers(topology: Topology, config: Any) -> None:
    rebuild: dict[str, Callable[[], StoreBuilder]] = getattr(topology, "dsl_default_stores", {})
    if not rebuild:
        return
    given = config.given_keys
    if DEFAULT_DSL_STORE in given and DSL_STORE_SUPPLIERS_CLASS not in given and config[DEFAULT_DSL_STORE] == IN_MEMORY:
        _warn_once(f"{DEFAULT_DSL_STORE}={IN_MEMORY} in the application's config does not reach stores the "
                   f"StreamsBuilder already made: as in Kafka Streams it counts in StreamsBuilder(config) only; set "
                   f"{DSL_STORE_SUPPLIERS_CLASS}={IN_MEMORY_SUPPLIERS} for the application instead")
    in_memory = application_in_memory(config)
    token = _CURRENT.set(_Choice(in_memory, application=True))
    try:
        for name, make in rebuild.items():
            if name in topology.store_builders:
                topology.store_builders[name] = make()
    finally:
        _CURRENT.reset(token)
