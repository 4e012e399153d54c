"""benchmarks/restore.py's changelog: with `--keys` K, record i updates key w<i mod K>, whose last count is
what `restored_count` (the check's expectation) says, and the records are generated, not held."""

from __future__ import annotations

import struct
from collections import Counter
from collections.abc import Iterator

import pytest

from benchmarks.restore import changelog, key_count, restored_count


@pytest.mark.parametrize(("records", "keys"), [(1000, None), (1000, 7), (1003, 10), (50, 50), (50, 80)])
def test_the_last_count_of_every_key_is_its_restored_count(records: int, keys: int | None) -> None:
    last: dict[bytes, int] = {}
    seen: Counter[bytes] = Counter()
    for key, value, _ts in changelog(records, keys):
        seen[key] += 1
        last[key] = struct.unpack(">q", value)[0]
        assert last[key] == seen[key]  # each update counts one more
    k = key_count(records, keys)
    assert len(last) == k == (min(records, keys) if keys else records // 10)
    assert all(last[f"w{i}".encode()] == restored_count(records, i, keys) for i in range(k))


def test_the_changelog_is_generated_as_it_is_sent() -> None:
    records = changelog(10_000_000, 1_000_000)
    assert isinstance(records, Iterator)
    assert next(records)[0] == b"w0"
