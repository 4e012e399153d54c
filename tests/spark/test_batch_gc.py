"""`fewer_collections` raises the collector's thresholds for its block only."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest

from streamlet.runtime.gc_tuning import THRESHOLDS
from streamlet.spark.batch_gc import fewer_collections


@pytest.fixture(autouse=True)
def _restore_thresholds() -> Iterator[None]:
    before = gc.get_threshold()
    yield
    gc.set_threshold(*before)


def test_thresholds_raised_inside_and_restored_after() -> None:
    gc.set_threshold(500, 7, 9)
    with fewer_collections():
        assert gc.get_threshold() == THRESHOLDS
    assert gc.get_threshold() == (500, 7, 9)


def test_restored_when_the_block_raises() -> None:
    gc.set_threshold(600, 8, 8)
    with pytest.raises(RuntimeError), fewer_collections():
        raise RuntimeError("task failed")
    assert gc.get_threshold() == (600, 8, 8)
