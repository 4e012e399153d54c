"""Fixtures every differential module shares: one Kafka Streams JVM per module, and quiet dropped-record logs."""

from __future__ import annotations

import logging
from collections.abc import Iterator

import pytest

from tests.fidelity.harness import KafkaStreamsReference


@pytest.fixture(scope="module")
def kafka_streams() -> Iterator[KafkaStreamsReference]:
    reference = KafkaStreamsReference()
    yield reference
    reference.close()


@pytest.fixture(autouse=True)
def _quiet_skipped_record_warnings() -> Iterator[None]:
    """Dropped records are logged as in Kafka Streams; thousands of cases would flood the report."""
    logger = logging.getLogger("streamlet")
    level = logger.level
    logger.setLevel(logging.ERROR)
    yield
    logger.setLevel(level)
