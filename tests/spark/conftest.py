"""One SparkSession (local[2]) for the whole test session: starting one costs seconds and ~1 GB."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest


@pytest.fixture(scope="session")
def spark() -> Iterator[Any]:
    from streamlet.spark.session import spark_session

    session = spark_session("local[2]", "streamlet-tests", {"spark.sql.shuffle.partitions": "2"})
    yield session
    session.stop()
