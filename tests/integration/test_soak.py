"""The short form of `make soak` (issue #11): three exactly-once applications at once under mixed faults.

See `tests/integration/soak.py`. Faults for one minute, and at least one whole round, so that every
fault kind comes up at least once (each round injects all four in a shuffled order; the 30-minute
`make soak` runs about thirty rounds). Nothing may be lost or duplicated, every key's updates must
rise one by one, and no instance may crash.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.integration.soak import FAULT_KINDS, run_soak

pytestmark = [pytest.mark.anyio, pytest.mark.broker]


async def test_a_round_of_mixed_faults_loses_and_duplicates_nothing(tmp_path: Path) -> None:
    result = await run_soak(tmp_path, minutes=1, seed=11, settle=180)
    print(result.table())
    assert all(result.faults[kind] >= 1 for kind in FAULT_KINDS), result.table()
    for verdict in result.verdicts:
        assert verdict.records_in > 0, result.table()
        assert verdict.lost == 0 and verdict.duplicated == 0 and verdict.in_order, \
            f"{verdict.name}: {verdict.detail}\n{result.table()}"
        assert not verdict.crashed, f"{verdict.name}: instances {verdict.crashed} crashed\n{result.table()}"
