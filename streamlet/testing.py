"""Helpers for users' tests: the in-memory `TopologyTestDriver` and a real `LocalKafkaBroker`."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from streamlet.runtime.test_driver import (
    NoSuchElementError,
    TestInputTopic,
    TestOutputTopic,
    TopologyTestDriver,
)

if TYPE_CHECKING:
    from streamlet.runtime.local_broker import LocalKafkaBroker

__all__ = [
    "LocalKafkaBroker",
    "NoSuchElementError",
    "TestInputTopic",
    "TestOutputTopic",
    "TopologyTestDriver",
]


def __getattr__(name: str) -> Any:
    # The broker module pulls in process management; import it only when a test asks for it.
    if name == "LocalKafkaBroker":
        from streamlet.runtime.local_broker import LocalKafkaBroker

        return LocalKafkaBroker
    raise AttributeError(name)
