"""Lanes for `make fidelity`: the generated cases split into shards that pytest-xdist runs side by side.

A case is a round trip between two processes: the JVM runs it on Kafka Streams' driver while streamlet
runs it here, then each waits for the other, and Kafka Streams' RocksDB stores sync to disk as they open
and close. One lane so keeps well under one core busy (measured on the 2-core machine: about 5 cases a
second, the two processes together at 45% of a core), and 50,000 cases in one lane take about three
hours. `FIDELITY_SHARDS=N` splits each differential test's cases into N shards (a parametrized test each);
with `pytest -n N` each shard runs on its own worker, against its own JVM, and the cases are the same
number as in one lane. `make test` keeps one shard.

Shards must not draw the same cases: without a seed, every Hypothesis run draws its own; with
`--hypothesis-seed=S`, shard k runs on a seed derived from S and k (one shard keeps S itself).

Each shard keeps its own example database (`examples-shard{k}` beside Hypothesis' `examples`): a shared one
handed the failure one shard saved to every shard that started after it, which replayed it first, stopped
there, and never ran its own cases (the first 50,000-case run lost five shards' cases that way).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import pytest
from hypothesis import seed, settings
from hypothesis.database import DirectoryBasedExampleDatabase, ExampleDatabase

SHARDS = max(1, int(os.environ.get("FIDELITY_SHARDS", "1")))
"""How many shards each differential test's cases are split into."""

_T = TypeVar("_T", bound=Callable[..., Any])

shard_param = pytest.mark.parametrize("shard", range(SHARDS), ids=lambda k: f"shard{k}")
"""Parametrizes a differential test over the shards (a single `shard0` when unsharded)."""


def shard_cases(total: int, shard: int) -> int:
    """The number of the `total` cases shard `shard` runs (the shards' numbers add up to `total`)."""
    return total // SHARDS + (1 if shard < total % SHARDS else 0)


def seeded_for_shard(request: pytest.FixtureRequest, shard: int) -> Callable[[_T], _T]:
    """A decorator for the shard's `@given` function: a seed of its own when the run was given one."""
    given_seed = request.config.getoption("hypothesis_seed", None)
    if given_seed is None or SHARDS == 1:
        return lambda f: f
    return seed(int(given_seed) * 1_000_003 + shard)


def database_for_shard(shard: int) -> ExampleDatabase | None:
    """The shard's own example database (see the module docstring); Hypothesis' default when unsharded."""
    default = settings.default.database
    if SHARDS == 1 or not isinstance(default, DirectoryBasedExampleDatabase):
        return default
    path = Path(default.path)
    return DirectoryBasedExampleDatabase(path.with_name(f"{path.name}-shard{shard}"))
