"""The Kafka Streams reference JVM, one per test module of the differential suite (see harness.py)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.fidelity.harness import KafkaStreamsReference


@pytest.fixture(scope="module")
def kafka_streams() -> Iterator[KafkaStreamsReference]:
    reference = KafkaStreamsReference()
    yield reference
    reference.close()
